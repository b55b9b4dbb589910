"""The demo appliance through the real engine: `pulumi up`, `up --expect-no-changes`, `refresh`,
`preview --diff` against the following `up`, `stack export`, `destroy`.

One stack and one API server for the module: the tests are the steps of one life, in order,
each starting from where the previous left the cluster (`destroy` last).
"""

from __future__ import annotations

import json

import pytest

from api.crdgen import load_committed_crds
from providers.kinds import APPLIANCE_KINDS, CRD, HELM_RELEASE, KUSTOMIZATION
from providers.kube import Invalid, KubeClient, ResourceKind
from tests.cluster.apiserver import ClusterInfo
from tests.e2e import lifecycle
from tests.e2e.engine import PulumiProject, Run
from tests.e2e.lifecycle import CHANGING_OPS, changes, converge, resource_type
from tests.e2e.world import load_demo, objects_of
from tests.live.ollama_double import OllamaDouble

OWN_CRD_TYPE = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
OWN_KIND_TYPES = frozenset(
    f"kubernetes:appliance.magicstick.dev/v1alpha1:{kind}"
    for kind in ("Appliance", "ModuleActivation", "ModelActivation", "AppInstance")
)
DYNAMIC_TYPES = {
    "status": "pulumi-python:dynamic/magicstick:StatusBatch",
    "runtime profile store": "pulumi-python:dynamic/magicstick:RuntimeProfile",
    "Ollama alias": "pulumi-python:dynamic/magicstick:OllamaAlias",
    "GPU validation history": "pulumi-python:dynamic/magicstick:GpuValidationHistory",
}
"""The dynamic providers the demo needs; tests/e2e/test_dynamic_providers.py serves the others."""


@pytest.fixture(scope="module")
def first_up(project: PulumiProject, engine_cluster: ClusterInfo, kube: KubeClient, demo: list[dict]) -> Run:
    return lifecycle.first_up(engine_cluster, kube, project, demo)


@pytest.fixture(scope="module")
def converged(
    first_up: Run, project: PulumiProject, kube: KubeClient, demo: list[dict], ollama: OllamaDouble
) -> list[Run]:
    load_demo(kube, demo)
    return converge(project, kube, ollama)


def test_the_first_up_creates_our_crds_before_any_instance_of_them(first_up: Run):
    order = [
        (key, event[key]["metadata"])
        for event in first_up.events
        for key in ("resourcePreEvent", "resOutputsEvent")
        if key in event
    ]
    crds_done = [
        i
        for i, (key, step) in enumerate(order)
        if key == "resOutputsEvent" and resource_type(step["urn"]) == OWN_CRD_TYPE and step["op"] == "create"
    ]
    instances_started = [
        i
        for i, (key, step) in enumerate(order)
        if key == "resourcePreEvent" and resource_type(step["urn"]) in OWN_KIND_TYPES and step["op"] == "create"
    ]
    assert len(crds_done) == len(load_committed_crds())
    assert instances_started, "the first run seeds the profile's default ModuleActivations"
    assert max(crds_done) < min(instances_started)


def test_an_up_of_the_demo_converges_and_the_statuses_reach_the_resources(
    converged: list[Run], kube: KubeClient, demo: list[dict]
):
    served = {resource_type(urn) for run in converged for urn in run.operations()}
    assert set(DYNAMIC_TYPES.values()) <= served, sorted(set(DYNAMIC_TYPES.values()) - served)
    for obj in objects_of(demo, own=True):
        kind = next(k for k in APPLIANCE_KINDS.values() if k.kind == obj["kind"])
        if kind.kind in ("HostOperation", "ApplianceSetup"):
            continue
        live = kube.get(kind, obj["metadata"]["name"], obj["metadata"]["namespace"])
        status = live.get("status") or {}
        assert status.get("observedGeneration") == live["metadata"]["generation"], (
            f"{kind.kind}/{obj['metadata']['name']}: {status}"
        )
        assert status.get("phase"), f"{kind.kind}/{obj['metadata']['name']} has no phase"
    appliance = kube.get(APPLIANCE_KINDS["Appliance"], "local", "ai-system")
    assert appliance["status"]["phase"] in ("Ready", "Degraded", "Reconciling")
    assert (
        kube.get(KUSTOMIZATION, "app-kubeai", "flux-system")["metadata"]["labels"]["app.kubernetes.io/managed-by"]
        == "magicstick"
    )


