"""deploy/admission-policy.yaml with deploy/rbac-administrators.yaml on the real API server: only
administrators change a ModuleActivation's administrator-only fields, whatever the client.

The shipped files are applied unmodified and kube-apiserver's own admission plugin evaluates the
policy's CEL. Identities are client certificates the test server trusts (CN user, O groups), so
the groups are exactly those an identity provider, or the dashboard's impersonation, would
give. Refusals are asserted by their code (403) and by the words of the policy's message, which
names the field and the rule.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Callable, Iterator
from typing import Any, Final

import pytest

from api.meta import API_VERSION, GROUP
from catalogs.loader import load_catalogs
from providers.kinds import MODULE_ACTIVATION
from providers.kube import Forbidden, KubeAccess, KubeClient, NotFound, ResourceKind, open_client
from providers.status_writer import STATUS_FIELD_MANAGER
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo, TestIdentity, wait_until_allowed
from tests.deploy.manifests import SYSTEM_NAMESPACE, Permission, documents
from tests.deploy.program_identity import (
    apply_all,
    ensure_namespaces,
    ensure_own_crds,
    request_token,
    service_account_identity,
    wait_until_granted,
)

KUBECTL: Final = shutil.which("kubectl")
POLICY_FILE: Final = "../magic-cluster/platform/admission/admission-policy.yaml"
RBAC_FILE: Final = "rbac-administrators.yaml"
POLICY: Final = ResourceKind(
    "admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies", False
)
POLICY_BINDING: Final = ResourceKind(
    "admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings", False
)

OPERATOR: Final = ("olivia", "magicstick:operators")
ADMINISTRATOR: Final = ("alice", "magicstick:administrators")
VIEWER: Final = ("victor", "magicstick:viewers")

TEST_LABEL: Final = "tests.magicstick.dev/admission-policy"
VALIDATION_PREFIX: Final = "appliance.magicstick.dev/device-validation-"
ADMINISTRATORS_ONLY: Final = "by administrators only (group magicstick:administrators)"
ADMISSION_ATTEMPTS: Final = 2000
"""A bound in requests (no sleep): each attempt is a round trip to the server."""

NVIDIA_EXCLUSIVE: Final = '{"mode":"exclusive","nodeName":"halo","nodeUID":"uid-1"}'
NVIDIA_SHARED: Final = '{"mode":"time-slicing","nodeName":"halo","nodeUID":"uid-1","slots":4}'
AMD_EXCLUSIVE: Final = '{"mode":"exclusive","nodeName":"halo","nodeUID":"uid-1"}'
AMD_SHARED: Final = '{"mode":"dra-shared","nodeName":"halo","nodeUID":"uid-1","slots":2}'
GPU_PARAMETERS: Final[dict[str, dict[str, str]]] = {
    "gpu": {"gpuSharing": NVIDIA_EXCLUSIVE},
    "amd-gpu": {"compatibilityProfile": "strix-halo", "allowExperimental": "true", "gpuSharing": AMD_EXCLUSIVE},
    "intel-gpu": {"sharedDevNum": "2"},
}
"""Parameters an administrator sets on each GPU module (intel-gpu declares none; the API stores any)."""


def parameters_refused(field: str, module: str) -> str:
    return f"spec.parameters.{field} of the {module} module may be changed {ADMINISTRATORS_ONLY}"


def annotation_refused(key: str) -> str:
    return f"metadata.annotations[{key}] (prefix {VALIDATION_PREFIX}) may be added, changed or removed {ADMINISTRATORS_ONLY}"


def activation(
    name: str, module: str, *, parameters: dict[str, Any] | None = None, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"module": module, "enabled": True}
    if parameters is not None:
        spec["parameters"] = parameters
    metadata: dict[str, Any] = {"name": name, "namespace": SYSTEM_NAMESPACE, "labels": {TEST_LABEL: "true"}}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": API_VERSION, "kind": "ModuleActivation", "metadata": metadata, "spec": spec}


def create(client: KubeClient, body: dict[str, Any]) -> dict[str, Any]:
    return client.create(MODULE_ACTIVATION, body, field_manager="kubectl-create")


def merge_patch(client: KubeClient, name: str, patch: dict[str, Any]) -> dict[str, Any]:
    return client.request(
        "PATCH",
        MODULE_ACTIVATION.object_path(name, SYSTEM_NAMESPACE),
        params={"fieldManager": "kubectl-edit"},
        body=patch,
        content_type="application/merge-patch+json",
    )


def refused(write: Callable[[], object]) -> Forbidden:
    """The 403 a write meets."""
    with pytest.raises(Forbidden) as refusal:
        write()
    return refusal.value


def client_as(cluster: ClusterInfo, user: str, group: str) -> contextlib.AbstractContextManager[KubeClient]:
    return open_client(KubeAccess(kubeconfig=str(cluster.certificate_kubeconfig_path(user, group))))


def wait_for_policy(probe: KubeClient, *, in_force: bool) -> None:
    """Until the admission plugin's informers have the policy and its binding (`in_force`), or
    have dropped them: a dry-run create of a gpu activation with parameters, as an operator, is
    refused by the policy, or admitted."""
    body = activation("admission-probe", "gpu", parameters={"gpuSharing": NVIDIA_EXCLUSIVE})
    for _ in range(ADMISSION_ATTEMPTS):
        try:
            probe.apply(MODULE_ACTIVATION, body, field_manager="admission-probe", dry_run=True)
        except Forbidden as refusal:
            if in_force and parameters_refused("gpuSharing", "gpu") in refusal.message:
                return
            continue
        if not in_force:
            return
    raise AssertionError(
        f"the policy was still {'not ' if in_force else ''}in force after {ADMISSION_ATTEMPTS} requests"
    )


@pytest.fixture(scope="module")
def admin(cluster: ClusterInfo) -> Iterator[KubeClient]:
    with open_client(KubeAccess(kubeconfig=str(cluster.kubeconfig_path(ADMIN_USER)))) as client:
        yield client


@pytest.fixture(scope="module")
def installed(cluster: ClusterInfo, admin: KubeClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The CRDs, the roles and the policy, in force; on exit the policy is removed again and
    out of force, so that the session's other tests meet the cluster as before."""
    ensure_namespaces(admin)
    ensure_own_crds(cluster, admin, tmp_path_factory.mktemp("own-crds"))
    apply_all(admin, documents(RBAC_FILE))
    for user, group in (OPERATOR, ADMINISTRATOR):
        wait_until_allowed(
            cluster, TestIdentity(name=user, token="", groups=(group,)),
            verb="create", resource="moduleactivations", namespace=SYSTEM_NAMESPACE, group=GROUP,
        )  # fmt: skip
    wait_until_allowed(
        cluster, TestIdentity(name=VIEWER[0], token="", groups=(VIEWER[1],)),
        verb="get", resource="moduleactivations", namespace=SYSTEM_NAMESPACE, group=GROUP,
    )  # fmt: skip
    apply_all(admin, documents(POLICY_FILE))
    with client_as(cluster, *OPERATOR) as probe:
        wait_for_policy(probe, in_force=True)
    yield
    for obj in reversed(documents(POLICY_FILE)):
        admin.delete(POLICY_BINDING if obj["kind"].endswith("Binding") else POLICY, obj["metadata"]["name"])
    with client_as(cluster, *OPERATOR) as probe:
        wait_for_policy(probe, in_force=False)


