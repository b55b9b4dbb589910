"""Finalizer cleanup of direct runtimes: a deleted ModelActivation's runtime goes at once.

The program runs the realtime (vLLM-Omni) and FreeToken runtimes itself, as a Deployment, a
Service and (realtime) a stage ConfigMap in the activation's target namespace. Without help they
are removed only when the program next runs and no longer declares them. So the trigger, which
watches every ModelActivation anyway, holds each activation with a direct runtime with the
finalizer `appliance.magicstick.dev/runtime-cleanup` (api/model_runtimes.py) and, when the
activation is deleted, deletes its runtime's objects and releases it.

Rules:
- who holds: an activation that is not being deleted, whose spec asks for the realtime runtime
  (`spec.local.realtime`, known before any run) or whose status names a direct runtime
  (`status.runtime`, which the program writes: FreeToken whether its engine was given or chosen),
  and whose target namespace is one the trigger watches direct runtimes in. Only the trigger
  adds the finalizer and only the trigger removes it, so a cluster without the trigger (the
  program run from a workstation) never holds one. An activation held once stays held until it
  is deleted, whatever its spec becomes (a runtime may still run meanwhile).
- cleanup: in every namespace the trigger watches direct runtimes in, the Deployments, Services
  and ConfigMaps labelled with the activation's name and the runtime label key
  (`api.model_runtimes.runtime_selector`) are deleted, the workload first, each under its UID,
  with Background propagation (the garbage collector then removes its ReplicaSets and Pods; a
  Pod stuck on a lost node can never hold the deletion). A second LIST confirms that none is
  left that is not being deleted; then the finalizer is released.
- never blocked for long: a refusal of the cleanup (403, or any 4xx but 404 and 409) releases
  the finalizer at once; any other failure, or a runtime recreated meanwhile, is tried again
  after 1 s, 2 s, 4 s... and after RELEASE_AFTER attempts the finalizer is released anyway.
  Nothing is lost by releasing: the deletion of the activation requests a run, and the program,
  which no longer declares that runtime, deletes whatever is left (providers/direct_runtime.py).
- every write of the activation is a merge patch of `metadata.finalizers` carrying the
  resourceVersion it was computed from, so another party's finalizer is never dropped (a 409:
  read again, decide again). A finalizer removal on an activation already gone is done.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from api.model_runtimes import DIRECT_RUNTIME_LABELS, RUNTIME_CLEANUP_FINALIZER, RUNTIME_STATUS_FIELD, runtime_selector
from api.models import ModelActivationSpec
from providers.kinds import CONFIG_MAP, DEPLOYMENT, MODEL_ACTIVATION, SERVICE
from providers.kube import (
    Conflict,
    Invalid,
    KubeAccess,
    KubeClient,
    KubeConfigError,
    KubeConnectionError,
    KubeError,
    NotFound,
    ResourceKind,
    ServerError,
    TooManyRequests,
    Unauthorized,
    open_client,
)
from providers.kube.client import MERGE_PATCH
from services.reconcile_trigger.progress import Progress
from services.reconcile_trigger.stack import FIELD_MANAGER, Backoff

LOGGER = logging.getLogger("magicstick.reconcile_trigger")

ObjectKey = tuple[str, str]
RUNTIME_KINDS: Final = (DEPLOYMENT, SERVICE, CONFIG_MAP)
"""What a direct runtime is made of, in the order it is deleted: the workload first, so its
Pods never run without their Service or configuration."""
DEFAULT_TARGET_NAMESPACE: Final = str(ModelActivationSpec.model_fields["target_namespace"].default)
DEFAULT_BACKOFF: Final = Backoff(1.0, 60.0)
RELEASE_AFTER: Final = 5
"""Failed cleanups of one activation after which its finalizer is released anyway (after
about 1 + 2 + 4 + 8 s of backoff with the default timing): the program's run removes the rest."""
WRITE_ATTEMPTS: Final = 3
"""Merge patches of one activation tried in a row when each finds it changed (409)."""


class Step(StrEnum):
    """What an activation, as last seen, asks of the cleanup."""

    HOLD = "hold"
    """Add the finalizer."""
    CLEAN_UP = "clean up"
    """Delete the runtime, then release the finalizer."""
    NONE = "none"


class Outcome(StrEnum):
    DONE = "done"
    RETRY = "retry"
    """Try again after the backoff."""


def is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def finalizers(obj: Mapping[str, Any]) -> list[str]:
    return [str(f) for f in (obj.get("metadata") or {}).get("finalizers") or ()]


def has_direct_runtime(obj: Mapping[str, Any]) -> bool:
    """Whether the ModelActivation `obj` is (or is about to be) run as a direct runtime. Pure."""
    spec = obj.get("spec") or {}
    local = spec.get("local") if spec.get("type") == "local" else None
    if isinstance(local, Mapping) and isinstance(local.get("realtime"), Mapping):
        return True
    status = obj.get("status") or {}
    return isinstance(status, Mapping) and status.get(RUNTIME_STATUS_FIELD) in DIRECT_RUNTIME_LABELS


