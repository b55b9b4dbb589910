"""Is an object the plan waits on ready now? Decided here, once, for every kind the plan reads. Pure.

Rule (invariant 11): a condition or status counts only for the generation it was written
for. A condition's own `observedGeneration` is that generation when present, else
`status.observedGeneration` (Flux sets both; a condition without either counts for no
generation). When it differs from `metadata.generation`, the controller has not seen the
current spec yet: the object is IN_PROGRESS, whatever the old condition said, Ready or failed.
This is how Flux's `dependsOn` and kstatus judge readiness.

Criteria, per kind:

- Flux Kustomization (kustomize.toolkit.fluxcd.io/v1) and Flux HelmRelease
  (helm.toolkit.fluxcd.io/v2), `flux_readiness`:
  absent -> IN_PROGRESS (NotFound); `spec.suspend: true` -> IN_PROGRESS (Suspended: Flux
  reconciles nothing, its status is frozen); no Ready condition -> IN_PROGRESS (AwaitingStatus;
  a new object's status is `observedGeneration: -1`); Ready recorded for another generation ->
  IN_PROGRESS (StaleGeneration); Ready=True -> READY; Ready=False with a reason that is not
  one of Flux's in-progress reasons (Progressing, ProgressingWithRetry, DependencyNotReady,
  none) -> FAILED with Flux's reason and message; anything else (Unknown, or False while in
  progress) -> IN_PROGRESS with Flux's reason.
- Envoy Gateway SecurityPolicy (gateway.envoyproxy.io/v1alpha1), `security_policy_readiness`:
  absent -> IN_PROGRESS (NotFound); the annotation `SPEC_HASH_ANNOTATION` in the observed
  object's metadata.annotations differs from the planned spec's `spec_hash` -> IN_PROGRESS
  (NotCurrent: not, or not yet, the spec the program planned). The stored spec is never
  compared with the planned one: the API server adds the CRD's defaults to it. Then every
  `status.ancestors[]` entry (at least one) must hold Accepted=True for the current
  generation; no ancestor or no Accepted condition -> IN_PROGRESS (AwaitingStatus), an
  Accepted of another generation -> IN_PROGRESS (StaleGeneration), Accepted=False of the
  current generation -> FAILED with Envoy Gateway's reason and message.
- Gateway API HTTPRoute (gateway.networking.k8s.io/v1), `http_route_readiness`: as the
  policy, over `status.parents[]`, without a hash. The plan does not wait on routes today
  (a route gets its backend once its policy is ready); the criterion is here for whoever does.
- KubeAI Model (kubeai.org/v1), `kubeai_model_readiness`: its status records no generation
  and no condition (only `replicas.{all,ready}` and `cache`), so the rule cannot apply:
  READY once `status.replicas.ready` > 0, else IN_PROGRESS (NoReadyReplica).

Read elsewhere, and why the rule does not apply: a Pod's Ready condition (no observed
generation before Kubernetes 1.33), a CRD's Established condition (none either), a
HostOperation's terminal phase (its spec is immutable, so it has only one generation).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from planning.snapshot import Condition, FluxKustomization, GenericObject, KubeAIModel, Workload

SPEC_HASH_ANNOTATION = "appliance.magicstick.dev/spec-hash"
"""The hash (`spec_hash`) of the spec the program planned, set by the program beside that spec."""
SPEC_HASH_LENGTH = 16
FLUX_IN_PROGRESS_REASONS = frozenset({"Progressing", "ProgressingWithRetry", "DependencyNotReady", ""})
"""Flux Ready=False reasons that mean "still working", not a failure."""


class Readiness(StrEnum):
    READY = "Ready"
    IN_PROGRESS = "InProgress"
    FAILED = "Failed"


class Waiting(StrEnum):
    """Why an object is IN_PROGRESS when its controller gave no reason of its own."""

    NOT_FOUND = "NotFound"
    SUSPENDED = "Suspended"
    AWAITING_STATUS = "AwaitingStatus"
    STALE_GENERATION = "StaleGeneration"
    NOT_CURRENT = "NotCurrent"
    NO_READY_REPLICA = "NoReadyReplica"


@dataclass(frozen=True)
class Verdict:
    """One object's readiness, with the reason and message to show (a controller's, or ours)."""

    readiness: Readiness
    reason: str = ""
    message: str = ""
    generation: int | None = None
    """The object's metadata.generation, when it has one."""
    observed_generation: int | None = None
    """The generation the deciding condition was written for, when known."""

    @property
    def ready(self) -> bool:
        return self.readiness is Readiness.READY

    @property
    def failed(self) -> bool:
        return self.readiness is Readiness.FAILED


