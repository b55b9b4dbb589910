"""App instances: from AppInstances to HelmReleases, Gateway access and status.

Order, per instance: spec validity (an instance name that cannot be a hostname label is
invalid too) -> enabled -> application known -> its names held alone (planning.instances.claims:
else Conflict) -> required modules Ready (a disabled one is never overridden: WaitingForModules)
-> required CRDs served (else WaitingForCRD, and no release this run) -> the HelmRelease and the
Gateway objects. The guard SecurityPolicies are declared with the routes; the routes reach the
backend only once the current policies are accepted. The instance is Ready once its HelmRelease
is Ready, its guard accepted and its routes accepted with their backend, all for their current
generation (planning.instances.reach). A suspended (disabled) or deleted instance has none of
these objects. Invariant 6: objects of an instance whose spec is now rejected, or that lost a
name to another instance, are declared as observed; a route on a hostname another instance holds
is not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from api.instances import Authentication, authentication_is_explicit
from api.vocabulary import Phase
from catalogs import ApplicationEntry, Catalogs
from planning.access_settings import AccessSettings
from planning.conditions import status_update
from planning.frozen import thaw
from planning.instances.access import InstanceAccess, access_objects, hostnames
from planning.instances.claims import Claim, Claimant, Conflict, Resolution, backend_service, hostname, release, resolve
from planning.instances.guard import (
    ENVOY_PROXY_CRD,
    envoy_proxy,
    grant_document,
    grant_key,
    guard_objects,
    guard_readiness,
    kept_grants,
)
from planning.instances.names import (
    InstanceNames,
    instance_name_of,
    instance_name_problem,
    instance_names,
    release_name_of,
    release_namespace_of,
)
from planning.instances.reach import Gate, guard_gates, instance_phase, route_gates
from planning.instances.releases import INSTANCE_LABEL, helm_release, helm_release_name
from planning.intent import Intent, Parsed
from planning.kustomizations import SourceRef
from planning.labels import is_generated
from planning.modules import ModulePlan, waiting_on_modules
from planning.names import LABEL_VALUE_LIMIT, fit
from planning.objects import DesiredObject, StatusUpdate
from planning.readiness import flux_readiness
from planning.reasons import Reason
from planning.requirements import Requirement
from planning.settings import PlanSettings
from planning.snapshot import GenericObject, Snapshot
from planning.unreadable import instance_hold

GATEWAY_CRDS = (
    "httproutes.gateway.networking.k8s.io",
    "referencegrants.gateway.networking.k8s.io",
    "securitypolicies.gateway.envoyproxy.io",
)
HELM_RELEASE_CRD = "helmreleases.helm.toolkit.fluxcd.io"
URL_SCHEME = "https"
"""The Gateway serves instances over TLS: the OIDC redirect (planning.instances.access) is https."""


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
    guard: tuple[DesiredObject, ...] = ()
    """The access guard and the EnvoyProxy, shared by every instance (planning.instances.guard)."""

    @property
    def objects(self) -> tuple[DesiredObject, ...]:
        return tuple(o for outcome in self.outcomes for o in outcome.objects) + self.guard


@dataclass(frozen=True)
class _Context:
    modules: ModulePlan
    snapshot: Snapshot
    settings: PlanSettings
    source: SourceRef
    now: datetime
    access_settings: AccessSettings
    guard: Gate
    """The guard's rollout: every instance's access waits on it as on its own policy."""

    @property
    def dashboard_hosts(self) -> tuple[str, ...]:
        return self.access_settings.dashboard_hosts_for(
            domain=self.settings.domain, local_domain=self.settings.local_domain
        )


@dataclass(frozen=True)
class _Candidate:
    """A valid, enabled instance of a known application: what it asks for."""

    parsed: Parsed[Any]
    requirement: Requirement
    application: ApplicationEntry
    names: InstanceNames
    hosts: tuple[str, str | None]
    observed_release: GenericObject | None


@dataclass(frozen=True)
class _Result:
    """What one instance gets: objects, status, its line in the Appliance's summary."""

    outcome: InstanceOutcome | None = None
    status: StatusUpdate | None = None
    summary: InstanceSummary | None = None
    kept: tuple[DesiredObject, ...] = ()
    """Objects kept as last applied for a rejected spec: they hold their names (planning.instances.claims)."""
    grant: str | None = None
    """The instance's grant for the access guard, when its Gateway objects are planned now."""


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
) -> InstancePlan:
    """Every instance's objects and status, and the Appliance's summary of them. Pure."""
    access = settings.access
    rollout = guard_readiness(snapshot, access, guard_objects({}, access, field_manager=settings.field_manager))
    context = _Context(
        modules, snapshot, settings, source, now, access, Gate("Deployment", access.guard_service, rollout)
    )
    by_requester = {r.requester: r for r in requirements}
    results: dict[str, _Result] = {}
    candidates: list[_Candidate] = []
    for parsed in intent.app_instances:
        candidate = _candidate(parsed, by_requester, catalogs, context)
        if isinstance(candidate, _Candidate):
            candidates.append(candidate)
        else:
            results[parsed.name] = candidate
    resolution = resolve(_claimants(intent, candidates, results, context))
    for candidate in candidates:
        conflict = resolution.conflicts.get(_ref(candidate.parsed))
        if conflict is not None:
            results[candidate.parsed.name] = _conflicted(candidate, conflict, resolution, context)
        else:
            results[candidate.parsed.name] = _held_instance(_instance(candidate, context), candidate, context)
    ordered = [results[p.name] for p in intent.app_instances]
    return InstancePlan(
        outcomes=tuple(r.outcome for r in ordered if r.outcome is not None),
        statuses=tuple(r.status for r in ordered if r.status is not None),
        summaries=tuple(r.summary for r in ordered if r.summary is not None),
        guard=_guard(intent, results, context),
    )


