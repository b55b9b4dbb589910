"""The program in the cluster for real: the Pulumi Kubernetes Operator runs deploy/'s Stack on the real node.

The operator (tests/node/pko.py) starts the Stack's workspace pod from the workspace image, with
its agent and tini from the operator image, under the `magicstick-program` ServiceAccount with
nothing but deploy/'s RBAC; the agent runs `pulumi up --refresh` of the project baked into the
image, through the real CLI, the real Python language host and the real Kubernetes provider,
with the state on the node's disk (a hostPath volume the test can read). The cluster holds the
demo appliance (tests/e2e/world.py) without its Node and Pods, the program's CRDs and the demo's
resources applied before the Stack, as the README's first install has a user apply them.

The tests run in file order on one installation: those that change the Stack or stop the
operator come last.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from providers.kinds import APPLIANCE_KINDS, KUBEAI_MODEL, KUSTOMIZATION, POD, STACK
from services.reconcile_trigger.stack import RECONCILIATION_REQUEST
from tests.cluster.apiserver import ClusterInfo
from tests.images import LocalImage
from tests.node.node import RealNode
from tests.node.pko import (
    OPERATOR_DEPLOYMENT,
    OPERATOR_NAMESPACE,
    PROGRAM_ACCOUNT,
    PROGRAM_NAMESPACE,
    STACK_NAME,
    WORKSPACE_POD,
    condition,
    install_and_run,
    succeeded,
)
from tests.node.rollout import pod_states, wait_for
from tests.services.reconcile_trigger.world import ready_condition, stalled_condition
from tests.support.watching import watch_until_gone

EDIT_SECONDS: Final = 300
RESYNC_SECONDS: Final = 60
"""The shortest resync PKO accepts; deploy/stack.yaml's 300 s would only make the test wait."""
STALL_SECONDS: Final = 600
"""Three failed updates with PKO's cooldowns between them (30 s, then 90 s) and the runs themselves."""
MODEL_NAMESPACE: Final = "ai"
EDITED_ACTIVATION: Final = "qwen2505bcpu"
DRIFTED: Final = ("flux-system", "platform-basis")
"""A Kustomization the program generates (owned: it carries pulumi.com/patchForce)."""
APPLIANCE = APPLIANCE_KINDS["Appliance"]
MODEL_ACTIVATION = APPLIANCE_KINDS["ModelActivation"]
MERGE_PATCH: Final = "application/merge-patch+json"
JsonObject = dict[str, Any]


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(tmp_path_factory.mktemp("pulumi-state"))


@pytest.fixture(scope="module")
def operated(
    real_node: RealNode, node_cluster: ClusterInfo, operator_image: LocalImage, workspace_image: LocalImage,
    service_images: dict[str, LocalImage], state_dir: Path,
) -> Iterator[JsonObject]:  # fmt: skip
    """The Stack once its first update succeeded; afterwards the operator is removed, so later
    modules of the node's cluster see a Stack nobody runs."""
    yield install_and_run(
        real_node,
        node_cluster,
        operator=operator_image,
        workspace=workspace_image,
        trigger=service_images["reconcile-trigger"],
        state=state_dir,
    )
    with contextlib.suppress(Exception):
        real_node.admin.request(
            "DELETE", f"/apis/apps/v1/namespaces/{OPERATOR_NAMESPACE}/deployments/{OPERATOR_DEPLOYMENT}"
        )


def _stack(node: RealNode) -> JsonObject:
    return node.admin.get(STACK, STACK_NAME, PROGRAM_NAMESPACE)


def _update_name(stack: JsonObject) -> str | None:
    return ((stack.get("status") or {}).get("lastUpdate") or {}).get("name")


def _wait_stack(node: RealNode, done: Callable[[JsonObject], bool], seconds: float) -> JsonObject:
    return wait_for(node, STACK, PROGRAM_NAMESPACE, STACK_NAME, done, seconds)


def _patch_stack(node: RealNode, spec: JsonObject) -> int:
    """`kubectl patch --type merge` of the Stack's spec; the generation it makes."""
    patched = node.admin.request(
        "PATCH", STACK.object_path(STACK_NAME, PROGRAM_NAMESPACE), body={"spec": spec}, content_type=MERGE_PATCH
    )
    return int(patched["metadata"]["generation"])


