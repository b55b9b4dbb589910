"""Recovery of the terminal Pods of a KubeAI Model: which Pod to delete, when, and when to stop.

A Model whose Pod has ended (phase Failed or Succeeded) stays stuck on it: KubeAI counts the
Pod as a replica and starts no other. Recovery deletes that exact Pod so that KubeAI starts a
fresh one, a bounded number of times, and keeps its progress in status.podRecovery so that a
restarted program continues the count instead of starting over.

Rules:
- A candidate is a Pod in phase Failed or Succeeded, not already being deleted, whose
  controller ownerReference is the Model itself (kubeai.org/v1, kind Model, the Model's UID).
  Pending, Running and Unknown Pods, Pods of another Model and Pods the Model owns without
  controlling them are never candidates. A Pod without UID or resourceVersion is none either:
  it cannot be deleted under identity preconditions.
- At most one Pod is deleted per run: the first candidate by name.
- Attempt 1 happens at once. After attempt n the next one waits base_delay * 2**(n-1), capped
  at max_delay, counted from lastAttemptTime.
- After max_attempts attempts nothing more is deleted; while a terminal Pod remains, recovery
  is exhausted and the activation is Degraded with reason ModelPodRecoveryExhausted.
- The failure recorded by the first attempt is kept by every later attempt.
- A changed revision (new desired configuration or model identity) resets recovery, and so
  does success: no terminal Pod left and a replica ready.
- While no terminal Pod exists and no replica is ready, the replacement Pod is still on its
  way and the state is kept.
  > Why: between two attempts there is always a moment without a terminal Pod. Resetting
  > there would restart the count with every replacement, and the bound would never hold.
- Nothing moves on its own: a run that deletes nothing returns the state it was given.

Pure: no I/O; the clock enters only as `now`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from api import peer_kinds
from api.vocabulary import Phase, Reason
from planning.conditions import rfc3339

STATUS_FIELD: Final = "podRecovery"
MODEL_API_VERSION: Final = peer_kinds.KUBEAI_MODEL.api_version
MODEL_KIND: Final = "Model"
TERMINAL_PHASES: Final = frozenset({"Failed", "Succeeded"})
DEGRADED: Final = Phase.DEGRADED
RECOVERY_EXHAUSTED: Final = Reason.MODEL_POD_RECOVERY_EXHAUSTED

MAX_ATTEMPTS: Final = 5
BASE_DELAY: Final = timedelta(seconds=10)
MAX_DELAY: Final = timedelta(minutes=5)


@dataclass(frozen=True)
class PodFailure:
    """How a Pod ended: its phase and the reason and message Kubernetes gave for it."""

    phase: str
    reason: str
    message: str

    @classmethod
    def from_status(cls, value: Any) -> PodFailure | None:
        """The failure stored at status.podRecovery.failure, or None when it is not one."""
        if not isinstance(value, Mapping):
            return None
        fields = (value.get("phase"), value.get("reason", ""), value.get("message", ""))
        if not all(isinstance(field, str) for field in fields) or not fields[0]:
            return None
        return cls(phase=fields[0], reason=fields[1], message=fields[2])

    def to_status(self) -> dict[str, str]:
        return {"phase": self.phase, "reason": self.reason, "message": self.message}

    def describe(self) -> str:
        said = ": ".join(part for part in (self.reason, self.message) if part)
        return f"{self.phase} ({said})" if said else self.phase


@dataclass(frozen=True)
class RecoveryAttempt:
    """One deletion of a terminal Pod as its PodRecovery resource carries it: the Pod's identity
    the deletion's preconditions need, and which attempt it is."""

    namespace: str
    pod: str
    pod_uid: str
    resource_version: str
    attempt: int

    @property
    def resource_id(self) -> str:
        return f"{self.namespace}/{self.pod}/{self.pod_uid}/{self.attempt}"

    def to_inputs(self) -> dict[str, Any]:
        """The inputs of its PodRecovery resource (providers/pod_recovery.py). Pure."""
        return {
            "namespace": self.namespace,
            "pod": self.pod,
            "podUID": self.pod_uid,
            "resourceVersion": self.resource_version,
            "attempt": self.attempt,
        }

    @classmethod
    def from_inputs(cls, inputs: Mapping[str, Any]) -> RecoveryAttempt:
        """The attempt `to_inputs` wrote; its number may come back as a float (Pulumi's numbers). Pure."""
        return cls(
            namespace=inputs["namespace"],
            pod=inputs["pod"],
            pod_uid=inputs["podUID"],
            resource_version=inputs["resourceVersion"],
            attempt=int(inputs["attempt"]),
        )