def _guard(intent: Intent, results: Mapping[str, _Result], context: _Context) -> tuple[DesiredObject, ...]:
    """The guard with every instance's grant, while any instance has Gateway objects. An
    instance kept as last applied keeps its grant as the cluster holds it. Pure."""
    system = context.settings.system_namespace
    planned: dict[str, str] = {}
    kept: set[str] = set()
    for parsed in intent.app_instances:
        result = results[parsed.name]
        key = grant_key(system, parsed.name)
        if result.grant is not None:
            planned[key] = result.grant
        elif result.outcome is not None and any(o.kind == "SecurityPolicy" for o in result.outcome.objects):
            kept.add(key)
    if not planned and not kept:
        return ()
    grants = kept_grants(context.snapshot, context.access_settings, frozenset(kept)) | planned
    objects = guard_objects(grants, context.access_settings, field_manager=context.settings.field_manager)
    if ENVOY_PROXY_CRD in context.snapshot.served_crds:
        objects += (envoy_proxy(context.access_settings, field_manager=context.settings.field_manager),)
    return objects


STATUS_CORE = frozenset({"phase", "reason", "message", "observedGeneration", "conditions"})


def _held_instance(result: _Result, candidate: _Candidate, context: _Context) -> _Result:
    """An instance whose target namespace could not be read (planning/unreadable.py). Pure.

    Its HelmRelease and routes (system namespace) are declared as planned; its objects in the
    unreadable namespace (the ReferenceGrant) only when its last status shows them declared.
    """
    parsed = candidate.parsed
    hold = instance_hold(context.snapshot, parsed.valid_spec.target_namespace, parsed.obj.status)
    if hold is None or result.outcome is None or result.status is None:
        return result
    extra = {key: value for key, value in result.status.status.items() if key not in STATUS_CORE}
    status = hold.status(parsed, now=context.now, extra=thaw(extra))
    summary = result.summary
    if summary is not None:
        summary = replace(
            summary, status={**summary.status, "phase": status.status["phase"], "message": status.status["message"]}
        )
    outcome = replace(result.outcome, objects=hold.objects(result.outcome.objects))
    return replace(result, outcome=outcome, status=status, summary=summary)


