"""The reconcile trigger as the ServiceAccount deploy/ defines for it, against the real API server.

deploy/reconcile-trigger.yaml (ServiceAccount, Deployment) and deploy/reconcile-trigger-rbac.yaml
are applied as the admin; the trigger then runs with a token the TokenRequest API issues for
`ai-system/magicstick-reconcile-trigger`. Its watches must work, it must be able to request a
run of the Stack `magicstick`, to report a refused kind as an Event on it, and to hold a
realtime activation with its finalizer and delete its runtime when it is deleted; any other
write, and any other Stack, must be Forbidden. The manifests themselves are checked first,
without a cluster.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, Final

import pytest

from api.model_runtimes import RUNTIME_CLEANUP_FINALIZER
from planning.settings import FIELD_MANAGER
from providers.kinds import CONFIG_MAP, DEPLOYMENT, MODEL_ACTIVATION, SERVICE
from providers.kube import Forbidden, KubeAccess, KubeClient, NotFound, open_client
from services.reconcile_trigger.cleanup import RUNTIME_KINDS
from services.reconcile_trigger.events import EVENT, forbidden_event
from services.reconcile_trigger.settings import TriggerSettings, parse_settings
from services.reconcile_trigger.stack import STACK, StackRef, request_run
from services.reconcile_trigger.trigger import ReconcileTrigger
from services.reconcile_trigger.watcher import Refusal, Verb
from services.reconcile_trigger.watches import FLUX_NAMESPACE, WatchTarget, runtime_namespaces, watch_targets
from tests.cluster.apiserver import ClusterInfo, TestIdentity
from tests.deploy.manifests import Permission, documents, the_one
from tests.deploy.program_identity import apply_all, wait_until_granted
from tests.providers.direct_runtime_objects import runtime_objects
from tests.services.reconcile_trigger.world import (
    FAST,
    LOADER,
    config_map,
    create_stack,
    ensure_stack_crd,
    eventually,
    realtime_activation,
    serving_watches,
    version_of,
)
from tests.support.watching import watch_until, watch_until_gone

MANIFEST: Final = "reconcile-trigger.yaml"
RBAC: Final = "reconcile-trigger-rbac.yaml"
NAMESPACE: Final = "ai-system"
ACCOUNT: Final = "magicstick-reconcile-trigger"
USER: Final = f"system:serviceaccount:{NAMESPACE}:{ACCOUNT}"
GROUPS: Final = ("system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}", "system:authenticated")
STACK_NAME: Final = "magicstick"
READS: Final = frozenset({"get", "list", "watch"})
EVENT_CREATION: Final = Permission("create", "events.k8s.io", "events", NAMESPACE)


def deployed_settings() -> TriggerSettings:
    container = the_one(documents(MANIFEST), "Deployment")["spec"]["template"]["spec"]["containers"][0]
    return parse_settings(container["args"], {})


def bound_rules(objects: Iterable[Mapping[str, Any]]) -> list[tuple[dict[str, Any], str | None]]:
    """Each rule bound to the trigger's ServiceAccount, with the namespace it applies in (None: cluster-wide)."""
    objects = list(objects)
    roles = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objects}
    bound = []
    for binding in (o for o in objects if o["kind"] in {"RoleBinding", "ClusterRoleBinding"}):
        if {"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NAMESPACE} not in binding["subjects"]:
            continue
        namespace = binding["metadata"].get("namespace")
        ref = binding["roleRef"]
        role = roles[(ref["kind"], namespace if ref["kind"] == "Role" else None, ref["name"])]
        bound += [(dict(rule), namespace) for rule in role["rules"]]
    return bound


def granted(objects: Iterable[Mapping[str, Any]], *, named: bool = False) -> set[Permission]:
    """What the rules grant: on every object (named False), or only on named ones (named True)."""
    return {
        Permission(verb, group, resource, namespace)
        for rule, namespace in bound_rules(objects)
        if bool(rule.get("resourceNames")) is named
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def targets_of(settings: TriggerSettings) -> tuple[WatchTarget, ...]:
    return watch_targets(
        system_namespace=settings.system_namespace,
        target_namespaces=settings.target_namespaces,
        gateway_namespace=settings.gateway_namespace,
    )


def watched(settings: TriggerSettings) -> set[tuple[str, str, str | None]]:
    return {(t.kind.group, t.kind.plural, t.namespace) for t in targets_of(settings)}


def cleanup_permissions(settings: TriggerSettings) -> set[Permission]:
    """What the runtime cleanup does (services/reconcile_trigger/cleanup.py): list and delete a
    runtime's objects where the trigger watches direct runtimes, patch ModelActivations' finalizers."""
    deletes = {
        Permission(verb, kind.group, kind.plural, namespace)
        for namespace in runtime_namespaces(targets_of(settings))
        for kind in RUNTIME_KINDS
        for verb in ("list", "delete")
    }
    return deletes | {Permission("patch", MODEL_ACTIVATION.group, MODEL_ACTIVATION.plural, settings.system_namespace)}


class TestTheManifests:
    def test_the_deployment_runs_one_non_root_replica_on_a_read_only_root_under_its_service_account(self):
        account = the_one(documents(MANIFEST), "ServiceAccount")
        deployment = the_one(documents(MANIFEST), "Deployment")
        pod = deployment["spec"]["template"]["spec"]
        (container,) = pod["containers"]

        assert (account["metadata"]["namespace"], account["metadata"]["name"]) == (NAMESPACE, ACCOUNT)
        assert deployment["metadata"]["namespace"] == NAMESPACE and deployment["spec"]["replicas"] == 1
        assert pod["serviceAccountName"] == ACCOUNT
        assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
        assert container["securityContext"] == {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        }
        assert container["image"] == "registry.example.com/magicstick/reconcile-trigger:CHANGEME"
        assert (
            deployment["spec"]["selector"]["matchLabels"].items()
            <= deployment["spec"]["template"]["metadata"]["labels"].items()
        )

    def test_its_flags_request_runs_of_the_stack_stack_yaml_defines_in_the_programs_namespaces(self):
        stack = the_one(documents("stack.yaml"), "Stack")
        config = stack["spec"]["config"]
        settings = deployed_settings()

        assert (settings.stack_namespace, settings.stack_name) == (
            stack["metadata"]["namespace"],
            stack["metadata"]["name"],
        )
        assert settings.system_namespace == config["magicstick:systemNamespace"]
        assert settings.gateway_namespace == config["magicstick:gatewayNamespace"]
        assert settings.target_namespaces == ("ai",)

    def test_it_holds_status_churn_back_at_most_as_long_as_the_stack_waits_between_resyncs(self):
        stack = the_one(documents("stack.yaml"), "Stack")

        assert deployed_settings().resync_seconds == stack["spec"]["resyncFrequencySeconds"]

    def test_its_probes_ask_healthz_and_readyz_on_the_named_port_the_probe_address_serves(self):
        (container,) = the_one(documents(MANIFEST), "Deployment")["spec"]["template"]["spec"]["containers"]
        (port,) = container["ports"]

        assert (port["name"], port["containerPort"]) == ("probes", deployed_settings().probe_address.port)
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "probes"}
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "probes"}
        assert deployed_settings().probe_address.host == "0.0.0.0", "the kubelet probes the Pod's address"

    def test_it_may_get_list_and_watch_exactly_what_it_watches_and_do_exactly_what_its_cleanup_does(self):
        settings = deployed_settings()
        reads = {
            Permission(verb, group, resource, namespace)
            for group, resource, namespace in watched(settings)
            for verb in READS
        }

        assert granted(documents(RBAC)) == reads | cleanup_permissions(settings) | {EVENT_CREATION}

    def test_its_writes_on_no_named_object_are_events_in_the_stacks_namespace_and_the_runtime_cleanups(self):
        writes = {p for p in granted(documents(RBAC)) if p.verb not in READS}

        assert writes == {EVENT_CREATION} | {p for p in cleanup_permissions(deployed_settings()) if p.verb not in READS}
        assert EVENT_CREATION.namespace == deployed_settings().stack_namespace
        assert {p.namespace for p in writes if p.verb == "delete"} == set(deployed_settings().target_namespaces)

    def test_its_one_write_is_a_patch_of_the_stack_magicstick_by_name(self):
        named = [(rule, namespace) for rule, namespace in bound_rules(documents(RBAC)) if rule.get("resourceNames")]

        assert named == [
            (
                {
                    "apiGroups": ["pulumi.com"],
                    "resources": ["stacks"],
                    "resourceNames": [STACK_NAME],
                    "verbs": ["get", "patch"],
                },
                NAMESPACE,
            )
        ]

    def test_no_rule_grants_secrets_wildcards_or_escalation(self):
        for rule, _ in bound_rules(documents(RBAC)):
            assert "secrets" not in rule["resources"]
            assert "*" not in [*rule["resources"], *rule["verbs"], *rule["apiGroups"]]
            assert "nonResourceURLs" not in rule