@pytest.fixture(autouse=True)
def cleaned(installed: None, admin: KubeClient) -> Iterator[None]:
    """Each test starts without the activations of the one before."""
    yield
    for obj in admin.list(MODULE_ACTIVATION, namespace=SYSTEM_NAMESPACE, label_selector=f"{TEST_LABEL}=true"):
        with contextlib.suppress(NotFound):
            admin.delete(MODULE_ACTIVATION, obj["metadata"]["name"], SYSTEM_NAMESPACE)


@pytest.fixture(scope="module")
def operator(cluster: ClusterInfo, installed: None) -> Iterator[KubeClient]:
    with client_as(cluster, *OPERATOR) as client:
        yield client


@pytest.fixture(scope="module")
def administrator(cluster: ClusterInfo, installed: None) -> Iterator[KubeClient]:
    with client_as(cluster, *ADMINISTRATOR) as client:
        yield client


@pytest.fixture(scope="module")
def viewer(cluster: ClusterInfo, installed: None) -> Iterator[KubeClient]:
    with client_as(cluster, *VIEWER) as client:
        yield client


@pytest.fixture(scope="module")
def program(cluster: ClusterInfo, admin: KubeClient, installed: None) -> Iterator[KubeClient]:
    """The program's real ServiceAccount (deploy/rbac.yaml): not an administrator."""
    apply_all(admin, [*documents("serviceaccount.yaml"), *documents("rbac.yaml")])
    identity = service_account_identity(request_token(admin))
    wait_until_granted(
        cluster,
        identity,
        [
            Permission("patch", GROUP, "moduleactivations/status", SYSTEM_NAMESPACE),
            Permission("patch", GROUP, "moduleactivations", SYSTEM_NAMESPACE),
        ],
    )
    with open_client(KubeAccess(kubeconfig=str(cluster.kubeconfig_path(identity)))) as client:
        yield client