def _request_run(node: RealNode) -> None:
    """What the reconcile trigger does: a new `pulumi.com/reconciliation-request` value."""
    body = {"metadata": {"annotations": {RECONCILIATION_REQUEST: f"test-{time.time_ns()}"}}}
    node.admin.request("PATCH", STACK.object_path(STACK_NAME, PROGRAM_NAMESPACE), body=body, content_type=MERGE_PATCH)


def _state_resources(state: Path) -> dict[str, str]:
    """URN -> creation time of every resource in the stack's checkpoint on the state volume."""
    (checkpoint,) = state.glob(".pulumi/stacks/*/appliance.json")
    deployment = json.loads(checkpoint.read_text())["checkpoint"]["latest"]
    return {resource["urn"]: resource.get("created", "") for resource in deployment.get("resources") or ()}


def _runtime_statuses(node: RealNode) -> dict[str, JsonObject]:
    return {
        f"{kind.kind}/{obj['metadata']['name']}": obj.get("status") or {}
        for kind in APPLIANCE_KINDS.values()
        if kind.namespaced
        for obj in node.admin.list(kind, namespace=PROGRAM_NAMESPACE)
    }


def test_the_stacks_first_update_succeeds_and_the_program_writes_the_appliance_status(
    real_node: RealNode, operated: JsonObject
) -> None:
    assert condition(operated, "Stalled") is None
    appliance = real_node.admin.get(APPLIANCE, "local", PROGRAM_NAMESPACE)
    status = appliance.get("status") or {}
    assert status.get("observedGeneration") == appliance["metadata"]["generation"], status
    assert status.get("phase"), status


def test_the_workspace_pod_runs_as_magicstick_program_and_lacks_no_permission(
    real_node: RealNode, operated: JsonObject
) -> None:
    pod = real_node.admin.get(POD, WORKSPACE_POD, PROGRAM_NAMESPACE)
    assert pod["spec"]["serviceAccountName"] == PROGRAM_ACCOUNT
    assert pod["spec"]["nodeName"] == real_node.name
    assert (pod.get("status") or {}).get("phase") == "Running", pod_states(real_node, PROGRAM_NAMESPACE)
    refused = {
        name: status
        for name, status in _runtime_statuses(real_node).items()
        if "forbidden" in json.dumps(status).lower()
    }
    assert refused == {}
    log = real_node.log_tail(PROGRAM_NAMESPACE, WORKSPACE_POD, lines=100_000)
    assert "objects planned" in log, "the workspace pod's log holds no output of the program's run"
    assert "forbidden" not in log.lower(), [line for line in log.splitlines() if "forbidden" in line.lower()][:5]


def test_an_edit_is_applied_through_the_reconcile_trigger_and_the_operator(
    real_node: RealNode, operated: JsonObject
) -> None:
    admin = real_node.admin
    activation = admin.get(MODEL_ACTIVATION, EDITED_ACTIVATION, PROGRAM_NAMESPACE)
    value = int((activation["spec"].get("local") or {}).get("maxNumSeqs") or 1) + 1
    edit = {
        "apiVersion": activation["apiVersion"],
        "kind": activation["kind"],
        "metadata": {"name": EDITED_ACTIVATION, "namespace": PROGRAM_NAMESPACE},
        "spec": {**activation["spec"], "local": {**(activation["spec"].get("local") or {}), "maxNumSeqs": value}},
    }
    admin.apply(MODEL_ACTIVATION, edit, field_manager="kubectl", force=False)

    def shows_edit(model: JsonObject) -> bool:
        return f"--max-num-seqs={value}" in (model.get("spec") or {}).get("args", ())

    wait_for(real_node, KUBEAI_MODEL, MODEL_NAMESPACE, EDITED_ACTIVATION, shows_edit, EDIT_SECONDS)


def test_a_restart_of_the_operator_and_the_workspace_pod_loses_no_state(
    real_node: RealNode, operated: JsonObject, state_dir: Path
) -> None:
    admin = real_node.admin
    _wait_stack(real_node, succeeded, EDIT_SECONDS)
    before = _state_resources(state_dir)
    last = _update_name(_stack(real_node))
    for pod in admin.list(POD, namespace=OPERATOR_NAMESPACE):
        admin.delete(POD, pod["metadata"]["name"], OPERATOR_NAMESPACE)
    admin.delete(POD, WORKSPACE_POD, PROGRAM_NAMESPACE)

    _request_run(real_node)
    _wait_stack(real_node, lambda stack: succeeded(stack) and _update_name(stack) != last, EDIT_SECONDS)

    after = _state_resources(state_dir)
    assert after.keys() == before.keys()
    assert {urn: after[urn] for urn in before} == before, "a resource was created again"


