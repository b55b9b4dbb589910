"""Finalizer cleanup of direct runtimes, against the real API server (services/reconcile_trigger/cleanup.py).

A trigger watches a test namespace that is its system and its only target namespace. The
runtime's objects are the ones the program declares (tests/providers/direct_runtime_objects.py:
the program's own labels); the program's status write is played with its field manager. Every
wait watches the API server.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import pytest

from api.model_runtimes import RUNTIME_CLEANUP_FINALIZER, DirectRuntimeKind
from planning.settings import FIELD_MANAGER
from providers.kinds import CONFIG_MAP, DEPLOYMENT, MODEL_ACTIVATION, SERVICE
from providers.kube import KubeAccess, KubeClient, NotFound, ResourceKind
from services.reconcile_trigger.stack import StackRef
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo, TestIdentity
from tests.deploy.manifests import Permission
from tests.deploy.program_identity import wait_until_granted
from tests.providers.direct_runtime_objects import runtime_objects
from tests.services.reconcile_trigger.conftest import StartTrigger
from tests.services.reconcile_trigger.world import (
    DEADLINE,
    FAST,
    LOADER,
    PROGRAM_STATUS,
    freetoken_activation,
    model_activation,
    realtime_activation,
    write_status,
)
from tests.support.watching import watch_until, watch_until_gone

PATIENT: Final = replace(FAST, cleanup_release_after=1000)
"""A trigger that releases a finalizer only when the cleanup is done or refused, never for
having tried long enough: what releases it in a test is then the behaviour under test."""
KINDS: Final = {"ConfigMap": CONFIG_MAP, "Service": SERVICE, "Deployment": DEPLOYMENT}
TEST_HOLD: Final = "example.com/test-hold"
"""A finalizer of the test's own, which keeps an object there after the trigger is done with it."""


def held(obj: dict[str, Any]) -> bool:
    return RUNTIME_CLEANUP_FINALIZER in (obj["metadata"].get("finalizers") or ())


def deploy_runtime(
    client: KubeClient, namespace: str, name: str, kind: DirectRuntimeKind = DirectRuntimeKind.REALTIME
) -> list[tuple[ResourceKind, str]]:
    """Apply `name`'s runtime as the program does; each object's kind and name."""
    applied = []
    for body in runtime_objects(namespace, name, kind):
        client.apply(KINDS[body["kind"]], body, field_manager=FIELD_MANAGER)
        applied.append((KINDS[body["kind"]], body["metadata"]["name"]))
    return applied


def activate(client: KubeClient, body: dict[str, Any]) -> dict[str, Any]:
    return client.apply(MODEL_ACTIVATION, body, field_manager=LOADER)