def gpu_activation_by_the_administrator(
    admin: KubeClient, name: str, module: str, **annotations: str
) -> dict[str, Any]:
    """A GPU activation holding administrator-only fields, as an administrator left it."""
    return create(
        admin, activation(name, module, parameters=dict(GPU_PARAMETERS[module]), annotations=annotations or None)
    )


GPU_MODULES: Final = tuple(GPU_PARAMETERS)


# --- what an operator may do ---------------------------------------------------------------


def test_an_operator_may_create_edit_and_delete_a_module_activation_of_a_module_without_administrator_only_fields(
    operator,
):
    created = create(operator, activation("admission-litellm", "litellm", parameters={"postgresStorage": "5Gi"}))
    edited = merge_patch(operator, "admission-litellm", {"spec": {"parameters": {"postgresStorage": "10Gi"}}})
    operator.delete(MODULE_ACTIVATION, "admission-litellm", SYSTEM_NAMESPACE)

    assert created["spec"]["parameters"] == {"postgresStorage": "5Gi"}
    assert edited["spec"]["parameters"] == {"postgresStorage": "10Gi"}


@pytest.mark.parametrize("module", GPU_MODULES)
def test_an_operator_may_enable_a_gpu_module_by_an_activation_without_parameters(operator, module):
    without = create(operator, activation(f"admission-{module}", module))
    empty = create(operator, activation(f"admission-{module}-empty", module, parameters={}))

    assert "parameters" not in without["spec"]
    assert empty["spec"]["parameters"] == {}


@pytest.mark.parametrize("module", GPU_MODULES)
def test_an_operator_may_disable_and_enable_a_gpu_module_and_its_parameters_stay_as_the_administrator_set_them(
    admin, operator, module
):
    gpu_activation_by_the_administrator(admin, f"admission-{module}", module)

    disabled = merge_patch(operator, f"admission-{module}", {"spec": {"enabled": False}})
    enabled = operator.apply(
        MODULE_ACTIVATION, activation(f"admission-{module}", module), field_manager="magicstick-dashboard", force=True
    )

    assert disabled["spec"]["enabled"] is False
    assert enabled["spec"]["enabled"] is True
    assert enabled["spec"]["parameters"] == GPU_PARAMETERS[module]


