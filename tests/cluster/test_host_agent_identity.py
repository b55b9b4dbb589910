"""magic-cluster/platform/host-agent/ on the real API server: the host agent, authenticated by a
Node-bound token of its ServiceAccount, writes only for its own Node and reads only what it needs.

The shipped files are applied unmodified. Two Nodes exist (`halo`, a control-plane node, and
`other`); the TokenRequest API issues one token bound to each, one bound to nothing and one bound
to a Pod of the agent's ServiceAccount on `halo`, so the claims authentication.kubernetes.io/
node-name, node-uid, pod-name and pod-uid are those the API server gives. kube-apiserver's own
admission plugin evaluates the policies' CEL and its RBAC authorizer answers `auth can-i`
(SelfSubjectAccessReview, as each token). Refusals are asserted by their code (403) and by the
words of the message that names the rule. The policies match the host agent's ServiceAccount
only, so they stay installed for the session's other tests.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, Final

import jwt
import pytest

from api.host_evidence import HOST_ANNOTATIONS
from api.meta import API_VERSION, GROUP
from providers.kinds import APPLIANCE_SETUP, HOST_OPERATION, NODE, POD
from providers.kube import Forbidden, KubeAccess, KubeClient, NotFound, ResourceKind, open_client
from services.host_agent.cluster import AgentCluster
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo, TestIdentity
from tests.deploy.manifests import SYSTEM_NAMESPACE, Permission, documents
from tests.deploy.program_identity import NAMESPACE, apply_all, ensure_namespaces, ensure_own_crds, wait_until_granted

KUBECTL: Final = shutil.which("kubectl")
HOST_AGENT_DIR: Final = "../magic-cluster/platform/host-agent"
SHIPPED_FILES: Final = ("serviceaccount.yaml", "rbac.yaml", "admission-policy.yaml")
NAMESPACE_FILE: Final = "namespace.yaml"
NETWORK_NAMESPACE: Final = "magicstick-host-network"
"""The namespace of the network Secrets (namespace.yaml; the agent's --network-namespace default)."""
AGENT: Final = "magicstick-host-agent"
AGENT_USER: Final = f"system:serviceaccount:{SYSTEM_NAMESPACE}:{AGENT}"
AGENT_GROUPS: Final = ("system:serviceaccounts", f"system:serviceaccounts:{SYSTEM_NAMESPACE}", "system:authenticated")
SETUP_NAMESPACE: Final = "identity-system"
FIELD_MANAGER: Final = "magicstick-host-agent"
MERGE_PATCH: Final = "application/merge-patch+json"
TOKEN_SECONDS: Final = 3600

EVIDENCE: Final = "appliance.magicstick.dev/host-evidence"
PLANS: Final = "appliance.magicstick.dev/host-plans"
HALO: Final = "halo"
OTHER: Final = "other"
CONTROL_PLANE: Final = "node-role.kubernetes.io/control-plane"
NFD_LABEL: Final = "feature.node.kubernetes.io/pci-10de.present"
NFD_MANAGER: Final = "nfd-master"
IMPOSTOR_POD: Final = "host-agent-impostor"
API_AUDIENCE: Final = "https://kubernetes.default.svc.cluster.local"
"""The test server's --service-account-issuer, hence its API audience (no --api-audiences)."""
TOKEN_MAX_SECONDS: Final = 7 * 24 * 3600
TEN_YEARS_SECONDS: Final = 10 * 365 * 24 * 3600
TEST_LABEL: Final = "tests.magicstick.dev/host-agent-identity"
ADMISSION_ATTEMPTS: Final = 2000
"""A bound in requests (no sleep): each attempt is a round trip to the server."""

SECRET: Final = ResourceKind(group="", version="v1", kind="Secret", plural="secrets", namespaced=True)
SERVICE_ACCOUNT_KIND: Final = ResourceKind(
    group="", version="v1", kind="ServiceAccount", plural="serviceaccounts", namespaced=True
)
TOKEN_PATH: Final = SERVICE_ACCOUNT_KIND.object_path(AGENT, SYSTEM_NAMESPACE) + "/token"

NOT_BOUND: Final = "the host agent's token must be bound to its Node"
OWN_NODE_ONLY: Final = "the host agent may change only the Node its token is bound to"
HOST_ANNOTATIONS_ONLY: Final = "the host agent may change only the host annotations of its Node, not"
ANOTHER_NODES_OPERATION: Final = "a HostOperation bound to another node"
SETUP_LOCAL_ONLY: Final = "the host agent may create ApplianceSetup identity-system/local only"
FIRST_STATUS_ONLY: Final = "the host agent may write only the first status of ApplianceSetup identity-system/local"
FIRST_PHASES: Final = "has phase Pending or CompletedLegacy"
OWN_NODE_TOKENS_ONLY: Final = "the host agent may request only tokens bound to the Node its token is bound to"
NOT_A_POD: Final = "the host agent's token must be bound to its Node, not to a Pod"
TOKEN_LIFETIME: Final = "the host agent may request tokens valid for at most 604800 seconds (7 days), not"
TOKEN_AUDIENCE: Final = (
    "the host agent may request tokens for the API server's own audience only (leave spec.audiences empty), not"
)
OWN_FIELD_MANAGER: Final = "the host agent changes its Node with field manager magicstick-host-agent only, not"
OTHER_MANAGERS_ENTRY: Final = "the host agent may not change another manager's metadata.managedFields entry, not"
OWN_ENTRY_ANNOTATIONS_ONLY: Final = (
    "the host agent's own metadata.managedFields entry may own only the host annotations of its Node"
)
CONTROL_PLANE_ONLY: Final = "only the host agent of a control-plane node (label node-role.kubernetes.io/control-plane)"

SETUP_SPEC: Final = {"setupVersion": "v1", "installationId": "11111111-2222-3333-4444-555555555555"}


def shipped(name: str) -> list[dict[str, Any]]:
    return documents(f"{HOST_AGENT_DIR}/{name}")


def refused(write: Callable[[], object]) -> Forbidden:
    """The 403 a request meets."""
    with pytest.raises(Forbidden) as refusal:
        write()
    return refusal.value


def token_request(
    bound_to: dict[str, Any] | None, *, seconds: int = TOKEN_SECONDS, audiences: list[str] | None = None
) -> dict[str, Any]:
    """A TokenRequest for the agent's ServiceAccount, bound to `bound_to` (a Node or a Pod; None:
    to nothing); no audiences means the API server's own."""
    spec: dict[str, Any] = {"expirationSeconds": seconds}
    if bound_to is not None:
        metadata = bound_to["metadata"]
        spec["boundObjectRef"] = {
            "apiVersion": "v1",
            "kind": bound_to.get("kind", "Node"),
            "name": metadata["name"],
            "uid": metadata["uid"],
        }
    if audiences is not None:
        spec["audiences"] = audiences
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}


