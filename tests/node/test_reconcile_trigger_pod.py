"""The reconcile trigger as deploy/ ships it, running on the real node from its locally built image.

deploy/reconcile-trigger.yaml (ServiceAccount and Deployment) and deploy/reconcile-trigger-rbac.yaml
are applied unchanged but for the image, in the namespaces they name. The Pod talks to the API
server as its ServiceAccount, with the token the kubelet projects, through the `kubernetes`
Service that kube-proxy routes: nothing of the test reaches into it. Its readiness probe
(/readyz: every watch listed once) passes, the Deployment rolls out, and an edit of a
ModelActivation makes it request a run of the Stack, as PKO would see it.
"""

from __future__ import annotations

from typing import Any, Final

import pytest

from providers.kinds import CRD, DEPLOYMENT, MODEL_ACTIVATION
from providers.kube import ResourceKind
from services.reconcile_trigger.stack import STACK, StackRef
from tests.cluster.apiserver import ClusterInfo, create_namespace, install_crds
from tests.e2e.lifecycle import OWN_CRDS
from tests.images import LocalImage
from tests.node.manifests import apply_all, documents_of
from tests.node.node import RealNode
from tests.node.pko import DEPLOY, TRIGGER
from tests.node.rollout import ROLLOUT_SECONDS, deployment_ready, wait_for
from tests.services.reconcile_trigger.world import STACK_CRD_FILE, create_stack, model_activation, stack_request_after

NAMESPACES: Final = ("ai-system", "ai", "flux-system", "identity-system")
REQUEST_SECONDS: Final = 60


def _with_image(document: dict[str, Any], image: LocalImage) -> dict[str, Any]:
    if document["kind"] == "Deployment":
        (container,) = document["spec"]["template"]["spec"]["containers"]
        container["image"] = image.reference
    return document


@pytest.fixture(scope="module")
def trigger_world(real_node: RealNode, node_cluster: ClusterInfo) -> StackRef:
    for namespace in NAMESPACES:
        if (
            real_node.admin.get_or_none(
                ResourceKind(group="", version="v1", kind="Namespace", plural="namespaces", namespaced=False), namespace
            )
            is None
        ):
            create_namespace(node_cluster, namespace)
    if real_node.admin.get_or_none(CRD, "stacks.pulumi.com") is None:
        install_crds(node_cluster, [STACK_CRD_FILE, OWN_CRDS])
    return create_stack(real_node.admin, "ai-system")


def test_the_trigger_deployment_rolls_out_and_requests_a_run_when_a_model_activation_changes(
    real_node: RealNode, service_images: dict[str, LocalImage], trigger_world: StackRef
) -> None:
    for path in (DEPLOY / "reconcile-trigger-rbac.yaml", DEPLOY / "reconcile-trigger.yaml"):
        apply_all(
            real_node.admin,
            [_with_image(document, service_images["reconcile-trigger"]) for document in documents_of(path)],
            field_manager="tests",
        )

    rolled_out = wait_for(real_node, DEPLOYMENT, "ai-system", TRIGGER, deployment_ready, ROLLOUT_SECONDS)
    assert rolled_out["status"]["availableReplicas"] == 1

    before = (
        real_node.admin.get(STACK, trigger_world.name, trigger_world.namespace)["metadata"]
        .get("annotations", {})
        .get("pulumi.com/reconciliation-request")
    )
    real_node.admin.apply(MODEL_ACTIVATION, model_activation("ai-system", "edited-on-the-node"), field_manager="tests")

    assert stack_request_after(real_node.admin, trigger_world, before, timeout=REQUEST_SECONDS)