def test_an_operator_may_change_other_labels_and_annotations_of_a_gpu_module_activation(admin, operator):
    gpu_activation_by_the_administrator(admin, "admission-amd", "amd-gpu", **{f"{VALIDATION_PREFIX}run-1": "{}"})

    patched = merge_patch(
        operator,
        "admission-amd",
        {"metadata": {"annotations": {"example.com/note": "rack 2"}, "labels": {"tier": "lab"}}},
    )

    assert patched["metadata"]["annotations"]["example.com/note"] == "rack 2"
    assert patched["metadata"]["annotations"][f"{VALIDATION_PREFIX}run-1"] == "{}"


# --- what an operator may not do -----------------------------------------------------------


@pytest.mark.parametrize("module", GPU_MODULES)
def test_an_operator_may_not_create_a_gpu_module_activation_with_parameters(operator, module):
    field = min(GPU_PARAMETERS[module])
    refusal = refused(
        lambda: create(
            operator, activation(f"admission-{module}", module, parameters={field: GPU_PARAMETERS[module][field]})
        )
    )

    assert refusal.code == 403
    assert parameters_refused(field, module) in refusal.message
    assert operator.get_or_none(MODULE_ACTIVATION, f"admission-{module}", SYSTEM_NAMESPACE) is None


@pytest.mark.parametrize("module", GPU_MODULES)
@pytest.mark.parametrize("change", ["changed", "added", "removed"])
def test_an_operator_may_not_change_add_or_remove_a_parameter_of_a_gpu_module(admin, operator, module, change):
    before = gpu_activation_by_the_administrator(admin, f"admission-{module}", module)
    field = min(GPU_PARAMETERS[module]) if change != "added" else "newSetting"
    value = {"changed": "other", "added": "on", "removed": None}[change]

    refusal = refused(lambda: merge_patch(operator, f"admission-{module}", {"spec": {"parameters": {field: value}}}))

    assert refusal.code == 403
    assert parameters_refused(field, module) in refusal.message
    assert admin.get(MODULE_ACTIVATION, f"admission-{module}", SYSTEM_NAMESPACE)["spec"] == before["spec"]


@pytest.mark.parametrize(
    ("module", "exclusive", "shared"),
    [("gpu", NVIDIA_EXCLUSIVE, NVIDIA_SHARED), ("amd-gpu", AMD_EXCLUSIVE, AMD_SHARED)],
)
def test_an_operator_may_not_change_gpu_sharing(admin, operator, module, exclusive, shared):
    gpu_activation_by_the_administrator(admin, f"admission-{module}", module)
    body = activation(f"admission-{module}", module, parameters={**GPU_PARAMETERS[module], "gpuSharing": shared})

    by_apply = refused(
        lambda: operator.apply(MODULE_ACTIVATION, body, field_manager="magicstick-dashboard", force=True)
    )
    by_put = refused(
        lambda: operator.request(
            "PUT",
            MODULE_ACTIVATION.object_path(f"admission-{module}", SYSTEM_NAMESPACE),
            body={
                **body,
                "metadata": {
                    **body["metadata"],
                    "resourceVersion": admin.get(MODULE_ACTIVATION, f"admission-{module}", SYSTEM_NAMESPACE)[
                        "metadata"
                    ]["resourceVersion"],
                },
            },
            content_type="application/json",
        )
    )

    for refusal in (by_apply, by_put):
        assert refusal.code == 403
        assert parameters_refused("gpuSharing", module) in refusal.message
    assert (
        admin.get(MODULE_ACTIVATION, f"admission-{module}", SYSTEM_NAMESPACE)["spec"]["parameters"]["gpuSharing"]
        == exclusive
    )


@pytest.mark.parametrize(
    ("spelling", "module"),
    [("NVIDIA_GPU", "gpu"), ("nvidiaGpu", "gpu"), ("AMD", "amd-gpu"), ("Intel Device Plugins", "intel-gpu")],
)
def test_an_operator_may_not_set_gpu_parameters_under_another_spelling_the_planner_reads_as_that_module(
    operator, spelling, module
):
    assert load_catalogs().modules.canonical(spelling) == module

    refusal = refused(
        lambda: create(operator, activation("admission-spelled", spelling, parameters={"gpuSharing": NVIDIA_EXCLUSIVE}))
    )

    assert refusal.code == 403
    assert parameters_refused("gpuSharing", module) in refusal.message