def _ref(parsed: Parsed[Any]) -> str:
    return f"{parsed.obj.meta.namespace or ''}/{parsed.name}"


def _candidate(
    parsed: Parsed[Any], by_requester: Mapping[str, Requirement], catalogs: Catalogs, context: _Context
) -> _Candidate | _Result:
    """A candidate for objects, or the result of an instance that gets none of its own. Pure."""
    now = context.now
    if parsed.error is not None:
        return _failed(parsed, Reason.INVALID_SPEC, str(parsed.error), context)
    if not parsed.enabled:
        message = "AppInstance is disabled; its release and routes are removed."
        return _Result(
            status=status_update(parsed, phase=Phase.DISABLED, reason=Reason.DISABLED, message=message, now=now)
        )
    requirement = by_requester[f"AppInstance/{parsed.name}"]
    if requirement.problem is not None:
        return _failed(parsed, requirement.problem, requirement.problem_message, context)
    spec = parsed.valid_spec
    name = instance_name_of(values=spec.values, object_name=parsed.name)
    problem = instance_name_problem(name)
    if problem is not None:
        return _failed(parsed, Reason.INVALID_SPEC, problem, context)
    application = catalogs.applications.require(spec.application)
    observed = context.snapshot.generic(
        "HelmRelease", context.settings.system_namespace, helm_release_name(parsed.name)
    )
    names = instance_names(application=application, instance_name=name, observed_release=observed)
    settings = context.settings
    hosts = hostnames(
        instance_name=name,
        application=application.name,
        domain=settings.domain,
        local_domain=settings.local_domain,
        exposure=spec.access.exposure,
    )
    return _Candidate(parsed, requirement, application, names, hosts, observed)


def _failed(parsed: Parsed[Any], reason: Reason, message: str, context: _Context) -> _Result:
    kept = _kept(context.snapshot, parsed.name)
    status = status_update(parsed, phase=Phase.FAILED, reason=reason, message=message, now=context.now)
    return _Result(outcome=InstanceOutcome(parsed.name, kept), status=status, kept=kept)


def _claimants(
    intent: Intent, candidates: list[_Candidate], results: Mapping[str, _Result], context: _Context
) -> list[Claimant]:
    """What every instance that is not disabled asks for and holds. Pure."""
    claimants = []
    for candidate in candidates:
        parsed, names = candidate.parsed, candidate.names
        namespace = parsed.valid_spec.target_namespace
        wants = (
            *(hostname(h) for h in candidate.hosts if h is not None),
            release(namespace, names.release),
            backend_service(namespace, names.backend_service),
        )
        holds: tuple[Claim, ...] = ()
        observed = candidate.observed_release
        if observed is not None:
            held_namespace = release_namespace_of(spec=observed.spec, namespace=observed.meta.namespace or "")
            held = release_name_of(spec=observed.spec, name=observed.meta.name)
            holds = (
                release(held_namespace, held),
                backend_service(held_namespace, candidate.application.backend_service_for(held)),
            )
        claimants.append(
            Claimant(parsed.obj.meta.namespace or "", parsed.name, parsed.obj.meta.creation_timestamp, wants, holds)
        )
    for parsed in intent.app_instances:
        result = results.get(parsed.name)
        if result is not None and result.kept:
            claimants.append(
                Claimant(
                    parsed.obj.meta.namespace or "",
                    parsed.name,
                    parsed.obj.meta.creation_timestamp,
                    holds=_held_by(result.kept, context),
                )
            )
    return claimants


def _held_by(kept: tuple[DesiredObject, ...], context: _Context) -> tuple[Claim, ...]:
    """The names objects kept as last applied hold: release, Services and hostnames. Pure."""
    held: list[Claim] = []
    for obj in kept:
        spec = obj.body.get("spec") or {}
        if obj.kind == "HelmRelease":
            held.append(
                release(
                    release_namespace_of(spec=spec, namespace=obj.namespace or ""),
                    release_name_of(spec=spec, name=obj.name),
                )
            )
        if obj.kind == "HTTPRoute":
            held += [hostname(str(h)) for h in spec.get("hostnames") or () if h not in context.dashboard_hosts]
            refs = [ref for rule in spec.get("rules") or () for ref in rule.get("backendRefs") or ()]
            held += [backend_service(str(ref.get("namespace") or ""), str(ref.get("name"))) for ref in refs]
    return tuple(held)