@dataclass(frozen=True)
class TerminalPod:
    """A Pod of the Model that has ended, with the identity a precondition needs."""

    name: str
    uid: str
    resource_version: str
    phase: str
    reason: str
    message: str
    owner_uid: str

    @property
    def failure(self) -> PodFailure:
        return PodFailure(phase=self.phase, reason=self.reason, message=self.message)


def select_terminal_pods(pods: Iterable[Mapping[str, Any]], model_uid: str) -> tuple[TerminalPod, ...]:
    """The Pods recovery may delete for the Model `model_uid`, sorted by name. Pure.

    `pods` are raw objects as `kubectl get -o yaml` prints them, from any namespace filter the
    caller chose; only the ownerReference decides.
    """
    if not model_uid:
        return ()
    selected = []
    for pod in pods:
        metadata = pod.get("metadata") or {}
        status = pod.get("status") or {}
        phase = status.get("phase")
        if phase not in TERMINAL_PHASES or metadata.get("deletionTimestamp"):
            continue
        if not (metadata.get("name") and metadata.get("uid") and metadata.get("resourceVersion")):
            continue
        if not _controlled_by_model(metadata, model_uid):
            continue
        reason, message = _ending(status)
        selected.append(
            TerminalPod(
                name=str(metadata["name"]),
                uid=str(metadata["uid"]),
                resource_version=str(metadata["resourceVersion"]),
                phase=str(phase),
                reason=reason,
                message=message,
                owner_uid=model_uid,
            )
        )
    return tuple(sorted(selected, key=lambda pod: (pod.name, pod.uid)))


def _controlled_by_model(metadata: Mapping[str, Any], model_uid: str) -> bool:
    return any(
        owner.get("controller") is True
        and owner.get("apiVersion") == MODEL_API_VERSION
        and owner.get("kind") == MODEL_KIND
        and owner.get("uid") == model_uid
        for owner in metadata.get("ownerReferences") or ()
    )


def _ending(status: Mapping[str, Any]) -> tuple[str, str]:
    """The reason and message of a terminal Pod: the Pod's own, else its first failed container's."""
    reason, message = str(status.get("reason") or ""), str(status.get("message") or "")
    if reason or message:
        return reason, message
    containers = (*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ()))
    terminated = [
        (str(container.get("name") or ""), (container.get("state") or {}).get("terminated") or {})
        for container in containers
    ]
    ended = [(name, state) for name, state in terminated if state]
    failed = [(name, state) for name, state in ended if state.get("exitCode", 0) != 0]
    if not ended:
        return "", ""
    name, state = (failed or ended)[0]
    code = state.get("exitCode", 0)
    return str(state.get("reason") or ""), str(state.get("message") or f"container {name} exited with code {code}")