# --- as the ServiceAccount, against the server -----------------------------------------------


def request_token(admin: KubeClient) -> str:
    answer = admin.request(
        "POST",
        f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{ACCOUNT}/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}},
        content_type="application/json",
    )
    return str(answer["status"]["token"])


@pytest.fixture
def trigger_identity(appliance_cluster: ClusterInfo, admin: KubeClient) -> TestIdentity:
    ensure_stack_crd(appliance_cluster, admin)
    objects = [the_one(documents(MANIFEST), "ServiceAccount"), *documents(RBAC)]
    apply_all(admin, objects)
    identity = TestIdentity(name=USER, token=request_token(admin), groups=GROUPS)
    wait_until_granted(appliance_cluster, identity, sorted(granted(documents(RBAC)), key=str))
    return identity


@pytest.fixture
def trigger_access(appliance_cluster: ClusterInfo, trigger_identity: TestIdentity) -> KubeAccess:
    return KubeAccess(kubeconfig=appliance_cluster.kubeconfig_path(trigger_identity).read_text())


@pytest.fixture
def as_trigger(trigger_access: KubeAccess) -> Iterator[KubeClient]:
    with open_client(trigger_access) as client:
        yield client


@pytest.fixture
def stacks(admin: KubeClient) -> Iterator[tuple[StackRef, StackRef]]:
    """The Stack `magicstick` and another one beside it in ai-system; both deleted afterwards."""
    made = (create_stack(admin, NAMESPACE, STACK_NAME), create_stack(admin, NAMESPACE, "someone-elses"))
    yield made
    for stack in made:
        with contextlib.suppress(NotFound):
            admin.delete(STACK, stack.name, stack.namespace)


