"""deploy/rbac-administrators.yaml on the real API server, as both identities: an administrator
may change the GPU modules' parameters; an ordinary user may read them and change nothing.

Identities are client certificates (CN user, O groups) the test server trusts, so the groups
are exactly what an identity provider would put in a real user's credentials.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from api.meta import API_VERSION
from providers.kinds import MODULE_ACTIVATION
from providers.kube import Forbidden, KubeAccess, KubeClient, NotFound, open_client
from tests.cluster.apiserver import ClusterInfo, TestIdentity, wait_until_allowed
from tests.deploy.manifests import SYSTEM_NAMESPACE, documents
from tests.deploy.program_identity import FIELD_MANAGER, apply_all

MANIFEST = "rbac-administrators.yaml"
ADMINISTRATORS = ("alice", "magicstick:administrators")
USERS = ("bob", "magicstick:users")
GPU_MODULES = ("amd-gpu", "gpu")


def activation(module: str, **parameters: str) -> dict:
    return {
        "apiVersion": API_VERSION,
        "kind": "ModuleActivation",
        "metadata": {"name": module, "namespace": SYSTEM_NAMESPACE},
        "spec": {"module": module, "enabled": True, "parameters": dict(parameters)},
    }


@pytest.fixture
def installed(appliance_cluster: ClusterInfo, admin: KubeClient) -> Iterator[None]:
    apply_all(admin, documents(MANIFEST))
    for user, group in (ADMINISTRATORS, USERS):
        identity = TestIdentity(name=user, token="", groups=(group,))
        wait_until_allowed(appliance_cluster, identity, verb="list", resource="moduleactivations", namespace=SYSTEM_NAMESPACE, group="appliance.magicstick.dev")
    wait_until_allowed(
        appliance_cluster, TestIdentity(name=ADMINISTRATORS[0], token="", groups=(ADMINISTRATORS[1],)),
        verb="patch", resource="moduleactivations", namespace=SYSTEM_NAMESPACE, group="appliance.magicstick.dev",
    )
    for module in GPU_MODULES:
        admin.apply(MODULE_ACTIVATION, activation(module), field_manager=FIELD_MANAGER)
    yield
    for module in GPU_MODULES:
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


@pytest.mark.parametrize("module", GPU_MODULES)
def test_an_administrator_may_change_the_gpu_modules_parameters(appliance_cluster, installed, module):
    parameters = {"compatibilityProfile": "strix-halo", "allowExperimental": "true", "validationRequest": "run-1"} if module == "amd-gpu" else {"gpuSharing": ""}
    with client_as(appliance_cluster, *ADMINISTRATORS) as client:
        answered = patch_parameters(client, module, parameters)
    assert answered["spec"]["parameters"] == parameters


def test_an_administrator_may_create_and_delete_module_activations(appliance_cluster, installed):
    with client_as(appliance_cluster, *ADMINISTRATORS) as client:
        client.apply(MODULE_ACTIVATION, activation("basis"), field_manager="dashboard", force=False)
        client.delete(MODULE_ACTIVATION, "basis", SYSTEM_NAMESPACE)


@pytest.mark.parametrize("module", GPU_MODULES)
def test_an_ordinary_user_may_read_but_never_change_the_gpu_modules_parameters(appliance_cluster, installed, module):
    with client_as(appliance_cluster, *USERS) as client:
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


def test_an_ordinary_user_cannot_create_a_module_activation_that_names_a_gpu_module_under_another_name(appliance_cluster, installed):
    body = activation("amd-gpu", compatibilityProfile="strix-halo", allowExperimental="true")
    body["metadata"]["name"] = "my-amd"
    with client_as(appliance_cluster, *USERS) as client, pytest.raises(Forbidden):
        client.apply(MODULE_ACTIVATION, body, field_manager="dashboard", force=False)


def test_the_viewer_role_grants_no_write_verb_and_the_roles_are_bound_in_the_system_namespace_only():
    objects = documents(MANIFEST)
    viewer = next(o for o in objects if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "magicstick-appliance-viewer")
    assert {verb for rule in viewer["rules"] for verb in rule["verbs"]} == {"get", "list", "watch"}
    assert {o["kind"] for o in objects} == {"ClusterRole", "RoleBinding"}
    assert {o["metadata"]["namespace"] for o in objects if o["kind"] == "RoleBinding"} == {SYSTEM_NAMESPACE}