def test_an_operator_may_not_move_parameters_into_a_gpu_module(operator):
    create(operator, activation("admission-move", "litellm", parameters={"gpuSharing": NVIDIA_SHARED}))

    refusal = refused(lambda: merge_patch(operator, "admission-move", {"spec": {"module": "gpu"}}))

    assert refusal.code == 403
    assert parameters_refused("gpuSharing", "gpu") in refusal.message


@pytest.mark.parametrize("other", ["litellm", "amd-gpu"])
def test_an_operator_may_not_move_a_gpu_modules_parameters_to_another_module(admin, operator, other):
    gpu_activation_by_the_administrator(admin, "admission-gpu", "gpu")

    refusal = refused(lambda: merge_patch(operator, "admission-gpu", {"spec": {"module": other}}))

    assert refusal.code == 403
    assert (
        f"of the {'gpu' if other == 'litellm' else other} module may be changed {ADMINISTRATORS_ONLY}"
        in refusal.message
    )
    assert admin.get(MODULE_ACTIVATION, "admission-gpu", SYSTEM_NAMESPACE)["spec"]["module"] == "gpu"


@pytest.mark.parametrize("change", ["added", "changed", "removed"])
def test_an_operator_may_not_add_change_or_remove_a_device_validation_annotation(admin, operator, change):
    existing, added = f"{VALIDATION_PREFIX}run-1", f"{VALIDATION_PREFIX}run-2"
    gpu_activation_by_the_administrator(admin, "admission-amd", "amd-gpu", **{existing: '{"node":"halo"}'})
    key, value = {"added": (added, "{}"), "changed": (existing, '{"node":"other"}'), "removed": (existing, None)}[
        change
    ]

    refusal = refused(lambda: merge_patch(operator, "admission-amd", {"metadata": {"annotations": {key: value}}}))

    assert refusal.code == 403
    assert annotation_refused(key) in refusal.message
    assert (
        admin.get(MODULE_ACTIVATION, "admission-amd", SYSTEM_NAMESPACE)["metadata"]["annotations"][existing]
        == '{"node":"halo"}'
    )


def test_a_kubectl_user_meets_the_same_refusal(cluster, admin, installed, tmp_path):
    assert KUBECTL is not None, "kubectl is needed; see README, Tests"
    gpu_activation_by_the_administrator(admin, "admission-gpu", "gpu")
    kubeconfig = cluster.certificate_kubeconfig_path(*OPERATOR)

    answer = subprocess.run(
        [KUBECTL, f"--kubeconfig={kubeconfig}", f"--cache-dir={tmp_path}", "-n", SYSTEM_NAMESPACE, "patch", "moduleactivations.appliance.magicstick.dev", "admission-gpu",
         "--type=merge", "-p", '{"spec":{"parameters":{"gpuSharing":null}}}'],
        capture_output=True, text=True, check=False,
    )  # fmt: skip

    assert answer.returncode != 0
    assert parameters_refused("gpuSharing", "gpu") in answer.stderr


def test_an_operator_may_not_create_any_module_activation_with_a_device_validation_annotation(operator):
    key = f"{VALIDATION_PREFIX}run-1"

    refusal = refused(lambda: create(operator, activation("admission-basis", "basis", annotations={key: "{}"})))

    assert refusal.code == 403
    assert annotation_refused(key) in refusal.message


# --- administrators, viewers, the program ---------------------------------------------------