def request_token(client: KubeClient, bound_to: dict[str, Any] | None, **options: Any) -> dict[str, Any]:
    return client.request("POST", TOKEN_PATH, body=token_request(bound_to, **options), content_type="application/json")


def review_token(admin: KubeClient, token: str) -> dict[str, Any]:
    """The API server's TokenReview of `token`: its status (authenticated, user, audiences)."""
    review = admin.request(
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}},
        content_type="application/json",
    )
    return dict(review["status"])


def can_i(client: KubeClient, verb: str, resource: str, namespace: str | None) -> bool:
    """`kubectl auth can-i VERB RESOURCE [-n NAMESPACE]` as the client's token: a SelfSubjectAccessReview."""
    attributes: dict[str, str] = {"verb": verb, "group": "", "resource": resource}
    if namespace is not None:
        attributes["namespace"] = namespace
    review = client.request(
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        body={
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        },
        content_type="application/json",
    )
    return bool(review["status"].get("allowed"))


def annotate(
    client: KubeClient, node: str, patch: dict[str, Any], *, field_manager: str = FIELD_MANAGER
) -> dict[str, Any]:
    return client.request(
        "PATCH", NODE.object_path(node), params={"fieldManager": field_manager}, body=patch, content_type=MERGE_PATCH
    )


def host_operation(name: str, node: dict[str, Any]) -> dict[str, Any]:
    spec = {
        "action": "reboot",
        "nodeName": node["metadata"]["name"],
        "nodeUID": node["metadata"]["uid"],
        "bootID": "boot-1",
        "requestID": "req-1",
        "acknowledgeDisruption": True,
    }
    metadata = {"name": name, "namespace": SYSTEM_NAMESPACE, "labels": {TEST_LABEL: "true"}}
    return {"apiVersion": API_VERSION, "kind": "HostOperation", "metadata": metadata, "spec": spec}


def write_operation_status(client: KubeClient, name: str, phase: str = "Running") -> dict[str, Any]:
    """As the agent writes it: the whole status by server-side apply."""
    body = {
        "apiVersion": API_VERSION,
        "kind": "HostOperation",
        "metadata": {"name": name, "namespace": SYSTEM_NAMESPACE},
        "status": {"phase": phase, "reason": phase, "message": "example"},
    }
    return client.apply(HOST_OPERATION, body, field_manager=FIELD_MANAGER, subresource="status")


def create_setup(client: KubeClient, name: str = "local") -> dict[str, Any]:
    body = {
        "apiVersion": API_VERSION,
        "kind": "ApplianceSetup",
        "metadata": {"name": name, "namespace": SETUP_NAMESPACE},
        "spec": SETUP_SPEC,
    }
    return client.create(APPLIANCE_SETUP, body, field_manager=FIELD_MANAGER)


def write_setup_status(client: KubeClient, phase: str, name: str = "local") -> dict[str, Any]:
    body = {
        "apiVersion": API_VERSION,
        "kind": "ApplianceSetup",
        "metadata": {"name": name, "namespace": SETUP_NAMESPACE},
        "status": {"phase": phase, "observedGeneration": 1},
    }
    return client.apply(APPLIANCE_SETUP, body, field_manager=FIELD_MANAGER, subresource="status")


@contextlib.contextmanager
def client_with_token(cluster: ClusterInfo, token: str) -> Iterator[KubeClient]:
    """A client holding `token`; the kubeconfig is passed as contents (every token of the agent
    has the same user name, hence the same kubeconfig file)."""
    identity = TestIdentity(name=AGENT_USER, token=token, groups=AGENT_GROUPS)
    with open_client(KubeAccess(kubeconfig=cluster.kubeconfig_path(identity).read_text())) as client:
        yield client


def wait_for_setup_policy(other_agent: KubeClient) -> None:
    """Until the setup policy and its Node parameters are in force: a dry-run create of
    ApplianceSetup/local by the agent of `other` (no control-plane node) is refused by it."""
    body = {
        "apiVersion": API_VERSION,
        "kind": "ApplianceSetup",
        "metadata": {"name": "local", "namespace": SETUP_NAMESPACE},
        "spec": SETUP_SPEC,
    }
    for _ in range(ADMISSION_ATTEMPTS):
        try:
            other_agent.request(
                "POST", APPLIANCE_SETUP.collection_path(SETUP_NAMESPACE), params={"dryRun": "All", "fieldManager": FIELD_MANAGER},
                body=body, content_type="application/json",
            )  # fmt: skip
        except Forbidden as refusal:
            if CONTROL_PLANE_ONLY in refusal.message:
                return
    raise AssertionError(f"the setup policy was still not in force after {ADMISSION_ATTEMPTS} requests")


