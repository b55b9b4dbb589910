"""The program in the cluster for real: the Pulumi Kubernetes Operator runs deploy/'s Stack on the real node.

The operator (tests/node/pko.py) starts the Stack's workspace pod from the workspace image, with
its agent and tini from the operator image, under the `magicstick-program` ServiceAccount with
nothing but deploy/'s RBAC; the agent runs `pulumi up` of the project baked into the image,
through the real CLI, the real Python language host and the real Kubernetes provider, with the
state on the node's disk. The cluster holds the demo appliance (tests/e2e/world.py) without its
Node and Pods (the node is real, and the scheduler would place the demo's Pods on it), with the
program's CRDs and the demo's resources applied before the Stack, as the README's first install
has a user apply them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from providers.kinds import APPLIANCE_KINDS, DEPLOYMENT, KUBEAI_MODEL, NODE, POD, STACK
from tests.cluster.apiserver import ClusterInfo, install_crds
from tests.e2e.lifecycle import OWN_CRDS
from tests.e2e.world import demo_documents, load, objects_of, prepare_cluster
from tests.images import LocalImage
from tests.node.manifests import apply_all
from tests.node.node import RealNode
from tests.node.pko import (
    OPERATOR_DEPLOYMENT,
    OPERATOR_NAMESPACE,
    PROGRAM_ACCOUNT,
    PROGRAM_NAMESPACE,
    STACK_NAME,
    WORKSPACE_POD,
    condition,
    create_passphrase,
    operator_documents,
    program_documents,
    state_volume,
    succeeded,
)
from tests.node.rollout import ROLLOUT_SECONDS, deployment_ready, pod_states, wait_for

FIRST_UPDATE_SECONDS: Final = 900
"""A new workspace pod, then the program's first `pulumi up` of the demo (about a minute of it)."""
EDIT_SECONDS: Final = 300
MODEL_NAMESPACE: Final = "ai"
EDITED_ACTIVATION: Final = "qwen2505bcpu"
APPLIANCE = APPLIANCE_KINDS["Appliance"]
MODEL_ACTIVATION = APPLIANCE_KINDS["ModelActivation"]


def _demo_world() -> list[dict[str, Any]]:
    """The demo's objects but its Node and Pods (a real node runs here)."""
    return [d for d in demo_documents() if d["kind"] not in (NODE.kind, POD.kind)]


def _explain(node: RealNode) -> str:
    return "\n".join((pod_states(node, OPERATOR_NAMESPACE), pod_states(node, PROGRAM_NAMESPACE)))


@pytest.fixture(scope="module")
def operated(
    real_node: RealNode, node_cluster: ClusterInfo, operator_image: LocalImage, workspace_image: LocalImage,
    service_images: dict[str, LocalImage], tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, Any]]:  # fmt: skip
    """The demo world, the operator and deploy/ applied; the Stack once its first update succeeded."""
    admin = real_node.admin
    world = _demo_world()
    prepare_cluster(node_cluster, admin, world)
    install_crds(node_cluster, [OWN_CRDS])
    load(admin, objects_of(world, own=False))
    load(admin, objects_of(world, own=True))
    apply_all(admin, operator_documents(operator_image), field_manager="kubectl")
    wait_for(real_node, DEPLOYMENT, OPERATOR_NAMESPACE, OPERATOR_DEPLOYMENT, deployment_ready, ROLLOUT_SECONDS)
    apply_all(admin, [state_volume(Path(tmp_path_factory.mktemp("state")))], field_manager="tests")
    create_passphrase(admin)
    apply_all(admin, program_documents(workspace_image, service_images["reconcile-trigger"]), field_manager="kubectl")
    stack = wait_for(real_node, STACK, PROGRAM_NAMESPACE, STACK_NAME, succeeded, FIRST_UPDATE_SECONDS)
    yield stack
    with contextlib.suppress(Exception):
        admin.delete(DEPLOYMENT, OPERATOR_DEPLOYMENT, OPERATOR_NAMESPACE)


def test_the_stacks_first_update_succeeds_and_the_program_writes_the_appliance_status(real_node: RealNode, operated: dict[str, Any]) -> None:
    assert condition(operated, "Stalled") is None
    appliance = real_node.admin.get(APPLIANCE, "local", PROGRAM_NAMESPACE)
    status = appliance.get("status") or {}
    assert status.get("observedGeneration") == appliance["metadata"]["generation"], status
    assert status.get("phase"), status


def test_the_workspace_pod_runs_the_program_as_magicstick_program(real_node: RealNode, operated: dict[str, Any]) -> None:
    pod = real_node.admin.get(POD, WORKSPACE_POD, PROGRAM_NAMESPACE)
    assert pod["spec"]["serviceAccountName"] == PROGRAM_ACCOUNT
    assert pod["spec"]["nodeName"] == real_node.name
    assert (pod.get("status") or {}).get("phase") == "Running", _explain(real_node)


def test_an_edit_is_applied_through_the_reconcile_trigger_and_the_operator(real_node: RealNode, operated: dict[str, Any]) -> None:
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

    def shows_edit(model: dict[str, Any]) -> bool:
        return f"--max-num-seqs={value}" in (model.get("spec") or {}).get("args", ())

    wait_for(real_node, KUBEAI_MODEL, MODEL_NAMESPACE, EDITED_ACTIVATION, shows_edit, EDIT_SECONDS)
