"""The Pulumi Kubernetes Operator on the real node, running the program as deploy/ ships it.

The operator is installed as its release installs it: the vendored CRDs (third_party/crds), then
the rest of its quickstart manifest (third_party/manifests), unmodified but for what a node
without a registry needs: the manager's image is the operator image that
scripts/images/build.sh makes from the toolchain's build of the same release, never pulled, and
`AGENT_IMAGE` names it for the workspace pods' init containers (upstream's default is the
registry image of the release). The program is `kubectl kustomize deploy/`, unmodified but for
the two image references (the workspace and the reconcile trigger). Its state claim is bound to
a hostPath PersistentVolume on the node (the node runs no storage provisioner), and the state
passphrase Secret is created as deploy/README.md tells a user to.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any, Final

from providers.kinds import CRD, DEPLOYMENT, NODE, POD, STACK
from providers.kube import KubeClient, ResourceKind
from tests.cluster.apiserver import ClusterInfo, install_crds
from tests.e2e.lifecycle import OWN_CRDS
from tests.e2e.world import demo_documents, objects_of, prepare_cluster
from tests.images import LocalImage
from tests.live.world import load
from tests.node.manifests import apply_all, documents_of, kustomize
from tests.node.node import RealNode
from tests.node.rollout import ROLLOUT_SECONDS, deployment_ready, wait_for
from tests.support.vendored import REPOSITORY_ROOT, VENDORED_CRDS, VENDORED_MANIFESTS

INSTALL_MANIFEST: Final = VENDORED_MANIFESTS / "pulumi-kubernetes-operator" / "install.yaml"
OPERATOR_CRDS: Final = VENDORED_CRDS / "pulumi-kubernetes-operator"
DEPLOY: Final = REPOSITORY_ROOT / "deploy"
OPERATOR_NAMESPACE: Final = "pulumi-kubernetes-operator"
OPERATOR_DEPLOYMENT: Final = "controller-manager"
PROGRAM_NAMESPACE: Final = "ai-system"
STACK_NAME: Final = "magicstick"
FIRST_UPDATE_SECONDS: Final = 900
"""A new workspace pod, then the program's first `pulumi up` of the demo (about a minute of it)."""
STATE_CLAIM: Final = "magicstick-state"
PASSPHRASE_SECRET: Final = "magicstick-state-passphrase"
PROGRAM_ACCOUNT: Final = "magicstick-program"
TRIGGER: Final = "magicstick-reconcile-trigger"
WORKSPACE_POD: Final = f"{STACK_NAME}-workspace-0"
"""PKO's StatefulSet `<workspace>-workspace` (the Workspace is named after the Stack) has one replica."""
SECRET: Final = ResourceKind(group="", version="v1", kind="Secret", plural="secrets", namespaced=True)
JsonObject = dict[str, Any]


def operator_documents(operator: LocalImage) -> list[JsonObject]:
    """install.yaml but its CRDs (the vendored ones go in first), with the manager's image the
    local one, never pulled, and the agent's the same."""
    documents = [document for document in documents_of(INSTALL_MANIFEST) if document["kind"] != CRD.kind]
    for document in documents:
        if document["kind"] == "Deployment" and document["metadata"]["name"] == OPERATOR_DEPLOYMENT:
            (container,) = document["spec"]["template"]["spec"]["containers"]
            container["image"] = operator.reference
            container["imagePullPolicy"] = "Never"
            container["env"] = [
                *container.get("env", ()),
                {"name": "AGENT_IMAGE", "value": operator.reference},
                {"name": "AGENT_IMAGE_PULL_POLICY", "value": "Never"},
            ]
    return documents


def program_documents(workspace: LocalImage, trigger: LocalImage) -> list[JsonObject]:
    """`kubectl kustomize deploy/` with the images built here in place of the CHANGEME references."""
    documents = kustomize(DEPLOY)
    for document in documents:
        if document["kind"] == STACK.kind:
            document["spec"]["workspaceTemplate"]["spec"]["image"] = workspace.reference
        elif document["kind"] == "Deployment" and document["metadata"]["name"] == TRIGGER:
            (container,) = document["spec"]["template"]["spec"]["containers"]
            container["image"] = trigger.reference
    return documents


def state_volume(directory: Path) -> JsonObject:
    """A hostPath PersistentVolume reserved for the state claim (what a provisioner would make)."""
    directory.mkdir(parents=True, exist_ok=True)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"{STATE_CLAIM}-{PROGRAM_NAMESPACE}"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "hostPath": {"path": str(directory), "type": "Directory"},
            "claimRef": {"namespace": PROGRAM_NAMESPACE, "name": STATE_CLAIM},
        },
    }


def create_passphrase(client: KubeClient) -> None:
    """The Secret deploy/README.md has a user create (`kubectl create secret generic`)."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": PASSPHRASE_SECRET, "namespace": PROGRAM_NAMESPACE},
        "stringData": {"passphrase": secrets.token_urlsafe(24)},
    }
    client.create(SECRET, secret, field_manager="kubectl-create")


def condition(stack: JsonObject, kind: str) -> JsonObject | None:
    return next((c for c in (stack.get("status") or {}).get("conditions") or () if c.get("type") == kind), None)


def succeeded(stack: JsonObject) -> bool:
    """PKO's Ready for the Stack's current generation, after an update that succeeded."""
    status = stack.get("status") or {}
    ready = condition(stack, "Ready")
    return (
        ready is not None
        and ready.get("status") == "True"
        and status.get("observedGeneration") == stack["metadata"]["generation"]
        and (status.get("lastUpdate") or {}).get("state") == "succeeded"
    )


def demo_world() -> list[JsonObject]:
    """The demo's objects but its Node and Pods (a real node runs here, and the scheduler would
    place the demo's Pods on it)."""
    return [d for d in demo_documents() if d["kind"] not in (NODE.kind, POD.kind)]


def install_and_run(
    node: RealNode,
    cluster: ClusterInfo,
    *,
    operator: LocalImage,
    workspace: LocalImage,
    trigger: LocalImage,
    state: Path,
) -> JsonObject:
    """A user's first install, in the README's order: the upstream CRDs and namespaces, the
    program's CRDs and the demo's resources, the operator, the state volume and passphrase, then
    `kubectl apply -k deploy/`. The Stack, once its first update succeeded."""
    admin = node.admin
    world = demo_world()
    prepare_cluster(cluster, admin, world)
    install_crds(cluster, [OWN_CRDS])
    load(admin, objects_of(world, own=False))
    load(admin, objects_of(world, own=True))
    install_crds(cluster, [OPERATOR_CRDS])
    apply_all(admin, operator_documents(operator), field_manager="kubectl")
    wait_for(node, DEPLOYMENT, OPERATOR_NAMESPACE, OPERATOR_DEPLOYMENT, deployment_ready, ROLLOUT_SECONDS)
    apply_all(admin, [state_volume(state)], field_manager="kubectl")
    create_passphrase(admin)
    apply_all(admin, program_documents(workspace, trigger), field_manager="kubectl")
    return wait_for(node, STACK, PROGRAM_NAMESPACE, STACK_NAME, succeeded, FIRST_UPDATE_SECONDS)