@dataclass(frozen=True)
class RecoveryState:
    """status.podRecovery: how far recovery has come for one revision of the Model."""

    revision: str
    attempts: int
    last_attempt_time: datetime
    pod_uid: str
    failure: PodFailure

    @classmethod
    def from_status(cls, value: Any) -> RecoveryState | None:
        """The state stored at status.podRecovery; None when absent or not readable as one."""
        if not isinstance(value, Mapping):
            return None
        revision, attempts, pod_uid = value.get("revision"), value.get("attempts"), value.get("podUID")
        moment = _parse_time(value.get("lastAttemptTime"))
        failure = PodFailure.from_status(value.get("failure"))
        if isinstance(attempts, float) and attempts.is_integer():
            attempts = int(attempts)
        if not (isinstance(revision, str) and isinstance(pod_uid, str)) or moment is None or failure is None:
            return None
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            return None
        return cls(revision=revision, attempts=attempts, last_attempt_time=moment, pod_uid=pod_uid, failure=failure)

    def to_status(self) -> dict[str, Any]:
        return {
            "revision": self.revision,
            "attempts": self.attempts,
            "lastAttemptTime": rfc3339(self.last_attempt_time),
            "podUID": self.pod_uid,
            "failure": self.failure.to_status(),
        }

    def next_attempt_time(self, *, base_delay: timedelta = BASE_DELAY, max_delay: timedelta = MAX_DELAY) -> datetime:
        return self.last_attempt_time + backoff(self.attempts, base_delay=base_delay, max_delay=max_delay)


def backoff(attempt: int, *, base_delay: timedelta = BASE_DELAY, max_delay: timedelta = MAX_DELAY) -> timedelta:
    """The wait after attempt `attempt` (1-based): base_delay * 2**(attempt-1), at most max_delay."""
    if attempt < 1:
        raise ValueError(f"attempt must be at least 1, not {attempt}")
    delay = base_delay
    for _ in range(attempt - 1):
        if delay >= max_delay or not delay:
            break
        delay *= 2
    return min(delay, max_delay)


@dataclass(frozen=True)
class RecoveryDecision:
    """What one run does: the Pod to delete (if any) and the state to persist (None: clear it)."""

    state: RecoveryState | None
    delete: TerminalPod | None = None
    exhausted: bool = False

    @property
    def attempt(self) -> int | None:
        """The number of the deletion this run makes, or None when it makes none."""
        return self.state.attempts if self.delete is not None and self.state is not None else None

    @property
    def phase(self) -> Phase | None:
        return DEGRADED if self.exhausted else None

    @property
    def reason(self) -> Reason | None:
        return RECOVERY_EXHAUSTED if self.exhausted else None

    @property
    def message(self) -> str | None:
        if not self.exhausted or self.state is None:
            return None
        return (
            f"Model Pods still end after {self.state.attempts} recovery attempts; "
            f"the first failure was {self.state.failure.describe()}"
        )


def decide_recovery(
    *,
    previous: RecoveryState | None,
    revision: str,
    terminal: tuple[TerminalPod, ...],
    ready: bool,
    now: datetime,
    max_attempts: int = MAX_ATTEMPTS,
    base_delay: timedelta = BASE_DELAY,
    max_delay: timedelta = MAX_DELAY,
) -> RecoveryDecision:
    """The recovery step for one Model in this run, by the rules of this module. Pure.

    previous: status.podRecovery as last persisted; revision: the desired revision now;
    terminal: select_terminal_pods of the Model; ready: a replica of the Model is ready.
    """
    if now.tzinfo is None:
        raise ValueError("now must carry a timezone")
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, not {max_attempts}")
    current = previous if previous is not None and previous.revision == revision else None
    if not terminal:
        return RecoveryDecision(state=None if ready else current)
    target = min(terminal, key=lambda pod: (pod.name, pod.uid))
    moment = now.astimezone(UTC).replace(microsecond=0)
    if current is None:
        started = RecoveryState(
            revision=revision, attempts=1, last_attempt_time=moment, pod_uid=target.uid, failure=target.failure
        )
        return RecoveryDecision(state=started, delete=target)
    if current.attempts >= max_attempts:
        return RecoveryDecision(state=current, exhausted=True)
    if now < current.next_attempt_time(base_delay=base_delay, max_delay=max_delay):
        return RecoveryDecision(state=current)
    advanced = replace(current, attempts=current.attempts + 1, last_attempt_time=moment, pod_uid=target.uid)
    return RecoveryDecision(state=advanced, delete=target)


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
