"""deploy/rbac-administrators.yaml on the real API server, as each role's identity: viewers and
users read, operators also write module, model and instance intent, administrators also request
host operations. RBAC alone, without the admission policy (tests/cluster/test_admission_policy.py
adds it): what RBAC grants an operator on ModuleActivations is the whole object.

Identities are client certificates (CN user, O groups) the test server trusts, so the groups
are exactly what an identity provider would put in a real user's credentials. Each identity
holds one group only: the bindings, not the dashboard's impersonation of lower roles, give it
what the roles below it may do.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from api.meta import API_VERSION, GROUP
from providers.kinds import MODULE_ACTIVATION
from providers.kube import Forbidden, KubeAccess, KubeClient, NotFound, open_client
from tests.cluster.apiserver import ClusterInfo, TestIdentity
from tests.deploy.manifests import SYSTEM_NAMESPACE, Permission, documents, granted_to_group
from tests.deploy.program_identity import FIELD_MANAGER, apply_all, is_allowed, wait_until_granted

MANIFEST = "rbac-administrators.yaml"
ADMINISTRATORS = ("alice", "magicstick:administrators")
OPERATORS = ("olivia", "magicstick:operators")
USERS = ("bob", "magicstick:users")
VIEWERS = ("victor", "magicstick:viewers")
IDENTITIES = (ADMINISTRATORS, OPERATORS, USERS, VIEWERS)
GPU_MODULES = ("amd-gpu", "gpu")
RESOURCES = ("appliances", "moduleactivations", "modelactivations", "appinstances", "hostoperations")
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")


def activation(module: str, **parameters: str) -> dict:
    return {
        "apiVersion": API_VERSION,
        "kind": "ModuleActivation",
        "metadata": {"name": module, "namespace": SYSTEM_NAMESPACE},
        "spec": {"module": module, "enabled": True, "parameters": dict(parameters)},
    }


def identity(user: str, group: str) -> TestIdentity:
    return TestIdentity(name=user, token="", groups=(group,))


@pytest.fixture
def installed(appliance_cluster: ClusterInfo, admin: KubeClient) -> Iterator[None]:
    objects = documents(MANIFEST)
    apply_all(admin, objects)
    for user, group in IDENTITIES:
        wait_until_granted(appliance_cluster, identity(user, group), granted_to_group(objects, group))
    for module in GPU_MODULES:
        admin.apply(MODULE_ACTIVATION, activation(module), field_manager=FIELD_MANAGER)
    yield
    for module in (*GPU_MODULES, "basis"):
        with contextlib.suppress(NotFound):
            admin.delete(MODULE_ACTIVATION, module, SYSTEM_NAMESPACE)


def client_as(cluster: ClusterInfo, user: str, group: str) -> contextlib.AbstractContextManager[KubeClient]:
    return open_client(KubeAccess(kubeconfig=str(cluster.certificate_kubeconfig_path(user, group))))


def patch_parameters(client: KubeClient, module: str, parameters: dict) -> dict:
    return client.request(
        "PATCH",
        MODULE_ACTIVATION.object_path(module, SYSTEM_NAMESPACE),
        params={"fieldManager": "kubectl-edit"},
        body={"spec": {"parameters": parameters}},
        content_type="application/merge-patch+json",
    )


@pytest.mark.parametrize(("user", "group"), IDENTITIES, ids=lambda value: value)
def test_the_authorizer_answers_each_role_exactly_as_the_file_grants(appliance_cluster, installed, user, group):
    """Every verb on every runtime resource and on core Events in ai-system, as a
    SubjectAccessReview: allowed exactly when the roles bound to the group grant it."""
    granted = granted_to_group(documents(MANIFEST), group)
    asked = [Permission(verb, GROUP, resource, SYSTEM_NAMESPACE) for verb in VERBS for resource in RESOURCES]
    asked += [Permission(verb, "", "events", SYSTEM_NAMESPACE) for verb in VERBS]
    asked += [Permission("patch", GROUP, "moduleactivations/status", SYSTEM_NAMESPACE)]
    with appliance_cluster.client() as client:
        answers = {permission: is_allowed(client, identity(user, group), permission) for permission in asked}

    assert {permission for permission, allowed in answers.items() if allowed} == granted & set(asked)


@pytest.mark.parametrize("module", GPU_MODULES)
def test_an_administrator_may_change_the_gpu_modules_parameters(appliance_cluster, installed, module):
    parameters = (
        {"compatibilityProfile": "strix-halo", "allowExperimental": "true", "validationRequest": "run-1"}
        if module == "amd-gpu"
        else {"gpuSharing": ""}
    )
    with client_as(appliance_cluster, *ADMINISTRATORS) as client:
        answered = patch_parameters(client, module, parameters)
    assert answered["spec"]["parameters"] == parameters


@pytest.mark.parametrize("writer", [ADMINISTRATORS, OPERATORS], ids=lambda value: value[1])
def test_administrators_and_operators_may_create_and_delete_module_activations(appliance_cluster, installed, writer):
    with client_as(appliance_cluster, *writer) as client:
        client.apply(MODULE_ACTIVATION, activation("basis"), field_manager="dashboard", force=False)
        client.delete(MODULE_ACTIVATION, "basis", SYSTEM_NAMESPACE)


@pytest.mark.parametrize("reader", [USERS, VIEWERS], ids=lambda value: value[1])
@pytest.mark.parametrize("module", GPU_MODULES)
def test_users_and_viewers_may_read_but_never_change_the_gpu_modules_parameters(
    appliance_cluster, installed, reader, module
):
    with client_as(appliance_cluster, *reader) as client:
        assert client.get(MODULE_ACTIVATION, module, SYSTEM_NAMESPACE)["spec"]["module"] == module
        with pytest.raises(Forbidden):
            patch_parameters(client, module, {"validationRequest": "sneaky"})
        with pytest.raises(Forbidden):
            client.request(
                "PATCH",
                MODULE_ACTIVATION.object_path(module, SYSTEM_NAMESPACE),
                params={"fieldManager": "kubectl-annotate"},
                body={"metadata": {"annotations": {"appliance.magicstick.dev/device-validation-x": "{}"}}},
                content_type="application/merge-patch+json",
            )
        with pytest.raises(Forbidden):
            client.delete(MODULE_ACTIVATION, module, SYSTEM_NAMESPACE)


def test_a_user_cannot_create_a_module_activation_that_names_a_gpu_module_under_another_name(
    appliance_cluster, installed
):
    body = activation("amd-gpu", compatibilityProfile="strix-halo", allowExperimental="true")
    body["metadata"]["name"] = "my-amd"
    with client_as(appliance_cluster, *USERS) as client, pytest.raises(Forbidden):
        client.apply(MODULE_ACTIVATION, body, field_manager="dashboard", force=False)


def test_the_viewer_role_grants_no_write_verb_and_the_roles_are_bound_in_the_system_namespace_only():
    objects = documents(MANIFEST)
    viewer = next(
        o for o in objects if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "magicstick-appliance-viewer"
    )
    assert {verb for rule in viewer["rules"] for verb in rule["verbs"]} == {"get", "list", "watch"}
    assert {o["kind"] for o in objects} == {"ClusterRole", "RoleBinding", "ClusterRoleBinding"}
    cluster_wide = [o for o in objects if o["kind"] == "ClusterRoleBinding"]
    node_reader = next(
        o for o in objects if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "magicstick-appliance-node-reader"
    )
    assert [b["roleRef"]["name"] for b in cluster_wide] == ["magicstick-appliance-node-reader"]
    assert node_reader["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}]
    assert {o["metadata"]["namespace"] for o in objects if o["kind"] == "RoleBinding"} == {SYSTEM_NAMESPACE}