READY = Verdict(Readiness.READY)
NOT_FOUND = Verdict(Readiness.IN_PROGRESS, Waiting.NOT_FOUND, "not found")


def spec_hash(spec: Mapping[str, Any]) -> str:
    """The first 16 hex digits of the sha256 of `spec` as canonical JSON (sorted keys). Pure."""
    canonical = json.dumps(_plain(spec), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:SPEC_HASH_LENGTH]


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def observed_generation_of(condition: Condition | Mapping[str, Any], status_observed: Any) -> int | None:
    """The generation a condition was written for: its own, else status.observedGeneration. Pure."""
    own = condition.observed_generation if isinstance(condition, Condition) else condition.get("observedGeneration")
    chosen = own if own is not None else status_observed
    return chosen if isinstance(chosen, int) and not isinstance(chosen, bool) else None


def flux_readiness(observed: FluxKustomization | GenericObject | None) -> Verdict:
    """Readiness of a Flux Kustomization or HelmRelease for its current generation. Pure."""
    if observed is None:
        return NOT_FOUND
    generation = observed.meta.generation
    if observed.spec.get("suspend") is True:
        return Verdict(Readiness.IN_PROGRESS, Waiting.SUSPENDED, "suspended", generation)
    ready = observed.condition("Ready")
    if ready is None:
        return Verdict(Readiness.IN_PROGRESS, Waiting.AWAITING_STATUS, "no Ready condition yet", generation)
    seen = observed_generation_of(ready, _status_observed_generation(observed))
    if seen != generation:
        return _stale(generation, seen)
    if ready.status == "True":
        return Verdict(Readiness.READY, ready.reason, ready.message, generation, seen)
    if ready.status == "False" and ready.reason not in FLUX_IN_PROGRESS_REASONS:
        return Verdict(Readiness.FAILED, ready.reason, ready.message, generation, seen)
    return Verdict(Readiness.IN_PROGRESS, ready.reason, ready.message, generation, seen)


def _status_observed_generation(observed: FluxKustomization | GenericObject) -> Any:
    if isinstance(observed, FluxKustomization):
        return observed.observed_generation
    return observed.status.get("observedGeneration")


def _stale(generation: int, seen: int | None) -> Verdict:
    recorded = "no generation" if seen is None else f"generation {seen}"
    message = f"generation {generation} not observed yet, its status is for {recorded}"
    return Verdict(Readiness.IN_PROGRESS, Waiting.STALE_GENERATION, message, generation, seen)


def security_policy_readiness(observed: GenericObject | None, *, planned_hash: str) -> Verdict:
    """Readiness of an Envoy Gateway SecurityPolicy: the planned spec, accepted by every ancestor. Pure."""
    if observed is None:
        return NOT_FOUND
    return not_the_planned_spec(observed, planned_hash=planned_hash) or _accepted_by_all(observed, "ancestors")


def not_the_planned_spec(observed: GenericObject, *, planned_hash: str) -> Verdict | None:
    """IN_PROGRESS (NotCurrent) when the observed object does not carry the planned spec's hash. Pure."""
    recorded = observed.meta.annotations.get(SPEC_HASH_ANNOTATION)
    if recorded == planned_hash:
        return None
    message = f"spec hash {recorded or 'absent'} is not the planned {planned_hash}"
    return Verdict(Readiness.IN_PROGRESS, Waiting.NOT_CURRENT, message, observed.meta.generation)