def held_activation(client: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    return watch_until(client, MODEL_ACTIVATION, namespace, name, held, DEADLINE)


def existing(client: KubeClient, namespace: str, objects: list[tuple[ResourceKind, str]]) -> list[str]:
    return [name for kind, name in objects if client.get_or_none(kind, name, namespace) is not None]


@pytest.fixture
def released(admin: KubeClient, namespace: str) -> Iterator[None]:
    """After the test, no object of its namespace keeps a finalizer of the trigger's or the test's."""
    yield
    for kind in (MODEL_ACTIVATION, DEPLOYMENT):
        for item in admin.list(kind, namespace=namespace):
            kept = [
                f for f in item["metadata"].get("finalizers") or () if f not in (TEST_HOLD, RUNTIME_CLEANUP_FINALIZER)
            ]
            if kept != (item["metadata"].get("finalizers") or []):
                with contextlib.suppress(NotFound):
                    admin.request(
                        "PATCH",
                        kind.object_path(item["metadata"]["name"], namespace),
                        body={"metadata": {"finalizers": kept}},
                        content_type="application/merge-patch+json",
                    )


pytestmark = pytest.mark.usefixtures("released")


# Who is held ---------------------------------------------------------------------------------


def test_a_realtime_activation_gets_the_runtime_cleanup_finalizer(
    admin: KubeClient, namespace: str, start_trigger: StartTrigger
):
    start_trigger()
    activate(admin, realtime_activation(namespace, "omni", target_namespace=namespace))

    assert held(held_activation(admin, namespace, "omni"))


def test_an_activation_kubeai_serves_gets_no_finalizer(admin: KubeClient, namespace: str, start_trigger: StartTrigger):
    trigger = start_trigger()
    chat = model_activation(namespace, "chat")
    chat["spec"]["targetNamespace"] = namespace
    activate(admin, chat)
    activate(admin, realtime_activation(namespace, "omni", target_namespace=namespace))
    held_activation(admin, namespace, "omni")

    assert admin.get(MODEL_ACTIVATION, "chat", namespace)["metadata"].get("finalizers") is None
    assert trigger.cleanup.pending() == frozenset()


def test_an_activation_whose_status_says_the_program_runs_it_as_freetoken_gets_the_finalizer(
    admin: KubeClient, namespace: str, start_trigger: StartTrigger
):
    start_trigger()
    stored = activate(admin, freetoken_activation(namespace, "ft", target_namespace=namespace))
    write_status(
        admin, MODEL_ACTIVATION, stored, {"phase": "Starting", "runtime": "freetoken"}, field_manager=PROGRAM_STATUS
    )

    assert held(held_activation(admin, namespace, "ft"))


# Deletion ------------------------------------------------------------------------------------


def test_deleting_a_realtime_activation_deletes_its_deployment_service_and_config_map_then_the_activation_goes(
    admin: KubeClient, namespace: str, start_trigger: StartTrigger
):
    start_trigger()
    objects = deploy_runtime(admin, namespace, "omni")
    activate(admin, realtime_activation(namespace, "omni", target_namespace=namespace))
    held_activation(admin, namespace, "omni")

    admin.delete(MODEL_ACTIVATION, "omni", namespace)

    for kind, name in objects:
        watch_until_gone(admin, kind, namespace, name, DEADLINE)
    watch_until_gone(admin, MODEL_ACTIVATION, namespace, "omni", DEADLINE)


def test_the_finalizer_is_released_only_once_the_runtimes_objects_are_gone(
    admin: KubeClient, namespace: str, start_trigger: StartTrigger
):
    start_trigger()
    objects = deploy_runtime(admin, namespace, "omni")
    body = realtime_activation(namespace, "omni", target_namespace=namespace)
    body["metadata"]["finalizers"] = [TEST_HOLD]
    activate(admin, body)
    held_activation(admin, namespace, "omni")

    admin.delete(MODEL_ACTIVATION, "omni", namespace)
    left = watch_until(admin, MODEL_ACTIVATION, namespace, "omni", lambda obj: not held(obj), DEADLINE)

    assert left["metadata"]["finalizers"] == [TEST_HOLD]
    assert existing(admin, namespace, objects) == []


def test_another_activations_runtime_and_another_runtime_of_that_name_are_left_alone(
    admin: KubeClient, namespace: str, start_trigger: StartTrigger
):
    start_trigger()
    deploy_runtime(admin, namespace, "omni")
    neighbour = deploy_runtime(admin, namespace, "omni-2")
    unlabelled = admin.apply(
        CONFIG_MAP,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "omni-notes", "namespace": namespace}},
        field_manager=LOADER,
    )
    activate(admin, realtime_activation(namespace, "omni", target_namespace=namespace))
    held_activation(admin, namespace, "omni")

    admin.delete(MODEL_ACTIVATION, "omni", namespace)
    watch_until_gone(admin, MODEL_ACTIVATION, namespace, "omni", DEADLINE)

    assert existing(admin, namespace, neighbour) == [name for _, name in neighbour]
    assert admin.get_or_none(CONFIG_MAP, unlabelled["metadata"]["name"], namespace) is not None


def test_deleting_a_freetoken_activation_deletes_its_deployment_and_service(
    admin: KubeClient, namespace: str, start_trigger: StartTrigger
):
    start_trigger()
    objects = deploy_runtime(admin, namespace, "ft", DirectRuntimeKind.FREETOKEN)
    stored = activate(admin, freetoken_activation(namespace, "ft", target_namespace=namespace))
    write_status(
        admin, MODEL_ACTIVATION, stored, {"phase": "Starting", "runtime": "freetoken"}, field_manager=PROGRAM_STATUS
    )
    held_activation(admin, namespace, "ft")

    admin.delete(MODEL_ACTIVATION, "ft", namespace)

    for kind, name in objects:
        watch_until_gone(admin, kind, namespace, name, DEADLINE)
    watch_until_gone(admin, MODEL_ACTIVATION, namespace, "ft", DEADLINE)


def test_a_trigger_started_after_the_deletion_still_cleans_up(
    admin: KubeClient, namespace: str, start_trigger: StartTrigger
):
    first = start_trigger()
    objects = deploy_runtime(admin, namespace, "omni")
    activate(admin, realtime_activation(namespace, "omni", target_namespace=namespace))
    held_activation(admin, namespace, "omni")
    first.stop()

    admin.delete(MODEL_ACTIVATION, "omni", namespace)
    waiting = admin.get(MODEL_ACTIVATION, "omni", namespace)
    assert waiting["metadata"].get("deletionTimestamp") and held(waiting)
    assert existing(admin, namespace, objects) == [name for _, name in objects]

    start_trigger()

    for kind, name in objects:
        watch_until_gone(admin, kind, namespace, name, DEADLINE)
    watch_until_gone(admin, MODEL_ACTIVATION, namespace, "omni", DEADLINE)