def _conflicted(candidate: _Candidate, conflict: Conflict, resolution: Resolution, context: _Context) -> _Result:
    """A Conflict: what the instance runs stays as last applied, except routes on a hostname another holds."""
    parsed = candidate.parsed
    ref = _ref(parsed)
    kept = tuple(o for o in _kept(context.snapshot, parsed.name) if not _route_on_held_host(o, resolution, ref))
    holder_namespace, _, holder_name = conflict.holder.partition("/")
    extra = {
        "kind": candidate.application.output_kind,
        "name": candidate.names.instance_name,
        "namespace": parsed.valid_spec.target_namespace,
        "accessGuardReady": False,
        "conflictsWith": {"kind": "AppInstance", "namespace": holder_namespace, "name": holder_name},
    }
    status = status_update(
        parsed, phase=Phase.CONFLICT, reason=conflict.reason, message=conflict.message, now=context.now, extra=extra
    )
    return _Result(outcome=InstanceOutcome(parsed.name, kept), status=status)


def _route_on_held_host(obj: DesiredObject, resolution: Resolution, ref: str) -> bool:
    if obj.kind != "HTTPRoute":
        return False
    return any(resolution.held_by_another(hostname(str(h)), ref) for h in obj.body["spec"].get("hostnames") or ())


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


def _instance(candidate: _Candidate, context: _Context) -> _Result:
    """Objects, status and summary of an instance that holds its names. Pure."""
    parsed, application, names = candidate.parsed, candidate.application, candidate.names
    spec = parsed.valid_spec
    extra = _status_fields(candidate)

    def done(phase: Phase, reason: Reason, message: str, objects: tuple[DesiredObject, ...] = ()) -> _Result:
        status = status_update(parsed, phase=phase, reason=reason, message=message, now=context.now, extra=extra)
        fields = {
            "phase": phase,
            "namespace": spec.target_namespace,
            "kind": application.output_kind,
            "name": names.instance_name,
            "url": extra["url"],
            "message": message,
        }
        summary = InstanceSummary(application=application.name, name=names.instance_name, status=fields)
        return _Result(outcome=InstanceOutcome(parsed.name, objects), status=status, summary=summary)

    waiting = waiting_on_modules(candidate.requirement.modules, context.modules)
    if waiting is not None:
        phase, reason, message = waiting
        return done(phase, reason, message, _kept(context.snapshot, parsed.name))
    missing = sorted(set(application.required_crds + GATEWAY_CRDS + (HELM_RELEASE_CRD,)) - context.snapshot.served_crds)
    if missing:
        return done(
            Phase.WAITING_FOR_CRD,
            Reason.WAITING_FOR_CRD,
            f"Waiting for CRD {', '.join(missing)} to be served; no release is created until then.",
        )
    declared = _declared(candidate, extra["authentication"], context)
    extra["accessGuardReady"] = declared.guard_ready
    extra["helmRelease"] = f"{declared.release.namespace}/{declared.release.name}"
    phase, reason, message = instance_phase(
        release=declared.release_gate,
        guard=declared.guard,
        routes=declared.routes,
        display_name=application.display_name,
    )
    if extra["authentication"] == "none":
        message += " Sign-in is off (spec.access.authentication: none): the access guard stays in front and admits every request to this instance."
    return replace(
        done(phase, reason, message, declared.objects), grant=_grant(candidate, extra["authentication"], context)
    )