def wait_for_policy(unbound: KubeClient) -> None:
    """Until the admission plugin has the policy and its binding: a dry-run annotation of a Node
    with the unbound token is refused by the policy (before that, by RBAC or not at all)."""
    for _ in range(ADMISSION_ATTEMPTS):
        try:
            unbound.request(
                "PATCH",
                NODE.object_path(HALO),
                params={"dryRun": "All"},
                body={"metadata": {"annotations": {EVIDENCE: "{}"}}},
                content_type=MERGE_PATCH,
            )
        except Forbidden as refusal:
            if NOT_BOUND in refusal.message:
                return
    raise AssertionError(f"the policy was still not in force after {ADMISSION_ATTEMPTS} requests")


# --- the cluster: the shipped files, two Nodes, three tokens ---------------------------------


@pytest.fixture(scope="module")
def admin(cluster: ClusterInfo) -> Iterator[KubeClient]:
    with open_client(KubeAccess(kubeconfig=str(cluster.kubeconfig_path(ADMIN_USER)))) as client:
        yield client


@pytest.fixture(scope="module")
def nodes(
    cluster: ClusterInfo, admin: KubeClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, dict[str, Any]]]:
    """The namespaces, the program's CRDs, the shipped files, and the Nodes `halo` (a control-plane
    node, with an annotation) and `other` (without labels or annotations), removed again at the end."""
    ensure_namespaces(admin)
    for namespace in shipped(NAMESPACE_FILE):
        admin.apply(NAMESPACE, namespace, field_manager="kubectl")
    ensure_own_crds(cluster, admin, tmp_path_factory.mktemp("own-crds"))
    apply_all(admin, [obj for name in SHIPPED_FILES for obj in shipped(name)])
    metadata: dict[str, dict[str, Any]] = {
        HALO: {
            "name": HALO,
            "labels": {"kubernetes.io/hostname": HALO, CONTROL_PLANE: ""},
            "annotations": {"example.com/rack": "1"},
        },
        OTHER: {"name": OTHER},
    }
    created = {
        name: admin.create(NODE, {"apiVersion": "v1", "kind": "Node", "metadata": meta}, field_manager="kubectl-create")
        for name, meta in metadata.items()
    }
    yield created
    for name in created:
        with contextlib.suppress(NotFound):
            admin.delete(NODE, name)


@pytest.fixture(scope="module")
def granted(cluster: ClusterInfo, nodes: dict[str, dict[str, Any]]) -> None:
    """Until the authorizer's cache has the roles (a Role's rules arrive together)."""
    identity = TestIdentity(name=AGENT_USER, token="", groups=AGENT_GROUPS)
    wait_until_granted(
        cluster,
        identity,
        [
            Permission("patch", "", "nodes"),
            Permission("patch", GROUP, "hostoperations/status", SYSTEM_NAMESPACE),
            Permission("create", GROUP, "appliancesetups", SETUP_NAMESPACE),
            Permission("patch", GROUP, "appliancesetups/status", SETUP_NAMESPACE),
        ],
    )


@pytest.fixture(scope="module")
def network_secrets_granted(cluster: ClusterInfo, granted: None) -> None:
    """Until the authorizer's cache has the Role of the network namespace."""
    identity = TestIdentity(name=AGENT_USER, token="", groups=AGENT_GROUPS)
    wait_until_granted(cluster, identity, [Permission("get", "", "secrets", NETWORK_NAMESPACE)])


@pytest.fixture(scope="module")
def unbound(cluster: ClusterInfo, admin: KubeClient, granted: None) -> Iterator[KubeClient]:
    """The agent's ServiceAccount with a token bound to nothing; the policy in force."""
    with client_with_token(cluster, request_token(admin, None)["status"]["token"]) as client:
        wait_for_policy(client)
        yield client


@pytest.fixture(scope="module")
def halo_token(admin: KubeClient, nodes: dict[str, dict[str, Any]], unbound: KubeClient) -> str:
    """A token bound to `halo`, as install.sh requests it."""
    return str(request_token(admin, nodes[HALO])["status"]["token"])


@pytest.fixture(scope="module")
def halo_agent(cluster: ClusterInfo, halo_token: str) -> Iterator[KubeClient]:
    with client_with_token(cluster, halo_token) as client:
        yield client


@pytest.fixture(scope="module")
def other_agent(
    cluster: ClusterInfo, admin: KubeClient, nodes: dict[str, dict[str, Any]], unbound: KubeClient
) -> Iterator[KubeClient]:
    with client_with_token(cluster, request_token(admin, nodes[OTHER])["status"]["token"]) as client:
        yield client


@pytest.fixture(scope="module")
def setup_policy(other_agent: KubeClient) -> None:
    wait_for_setup_policy(other_agent)


