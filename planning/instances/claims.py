"""Who holds a name two AppInstances ask for. Pure.

Rule: two instances never share a hostname, a Helm release (a release name in a namespace) or
a backend Service (a Service name in a namespace). Who holds a contested name:

1. Whoever holds it already, in the cluster: the instance whose HelmRelease was created with
   that release name (and so renders that Service), or an instance whose spec is rejected and
   whose routes on that hostname stay as last applied. Taking the name would uninstall a
   release, or put two routes on one hostname.
2. Otherwise the earlier instance, by `metadata.creationTimestamp`, ties (and objects without
   a creation time, which count as the latest) broken by namespace/name, so the decision is
   the same in every run and on every copy of the snapshot.

The other instance gets a Conflict naming the holder; the first of its names found taken is
reported, hostnames before the release before the Service. It takes none of the names it asked
for, so a third instance is judged against the holder alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from planning.reasons import Reason


class ClaimKind(StrEnum):
    HOSTNAME = "hostname"
    RELEASE = "Helm release"
    BACKEND_SERVICE = "backend Service"


CONFLICT_REASONS: Mapping[ClaimKind, Reason] = {
    ClaimKind.HOSTNAME: Reason.HOSTNAME_CONFLICT,
    ClaimKind.RELEASE: Reason.RELEASE_NAME_CONFLICT,
    ClaimKind.BACKEND_SERVICE: Reason.BACKEND_SERVICE_CONFLICT,
}


@dataclass(frozen=True)
class Claim:
    kind: ClaimKind
    name: str
    """A hostname, or `<namespace>/<name>` of a release or a Service."""


def hostname(host: str) -> Claim:
    return Claim(ClaimKind.HOSTNAME, host)


def release(namespace: str, name: str) -> Claim:
    return Claim(ClaimKind.RELEASE, f"{namespace}/{name}")


def backend_service(namespace: str, name: str) -> Claim:
    return Claim(ClaimKind.BACKEND_SERVICE, f"{namespace}/{name}")


@dataclass(frozen=True)
class Claimant:
    """One AppInstance: the names it asks for now and the names it holds in the cluster."""

    namespace: str
    name: str
    created: str | None = None
    """metadata.creationTimestamp as the server wrote it (RFC 3339)."""
    wants: tuple[Claim, ...] = ()
    """In the order a conflict is reported: hostnames, the release, the Service."""
    holds: tuple[Claim, ...] = ()

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Conflict:
    claim: Claim
    holder: str
    """`<namespace>/<name>` of the AppInstance that holds the name."""
    in_cluster: bool
    """The holder holds the name in the cluster already (rule 1), rather than by seniority (rule 2)."""

    @property
    def reason(self) -> Reason:
        return CONFLICT_REASONS[self.claim.kind]

    @property
    def message(self) -> str:
        why = "whose objects already hold it in the cluster" if self.in_cluster else "which was created first"
        return f"{self.claim.kind} {self.claim.name} is held by AppInstance {self.holder}, {why}; nothing new is created for this instance while both ask for it."


@dataclass(frozen=True)
class Resolution:
    conflicts: Mapping[str, Conflict]
    """By claimant ref: the instances that lost a name."""
    holders: Mapping[Claim, str]
    """Every claimed name and the ref of the claimant that holds it."""

    def held_by_another(self, claim: Claim, ref: str) -> bool:
        holder = self.holders.get(claim)
        return holder is not None and holder != ref


def resolve(claimants: Iterable[Claimant]) -> Resolution:
    """Give every contested name to one claimant (see the module's rules). Pure."""
    ordered = sorted(claimants, key=_seniority)
    holders: dict[Claim, str] = {}
    for claimant in ordered:
        for claim in claimant.holds:
            holders.setdefault(claim, claimant.ref)
    in_cluster = frozenset(holders)
    conflicts: dict[str, Conflict] = {}
    for claimant in ordered:
        taken = next((c for c in claimant.wants if holders.get(c, claimant.ref) != claimant.ref), None)
        if taken is not None:
            conflicts[claimant.ref] = Conflict(taken, holders[taken], in_cluster=taken in in_cluster)
            continue
        for claim in claimant.wants:
            holders[claim] = claimant.ref
    return Resolution(conflicts=conflicts, holders=holders)


_LATEST = datetime.max.replace(tzinfo=UTC)


def _seniority(claimant: Claimant) -> tuple[datetime, str, str]:
    return (created_at(claimant.created) or _LATEST, claimant.namespace, claimant.name)


def created_at(value: str | None) -> datetime | None:
    """An RFC 3339 creation time as an aware datetime; None when absent or unreadable. Pure."""
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