def test_a_second_up_expecting_no_changes_succeeds(converged: list[Run], project: PulumiProject):
    run = project.pulumi("up", "--yes", "--skip-preview", "--expect-no-changes", events=True)
    assert changes(run) == {}


def test_a_refresh_right_after_up_shows_no_drift(converged: list[Run], project: PulumiProject):
    run = project.pulumi("refresh", "--yes", "--skip-preview", events=True)
    assert changes(run) == {}
    again = project.pulumi("preview", "--expect-no-changes", "--json")
    assert again.json().get("changeSummary", {}).keys() <= {"same"}


def test_the_stack_export_holds_no_credential_in_plain_text(
    converged: list[Run], project: PulumiProject, engine_cluster: ClusterInfo
):
    exported = json.dumps(project.export())
    identities = engine_cluster.identities.values()
    assert all(identity.token not in exported for identity in identities)
    kubeconfig = engine_cluster.kubeconfig_path("magicstick-test-admin").read_text()
    assert kubeconfig not in exported
    assert "BEGIN RSA PRIVATE KEY" not in exported and "BEGIN PRIVATE KEY" not in exported
    assert project.passphrase not in exported


OTHER_MANAGER = "flux-cli"
"""What `flux suspend kustomization` would leave: another field manager owning `spec.suspend`."""


def _suspend_as_another_manager(kube: KubeClient) -> None:
    body = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": "app-kubeai", "namespace": "flux-system"},
        "spec": {"suspend": True},
    }
    kube.apply(KUSTOMIZATION, body, field_manager=OTHER_MANAGER, force=True)


def _managers_of_suspend(kube: KubeClient) -> set[str]:
    live = kube.get(KUSTOMIZATION, "app-kubeai", "flux-system")
    return {
        entry["manager"]
        for entry in live["metadata"]["managedFields"]
        if "f:suspend" in json.dumps(entry.get("fieldsV1", {}))
    }


def test_without_refresh_the_preview_does_not_see_another_managers_edit_of_an_owned_object(
    converged: list[Run], project: PulumiProject, kube: KubeClient
):
    """pulumi-kubernetes diffs the program's inputs against the state, not the live object: an
    edit by another manager shows only after a refresh (PKO's Stack refreshes on every run,
    deploy/stack.yaml). The program itself reads the live object, so the statuses that depend
    on it do change."""
    _suspend_as_another_manager(kube)
    preview = project.pulumi("preview", "--json")
    changed = {step["urn"]: step["op"] for step in preview.json()["steps"] if step["op"] in CHANGING_OPS}
    assert not [urn for urn in changed if urn.endswith("::kustomization/flux-system/app-kubeai")], changed
    assert any(resource_type(urn) == "pulumi-python:dynamic/magicstick:StatusBatch" for urn in changed), changed


def test_a_field_another_manager_took_on_an_owned_object_is_shown_by_preview_and_taken_back_by_up_with_refresh(
    converged: list[Run], project: PulumiProject, kube: KubeClient
):
    _suspend_as_another_manager(kube)
    assert _managers_of_suspend(kube) == {OTHER_MANAGER}
    preview = project.pulumi("preview", "--refresh", "--json")
    urn = next(
        step["urn"]
        for step in preview.json()["steps"]
        if step["urn"].endswith("::kustomization/flux-system/app-kubeai")
    )
    assert {step["urn"]: step["op"] for step in preview.json()["steps"]}[urn] == "update"
    project.pulumi("up", "--yes", "--skip-preview", "--refresh")
    live = kube.get(KUSTOMIZATION, "app-kubeai", "flux-system")
    assert live["spec"]["suspend"] is False
    assert _managers_of_suspend(kube) == {"magicstick"}


FREEZE_MESSAGE = "HelmReleases in ai-system are frozen by the cluster policy of example.com"
POLICY = ResourceKind(
    "admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies", False
)
POLICY_BINDING = ResourceKind(
    "admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings", False
)