@pytest.fixture(scope="module")
def impostor_pod(admin: KubeClient, nodes: dict[str, dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """A Pod of the agent's ServiceAccount scheduled on `halo`, as a Deployment the program may
    create would make one (no kubelet runs it); deleted at once at the end."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": IMPOSTOR_POD, "namespace": SYSTEM_NAMESPACE},
        "spec": {
            "serviceAccountName": AGENT,
            "automountServiceAccountToken": False,
            "nodeName": HALO,
            "containers": [{"name": "main", "image": "registry.example.com/impostor:CHANGEME"}],
        },
    }
    yield admin.create(POD, pod, field_manager="kubectl-create")
    with contextlib.suppress(NotFound):
        admin.request(
            "DELETE", POD.object_path(IMPOSTOR_POD, SYSTEM_NAMESPACE),
            body={"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}, content_type="application/json",
        )  # fmt: skip


@pytest.fixture(scope="module")
def pod_bound(
    cluster: ClusterInfo, admin: KubeClient, impostor_pod: dict[str, Any], unbound: KubeClient
) -> Iterator[KubeClient]:
    """The agent's ServiceAccount with a token bound to the Pod on `halo` (a Pod spec may opt
    into a token of its ServiceAccount)."""
    with client_with_token(cluster, request_token(admin, impostor_pod)["status"]["token"]) as client:
        yield client


OUTSIDE_SECRETS: Final = (
    (SYSTEM_NAMESPACE, "magicstick-state-passphrase"),
    (SETUP_NAMESPACE, "host-agent-test-oidc-client"),
    ("ai", "host-agent-test-llm-api-key"),
    ("default", "host-agent-test-secret"),
    ("kube-system", "host-agent-test-secret"),
)
"""Secrets the agent must never read: the state passphrase of ai-system, an OIDC client secret,
an API key of the workloads namespace, and Secrets of default and kube-system."""


@pytest.fixture(scope="module")
def outside_secrets(admin: KubeClient, nodes: dict[str, dict[str, Any]]) -> Iterator[None]:
    """OUTSIDE_SECRETS exist (those this module made are deleted at the end)."""
    created = []
    for namespace, name in OUTSIDE_SECRETS:
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace},
            "stringData": {"value": "CHANGEME"},
        }
        if admin.get_or_none(SECRET, name, namespace) is None:
            admin.create(SECRET, secret, field_manager="kubectl-create")
            created.append((namespace, name))
    yield
    for namespace, name in created:
        with contextlib.suppress(NotFound):
            admin.delete(SECRET, name, namespace)


@pytest.fixture
def nfd_labelled(admin: KubeClient, nodes: dict[str, dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """`halo` with Node Feature Discovery's NVIDIA label, set by NFD's field manager; removed after."""
    yield annotate(admin, HALO, {"metadata": {"labels": {NFD_LABEL: "true"}}}, field_manager=NFD_MANAGER)
    annotate(admin, HALO, {"metadata": {"labels": {NFD_LABEL: None}}}, field_manager=NFD_MANAGER)


@pytest.fixture(autouse=True)
def cleaned(admin: KubeClient, nodes: dict[str, dict[str, Any]]) -> Iterator[None]:
    """Each test starts with the Nodes as created, and without the objects of the one before."""
    yield
    for name in nodes:
        annotate(admin, name, {"metadata": {"annotations": {EVIDENCE: None, PLANS: None}}})
    for operation in admin.list(HOST_OPERATION, namespace=SYSTEM_NAMESPACE, label_selector=f"{TEST_LABEL}=true"):
        with contextlib.suppress(NotFound):
            admin.delete(HOST_OPERATION, operation["metadata"]["name"], SYSTEM_NAMESPACE)
    for name in ("local", "other"):
        with contextlib.suppress(NotFound):
            admin.delete(APPLIANCE_SETUP, name, SETUP_NAMESPACE)
    with contextlib.suppress(NotFound):
        admin.delete(SECRET, "host-agent-wifi", NETWORK_NAMESPACE)


@pytest.fixture
def operations(admin: KubeClient, nodes: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """One HostOperation bound to each Node, as an administrator requests it."""
    return {
        name: admin.create(HOST_OPERATION, host_operation(f"host-agent-{name}", node), field_manager="kubectl-create")
        for name, node in nodes.items()
    }


# --- its Node --------------------------------------------------------------------------------


def test_the_agent_may_set_the_host_evidence_annotation_of_its_own_node(halo_agent, admin):
    patched = annotate(halo_agent, HALO, {"metadata": {"annotations": {EVIDENCE: '{"example": "CHANGEME"}'}}})

    assert patched["metadata"]["annotations"][EVIDENCE] == '{"example": "CHANGEME"}'
    assert admin.get(NODE, HALO)["metadata"]["annotations"]["example.com/rack"] == "1"


def test_the_agent_may_add_and_remove_its_host_plans_annotation(halo_agent):
    added = annotate(halo_agent, HALO, {"metadata": {"annotations": {PLANS: "[]"}}})
    removed = annotate(halo_agent, HALO, {"metadata": {"annotations": {PLANS: None}}})

    assert added["metadata"]["annotations"][PLANS] == "[]"
    assert PLANS not in removed["metadata"]["annotations"]


def test_the_agent_may_set_every_host_annotation_of_its_own_node(halo_agent):
    values = {key: "1" for key in HOST_ANNOTATIONS}

    patched = annotate(halo_agent, HALO, {"metadata": {"annotations": values}})

    assert {key: patched["metadata"]["annotations"][key] for key in HOST_ANNOTATIONS} == values


def test_the_agent_may_annotate_its_own_node_when_the_node_has_no_labels_or_annotations(other_agent, nodes):
    assert "labels" not in nodes[OTHER]["metadata"] and "annotations" not in nodes[OTHER]["metadata"]

    patched = annotate(other_agent, OTHER, {"metadata": {"annotations": {EVIDENCE: "{}"}}})

    assert patched["metadata"]["annotations"] == {EVIDENCE: "{}"}


def test_the_agent_may_not_annotate_another_node(halo_agent, admin):
    refusal = refused(lambda: annotate(halo_agent, OTHER, {"metadata": {"annotations": {EVIDENCE: "{}"}}}))

    assert refusal.code == 403
    assert f"{OWN_NODE_ONLY} ({HALO}, uid" in refusal.message
    assert f"not Node {OTHER}" in refusal.message
    assert EVIDENCE not in (admin.get(NODE, OTHER)["metadata"].get("annotations") or {})


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        pytest.param(
            {"metadata": {"labels": {"example.com/tier": "lab"}}},
            "metadata.labels[example.com/tier]",
            id="adding a label",
        ),
        pytest.param(
            {"metadata": {"labels": {"kubernetes.io/hostname": None}}},
            "metadata.labels[kubernetes.io/hostname]",
            id="removing a label",
        ),
        pytest.param(
            {"metadata": {"annotations": {"example.com/rack": "2"}}},
            "metadata.annotations[example.com/rack]",
            id="another annotation",
        ),
        pytest.param(
            {"metadata": {"labels": {"example.com/tier": "lab"}, "annotations": {EVIDENCE: "{}"}}},
            "metadata.labels[example.com/tier]",
            id="a label beside its annotation",
        ),
        pytest.param({"spec": {"unschedulable": True}}, "spec", id="its spec"),
        pytest.param({"metadata": {"finalizers": ["example.com/keep"]}}, "metadata.finalizers", id="a finalizer"),
        pytest.param(
            {
                "metadata": {
                    "ownerReferences": [
                        {
                            "apiVersion": "v1",
                            "kind": "Node",
                            "name": OTHER,
                            "uid": "11111111-2222-3333-4444-555555555555",
                        }
                    ]
                }
            },
            "metadata.ownerReferences",
            id="an owner reference",
        ),
    ],
)
def test_the_agent_may_change_nothing_of_its_own_node_but_its_host_annotations(halo_agent, admin, patch, field):
    before = admin.get(NODE, HALO)

    refusal = refused(lambda: annotate(halo_agent, HALO, patch))

    assert refusal.code == 403
    assert f"{HOST_ANNOTATIONS_ONLY} {field}" in refusal.message
    assert admin.get(NODE, HALO)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_the_policy_leaves_every_other_identity_alone(admin):
    patched = annotate(admin, HALO, {"metadata": {"labels": {"example.com/tier": "lab"}}})
    restored = annotate(admin, HALO, {"metadata": {"labels": {"example.com/tier": None}}})

    assert patched["metadata"]["labels"]["example.com/tier"] == "lab"
    assert "example.com/tier" not in restored["metadata"]["labels"]


# --- managedFields of its Node ------------------------------------------------------------------


def managed_entry(node: dict[str, Any], manager: str) -> dict[str, Any]:
    return next(entry for entry in node["metadata"]["managedFields"] if entry["manager"] == manager)


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_the_agent_may_not_claim_another_managers_label_as_its_own_in_managed_fields(halo_agent, admin, nfd_labelled):
    claimed = {
        "manager": FIELD_MANAGER, "operation": "Update", "apiVersion": "v1", "time": now_rfc3339(),
        "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {f"f:{NFD_LABEL}": {}}}},
    }  # fmt: skip
    managed = [entry for entry in nfd_labelled["metadata"]["managedFields"] if entry["manager"] != FIELD_MANAGER] + [
        claimed
    ]

    refusal = refused(lambda: annotate(halo_agent, HALO, {"metadata": {"managedFields": managed}}))

    assert refusal.code == 403
    assert OWN_ENTRY_ANNOTATIONS_ONLY in refusal.message
    assert admin.get(NODE, HALO)["metadata"]["resourceVersion"] == nfd_labelled["metadata"]["resourceVersion"]


def test_the_agent_may_not_take_a_label_out_of_another_managers_entry(halo_agent, admin, nfd_labelled):
    managed = [entry for entry in nfd_labelled["metadata"]["managedFields"] if entry["manager"] != NFD_MANAGER]
    managed.append({**managed_entry(nfd_labelled, NFD_MANAGER), "fieldsV1": {"f:metadata": {"f:labels": {}}}})

    refusal = refused(lambda: annotate(halo_agent, HALO, {"metadata": {"managedFields": managed}}))

    assert refusal.code == 403
    assert f"{OTHER_MANAGERS_ENTRY} {NFD_MANAGER}'s" in refusal.message
    assert managed_entry(admin.get(NODE, HALO), NFD_MANAGER) == managed_entry(nfd_labelled, NFD_MANAGER)


def test_the_agent_may_not_wipe_every_managed_fields_entry(halo_agent, admin, nfd_labelled):
    refusal = refused(lambda: annotate(halo_agent, HALO, {"metadata": {"managedFields": [{}]}}))

    assert refusal.code == 403
    assert OTHER_MANAGERS_ENTRY in refusal.message
    assert admin.get(NODE, HALO)["metadata"]["managedFields"] == nfd_labelled["metadata"]["managedFields"]


def test_the_agent_may_not_write_its_node_under_another_field_manager(halo_agent, nfd_labelled):
    refusal = refused(
        lambda: annotate(halo_agent, HALO, {"metadata": {"annotations": {EVIDENCE: "{}"}}}, field_manager=NFD_MANAGER)
    )

    assert refusal.code == 403
    assert f"{OWN_FIELD_MANAGER} {NFD_MANAGER}" in refusal.message


def others_entries(node: dict[str, Any]) -> list[dict[str, Any]]:
    entries = [entry for entry in node["metadata"]["managedFields"] if entry["manager"] != FIELD_MANAGER]
    return sorted(entries, key=lambda entry: (entry["manager"], entry["operation"], entry.get("subresource", "")))


def test_the_agents_own_patch_leaves_every_other_managers_entry_as_it_was(halo_agent, nfd_labelled):
    patched = annotate(halo_agent, HALO, {"metadata": {"annotations": {EVIDENCE: "{}", PLANS: "[]"}}})

    assert others_entries(patched) == others_entries(nfd_labelled)
    assert NFD_MANAGER in {entry["manager"] for entry in others_entries(patched)}
    owned = managed_entry(patched, FIELD_MANAGER)["fieldsV1"]["f:metadata"]["f:annotations"]
    assert {f"f:{EVIDENCE}", f"f:{PLANS}"} <= set(owned)


# --- HostOperations ---------------------------------------------------------------------------


def test_the_agent_may_write_the_status_of_a_host_operation_of_its_own_node(halo_agent, operations):
    written = write_operation_status(halo_agent, operations[HALO]["metadata"]["name"])

    assert written["status"]["phase"] == "Running"


def test_the_agent_may_not_write_the_status_of_a_host_operation_bound_to_another_node(halo_agent, admin, operations):
    name = operations[OTHER]["metadata"]["name"]

    refusal = refused(lambda: write_operation_status(halo_agent, name))

    assert refusal.code == 403
    assert f"not of {name}, {ANOTHER_NODES_OPERATION}" in refusal.message
    assert "status" not in admin.get(HOST_OPERATION, name, SYSTEM_NAMESPACE)


def test_the_agent_may_list_every_host_operation_as_reads_are_not_narrowed_by_admission(halo_agent, operations):
    listed = {
        operation["metadata"]["name"] for operation in halo_agent.list(HOST_OPERATION, namespace=SYSTEM_NAMESPACE)
    }

    assert {operation["metadata"]["name"] for operation in operations.values()} <= listed


# --- ApplianceSetup ---------------------------------------------------------------------------


def test_the_agent_may_create_appliance_setup_local(halo_agent):
    created = create_setup(halo_agent)

    assert created["metadata"]["name"] == "local"
    assert created["spec"] == SETUP_SPEC


def test_the_agent_may_not_create_an_appliance_setup_of_another_name(halo_agent, admin):
    refusal = refused(lambda: create_setup(halo_agent, "other"))

    assert refusal.code == 403
    assert f"{SETUP_LOCAL_ONLY}, not {SETUP_NAMESPACE}/other" in refusal.message
    assert admin.get_or_none(APPLIANCE_SETUP, "other", SETUP_NAMESPACE) is None


@pytest.mark.parametrize("phase", ["Pending", "CompletedLegacy"])
def test_the_agent_may_write_the_first_status_of_appliance_setup_local(halo_agent, phase):
    create_setup(halo_agent)

    written = write_setup_status(halo_agent, phase)

    assert written["status"]["phase"] == phase


def test_the_agent_may_not_write_a_status_once_appliance_setup_local_has_a_phase(halo_agent, admin):
    create_setup(halo_agent)
    write_setup_status(halo_agent, "Pending")

    refusal = refused(lambda: write_setup_status(halo_agent, "CompletedLegacy"))

    assert refusal.code == 403
    assert FIRST_STATUS_ONLY in refusal.message
    assert admin.get(APPLIANCE_SETUP, "local", SETUP_NAMESPACE)["status"]["phase"] == "Pending"


def test_the_agent_may_not_write_a_later_phase_as_the_first_status(halo_agent, admin):
    create_setup(halo_agent)

    refusal = refused(lambda: write_setup_status(halo_agent, "Completed"))

    assert refusal.code == 403
    assert FIRST_PHASES in refusal.message
    assert "status" not in admin.get(APPLIANCE_SETUP, "local", SETUP_NAMESPACE)


def test_the_agent_of_a_node_that_is_not_a_control_plane_node_may_not_create_appliance_setup_local(
    other_agent, admin, setup_policy
):
    refusal = refused(lambda: create_setup(other_agent))

    assert refusal.code == 403
    assert (
        f"{CONTROL_PLANE_ONLY} may create ApplianceSetup identity-system/local or write its first status, not the agent of Node {OTHER}"
        in refusal.message
    )
    assert admin.get_or_none(APPLIANCE_SETUP, "local", SETUP_NAMESPACE) is None


@pytest.mark.parametrize("phase", ["Pending", "CompletedLegacy"])
def test_the_agent_of_a_node_that_is_not_a_control_plane_node_may_not_write_the_first_status_of_appliance_setup_local(
    halo_agent, other_agent, admin, setup_policy, phase
):
    create_setup(halo_agent)

    refusal = refused(lambda: write_setup_status(other_agent, phase))

    assert refusal.code == 403
    assert CONTROL_PLANE_ONLY in refusal.message
    assert "status" not in admin.get(APPLIANCE_SETUP, "local", SETUP_NAMESPACE)


# --- its token --------------------------------------------------------------------------------


def test_the_agent_may_renew_its_token_bound_to_its_own_node(halo_agent, admin, nodes):
    issued = request_token(halo_agent, nodes[HALO])

    review = review_token(admin, issued["status"]["token"])
    user = review["user"]
    assert review["authenticated"] is True
    assert user["username"] == AGENT_USER
    assert user["extra"]["authentication.kubernetes.io/node-name"] == [HALO]
    assert user["extra"]["authentication.kubernetes.io/node-uid"] == [nodes[HALO]["metadata"]["uid"]]


def test_the_agents_own_renewal_request_for_the_longest_lifetime_is_admitted_for_the_api_server_only(
    halo_agent, admin, nodes
):
    cluster = AgentCluster(halo_agent, node_name=HALO, namespace=SYSTEM_NAMESPACE, setup_namespace=SETUP_NAMESPACE)

    token = cluster.node_bound_token(
        namespace=SYSTEM_NAMESPACE, service_account=AGENT, seconds=TOKEN_MAX_SECONDS, node=nodes[HALO]
    )

    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["exp"] - claims["iat"] == TOKEN_MAX_SECONDS
    assert review_token(admin, token)["audiences"] == [API_AUDIENCE]


def test_the_agent_may_name_the_api_servers_own_audience(halo_agent, nodes):
    issued = request_token(halo_agent, nodes[HALO], audiences=[API_AUDIENCE])

    assert issued["spec"]["audiences"] == [API_AUDIENCE]


@pytest.mark.parametrize(
    "seconds", [TEN_YEARS_SECONDS, TOKEN_MAX_SECONDS + 1], ids=["ten years", "a week and a second"]
)
def test_the_agent_may_not_request_a_token_that_lives_longer_than_a_week(halo_agent, nodes, seconds):
    refusal = refused(lambda: request_token(halo_agent, nodes[HALO], seconds=seconds))

    assert refusal.code == 403
    assert f"{TOKEN_LIFETIME} {seconds}" in refusal.message


@pytest.mark.parametrize("audiences", [["vault"], [API_AUDIENCE, "vault"]], ids=["vault", "the api server and vault"])
def test_the_agent_may_not_request_a_token_for_another_audience(halo_agent, nodes, audiences):
    refusal = refused(lambda: request_token(halo_agent, nodes[HALO], audiences=audiences))

    assert refusal.code == 403
    assert f"{TOKEN_AUDIENCE} vault" in refusal.message


@pytest.mark.parametrize("bound_to", [OTHER, None], ids=["another node", "nothing"])
def test_the_agent_may_not_request_a_token_bound_to_another_node_or_to_nothing(halo_agent, nodes, bound_to):
    refusal = refused(lambda: request_token(halo_agent, nodes[bound_to] if bound_to else None))

    assert refusal.code == 403
    assert (
        f"{OWN_NODE_TOKENS_ONLY} (boundObjectRef kind Node, name {HALO}, uid {nodes[HALO]['metadata']['uid']})"
        in refusal.message
    )


# --- a token bound to no Node -----------------------------------------------------------------


UNBOUND_WRITES: Final[dict[str, Callable[[KubeClient, dict[str, dict[str, Any]]], object]]] = {
    "annotating a node": lambda client, nodes: annotate(client, HALO, {"metadata": {"annotations": {EVIDENCE: "{}"}}}),
    "writing a host operation's status": lambda client, nodes: write_operation_status(client, f"host-agent-{HALO}"),
    "creating appliance setup local": lambda client, nodes: create_setup(client),
    "requesting a token": lambda client, nodes: request_token(client, nodes[HALO]),
}


@pytest.mark.parametrize("write", UNBOUND_WRITES)
def test_a_token_bound_to_no_node_is_refused_every_write(unbound, admin, nodes, operations, write):
    refusal = refused(lambda: UNBOUND_WRITES[write](unbound, nodes))

    assert refusal.code == 403
    assert NOT_BOUND in refusal.message
    assert admin.get_or_none(APPLIANCE_SETUP, "local", SETUP_NAMESPACE) is None
    assert "status" not in admin.get(HOST_OPERATION, f"host-agent-{HALO}", SYSTEM_NAMESPACE)


def test_a_token_bound_to_no_node_may_not_write_the_first_status_of_appliance_setup_local(unbound, halo_agent):
    create_setup(halo_agent)

    refusal = refused(lambda: write_setup_status(unbound, "Pending"))

    assert refusal.code == 403
    assert NOT_BOUND in refusal.message


# --- a token bound to a Pod -------------------------------------------------------------------


def test_a_pod_bound_token_carries_the_claims_of_its_pods_node(cluster, admin, impostor_pod, nodes):
    token = request_token(admin, impostor_pod)["status"]["token"]

    extra = review_token(admin, token)["user"]["extra"]

    assert extra["authentication.kubernetes.io/node-name"] == [HALO]
    assert extra["authentication.kubernetes.io/node-uid"] == [nodes[HALO]["metadata"]["uid"]]
    assert extra["authentication.kubernetes.io/pod-name"] == [IMPOSTOR_POD]


POD_BOUND_WRITES: Final[dict[str, Callable[[KubeClient, dict[str, dict[str, Any]]], object]]] = {
    "annotating its node's host evidence": lambda client, nodes: annotate(
        client, HALO, {"metadata": {"annotations": {EVIDENCE: "{}"}}}
    ),
    "writing a host operation's status of its node": lambda client, nodes: write_operation_status(
        client, f"host-agent-{HALO}", "Succeeded"
    ),
    "minting a token bound to its node": lambda client, nodes: request_token(client, nodes[HALO]),
    "creating appliance setup local": lambda client, nodes: create_setup(client),
}


@pytest.mark.parametrize("write", POD_BOUND_WRITES)
def test_a_token_bound_to_a_pod_on_a_node_is_refused_every_write_for_that_node(
    pod_bound, admin, nodes, operations, write
):
    refusal = refused(lambda: POD_BOUND_WRITES[write](pod_bound, nodes))

    assert refusal.code == 403
    assert NOT_A_POD in refusal.message
    assert EVIDENCE not in (admin.get(NODE, HALO)["metadata"].get("annotations") or {})
    assert "status" not in admin.get(HOST_OPERATION, f"host-agent-{HALO}", SYSTEM_NAMESPACE)
    assert admin.get_or_none(APPLIANCE_SETUP, "local", SETUP_NAMESPACE) is None


# --- reads ------------------------------------------------------------------------------------


def test_the_agent_may_get_a_network_secret_by_name_in_the_network_namespace(
    halo_agent, admin, network_secrets_granted
):
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "host-agent-wifi", "namespace": NETWORK_NAMESPACE},
        "stringData": {"interface": "wlan0", "ssid": "CHANGEME", "password": "CHANGEME"},
    }
    created = admin.create(SECRET, secret, field_manager="kubectl-create")

    read = halo_agent.get(SECRET, "host-agent-wifi", NETWORK_NAMESPACE)

    assert read["metadata"]["uid"] == created["metadata"]["uid"]


TOKENS: Final = ("a token bound to its node", "a token bound to nothing")


@pytest.fixture(params=TOKENS)
def any_token(request: pytest.FixtureRequest) -> KubeClient:
    """The agent's identity with a Node-bound token, then with an unbound one: admission sees no
    read, so RBAC alone must refuse both."""
    return request.getfixturevalue("halo_agent" if request.param == TOKENS[0] else "unbound")


@pytest.mark.parametrize(
    ("namespace", "name"), OUTSIDE_SECRETS, ids=[f"{namespace}/{name}" for namespace, name in OUTSIDE_SECRETS]
)
def test_no_token_of_the_agent_may_get_a_secret_outside_the_network_namespace(
    any_token, outside_secrets, namespace, name
):
    refusal = refused(lambda: any_token.get(SECRET, name, namespace))

    assert refusal.code == 403
    assert f'cannot get resource "secrets" in API group "" in the namespace "{namespace}"' in refusal.message


def test_kubectl_with_a_nodes_token_reads_neither_the_state_passphrase_nor_the_env_of_any_pod(
    cluster, halo_token, outside_secrets, tmp_path
):
    assert KUBECTL is not None, "kubectl is needed; see README, Tests"
    kubeconfig = cluster.kubeconfig_path(TestIdentity(name=AGENT_USER, token=halo_token, groups=AGENT_GROUPS))

    def kubectl(*arguments: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [KUBECTL, f"--kubeconfig={kubeconfig}", f"--cache-dir={tmp_path}", *arguments],
            capture_output=True,
            text=True,
            check=False,
        )

    can_i = kubectl("auth", "can-i", "get", "secret/magicstick-state-passphrase", "-n", SYSTEM_NAMESPACE)
    read = kubectl(
        "-n", SYSTEM_NAMESPACE, "get", "secret", "magicstick-state-passphrase", "-o", "jsonpath={.data.passphrase}"
    )
    pods = kubectl("get", "pods", "-A", "-o", "jsonpath={..env}")

    assert (can_i.returncode, can_i.stdout.strip()) == (1, "no")
    assert read.returncode != 0 and read.stdout == "" and "Forbidden" in read.stderr
    assert pods.returncode != 0 and pods.stdout == "" and 'cannot list resource "pods"' in pods.stderr


@pytest.mark.parametrize(
    "namespace", [SYSTEM_NAMESPACE, SETUP_NAMESPACE, "ai", "flux-system", "default", "kube-system", None]
)
@pytest.mark.parametrize("verb", ["get", "list", "watch"])
def test_auth_can_i_says_no_to_every_secret_outside_the_network_namespace_for_every_token_of_the_agent(
    any_token, network_secrets_granted, namespace, verb
):
    assert can_i(any_token, verb, "secrets", namespace) is False


def test_auth_can_i_says_yes_to_getting_network_secrets_by_name_and_no_to_listing_or_watching_them(
    any_token, network_secrets_granted
):
    answers = {
        verb: can_i(any_token, verb, "secrets", NETWORK_NAMESPACE)
        for verb in ("get", "list", "watch", "create", "update", "delete")
    }

    assert answers == {"get": True, "list": False, "watch": False, "create": False, "update": False, "delete": False}


def test_the_agent_may_not_list_secrets(halo_agent, network_secrets_granted):
    refusal = refused(lambda: halo_agent.list(SECRET, namespace=NETWORK_NAMESPACE))

    assert refusal.code == 403
    assert 'cannot list resource "secrets"' in refusal.message


@pytest.mark.parametrize("namespace", [None, "ai", SYSTEM_NAMESPACE])
def test_the_agent_may_not_list_pods_anywhere_not_even_those_on_its_node(halo_agent, namespace):
    refusal = refused(
        lambda: halo_agent.request(
            "GET",
            POD.collection_path(namespace),
            params={"labelSelector": "model", "fieldSelector": f"spec.nodeName={HALO}"},
        )
    )

    assert refusal.code == 403
    assert 'cannot list resource "pods"' in refusal.message


@pytest.mark.parametrize("verb", ["get", "list", "watch"])
def test_auth_can_i_says_no_to_pods_for_every_token_of_the_agent(any_token, verb):
    assert [
        namespace for namespace in (None, "ai", SYSTEM_NAMESPACE) if can_i(any_token, verb, "pods", namespace)
    ] == []


def test_the_policy_admits_exactly_the_annotations_the_agent_writes() -> None:
    policy = next(doc for doc in shipped("admission-policy.yaml") if doc["kind"] == "ValidatingAdmissionPolicy")
    variable = next(v for v in policy["spec"]["variables"] if v["name"] == "agentAnnotations")
    admitted = re.findall(r"'([^']+)'", variable["expression"])
    assert tuple(admitted) == HOST_ANNOTATIONS