@pytest.mark.parametrize("module", GPU_MODULES)
def test_an_administrator_may_set_change_move_and_remove_every_administrator_only_field(administrator, module):
    name, key = f"admission-{module}", f"{VALIDATION_PREFIX}run-1"

    created = create(
        administrator, activation(name, module, parameters=dict(GPU_PARAMETERS[module]), annotations={key: "{}"})
    )
    changed = merge_patch(
        administrator,
        name,
        {
            "spec": {"parameters": {"gpuSharing": None, "validationRequest": "run-2"}},
            "metadata": {"annotations": {key: '{"node":"halo"}'}},
        },
    )
    moved = merge_patch(administrator, name, {"spec": {"module": "litellm"}, "metadata": {"annotations": {key: None}}})
    administrator.delete(MODULE_ACTIVATION, name, SYSTEM_NAMESPACE)

    assert created["spec"]["parameters"] == GPU_PARAMETERS[module]
    assert (
        "gpuSharing" not in changed["spec"]["parameters"]
        and changed["spec"]["parameters"]["validationRequest"] == "run-2"
    )
    assert changed["metadata"]["annotations"][key] == '{"node":"halo"}'
    assert moved["spec"]["module"] == "litellm" and key not in moved["metadata"].get("annotations", {})


def test_a_viewer_may_read_module_activations_and_role_based_access_control_refuses_every_write(admin, viewer):
    gpu_activation_by_the_administrator(admin, "admission-gpu", "gpu")

    read = viewer.get(MODULE_ACTIVATION, "admission-gpu", SYSTEM_NAMESPACE)
    refusals = {
        "create": refused(lambda: create(viewer, activation("admission-litellm", "litellm"))),
        "patch": refused(lambda: merge_patch(viewer, "admission-gpu", {"spec": {"enabled": False}})),
        "delete": refused(lambda: viewer.delete(MODULE_ACTIVATION, "admission-gpu", SYSTEM_NAMESPACE)),
    }

    assert read["spec"]["module"] == "gpu"
    for verb, refusal in refusals.items():
        assert refusal.code == 403
        assert f'cannot {verb} resource "moduleactivations"' in refusal.message
        assert ADMINISTRATORS_ONLY not in refusal.message


def test_the_programs_status_writer_is_not_refused_on_a_gpu_module_activation_with_administrator_only_fields(
    admin, program
):
    """The program's ServiceAccount, no administrator, writes the status of an activation whose
    spec an operator could not change. That the policy does not even match a status write is
    its rule (tests/deploy/test_admission_policy_manifest.py); the server cannot show it apart:
    a status write keeps spec and metadata as they were, so a matching policy would admit it too."""
    gpu_activation_by_the_administrator(admin, "admission-amd", "amd-gpu", **{f"{VALIDATION_PREFIX}run-1": "{}"})
    status = {
        "apiVersion": API_VERSION,
        "kind": "ModuleActivation",
        "metadata": {"name": "admission-amd", "namespace": SYSTEM_NAMESPACE},
        "status": {"phase": "Ready", "reason": "Ready", "message": "ok"},
    }

    written = program.apply(
        MODULE_ACTIVATION, status, field_manager=STATUS_FIELD_MANAGER, force=True, subresource="status"
    )

    assert written["status"]["phase"] == "Ready"
    assert written["spec"]["parameters"] == GPU_PARAMETERS["amd-gpu"]


def test_the_program_may_declare_a_seeded_gpu_module_activation_again_with_its_observed_spec(admin, program):
    """A converged run declares every seeded activation with the spec it observed: an UPDATE
    that changes no administrator-only field, so the policy admits the program's own apply."""
    observed = gpu_activation_by_the_administrator(
        admin, "admission-amd", "amd-gpu", **{f"{VALIDATION_PREFIX}run-1": "{}"}
    )
    declared = activation("admission-amd", "amd-gpu", parameters=observed["spec"]["parameters"])
    declared["metadata"]["labels"]["appliance.magicstick.dev/seeded"] = "true"

    applied = program.apply(MODULE_ACTIVATION, declared, field_manager="magicstick", force=True)

    assert applied["spec"] == observed["spec"]
    assert applied["metadata"]["annotations"][f"{VALIDATION_PREFIX}run-1"] == "{}"