def target_namespace(obj: Mapping[str, Any]) -> str:
    return str((obj.get("spec") or {}).get("targetNamespace") or DEFAULT_TARGET_NAMESPACE)


def next_step(obj: Mapping[str, Any], namespaces: Collection[str]) -> Step:
    """What the ModelActivation `obj` asks of a cleanup serving direct runtimes in `namespaces`. Pure."""
    held = RUNTIME_CLEANUP_FINALIZER in finalizers(obj)
    if is_deleting(obj):
        return Step.CLEAN_UP if held else Step.NONE
    if not held and has_direct_runtime(obj) and target_namespace(obj) in namespaces:
        return Step.HOLD
    return Step.NONE


def finalizers_patch(obj: Mapping[str, Any], wanted: list[str]) -> dict[str, Any]:
    """The merge patch that sets `obj`'s finalizers to `wanted`, only if `obj` is unchanged
    since it was read (its resourceVersion: a 409 otherwise). Pure."""
    return {"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"], "finalizers": wanted}}


def with_finalizer(obj: Mapping[str, Any]) -> list[str]:
    return [*finalizers(obj), RUNTIME_CLEANUP_FINALIZER]


def without_finalizer(obj: Mapping[str, Any]) -> list[str]:
    return [f for f in finalizers(obj) if f != RUNTIME_CLEANUP_FINALIZER]


def is_refusal(error: KubeError) -> bool:
    """A failure no retry mends: the server understood and said no (403, 400, 422...)."""
    return not isinstance(error, (KubeConnectionError, ServerError, TooManyRequests, Unauthorized, NotFound, Conflict))


@dataclass(frozen=True)
class Removal:
    """One cleanup pass over an activation's runtime."""

    deleted: tuple[str, ...]
    """`<Kind> <namespace>/<name>` of each object this pass deleted."""
    remaining: tuple[str, ...]
    """The objects found after the deletions that are not being deleted (recreated meanwhile)."""


def _identity(kind: ResourceKind, obj: Mapping[str, Any]) -> str:
    metadata = obj["metadata"]
    return f"{kind.kind} {metadata.get('namespace')}/{metadata['name']}"


def delete_runtime(client: KubeClient, activation: str, namespaces: Collection[str]) -> Removal:
    """Delete every object of `activation`'s direct runtime in `namespaces`, then list what is
    left. Raises KubeError."""
    selector = runtime_selector(activation)
    deleted: list[str] = []
    for namespace in sorted(namespaces):
        for kind in RUNTIME_KINDS:
            for item in client.list(kind, namespace=namespace, label_selector=selector):
                if is_deleting(item):
                    continue
                try:
                    client.delete(
                        kind,
                        item["metadata"]["name"],
                        namespace,
                        uid=item["metadata"].get("uid"),
                        propagation_policy="Background",
                    )
                except (NotFound, Conflict):
                    continue
                deleted.append(_identity(kind, item))
    remaining = [
        _identity(kind, item)
        for namespace in sorted(namespaces)
        for kind in RUNTIME_KINDS
        for item in client.list(kind, namespace=namespace, label_selector=selector)
        if not is_deleting(item)
    ]
    return Removal(deleted=tuple(deleted), remaining=tuple(remaining))