def test_the_resync_reruns_an_unchanged_program_and_its_refresh_takes_back_a_drifted_field(
    real_node: RealNode, operated: JsonObject
) -> None:
    admin = real_node.admin
    generation = _patch_stack(real_node, {"resyncFrequencySeconds": RESYNC_SECONDS})
    resynced_from = _update_name(
        _wait_stack(
            real_node, lambda s: succeeded(s) and s["status"].get("observedGeneration") == generation, EDIT_SECONDS
        )
    )

    resynced = _wait_stack(real_node, lambda s: succeeded(s) and _update_name(s) != resynced_from, 3 * RESYNC_SECONDS)
    assert resynced["metadata"]["generation"] == generation

    namespace, name = DRIFTED
    intended = admin.get(KUSTOMIZATION, name, namespace)["spec"]["interval"]
    drift = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"interval": "59m"},
    }
    admin.apply(KUSTOMIZATION, drift, field_manager="someone-else", force=True)
    wait_for(real_node, KUSTOMIZATION, namespace, name, lambda k: k["spec"]["interval"] == intended, 3 * RESYNC_SECONDS)


def test_a_failing_program_stalls_the_stack_and_the_next_good_spec_recovers_it(
    real_node: RealNode, operated: JsonObject
) -> None:
    broken = _patch_stack(real_node, {"config": {"magicstick:stackName": "Not_A_Stack_Name"}})

    stalled = _wait_stack(
        real_node,
        lambda s: (
            (condition(s, "Stalled") or {}).get("status") == "True" and s["status"].get("observedGeneration") == broken
        ),
        STALL_SECONDS,
    )
    assert condition(stalled, "Stalled") == {
        **stalled_condition(),
        "lastTransitionTime": condition(stalled, "Stalled")["lastTransitionTime"],
    }
    assert stalled["status"]["lastUpdate"]["state"] == "failed"
    assert "magicstick:stackName" in stalled["status"]["lastUpdate"].get("message", ""), stalled["status"]["lastUpdate"]

    fixed = _patch_stack(real_node, {"config": {"magicstick:stackName": STACK_NAME}})
    recovered = _wait_stack(
        real_node, lambda s: succeeded(s) and s["status"].get("observedGeneration") == fixed, EDIT_SECONDS
    )
    assert condition(recovered, "Stalled") is None
    assert condition(recovered, "Ready") == {
        **ready_condition(),
        "lastTransitionTime": condition(recovered, "Ready")["lastTransitionTime"],
    }
    _request_run(real_node)
    last = _update_name(recovered)
    _wait_stack(real_node, lambda s: succeeded(s) and _update_name(s) != last, EDIT_SECONDS)
    operator = (real_node.admin.get(APPLIANCE, "local", PROGRAM_NAMESPACE).get("status") or {}).get("operator") or {}
    assert operator.get("stack") == f"{PROGRAM_NAMESPACE}/{STACK_NAME}"
    assert (operator.get("lastUpdate") or {}).get("result") == "succeeded", operator


def test_deleting_the_stack_leaves_the_appliance_in_place(real_node: RealNode, operated: JsonObject) -> None:
    admin = real_node.admin
    models_before = sorted(m["metadata"]["name"] for m in admin.list(KUBEAI_MODEL, namespace=MODEL_NAMESPACE))
    admin.delete(STACK, STACK_NAME, PROGRAM_NAMESPACE)
    watch_until_gone(admin, STACK, PROGRAM_NAMESPACE, STACK_NAME, EDIT_SECONDS)
    assert sorted(m["metadata"]["name"] for m in admin.list(KUBEAI_MODEL, namespace=MODEL_NAMESPACE)) == models_before
    assert admin.get_or_none(APPLIANCE, "local", PROGRAM_NAMESPACE) is not None
    assert admin.get_or_none(KUSTOMIZATION, DRIFTED[1], DRIFTED[0]) is not None