def test_a_runtime_object_another_finalizer_keeps_does_not_hold_the_activation(
    admin: KubeClient, namespace: str, start_trigger: StartTrigger
):
    start_trigger(timing=PATIENT)
    objects = deploy_runtime(admin, namespace, "omni")
    admin.request(
        "PATCH",
        DEPLOYMENT.object_path("omni", namespace),
        body={"metadata": {"finalizers": [TEST_HOLD]}},
        content_type="application/merge-patch+json",
    )
    activate(admin, realtime_activation(namespace, "omni", target_namespace=namespace))
    held_activation(admin, namespace, "omni")

    admin.delete(MODEL_ACTIVATION, "omni", namespace)
    watch_until_gone(admin, MODEL_ACTIVATION, namespace, "omni", DEADLINE)

    assert existing(admin, namespace, objects) == ["omni"]
    assert admin.get(DEPLOYMENT, "omni", namespace)["metadata"].get("deletionTimestamp")


# Refused -------------------------------------------------------------------------------------


def without_deletes(cluster: ClusterInfo, admin: KubeClient, namespace: str) -> KubeAccess:
    """An identity that may do in `namespace` what the trigger does there, but delete nothing."""
    identity = TestIdentity(name=f"no-deletes-{hashlib.sha256(namespace.encode()).hexdigest()[:12]}", token="")
    rules = [
        {
            "apiGroups": ["appliance.magicstick.dev"],
            "resources": ["modelactivations"],
            "verbs": ["get", "list", "watch", "patch"],
        },
        {
            "apiGroups": ["", "apps"],
            "resources": ["configmaps", "services", "deployments", "pods"],
            "verbs": ["get", "list", "watch"],
        },
        {"apiGroups": ["pulumi.com"], "resources": ["stacks"], "verbs": ["get", "patch"]},
    ]
    admin.request(
        "POST",
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles",
        body={
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "no-deletes"},
            "rules": rules,
        },
        content_type="application/json",
    )
    admin.request(
        "POST",
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings",
        body={
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "no-deletes"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "no-deletes"},
            "subjects": [{"kind": "User", "name": identity.name}],
        },
        content_type="application/json",
    )
    wait_until_granted(
        cluster, identity, [Permission("patch", "appliance.magicstick.dev", "modelactivations", namespace)]
    )
    return KubeAccess(kubeconfig=cluster.certificate_kubeconfig_path(identity.name).read_text())


def test_a_cleanup_the_server_refuses_releases_the_finalizer_at_once_and_leaves_the_runtime_to_the_programs_run(
    trigger_cluster: ClusterInfo, admin: KubeClient, namespace: str, stack: StackRef, start_trigger: StartTrigger
):
    start_trigger(access=without_deletes(trigger_cluster, admin, namespace), timing=PATIENT, ready=False)
    objects = deploy_runtime(admin, namespace, "omni")
    activate(admin, realtime_activation(namespace, "omni", target_namespace=namespace))
    held_activation(admin, namespace, "omni")

    admin.delete(MODEL_ACTIVATION, "omni", namespace)
    watch_until_gone(admin, MODEL_ACTIVATION, namespace, "omni", DEADLINE)

    assert existing(admin, namespace, objects) == [name for _, name in objects]


# The risk the README names ----------------------------------------------------------------------

README: Final = Path(__file__).parents[3] / "services" / "reconcile_trigger" / "README.md"


def documented_release() -> str:
    """The README's command that releases the finalizers a removed trigger left behind."""
    section = README.read_text().split("**The deliberate risk", 1)[1]
    return section.split("```sh\n", 1)[1].split("```", 1)[0]


def test_the_documented_command_releases_a_finalizer_a_removed_trigger_left_and_keeps_anyone_elses(
    trigger_cluster: ClusterInfo, admin: KubeClient, namespace: str, start_trigger: StartTrigger
):
    trigger = start_trigger()
    activate(admin, realtime_activation(namespace, "omni", target_namespace=namespace))
    shared = realtime_activation(namespace, "shared", target_namespace=namespace)
    shared["metadata"]["finalizers"] = [TEST_HOLD]
    activate(admin, shared)
    held_activation(admin, namespace, "omni")
    held_activation(admin, namespace, "shared")
    trigger.stop()
    admin.delete(MODEL_ACTIVATION, "omni", namespace)
    admin.delete(MODEL_ACTIVATION, "shared", namespace)

    subprocess.run(
        ["bash", "-c", documented_release().replace("-n ai-system", f"-n {namespace}")],
        env={**os.environ, "KUBECONFIG": str(trigger_cluster.kubeconfig_path(ADMIN_USER))},
        check=True,
        capture_output=True,
        timeout=60,
    )

    watch_until_gone(admin, MODEL_ACTIVATION, namespace, "omni", DEADLINE)
    assert admin.get(MODEL_ACTIVATION, "shared", namespace)["metadata"]["finalizers"] == [
        TEST_HOLD,
        RUNTIME_CLEANUP_FINALIZER,
    ]
