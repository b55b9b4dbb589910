"""magic-cluster/platform/host-agent/ on the real API server: the host agent, authenticated by a
Node-bound token of its ServiceAccount, writes only for its own Node.

The shipped files are applied unmodified. Two Nodes exist (`halo`, `other`); the TokenRequest API
issues one token bound to each and one bound to nothing, so the claims
authentication.kubernetes.io/node-name and node-uid are those the API server gives a real agent.
kube-apiserver's own admission plugin evaluates the policy's CEL. Refusals are asserted by their
code (403) and by the words of the message that names the rule. The policy matches the host
agent's ServiceAccount only, so it stays installed for the session's other tests.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from typing import Any, Final

import pytest

from api.host_evidence import HOST_ANNOTATIONS
from api.meta import API_VERSION, GROUP
from providers.kinds import APPLIANCE_SETUP, HOST_OPERATION, NODE, POD
from providers.kube import Forbidden, KubeAccess, KubeClient, NotFound, ResourceKind, open_client
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo, TestIdentity
from tests.deploy.manifests import SYSTEM_NAMESPACE, Permission, documents
from tests.deploy.program_identity import apply_all, ensure_namespaces, ensure_own_crds, wait_until_granted

HOST_AGENT_DIR: Final = "../magic-cluster/platform/host-agent"
SHIPPED_FILES: Final = ("serviceaccount.yaml", "rbac.yaml", "admission-policy.yaml")
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
TEST_LABEL: Final = "tests.magicstick.dev/host-agent-identity"
ADMISSION_ATTEMPTS: Final = 2000
"""A bound in requests (no sleep): each attempt is a round trip to the server."""

SECRET: Final = ResourceKind(group="", version="v1", kind="Secret", plural="secrets", namespaced=True)
SERVICE_ACCOUNT_KIND: Final = ResourceKind(group="", version="v1", kind="ServiceAccount", plural="serviceaccounts", namespaced=True)
TOKEN_PATH: Final = SERVICE_ACCOUNT_KIND.object_path(AGENT, SYSTEM_NAMESPACE) + "/token"

NOT_BOUND: Final = "the host agent's token must be bound to its Node"
OWN_NODE_ONLY: Final = "the host agent may change only the Node its token is bound to"
HOST_ANNOTATIONS_ONLY: Final = "the host agent may change only the host annotations of its Node, not"
ANOTHER_NODES_OPERATION: Final = "a HostOperation bound to another node"
SETUP_LOCAL_ONLY: Final = "the host agent may create ApplianceSetup identity-system/local only"
FIRST_STATUS_ONLY: Final = "the host agent may write only the first status of ApplianceSetup identity-system/local"
FIRST_PHASES: Final = "has phase Pending or CompletedLegacy"
OWN_NODE_TOKENS_ONLY: Final = "the host agent may request only tokens bound to the Node its token is bound to"

SETUP_SPEC: Final = {"setupVersion": "v1", "installationId": "11111111-2222-3333-4444-555555555555"}


def shipped(name: str) -> list[dict[str, Any]]:
    return documents(f"{HOST_AGENT_DIR}/{name}")


def refused(write: Callable[[], object]) -> Forbidden:
    """The 403 a request meets."""
    with pytest.raises(Forbidden) as refusal:
        write()
    return refusal.value


def token_request(node: dict[str, Any] | None) -> dict[str, Any]:
    """A TokenRequest for the agent's ServiceAccount, bound to `node` (None: to nothing)."""
    spec: dict[str, Any] = {"expirationSeconds": TOKEN_SECONDS}
    if node is not None:
        spec["boundObjectRef"] = {"apiVersion": "v1", "kind": "Node", "name": node["metadata"]["name"], "uid": node["metadata"]["uid"]}
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}


def request_token(client: KubeClient, node: dict[str, Any] | None) -> dict[str, Any]:
    return client.request("POST", TOKEN_PATH, body=token_request(node), content_type="application/json")


def annotate(client: KubeClient, node: str, patch: dict[str, Any]) -> dict[str, Any]:
    return client.request("PATCH", NODE.object_path(node), params={"fieldManager": FIELD_MANAGER}, body=patch, content_type=MERGE_PATCH)


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
    body = {"apiVersion": API_VERSION, "kind": "ApplianceSetup", "metadata": {"name": name, "namespace": SETUP_NAMESPACE}, "spec": SETUP_SPEC}
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


def wait_for_policy(unbound: KubeClient) -> None:
    """Until the admission plugin has the policy and its binding: a dry-run annotation of a Node
    with the unbound token is refused by the policy (before that, by RBAC or not at all)."""
    for _ in range(ADMISSION_ATTEMPTS):
        try:
            unbound.request(
                "PATCH", NODE.object_path(HALO), params={"dryRun": "All"}, body={"metadata": {"annotations": {EVIDENCE: "{}"}}}, content_type=MERGE_PATCH
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
def nodes(cluster: ClusterInfo, admin: KubeClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, dict[str, Any]]]:
    """The namespaces, the program's CRDs, the shipped files, and the Nodes `halo` (with a label
    and an annotation) and `other` (with neither), removed again at the end."""
    ensure_namespaces(admin)
    ensure_own_crds(cluster, admin, tmp_path_factory.mktemp("own-crds"))
    apply_all(admin, [obj for name in SHIPPED_FILES for obj in shipped(name)])
    metadata: dict[str, dict[str, Any]] = {
        HALO: {"name": HALO, "labels": {"kubernetes.io/hostname": HALO}, "annotations": {"example.com/rack": "1"}},
        OTHER: {"name": OTHER},
    }
    created = {name: admin.create(NODE, {"apiVersion": "v1", "kind": "Node", "metadata": meta}, field_manager="kubectl-create") for name, meta in metadata.items()}
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
            Permission("list", "", "pods"),
            Permission("get", "", "secrets", SYSTEM_NAMESPACE),
            Permission("patch", GROUP, "hostoperations/status", SYSTEM_NAMESPACE),
            Permission("create", GROUP, "appliancesetups", SETUP_NAMESPACE),
            Permission("patch", GROUP, "appliancesetups/status", SETUP_NAMESPACE),
        ],
    )