def http_route_readiness(observed: GenericObject | None) -> Verdict:
    """Readiness of a Gateway API HTTPRoute: accepted by every parent for its generation. Pure."""
    if observed is None:
        return NOT_FOUND
    return _accepted_by_all(observed, "parents")


def _accepted_by_all(observed: GenericObject, key: str) -> Verdict:
    """Every entry of status.<key> holds Accepted=True for the object's current generation."""
    generation = observed.meta.generation
    entries = observed.status.get(key) or ()
    if not entries:
        return Verdict(Readiness.IN_PROGRESS, Waiting.AWAITING_STATUS, f"no status.{key} yet", generation)
    verdicts = [_accepted(entry.get("conditions") or (), generation) for entry in entries]
    for wanted in (Readiness.FAILED, Readiness.IN_PROGRESS):
        found = next((v for v in verdicts if v.readiness is wanted), None)
        if found is not None:
            return found
    return Verdict(Readiness.READY, "Accepted", "", generation, generation)


def _accepted(conditions: Any, generation: int) -> Verdict:
    accepted = next((c for c in conditions if isinstance(c, Mapping) and c.get("type") == "Accepted"), None)
    if accepted is None:
        return Verdict(Readiness.IN_PROGRESS, Waiting.AWAITING_STATUS, "no Accepted condition yet", generation)
    seen = observed_generation_of(accepted, None)
    if seen != generation:
        return _stale(generation, seen)
    reason, message = str(accepted.get("reason") or ""), str(accepted.get("message") or "")
    if accepted.get("status") == "True":
        return Verdict(Readiness.READY, reason, message, generation, seen)
    if accepted.get("status") == "False":
        return Verdict(Readiness.FAILED, reason, message, generation, seen)
    return Verdict(Readiness.IN_PROGRESS, reason, message, generation, seen)


def kubeai_model_readiness(model: KubeAIModel | None) -> Verdict:
    """Readiness of a KubeAI Model: a ready replica (its status has no generation to check). Pure."""
    if model is None:
        return NOT_FOUND
    if model.replicas_ready > 0:
        return READY
    return Verdict(Readiness.IN_PROGRESS, Waiting.NO_READY_REPLICA, "no replica ready yet", model.meta.generation)


def deployment_rollout(workload: Workload | None, *, planned_hash: str) -> Verdict:
    """Readiness of a direct runtime's Deployment: the planned spec (by its spec-hash annotation),
    observed by its controller at the current generation, every replica updated and one
    available. A rollout past its progress deadline is Failed. Pure."""
    if workload is None:
        return NOT_FOUND
    generation = workload.meta.generation
    if workload.meta.annotations.get(SPEC_HASH_ANNOTATION) != planned_hash:
        return Verdict(
            Readiness.IN_PROGRESS, Waiting.NOT_CURRENT, "the planned Deployment is not applied yet", generation
        )
    if workload.observed_generation != generation:
        return _stale(generation, workload.observed_generation)
    progressing = next((c for c in workload.conditions if c.type == "Progressing"), None)
    if progressing is not None and progressing.status == "False":
        return Verdict(
            Readiness.FAILED, progressing.reason, progressing.message, generation, workload.observed_generation
        )
    if workload.updated_replicas < workload.desired_replicas or workload.available_replicas < 1:
        message = f"{workload.available_replicas} of {workload.desired_replicas} replica(s) available, {workload.updated_replicas} updated"
        return Verdict(
            Readiness.IN_PROGRESS, Waiting.NO_READY_REPLICA, message, generation, workload.observed_generation
        )
    return Verdict(Readiness.READY, generation=generation, observed_generation=workload.observed_generation)