def _freeze_helm_releases(kube: KubeClient) -> None:
    """A cluster policy (ValidatingAdmissionPolicy, as an administrator or Kyverno would add)
    refusing every change to a HelmRelease: the server answers the program's apply with 422."""
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "freeze-helm-releases"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["helm.toolkit.fluxcd.io"],
                        "apiVersions": ["*"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["helmreleases"],
                    }
                ]
            },
            "validations": [{"expression": "false", "message": FREEZE_MESSAGE}],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "freeze-helm-releases"},
        "spec": {"policyName": "freeze-helm-releases", "validationActions": ["Deny"]},
    }
    kube.apply(POLICY, policy, field_manager="cluster-admin")
    kube.apply(POLICY_BINDING, binding, field_manager="cluster-admin")


ADMISSION_ATTEMPTS = 2000
"""A bound in requests (no sleep): each attempt is a round trip to the server."""


def wait_until_admitted(kube: KubeClient) -> None:
    """Until the admission plugin's informer has dropped the policy: a dry-run apply of the
    HelmRelease passes."""
    current = kube.get(HELM_RELEASE, "openclaw-default", "ai-system")
    body = {
        "apiVersion": current["apiVersion"],
        "kind": current["kind"],
        "metadata": {"name": "openclaw-default", "namespace": "ai-system"},
    }
    for _ in range(ADMISSION_ATTEMPTS):
        try:
            kube.apply(HELM_RELEASE, body, field_manager="admission-probe", dry_run=True)
        except Invalid:
            continue
        return
    raise AssertionError("the policy still refused HelmReleases after it was deleted")


def test_an_object_the_server_refuses_fails_the_run_naming_the_resource_and_the_servers_message_and_nothing_is_lost(
    converged: list[Run], project: PulumiProject, kube: KubeClient
):
    """What the engine makes of a 422 on a pulumi-kubernetes resource: the resource fails, the
    run fails with the server's message. The program cannot turn it into the instance's status
    in the same run (a failed resource's outputs never reach the program); the next run after
    the cause is gone applies it."""
    _freeze_helm_releases(kube)
    instance = APPLIANCE_KINDS["AppInstance"]
    body = {
        "apiVersion": "appliance.magicstick.dev/v1alpha1",
        "kind": "AppInstance",
        "metadata": {"name": "openclaw-default", "namespace": "ai-system"},
        "spec": {"values": {"model": "example-openai-gpt-4o-mini"}},
    }
    kube.apply(instance, body, field_manager="user-edit")
    before = kube.get(HELM_RELEASE, "openclaw-default", "ai-system")
    refused = project.pulumi("up", "--yes", "--skip-preview", check=False)
    output = refused.stdout + refused.stderr
    assert refused.returncode != 0
    assert "helmrelease/ai-system/openclaw-default" in output
    assert FREEZE_MESSAGE in output
    assert (
        kube.get(HELM_RELEASE, "openclaw-default", "ai-system")["metadata"]["generation"]
        == before["metadata"]["generation"]
    )
    kube.delete(POLICY_BINDING, "freeze-helm-releases", None)
    kube.delete(POLICY, "freeze-helm-releases", None)
    wait_until_admitted(kube)
    project.pulumi("up", "--yes", "--skip-preview")
    assert (
        kube.get(HELM_RELEASE, "openclaw-default", "ai-system")["metadata"]["generation"]
        > before["metadata"]["generation"]
    )


def test_destroy_keeps_our_crds_and_the_users_resources_and_removes_what_the_program_created(
    converged: list[Run], project: PulumiProject, kube: KubeClient, demo: list[dict]
):
    generated = kube.get(KUSTOMIZATION, "app-kubeai", "flux-system")
    assert generated is not None
    project.pulumi("destroy", "--yes", "--skip-preview")
    names = {crd["metadata"]["name"] for crd in kube.list(CRD)}
    assert {crd["metadata"]["name"] for crd in load_committed_crds()} <= names
    for obj in objects_of(demo, own=True):
        kind = next(k for k in APPLIANCE_KINDS.values() if k.kind == obj["kind"])
        assert kube.get_or_none(kind, obj["metadata"]["name"], obj["metadata"]["namespace"]) is not None, obj[
            "metadata"
        ]["name"]
    assert kube.get_or_none(KUSTOMIZATION, "app-kubeai", "flux-system") is None