def _grant(candidate: _Candidate, authentication: str, context: _Context) -> str:
    access = candidate.parsed.valid_spec.access
    sharing = access.sharing
    return grant_document(
        system_namespace=context.settings.system_namespace,
        instance=candidate.parsed.name,
        authentication=authentication,
        role=access.role,
        sharing_mode=sharing.mode if sharing is not None else None,
        users=tuple(sharing.users) if sharing is not None else (),
        groups=tuple(sharing.groups) if sharing is not None else (),
        settings=context.access_settings,
    )


def _status_fields(candidate: _Candidate) -> dict[str, Any]:
    """The kind-specific status fields of a candidate, before its objects are judged. Pure."""
    parsed, names = candidate.parsed, candidate.names
    spec = parsed.valid_spec
    explicit_none = spec.access.authentication == "none" and authentication_is_explicit(thaw(parsed.obj.spec))
    return {
        "kind": candidate.application.output_kind,
        "name": names.instance_name,
        "namespace": spec.target_namespace,
        "url": f"{URL_SCHEME}://{candidate.hosts[0]}/",
        "authentication": "none" if explicit_none else "sso",
        "accessGuardReady": False,
        "unauthenticated": "explicitly requested by spec.access.authentication: none" if explicit_none else None,
        "releaseName": names.release,
        "backendService": f"{spec.target_namespace}/{names.backend_service}",
    }


@dataclass(frozen=True)
class _Declared:
    """The objects of an instance that holds its names, and the gates its readiness waits on."""

    release: DesiredObject
    gateway: tuple[DesiredObject, ...]
    release_gate: Gate
    guard: tuple[Gate, ...]
    routes: tuple[Gate, ...]

    @property
    def objects(self) -> tuple[DesiredObject, ...]:
        return (self.release, *self.gateway)

    @property
    def guard_ready(self) -> bool:
        return bool(self.guard) and all(g.verdict.ready for g in self.guard)


def _declared(candidate: _Candidate, authentication: Authentication, context: _Context) -> _Declared:
    """The HelmRelease and the Gateway objects, routes opened once the guard is accepted. Pure."""
    settings, snapshot = context.settings, context.snapshot

    def gateway(guard_ready: bool) -> tuple[DesiredObject, ...]:
        access = _instance_access(candidate, authentication, context, guard_ready=guard_ready)
        return access_objects(access, context.access_settings, field_manager=settings.field_manager)

    guard = (*guard_gates(gateway(False), snapshot), context.guard)
    opened = gateway(all(g.verdict.ready for g in guard))
    spec = candidate.parsed.valid_spec
    release_object = helm_release(
        instance=candidate.parsed.name,
        release_name=candidate.names.release,
        application=candidate.application,
        system_namespace=settings.system_namespace,
        target_namespace=spec.target_namespace,
        values=thaw(spec.values),
        source=context.source,
        field_manager=settings.field_manager,
    )
    observed = snapshot.generic("HelmRelease", release_object.namespace or "", release_object.name)
    release_gate = Gate("HelmRelease", release_object.name, flux_readiness(observed))
    return _Declared(release_object, opened, release_gate, guard, route_gates(opened, snapshot))


def _instance_access(
    candidate: _Candidate, authentication: Authentication, context: _Context, *, guard_ready: bool
) -> InstanceAccess:
    """The access inputs of one valid, enabled instance. Pure."""
    parsed = candidate.parsed
    spec = parsed.valid_spec
    sharing = spec.access.sharing
    return InstanceAccess(
        instance=parsed.name,
        application=candidate.application.name,
        instance_name=candidate.names.instance_name,
        namespace=spec.target_namespace,
        system_namespace=context.settings.system_namespace,
        backend_service=candidate.names.backend_service,
        backend_port=candidate.application.backend_port,
        callback_path=candidate.application.callback_path_for(parsed.name),
        local_host=candidate.hosts[0],
        public_host=candidate.hosts[1],
        dashboard_hosts=context.dashboard_hosts,
        authentication=authentication,
        role=spec.access.role,
        sharing_mode=sharing.mode if sharing is not None else None,
        users=tuple(sharing.users) if sharing is not None else (),
        groups=tuple(sharing.groups) if sharing is not None else (),
        guard_ready=guard_ready,
    )