def test_the_trigger_watches_everything_it_watches_and_requests_runs_as_its_service_account(
    trigger_access: KubeAccess, admin: KubeClient, stacks: tuple[StackRef, StackRef], request: pytest.FixtureRequest
):
    magicstick, _ = stacks
    settings = deployed_settings()
    targets = watch_targets(
        system_namespace=settings.system_namespace,
        target_namespaces=settings.target_namespaces,
        gateway_namespace=settings.gateway_namespace,
    )
    name = f"rbac-trigger-{hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:10]}"
    serving_watches(admin, targets)
    trigger = ReconcileTrigger(access=trigger_access, stack=magicstick, targets=targets, timing=FAST).start()
    try:
        eventually(trigger, trigger.synced, what="every watch listed its collection")
        eventually(trigger, lambda: trigger.requests and trigger.idle(), what="the request made at start")
        before = len(trigger.requests)

        created = admin.apply(CONFIG_MAP, config_map(FLUX_NAMESPACE, name, {"k": "v"}), field_manager=LOADER)
        eventually(
            trigger, lambda: len(trigger.requests) > before, what=f"a request for ConfigMap {version_of(created)}"
        )

        assert [(str(w.target), w.failures) for w in trigger.watchers if w.failures and not w.unserved] == []
        assert {w.target.kind.group for w in trigger.watchers if w.unserved} <= {"resource.k8s.io"}
        assert not trigger.failed.is_set()
        assert trigger.stalled is False
    finally:
        trigger.stop()
        with contextlib.suppress(NotFound):
            admin.delete(CONFIG_MAP, name, FLUX_NAMESPACE)


def test_it_may_request_a_run_of_the_stack_magicstick_but_not_of_another_stack(
    as_trigger: KubeClient, stacks: tuple[StackRef, StackRef]
):
    magicstick, other = stacks

    patched = request_run(as_trigger, magicstick, "2026-01-01T00:00:00.000001Z")
    assert patched["metadata"]["annotations"]["pulumi.com/reconciliation-request"] == "2026-01-01T00:00:00.000001Z"
    with pytest.raises(Forbidden):
        request_run(as_trigger, other, "2026-01-01T00:00:00.000002Z")
    with pytest.raises(Forbidden):
        as_trigger.get(STACK, other.name, other.namespace)


def refusal(namespace: str) -> Refusal:
    return Refusal(
        "ModelActivation in " + namespace,
        Verb.LIST,
        "modelactivations.appliance.magicstick.dev",
        namespace,
        "forbidden",
    )


