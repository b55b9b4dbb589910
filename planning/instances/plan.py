"""App instances: from AppInstances to HelmReleases, Gateway access and status (seed 000/001).

Order, per instance: spec validity -> enabled -> application known -> required modules Ready
(a disabled one is never overridden: WaitingForModules) -> required CRDs served (else
WaitingForCRD, and no release this run) -> the HelmRelease and the Gateway objects. The guard
SecurityPolicies are declared with the routes; the routes reach the backend only once the
current policies are accepted (accessGuardReady: each policy carries the planned spec hash and
every ancestor accepted its current generation). The instance is Ready once its HelmRelease is
Ready for its current generation. Both are decided in planning.readiness. A suspended
(disabled) or deleted instance has none of these objects. Invariant 6: objects of an instance
whose spec is now rejected are declared as observed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from api.instances import authentication_is_explicit
from catalogs import ApplicationEntry, Catalogs
from planning.conditions import READY, status_update
from planning.frozen import thaw
from planning.instances.access import AccessSettings, InstanceAccess, access_objects, hostnames
from planning.instances.releases import INSTANCE_LABEL, helm_release
from planning.intent import Intent, Parsed
from planning.kustomizations import SourceRef
from planning.labels import is_generated
from planning.modules import ModulePlan, waiting_on_modules
from planning.names import LABEL_VALUE_LIMIT, fit
from planning.objects import DesiredObject, StatusUpdate
from planning.readiness import SPEC_HASH_ANNOTATION, Verdict, Waiting, flux_readiness, security_policy_readiness
from planning.reasons import Reason
from planning.requirements import Requirement
from planning.settings import PlanSettings
from planning.snapshot import GenericObject, Snapshot

GATEWAY_CRDS = ("httproutes.gateway.networking.k8s.io", "referencegrants.gateway.networking.k8s.io", "securitypolicies.gateway.envoyproxy.io")
HELM_RELEASE_CRD = "helmreleases.helm.toolkit.fluxcd.io"


@dataclass(frozen=True)
class InstanceOutcome:
    instance: str
    objects: tuple[DesiredObject, ...]


@dataclass(frozen=True)
class InstanceSummary:
    """One entry of Appliance.status.instances.<application>.<name>."""

    application: str
    name: str
    status: Mapping[str, Any]


@dataclass(frozen=True)
class InstancePlan:
    outcomes: tuple[InstanceOutcome, ...]
    statuses: tuple[StatusUpdate, ...]
    summaries: tuple[InstanceSummary, ...]

    @property
    def objects(self) -> tuple[DesiredObject, ...]:
        return tuple(o for outcome in self.outcomes for o in outcome.objects)


def _kept(snapshot: Snapshot, instance: str) -> tuple[DesiredObject, ...]:
    wanted = fit(instance, LABEL_VALUE_LIMIT)
    kept = []
    for obj in snapshot.generated:
        if is_generated(obj.meta.labels) and obj.meta.labels.get(INSTANCE_LABEL) == wanted:
            kept.append(_as_observed(obj))
    return tuple(kept)


def _as_observed(obj: GenericObject) -> DesiredObject:
    metadata: dict[str, Any] = {"name": obj.meta.name, "namespace": obj.meta.namespace, "labels": thaw(obj.meta.labels)}
    if obj.meta.annotations:
        metadata["annotations"] = thaw(obj.meta.annotations)
    body = {"apiVersion": obj.api_version, "kind": obj.kind, "metadata": metadata, "spec": thaw(obj.spec)}
    return DesiredObject.of(body)


def _guard_ready(desired: tuple[DesiredObject, ...], snapshot: Snapshot) -> bool:
    """Every SecurityPolicy of the instance is the planned one and accepted for its generation
    (planning.readiness.security_policy_readiness)."""
    policies = [o for o in desired if o.kind == "SecurityPolicy"]
    return bool(policies) and all(_policy_readiness(policy, snapshot).ready for policy in policies)


def _policy_readiness(policy: DesiredObject, snapshot: Snapshot) -> Verdict:
    observed = snapshot.generic("SecurityPolicy", policy.namespace or "", policy.name)
    return security_policy_readiness(observed, planned_hash=policy.body["metadata"]["annotations"][SPEC_HASH_ANNOTATION])


def plan_instances(
    *,
    intent: Intent,
    requirements: tuple[Requirement, ...],
    modules: ModulePlan,
    snapshot: Snapshot,
    catalogs: Catalogs,
    settings: PlanSettings,
    source: SourceRef,
    now: datetime,
    access_settings: AccessSettings = AccessSettings(),
) -> InstancePlan:
    by_requester = {r.requester: r for r in requirements}
    outcomes: list[InstanceOutcome] = []
    statuses: list[StatusUpdate] = []
    summaries: list[InstanceSummary] = []
    for parsed in intent.app_instances:
        if parsed.error is not None:
            statuses.append(status_update(parsed, phase="Failed", reason=Reason.INVALID_SPEC, message=str(parsed.error), now=now))
            outcomes.append(InstanceOutcome(parsed.name, _kept(snapshot, parsed.name)))
            continue
        if not parsed.enabled:
            statuses.append(status_update(parsed, phase="Disabled", reason=Reason.DISABLED, message="AppInstance is disabled; its release and routes are removed.", now=now))
            continue
        requirement = by_requester[f"AppInstance/{parsed.name}"]
        if requirement.problem is not None:
            statuses.append(status_update(parsed, phase="Failed", reason=requirement.problem, message=requirement.problem_message, now=now))
            outcomes.append(InstanceOutcome(parsed.name, _kept(snapshot, parsed.name)))
            continue
        outcome, status, summary = _instance(parsed, requirement, modules, snapshot, catalogs, settings, source, now, access_settings)
        outcomes.append(outcome)
        statuses.append(status)
        summaries.append(summary)
    return InstancePlan(outcomes=tuple(outcomes), statuses=tuple(statuses), summaries=tuple(summaries))


def _instance(parsed, requirement, modules, snapshot, catalogs, settings, source, now, access_settings):
    spec = parsed.spec
    application = catalogs.applications.get(spec.application)
    instance_name = str(spec.values.get("name") or parsed.name)
    local_host, public_host = hostnames(
        instance_name=instance_name,
        application=application.name,
        domain=settings.domain,
        local_domain=settings.local_domain,
        exposure=spec.access.exposure,
    )
    url = f"http://{local_host}/"
    explicit_none = spec.access.authentication == "none" and authentication_is_explicit(thaw(parsed.obj.spec))
    authentication = "none" if explicit_none else "sso"
    extra: dict[str, Any] = {
        "kind": application.output_kind,
        "name": instance_name,
        "namespace": spec.target_namespace,
        "url": url,
        "authentication": authentication,
        "accessGuardReady": False,
        "unauthenticated": "explicitly requested by spec.access.authentication: none" if authentication == "none" else None,
    }

    def done(phase: str, reason: str, message: str, objects: tuple[DesiredObject, ...] = ()):
        status = status_update(parsed, phase=phase, reason=reason, message=message, now=now, extra=extra)
        summary = InstanceSummary(
            application=application.name,
            name=instance_name,
            status={"phase": phase, "namespace": spec.target_namespace, "kind": application.output_kind, "name": instance_name, "url": url, "message": message},
        )
        return InstanceOutcome(parsed.name, objects), status, summary

    waiting = waiting_on_modules(requirement.modules, modules)
    if waiting is not None:
        phase, reason, message = waiting
        return done(phase, reason, message, _kept(snapshot, parsed.name))
    missing = sorted(set(application.required_crds + GATEWAY_CRDS + (HELM_RELEASE_CRD,)) - snapshot.served_crds)
    if missing:
        return done("WaitingForCRD", Reason.WAITING_FOR_CRD, f"Waiting for CRD {', '.join(missing)} to be served; no release is created until then.")

    def access(guard_ready: bool) -> InstanceAccess:
        hosts = (local_host, public_host)
        return _instance_access(parsed, application, instance_name, hosts, authentication, settings, access_settings, guard_ready=guard_ready)

    guard_ready = _guard_ready(access_objects(access(False), access_settings, field_manager=settings.field_manager), snapshot)
    extra["accessGuardReady"] = guard_ready
    gateway = access_objects(access(guard_ready), access_settings, field_manager=settings.field_manager)
    release = helm_release(
        instance=parsed.name,
        application=application,
        system_namespace=settings.system_namespace,
        target_namespace=spec.target_namespace,
        values=thaw(spec.values),
        source=source,
        field_manager=settings.field_manager,
    )
    extra["helmRelease"] = f"{release.namespace}/{release.name}"
    objects = (release, *gateway)
    readiness = flux_readiness(snapshot.generic("HelmRelease", release.namespace or "", release.name))
    guard_note = "" if guard_ready else " Routes reach the application once its access guard is accepted."
    phase, reason, message = _release_phase(release.name, application.display_name, readiness)
    return done(phase, reason, message + ("" if phase == "Degraded" else guard_note), objects)


def _instance_access(
    parsed: Parsed[Any],
    application: ApplicationEntry,
    instance_name: str,
    hosts: tuple[str, str | None],
    authentication: str,
    settings: PlanSettings,
    access_settings: AccessSettings,
    *,
    guard_ready: bool,
) -> InstanceAccess:
    """The access inputs of one valid, enabled instance. Pure."""
    spec = parsed.spec
    sharing = spec.access.sharing
    return InstanceAccess(
        instance=parsed.name,
        application=application.name,
        instance_name=instance_name,
        namespace=spec.target_namespace,
        system_namespace=settings.system_namespace,
        backend_service=application.backend_service_for(instance_name),
        backend_port=application.backend_port,
        callback_path=application.callback_path_for(parsed.name),
        local_host=hosts[0],
        public_host=hosts[1],
        dashboard_hosts=tuple(f"{access_settings.dashboard_host_prefix}.{d}" for d in (settings.local_domain, settings.domain)),
        authentication=authentication,
        role=spec.access.role,
        sharing_mode=sharing.mode if sharing is not None else None,
        users=tuple(sharing.users) if sharing is not None else (),
        groups=tuple(sharing.groups) if sharing is not None else (),
        guard_ready=guard_ready,
    )


def _release_phase(name: str, display_name: str, readiness: Verdict) -> tuple[str, str, str]:
    """Phase, reason and message of an instance from its HelmRelease's readiness. Pure."""
    if readiness.ready:
        return READY, Reason.READY, f"{display_name} instance is ready."
    if readiness.failed:
        return "Degraded", Reason.HELM_RELEASE_FAILED, f"HelmRelease {name} is not ready ({readiness.reason}): {readiness.message}"
    if readiness.reason in (Waiting.NOT_FOUND, Waiting.AWAITING_STATUS):
        return "Reconciling", Reason.RECONCILING, f"HelmRelease {name} is being installed."
    if readiness.reason == Waiting.SUSPENDED:
        return "Reconciling", Reason.RECONCILING, f"HelmRelease {name} is suspended; Flux resumes it once unsuspended."
    if readiness.reason == Waiting.STALE_GENERATION:
        return "Reconciling", Reason.RECONCILING, f"HelmRelease {name} changed; {readiness.message}."
    return "Reconciling", Reason.RECONCILING, f"Flux is reconciling HelmRelease {name}."