@pytest.fixture(scope="module")
def unbound(cluster: ClusterInfo, admin: KubeClient, granted: None) -> Iterator[KubeClient]:
    """The agent's ServiceAccount with a token bound to nothing; the policy in force."""
    with client_with_token(cluster, request_token(admin, None)["status"]["token"]) as client:
        wait_for_policy(client)
        yield client


@pytest.fixture(scope="module")
def halo_agent(cluster: ClusterInfo, admin: KubeClient, nodes: dict[str, dict[str, Any]], unbound: KubeClient) -> Iterator[KubeClient]:
    with client_with_token(cluster, request_token(admin, nodes[HALO])["status"]["token"]) as client:
        yield client


@pytest.fixture(scope="module")
def other_agent(cluster: ClusterInfo, admin: KubeClient, nodes: dict[str, dict[str, Any]], unbound: KubeClient) -> Iterator[KubeClient]:
    with client_with_token(cluster, request_token(admin, nodes[OTHER])["status"]["token"]) as client:
        yield client


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
        admin.delete(SECRET, "host-agent-wifi", SYSTEM_NAMESPACE)


@pytest.fixture
def operations(admin: KubeClient, nodes: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """One HostOperation bound to each Node, as an administrator requests it."""
    return {name: admin.create(HOST_OPERATION, host_operation(f"host-agent-{name}", node), field_manager="kubectl-create") for name, node in nodes.items()}


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
        pytest.param({"metadata": {"labels": {"example.com/tier": "lab"}}}, "metadata.labels[example.com/tier]", id="adding a label"),
        pytest.param({"metadata": {"labels": {"kubernetes.io/hostname": None}}}, "metadata.labels[kubernetes.io/hostname]", id="removing a label"),
        pytest.param({"metadata": {"annotations": {"example.com/rack": "2"}}}, "metadata.annotations[example.com/rack]", id="another annotation"),
        pytest.param(
            {"metadata": {"labels": {"example.com/tier": "lab"}, "annotations": {EVIDENCE: "{}"}}},
            "metadata.labels[example.com/tier]",
            id="a label beside its annotation",
        ),
        pytest.param({"spec": {"unschedulable": True}}, "spec", id="its spec"),
        pytest.param({"metadata": {"finalizers": ["example.com/keep"]}}, "metadata.finalizers", id="a finalizer"),
        pytest.param(
            {"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": OTHER, "uid": "11111111-2222-3333-4444-555555555555"}]}},
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
    listed = {operation["metadata"]["name"] for operation in halo_agent.list(HOST_OPERATION, namespace=SYSTEM_NAMESPACE)}

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


# --- its token --------------------------------------------------------------------------------


def test_the_agent_may_renew_its_token_bound_to_its_own_node(halo_agent, admin, nodes):
    issued = request_token(halo_agent, nodes[HALO])

    review = admin.request(
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": issued["status"]["token"]}},
        content_type="application/json",
    )
    user = review["status"]["user"]
    assert review["status"]["authenticated"] is True
    assert user["username"] == AGENT_USER
    assert user["extra"]["authentication.kubernetes.io/node-name"] == [HALO]
    assert user["extra"]["authentication.kubernetes.io/node-uid"] == [nodes[HALO]["metadata"]["uid"]]


@pytest.mark.parametrize("bound_to", [OTHER, None], ids=["another node", "nothing"])
def test_the_agent_may_not_request_a_token_bound_to_another_node_or_to_nothing(halo_agent, nodes, bound_to):
    refusal = refused(lambda: request_token(halo_agent, nodes[bound_to] if bound_to else None))

    assert refusal.code == 403
    assert f"{OWN_NODE_TOKENS_ONLY} (boundObjectRef kind Node, name {HALO}, uid {nodes[HALO]['metadata']['uid']})" in refusal.message


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


# --- reads ------------------------------------------------------------------------------------


def test_the_agent_may_get_a_named_secret(halo_agent, admin):
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "host-agent-wifi", "namespace": SYSTEM_NAMESPACE},
        "stringData": {"psk": "CHANGEME"},
    }
    created = admin.create(SECRET, secret, field_manager="kubectl-create")

    read = halo_agent.get(SECRET, "host-agent-wifi", SYSTEM_NAMESPACE)

    assert read["metadata"]["uid"] == created["metadata"]["uid"]


def test_the_agent_may_not_list_secrets(halo_agent):
    refusal = refused(lambda: halo_agent.list(SECRET, namespace=SYSTEM_NAMESPACE))

    assert refusal.code == 403
    assert 'cannot list resource "secrets"' in refusal.message


def test_the_agent_may_list_the_pods_on_its_node(halo_agent):
    answer = halo_agent.request("GET", POD.collection_path(), params={"labelSelector": "model", "fieldSelector": f"spec.nodeName={HALO}"})

    assert answer["items"] == []



def test_the_policy_admits_exactly_the_annotations_the_agent_writes() -> None:
    policy = next(doc for doc in shipped("admission-policy.yaml") if doc["kind"] == "ValidatingAdmissionPolicy")
    variable = next(v for v in policy["spec"]["variables"] if v["name"] == "agentAnnotations")
    admitted = re.findall(r"'([^']+)'", variable["expression"])
    assert tuple(admitted) == HOST_ANNOTATIONS