def test_it_may_create_an_event_on_the_stack_in_the_stacks_namespace_and_nowhere_else(
    as_trigger: KubeClient, stacks: tuple[StackRef, StackRef]
):
    magicstick, _ = stacks
    body = forbidden_event(
        stack=magicstick, stack_uid=None, refusal=refusal("default"), now=datetime.now(UTC), instance="rbac-test"
    )
    elsewhere = {
        **body,
        "metadata": {**body["metadata"], "namespace": FLUX_NAMESPACE},
        "regarding": {**body["regarding"], "namespace": FLUX_NAMESPACE},
    }

    created = as_trigger.request(
        "POST", EVENT.collection_path(NAMESPACE), params={"dryRun": "All"}, body=body, content_type="application/json"
    )
    assert created["reason"] == "WatchForbidden"
    with pytest.raises(Forbidden):
        as_trigger.request(
            "POST",
            EVENT.collection_path(FLUX_NAMESPACE),
            params={"dryRun": "All"},
            body=elsewhere,
            content_type="application/json",
        )


def test_a_kind_it_may_not_list_fails_readiness_naming_it_and_puts_one_event_on_the_stack(
    trigger_access: KubeAccess, admin: KubeClient, stacks: tuple[StackRef, StackRef], request: pytest.FixtureRequest
):
    """The deployed rights, and one watch more: ModelActivations in `default`, where no Role lets
    the trigger read. The server itself refuses it, and the Event is created as the trigger."""
    magicstick, _ = stacks
    settings = deployed_settings()
    refused = WatchTarget(MODEL_ACTIVATION, "default")
    targets = (
        *watch_targets(
            system_namespace=settings.system_namespace,
            target_namespaces=settings.target_namespaces,
            gateway_namespace=settings.gateway_namespace,
        ),
        refused,
    )
    instance = f"rbac-{hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:10]}"
    trigger = ReconcileTrigger(
        access=trigger_access, stack=magicstick, targets=targets, timing=FAST, instance=instance
    ).start()
    try:
        (watcher,) = [w for w in trigger.watchers if w.target == refused]
        eventually(trigger, lambda: trigger.events, what="an Event on the Stack")
        eventually(
            trigger, lambda: watcher.failures >= FAST.watch.forbidden_after + 3, what="more refusals after the Event"
        )
        readiness = trigger.readiness()
    finally:
        trigger.stop()

    assert len(readiness.problems) == 1, readiness.problems
    (problem,) = readiness.problems
    assert problem.startswith(
        "watch ModelActivation in default: forbidden to list modelactivations.appliance.magicstick.dev in namespace default"
    )
    assert f'User "{USER}" cannot list resource "modelactivations"' in problem
    events = [e for e in admin.list(EVENT, namespace=NAMESPACE) if e.get("reportingInstance") == instance]
    assert [(e["reason"], e["type"], e["regarding"]["name"]) for e in events] == [
        ("WatchForbidden", "Warning", STACK_NAME)
    ]
    assert events[0]["regarding"]["uid"] == admin.get(STACK, magicstick.name, magicstick.namespace)["metadata"]["uid"]


def stack_path(name: str, subresource: str = "") -> str:
    return STACK.object_path(name, NAMESPACE) + (f"/{subresource}" if subresource else "")


MERGE = "application/merge-patch+json"
WRITES: Final = [
    ("PUT", stack_path(STACK_NAME), "update of the Stack"),
    ("PATCH", stack_path(STACK_NAME, "status"), "the Stack's status"),
    ("DELETE", stack_path(STACK_NAME), "deleting the Stack"),
    ("POST", STACK.collection_path(NAMESPACE), "creating a Stack"),
    ("POST", CONFIG_MAP.collection_path(NAMESPACE), "a ConfigMap in ai-system"),
    ("PUT", "/apis/appliance.magicstick.dev/v1alpha1/namespaces/ai-system/modelactivations/any", "a ModelActivation"),
    ("DELETE", "/apis/appliance.magicstick.dev/v1alpha1/namespaces/ai-system/modelactivations/any", "its deletion"),
    (
        "PATCH",
        "/apis/appliance.magicstick.dev/v1alpha1/namespaces/ai-system/moduleactivations/any",
        "a ModuleActivation",
    ),
    ("DELETE", "/apis/apps/v1/namespaces/ai-system/deployments/any", "a Deployment in ai-system"),
    ("DELETE", "/api/v1/namespaces/ai-system/services/any", "a Service in ai-system"),
    ("DELETE", "/api/v1/namespaces/flux-system/configmaps/any", "a ConfigMap in flux-system"),
    ("PATCH", "/apis/apps/v1/namespaces/ai/deployments/any", "a Deployment in ai"),
    ("POST", "/api/v1/namespaces/ai/services", "creating a Service in ai"),
    (
        "PATCH",
        "/apis/appliance.magicstick.dev/v1alpha1/namespaces/ai-system/modelactivations/any/status",
        "a ModelActivation's status",
    ),
    ("PATCH", "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/any", "a Kustomization"),
    ("DELETE", "/api/v1/namespaces/ai/pods/any", "a model Pod"),
    ("PATCH", "/api/v1/nodes/any", "a Node"),
    ("GET", "/api/v1/namespaces/ai-system/secrets", "Secrets"),
]


