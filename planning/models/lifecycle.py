"""The lifecycle of a KubeAI-backed local model, from what the cluster shows.

Phases, in the order they are checked once the Model is declared:
- WaitingForPod: no non-terminating Pod of the Model exists. A timer persisted in
  status.podCreation (since, and a revision bound to the Model's UID and generation and the
  activation's generation) turns this into Degraded / ModelPodCreationStalled after two
  minutes; a new desired configuration or Model identity restarts it, a Pod clears it.
- terminal Pods (Failed or Succeeded, controlled by exactly this Model) are recovered by
  deletion under UID and resourceVersion preconditions, five attempts with persistent
  exponential backoff (status.podRecovery), then Degraded / ModelPodRecoveryExhausted.
  Pending and running Pods are never touched.
- Starting: a Pod exists but no replica is ready; also while an Ollama alias is missing on a
  Ready Pod (WaitingForOllamaAlias) or the model catalog has not published the model yet.
- Ready: a replica is ready, the engine checks passed and the model catalog lists the model.

Two of these states change with time alone; `lifecycle_deadlines` says when (planning.deadlines):
the stall at podCreation.since plus two minutes, while the phase is WaitingForPod; the next
recovery attempt at podRecovery's lastAttemptTime plus its backoff, while recovery is neither
exhausted nor over (the activation not Ready). Both are read from the status this run plans,
so they move only when the persisted timers do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from api.vocabulary import Phase, ProblemReason, Reason, StatusReason
from planning.conditions import rfc3339
from planning.deadlines import Deadline, whole_second_from
from planning.models.recovery import (
    MAX_ATTEMPTS,
    RECOVERY_EXHAUSTED,
    RecoveryDecision,
    RecoveryState,
    TerminalPod,
    decide_recovery,
)
from planning.objects import StatusUpdate
from planning.readiness import kubeai_model_readiness
from planning.snapshot import KubeAIModel, OllamaObservation, Pod

POD_CREATION_TIMEOUT = timedelta(minutes=2)
TERMINAL_PHASES = frozenset({"Failed", "Succeeded"})


@dataclass(frozen=True)
class Lifecycle:
    phase: Phase
    reason: StatusReason
    message: str
    pod_creation: dict[str, str] | None
    recovery: RecoveryDecision
    ready_replicas: int


def pod_creation_revision(model: KubeAIModel, activation_generation: int) -> str:
    return f"{model.meta.uid}/{model.meta.generation}/{activation_generation}"


def terminal_pods(pods: tuple[Pod, ...], model: KubeAIModel) -> tuple[TerminalPod, ...]:
    found = []
    for pod in pods:
        owner = next((o for o in pod.owners if o.controller and o.uid == model.meta.uid), None)
        if owner is None or owner.kind != "Model" or owner.api_version != "kubeai.org/v1":
            continue
        if pod.phase in TERMINAL_PHASES and pod.meta.uid and pod.meta.resource_version:
            found.append(
                TerminalPod(
                    name=pod.meta.name,
                    uid=pod.meta.uid,
                    resource_version=pod.meta.resource_version,
                    phase=pod.phase,
                    reason=pod.reason,
                    message=pod.message,
                    owner_uid=model.meta.uid or "",
                )
            )
    return tuple(sorted(found, key=lambda p: p.name))


def _timer(previous: Mapping[str, Any], revision: str, now: datetime) -> dict[str, str]:
    if previous.get("revision") == revision and previous.get("since"):
        return {"since": str(previous["since"]), "revision": revision}
    return {"since": rfc3339(now), "revision": revision}


def _elapsed(since: str, now: datetime) -> timedelta:
    return now - _moment(since)


def _moment(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def lifecycle_deadlines(update: StatusUpdate) -> tuple[Deadline, ...]:
    """When the planned status of a ModelActivation changes with time alone: its Pod creation
    stall and its next Pod recovery attempt, as far as they apply. Pure."""
    status = update.status
    who = f"{update.kind} {update.namespace}/{update.name}"
    found = []
    timer = status.get("podCreation")
    since = timer.get("since") if isinstance(timer, Mapping) else None
    if status.get("phase") == Phase.WAITING_FOR_POD and isinstance(since, str):
        try:
            found.append(
                Deadline(
                    at=whole_second_from(_moment(since) + POD_CREATION_TIMEOUT), reason=f"{who}: pod creation stall"
                )
            )
        except ValueError:
            pass
    recovery = RecoveryState.from_status(status.get("podRecovery"))
    if (
        recovery is not None
        and recovery.attempts < MAX_ATTEMPTS
        and status.get("reason") != RECOVERY_EXHAUSTED
        and status.get("phase") != Phase.READY
    ):
        found.append(
            Deadline(
                at=whole_second_from(recovery.next_attempt_time()),
                reason=f"{who}: pod recovery attempt {recovery.attempts + 1}",
            )
        )
    return tuple(found)


def model_lifecycle(
    *,
    model: KubeAIModel,
    pods: tuple[Pod, ...],
    activation_generation: int,
    previous_status: Mapping[str, Any],
    engine: str,
    now: datetime,
    alias_missing_on: tuple[str, ...],
    ollama_unreachable: tuple[OllamaObservation, ...] = (),
    published: bool,
) -> Lifecycle:
    """The phase of a local model whose KubeAI Model exists. Pure."""
    revision = pod_creation_revision(model, activation_generation)
    live = tuple(p for p in pods if not p.terminating and p.phase not in TERMINAL_PHASES)
    recovery = decide_recovery(
        previous=RecoveryState.from_status(previous_status.get("podRecovery")),
        revision=revision,
        terminal=terminal_pods(pods, model),
        ready=kubeai_model_readiness(model).ready,
        now=now,
    )
    ready = model.replicas_ready
    replicas = f"{ready}/{max(model.replicas_all, len(live))} replicas ready ({engine})"

    def lifecycle(
        phase: Phase, reason: StatusReason, message: str, pod_creation: dict[str, str] | None = None
    ) -> Lifecycle:
        return Lifecycle(phase, reason, message, pod_creation, recovery, ready)

    if recovery.exhausted:
        return lifecycle(Phase.DEGRADED, Reason.MODEL_POD_RECOVERY_EXHAUSTED, f"{recovery.message}; {replicas}.")
    if not live:
        timer = _timer(previous_status.get("podCreation") or {}, revision, now)
        if _elapsed(timer["since"], now) >= POD_CREATION_TIMEOUT:
            return lifecycle(
                Phase.DEGRADED,
                Reason.MODEL_POD_CREATION_STALLED,
                f"No Pod for KubeAI Model {model.meta.namespace}/{model.meta.name} since {timer['since']}; {replicas}.",
                timer,
            )
        return lifecycle(
            Phase.WAITING_FOR_POD, Reason.WAITING_FOR_POD, f"Waiting for a Pod of the KubeAI Model; {replicas}.", timer
        )
    if ready == 0:
        return lifecycle(Phase.STARTING, Reason.WAITING_FOR_REPLICA, f"Pod created, no replica ready yet; {replicas}.")
    if ollama_unreachable:
        answers = "; ".join(f"{seen.pod}: {seen.error}" for seen in ollama_unreachable)
        return lifecycle(
            Phase.DEGRADED, ProblemReason.OLLAMA_UNREACHABLE, f"Ollama does not answer on {answers}; {replicas}."
        )
    if alias_missing_on:
        return lifecycle(
            Phase.STARTING,
            Reason.WAITING_FOR_OLLAMA_ALIAS,
            f"Waiting for the Ollama alias on {', '.join(alias_missing_on)}; {replicas}.",
        )
    if not published:
        return lifecycle(
            Phase.STARTING,
            Reason.WAITING_FOR_MODEL_CATALOG,
            f"Waiting for the model catalog to publish the model; {replicas}.",
        )
    return lifecycle(Phase.READY, Reason.READY, f"Model is available in the generated model catalog; {replicas}.")