class RuntimeCleanup:
    """Holds ModelActivations with a direct runtime and cleans up after their deletion.

    The ModelActivation watch hands it every version of every activation (`observe`); one
    thread (`run`) acts on those that ask for a step, one at a time, each with its own backoff.
    Thread-safe: watches observe, one thread runs.
    """

    def __init__(
        self,
        *,
        access: KubeAccess,
        namespaces: Collection[str],
        stop: threading.Event,
        progress: Progress | None = None,
        backoff: Backoff = DEFAULT_BACKOFF,
        release_after: int = RELEASE_AFTER,
    ) -> None:
        self.namespaces = frozenset(namespaces)
        """Where the trigger watches direct runtimes, and cleans them up."""
        self._access = access
        self._stop = stop
        self._progress = progress or Progress()
        self._backoff = backoff
        self._release_after = release_after
        self._condition = threading.Condition()
        self._latest: dict[ObjectKey, dict[str, Any]] = {}
        """The last version seen of each activation that asks for a step."""
        self._due: dict[ObjectKey, float] = {}
        """When each of them is acted on next (time.monotonic)."""
        self._failures: dict[ObjectKey, int] = {}
        self._closed = False

    def observe(self, key: ObjectKey, obj: Mapping[str, Any] | None) -> None:
        """The ModelActivation `key` (namespace, name) is now `obj`, or gone (None)."""
        step = Step.NONE if obj is None else next_step(obj, self.namespaces)
        with self._condition:
            if obj is None or step is Step.NONE:
                self._latest.pop(key, None)
                self._due.pop(key, None)
                self._failures.pop(key, None)
                return
            self._latest[key] = dict(obj)
            self._due[key] = time.monotonic()
            self._condition.notify_all()

    def pending(self) -> frozenset[ObjectKey]:
        """The activations that ask for a step not taken yet."""
        with self._condition:
            return frozenset(self._due)

    def run(self) -> None:
        """The thread's body: take each step when it is due; returns once closed."""
        while (taken := self._next()) is not None:
            key, obj = taken
            try:
                with open_client(self._access, sleep=self._stop.wait) as client:
                    outcome = self._act(client, key, obj)
            except KubeConfigError as error:
                LOGGER.warning("ModelActivation %s/%s: cluster access: %s", *key, error)
                outcome = Outcome.RETRY
            self._settle(key, outcome)
            self._progress.notify()

    def close(self) -> None:
        with self._condition:
            self._closed = True
            self._condition.notify_all()

    def _next(self) -> tuple[ObjectKey, dict[str, Any]] | None:
        with self._condition:
            while not self._closed:
                now = time.monotonic()
                if self._due:
                    key = min(self._due, key=lambda k: self._due[k])
                    if self._due[key] <= now:
                        del self._due[key]
                        return key, self._latest[key]
                    self._condition.wait(self._due[key] - now)
                else:
                    self._condition.wait()
            return None

    def _settle(self, key: ObjectKey, outcome: Outcome) -> None:
        with self._condition:
            if outcome is Outcome.DONE:
                self._failures.pop(key, None)
                return
            if key not in self._latest:
                return
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
            if key not in self._due:
                self._due[key] = time.monotonic() + self._backoff.delay(failures)
            self._condition.notify_all()

    def _act(self, client: KubeClient, key: ObjectKey, obj: dict[str, Any]) -> Outcome:
        step = next_step(obj, self.namespaces)
        if step is Step.HOLD:
            return self._write(client, key, obj, Step.HOLD)
        if step is Step.CLEAN_UP:
            if not self._clean_up(client, key):
                return Outcome.RETRY
            return self._write(client, key, obj, Step.CLEAN_UP)
        return Outcome.DONE

    def _clean_up(self, client: KubeClient, key: ObjectKey) -> bool:
        """Delete the runtime of the activation `key`; whether its finalizer may go now."""
        namespace, name = key
        with self._condition:
            failures = self._failures.get(key, 0)
        try:
            removal = delete_runtime(client, name, self.namespaces)
        except KubeError as error:
            if is_refusal(error):
                LOGGER.warning(
                    "ModelActivation %s/%s: deleting its runtime was refused (%s); releasing the finalizer: "
                    "the program's next run deletes the runtime",
                    namespace,
                    name,
                    error.detail,
                )
                return True
            return self._failed(key, failures, f"deleting its runtime: {error.detail}")
        if removal.remaining:
            return self._failed(key, failures, f"created again meanwhile: {', '.join(removal.remaining)}")
        deleted = ", ".join(removal.deleted) or "nothing was left"
        LOGGER.info("ModelActivation %s/%s is being deleted; its runtime is deleted: %s", namespace, name, deleted)
        return True

    def _failed(self, key: ObjectKey, failures: int, what: str) -> bool:
        """Log a failed cleanup; whether the finalizer goes anyway (RELEASE_AFTER reached)."""
        namespace, name = key
        if failures + 1 >= self._release_after:
            LOGGER.warning(
                "ModelActivation %s/%s: %s; releasing the finalizer after %d attempts: "
                "the program's next run deletes the runtime",
                namespace,
                name,
                what,
                failures + 1,
            )
            return True
        LOGGER.warning("ModelActivation %s/%s: %s; trying again", namespace, name, what)
        return False

    def _write(self, client: KubeClient, key: ObjectKey, obj: dict[str, Any], step: Step) -> Outcome:
        """Add (HOLD) or remove (CLEAN_UP) the finalizer; on a 409 or 422 read the activation
        again and write again if it still asks for that step."""
        namespace, name = key
        current: dict[str, Any] | None = obj
        last: KubeError | None = None
        for _ in range(WRITE_ATTEMPTS):
            if current is None or next_step(current, self.namespaces) is not step:
                return Outcome.DONE
            wanted = with_finalizer(current) if step is Step.HOLD else without_finalizer(current)
            try:
                client.request(
                    "PATCH",
                    MODEL_ACTIVATION.object_path(name, namespace),
                    params={"fieldManager": FIELD_MANAGER},
                    body=finalizers_patch(current, wanted),
                    content_type=MERGE_PATCH,
                )
            except NotFound:
                return Outcome.DONE
            except (Conflict, Invalid) as error:
                last = error
                try:
                    current = client.get_or_none(MODEL_ACTIVATION, name, namespace)
                except KubeError as reading:
                    last = reading
                    break
                continue
            except KubeError as error:
                last = error
                break
            done = "added" if step is Step.HOLD else "removed"
            LOGGER.info("ModelActivation %s/%s: %s finalizer %s", namespace, name, done, RUNTIME_CLEANUP_FINALIZER)
            return Outcome.DONE
        doing = "adding" if step is Step.HOLD else "removing"
        said = last.detail if last is not None else "no answer"
        LOGGER.warning("ModelActivation %s/%s: %s its finalizer: %s; trying again", namespace, name, doing, said)
        return Outcome.RETRY