@pytest.mark.parametrize(("method", "path", "what"), WRITES, ids=[what for _, _, what in WRITES])
def test_it_can_write_nothing_else(
    as_trigger: KubeClient, stacks: tuple[StackRef, StackRef], method: str, path: str, what: str
):
    body: dict[str, Any] = {
        "apiVersion": "pulumi.com/v1",
        "kind": "Stack",
        "metadata": {"name": STACK_NAME, "namespace": NAMESPACE},
    }
    with pytest.raises(Forbidden):
        as_trigger.request(
            method,
            path,
            params={"dryRun": "All"} if method != "GET" else None,
            body=None if method == "GET" else body,
            content_type=MERGE if method == "PATCH" else "application/json",
        )


def test_the_request_is_recorded_under_the_triggers_own_field_manager(
    as_trigger: KubeClient, admin: KubeClient, stacks: tuple[StackRef, StackRef]
):
    magicstick, _ = stacks
    request_run(as_trigger, magicstick, "2026-01-01T00:00:00.000003Z")

    managers = {
        entry["manager"]
        for entry in admin.get(STACK, magicstick.name, magicstick.namespace)["metadata"]["managedFields"]
    }
    assert "magicstick-reconcile-trigger" in managers


def test_it_holds_a_realtime_activation_and_deletes_its_runtime_in_ai_as_its_service_account(
    trigger_access: KubeAccess, admin: KubeClient, stacks: tuple[StackRef, StackRef], request: pytest.FixtureRequest
):
    magicstick, _ = stacks
    settings = deployed_settings()
    (target,) = settings.target_namespaces
    name = f"rbac-omni-{hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:10]}"
    kinds = {"ConfigMap": CONFIG_MAP, "Service": SERVICE, "Deployment": DEPLOYMENT}
    objects = [(kinds[body["kind"]], body) for body in runtime_objects(target, name)]
    for kind, body in objects:
        admin.apply(kind, body, field_manager=FIELD_MANAGER)
    targets = targets_of(settings)
    serving_watches(admin, targets)
    trigger = ReconcileTrigger(access=trigger_access, stack=magicstick, targets=targets, timing=FAST).start()
    try:
        admin.apply(
            MODEL_ACTIVATION,
            realtime_activation(settings.system_namespace, name, target_namespace=target),
            field_manager=LOADER,
        )
        watch_until(
            admin,
            MODEL_ACTIVATION,
            settings.system_namespace,
            name,
            lambda obj: RUNTIME_CLEANUP_FINALIZER in (obj["metadata"].get("finalizers") or ()),
            20,
        )

        admin.delete(MODEL_ACTIVATION, name, settings.system_namespace)
        for kind, body in objects:
            watch_until_gone(admin, kind, target, body["metadata"]["name"], 20)
        watch_until_gone(admin, MODEL_ACTIVATION, settings.system_namespace, name, 20)
        assert not trigger.failed.is_set()
    finally:
        trigger.stop()
        left = admin.get_or_none(MODEL_ACTIVATION, name, settings.system_namespace)
        if left is not None:
            admin.request(
                "PATCH",
                MODEL_ACTIVATION.object_path(name, settings.system_namespace),
                body={"metadata": {"finalizers": None}},
                content_type=MERGE,
            )
            with contextlib.suppress(NotFound):
                admin.delete(MODEL_ACTIVATION, name, settings.system_namespace)
        for kind, body in objects:
            with contextlib.suppress(NotFound):
                admin.delete(kind, body["metadata"]["name"], target)
