"""Does an instance run, and does its traffic reach it, now? Pure.

An instance is Ready only when all three hold (each by planning.readiness, for the object's
current generation):

1. its HelmRelease is Ready (`flux_readiness`);
2. its access guard is accepted (`status.accessGuardReady`): every SecurityPolicy of the
   instance carries the planned spec hash and every ancestor Gateway accepted it
   (`security_policy_readiness`);
3. its routes reach it: every HTTPRoute of the instance carries the planned spec hash (so it is
   the route planned now, with its backend, not one planned before the guard was accepted),
   every parent Gateway accepted it (`http_route_readiness`), and no parent reports
   `ResolvedRefs=False` (a backend Service or the ReferenceGrant is missing: Envoy would answer
   with an error, not with the application).

`authentication: none` changes none of this: the guard stays and must be accepted.

Phase and reason, first match wins: release failed -> Degraded/HelmReleaseFailed; a policy
rejected -> Degraded/AccessGuardRejected; a route rejected -> Degraded/RouteRejected; release in
progress -> Reconciling/Reconciling; guard in progress -> Reconciling/WaitingForAccessGuard;
routes in progress -> Reconciling/WaitingForRoutes; otherwise Ready/Ready.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from api.vocabulary import Phase
from planning.objects import DesiredObject
from planning.readiness import (
    NOT_FOUND,
    SPEC_HASH_ANNOTATION,
    Readiness,
    Verdict,
    Waiting,
    http_route_readiness,
    not_the_planned_spec,
    observed_generation_of,
    security_policy_readiness,
)
from planning.reasons import Reason
from planning.snapshot import GenericObject, Snapshot


@dataclass(frozen=True)
class Gate:
    """One object the instance waits on, and its verdict."""

    kind: str
    name: str
    verdict: Verdict

    @property
    def said(self) -> str:
        """`<kind> <name> (<controller's reason>): <message>`; our own waiting reasons are left out."""
        reason = self.verdict.reason
        detail = f" ({reason})" if reason and reason not in _OWN_REASONS else ""
        return f"{self.kind} {self.name}{detail}: {self.verdict.message or self.verdict.readiness}"


_OWN_REASONS = frozenset(w.value for w in Waiting)


def blocking(gates: Iterable[Gate]) -> Gate | None:
    """The first failed gate, else the first in progress, else None. Pure."""
    gates = tuple(gates)
    for wanted in (Readiness.FAILED, Readiness.IN_PROGRESS):
        found = next((g for g in gates if g.verdict.readiness is wanted), None)
        if found is not None:
            return found
    return None


def guard_gates(desired: Iterable[DesiredObject], snapshot: Snapshot) -> tuple[Gate, ...]:
    """The instance's SecurityPolicies as planned now, judged against what the cluster holds. Pure."""
    gates = []
    for policy in (o for o in desired if o.kind == "SecurityPolicy"):
        observed = snapshot.generic("SecurityPolicy", policy.namespace or "", policy.name)
        verdict = security_policy_readiness(observed, planned_hash=_planned_hash(policy))
        gates.append(Gate("SecurityPolicy", policy.name, verdict))
    return tuple(gates)


def route_gates(desired: Iterable[DesiredObject], snapshot: Snapshot) -> tuple[Gate, ...]:
    """The instance's HTTPRoutes as planned now, judged against what the cluster holds. Pure."""
    gates = []
    for route in (o for o in desired if o.kind == "HTTPRoute"):
        observed = snapshot.generic("HTTPRoute", route.namespace or "", route.name)
        gates.append(Gate("HTTPRoute", route.name, route_reaches(observed, planned_hash=_planned_hash(route))))
    return tuple(gates)


def _planned_hash(obj: DesiredObject) -> str:
    return str(obj.body["metadata"]["annotations"][SPEC_HASH_ANNOTATION])


def route_reaches(observed: GenericObject | None, *, planned_hash: str) -> Verdict:
    """The planned route, accepted by every parent with its references resolved. Pure."""
    if observed is None:
        return NOT_FOUND
    stale = not_the_planned_spec(observed, planned_hash=planned_hash)
    if stale is not None:
        return stale
    accepted = http_route_readiness(observed)
    if not accepted.ready:
        return accepted
    return _unresolved(observed) or accepted


def _unresolved(observed: GenericObject) -> Verdict | None:
    """A parent's ResolvedRefs=False for the route's current generation, as in-progress."""
    generation = observed.meta.generation
    for entry in observed.status.get("parents") or ():
        for found in entry.get("conditions") or ():
            if not isinstance(found, Mapping) or found.get("type") != "ResolvedRefs" or found.get("status") != "False":
                continue
            if observed_generation_of(found, None) == generation:
                reason, message = str(found.get("reason") or ""), str(found.get("message") or "")
                return Verdict(
                    Readiness.IN_PROGRESS, reason, message or "references not resolved", generation, generation
                )
    return None


def instance_phase(
    *, release: Gate, guard: tuple[Gate, ...], routes: tuple[Gate, ...], display_name: str
) -> tuple[Phase, Reason, str]:
    """Phase, reason and message of an instance whose objects are declared (module rules). Pure."""
    if release.verdict.failed:
        return (
            Phase.DEGRADED,
            Reason.HELM_RELEASE_FAILED,
            f"HelmRelease {release.name} is not ready ({release.verdict.reason}): {release.verdict.message}",
        )
    guard_block, route_block = blocking(guard), blocking(routes)
    if guard_block is not None and guard_block.verdict.failed:
        return (
            Phase.DEGRADED,
            Reason.ACCESS_GUARD_REJECTED,
            f"The access guard was rejected: {guard_block.said}. Routes lead nowhere until it is accepted.",
        )
    if route_block is not None and route_block.verdict.failed:
        return Phase.DEGRADED, Reason.ROUTE_REJECTED, f"A route was rejected: {route_block.said}."
    if not release.verdict.ready:
        note = "" if guard_block is None else " Routes reach the application once its access guard is accepted."
        return Phase.RECONCILING, Reason.RECONCILING, _release_progress(release) + note
    if guard_block is not None:
        return (
            Phase.RECONCILING,
            Reason.WAITING_FOR_ACCESS_GUARD,
            f"HelmRelease {release.name} is ready; waiting for the access guard: {guard_block.said}. Routes lead nowhere until it is accepted.",
        )
    if route_block is not None:
        return (
            Phase.RECONCILING,
            Reason.WAITING_FOR_ROUTES,
            f"HelmRelease {release.name} and the access guard are ready; waiting for the routes: {route_block.said}.",
        )
    return Phase.READY, Reason.READY, f"{display_name} instance is ready."


def _release_progress(release: Gate) -> str:
    verdict = release.verdict
    if verdict.reason in (Waiting.NOT_FOUND, Waiting.AWAITING_STATUS):
        return f"HelmRelease {release.name} is being installed."
    if verdict.reason == Waiting.SUSPENDED:
        return f"HelmRelease {release.name} is suspended; Flux resumes it once unsuspended."
    if verdict.reason == Waiting.STALE_GENERATION:
        return f"HelmRelease {release.name} changed; {verdict.message}."
    return f"Flux is reconciling HelmRelease {release.name}."
