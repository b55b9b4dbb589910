"""GPU validation runs: the history record, the bounded Job, the verdict and the runtime images.

A validation run is an administrator's explicit request (ModuleActivation/amd-gpu
`validationRequest`, or a `device-validation-*` annotation) to run the compatibility profile's
catalogued engine images, one at a time, each in one bounded Job on the node the request is
bound to. This module is pure: it shapes the durable record, the Job and the verdicts; the
dynamic provider (providers/gpu_validation.py) performs them in this order:

1. the request is recorded in the history store before anything runs (every stage Pending);
2. for the first engine not finished: its stage becomes Starting (recorded), then its Job is
   created under a name derived from the run, so a second create finds it (adopted, never
   doubled), then Running (recorded);
3. a finished Job gives the verdict from its Pod's termination message and the image ID that
   actually ran (Passed or Failed); a Running stage whose Job is gone was interrupted
   (recorded as Interrupted, never run again);
4. once every stage is final the run is Completed.

The history ConfigMap `<system namespace>/magicstick-gpu-validation-history`, key
`history.json`, holds `{"version": 1, "runs": {<run id>: <record>}}`. It is runtime-owned
(the program creates it from absence and never resets it), changed only by compare-and-swap,
and bounded: beyond MAX_HISTORY_RUNS the oldest completed runs are dropped, and when every
kept run is unfinished a new request is refused (HistoryFull: no new diagnostics; driver
reconciliation is not affected).

Results are keyed to the host identity (node UID, boot ID, evidence fingerprint), the profile
ID and version, the run ID and the image ID that ran. A result whose identity no longer
matches the node's current evidence is Stale in status; it starts no new run.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Final

from api.vocabulary import VerdictReason
from planning.labels import MANAGED_BY, MANAGED_BY_VALUE

HISTORY_CONFIG_MAP: Final = "magicstick-gpu-validation-history"
HISTORY_KEY: Final = "history.json"
HISTORY_VERSION: Final = 1
MAX_HISTORY_RUNS: Final = 32
RUNTIME_IMAGES_NAMESPACE: Final = "flux-system"
RUNTIME_IMAGES_CONFIG_MAP: Final = "magicstick-gpu-runtime-images"
RUNTIME_IMAGES_KEY: Final = "values.json"
RUNTIME_IMAGE_NAME: Final = "amd-gpu"
"""The KubeAI image name (modelServers.<engine>.images.<name>) the AMD resource profile selects."""

GPU_RESOURCE: Final = "amd.com/gpu"
JOB_TTL_SECONDS: Final = 3600
"""A finished Job and its Pod stay an hour: the verdict is recorded long before."""
RUN_LABEL: Final = "appliance.magicstick.dev/gpu-validation-run"
ENGINE_LABEL: Final = "appliance.magicstick.dev/gpu-validation-engine"
COMPONENT: Final = "gpu-validation"
MAX_TERMINATION_MESSAGE: Final = 4096


class Stage(StrEnum):
    """Where one engine of one run stands."""

    PENDING = "Pending"
    STARTING = "Starting"
    """Recorded before the Job is created: a restart creates it (or adopts it), once."""
    RUNNING = "Running"
    PASSED = "Passed"
    FAILED = "Failed"
    INTERRUPTED = "Interrupted"
    """Its Job vanished before a verdict was recorded: reported, never run again."""
    NOT_RUN = "NotRun"
    """Never started: the host evidence changed or the request was withdrawn first."""


FINAL_STAGES: Final = frozenset({Stage.PASSED, Stage.FAILED, Stage.INTERRUPTED, Stage.NOT_RUN})


@dataclass(frozen=True)
class HostIdentity:
    """What a result is bound to: the node as its current host evidence describes it."""

    node: str
    node_uid: str
    boot_id: str
    fingerprint: str

    def to_wire(self) -> dict[str, str]:
        return {"node": self.node, "nodeUID": self.node_uid, "bootID": self.boot_id, "fingerprint": self.fingerprint}

    @classmethod
    def from_wire(cls, raw: Mapping[str, Any]) -> HostIdentity:
        return cls(
            node=str(raw["node"]),
            node_uid=str(raw["nodeUID"]),
            boot_id=str(raw["bootID"]),
            fingerprint=str(raw["fingerprint"]),
        )


@dataclass(frozen=True)
class EngineRun:
    """One engine of a run: its fixed image and deadline, and what happened."""

    engine: str
    image: str
    timeout_seconds: int
    stage: Stage = Stage.PENDING
    job: str = ""
    image_id: str = ""
    started_at: str = ""
    finished_at: str = ""
    reason: str = ""
    message: str = ""

    def to_wire(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "image": self.image,
            "timeoutSeconds": self.timeout_seconds,
            "stage": self.stage.value,
            "job": self.job,
            "imageID": self.image_id,
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
            "reason": self.reason,
            "message": self.message,
        }

    @classmethod
    def from_wire(cls, raw: Mapping[str, Any]) -> EngineRun:
        return cls(
            engine=str(raw["engine"]),
            image=str(raw["image"]),
            timeout_seconds=int(raw["timeoutSeconds"]),
            stage=Stage(raw["stage"]),
            job=str(raw.get("job") or ""),
            image_id=str(raw.get("imageID") or ""),
            started_at=str(raw.get("startedAt") or ""),
            finished_at=str(raw.get("finishedAt") or ""),
            reason=str(raw.get("reason") or ""),
            message=str(raw.get("message") or ""),
        )


@dataclass(frozen=True)
class RunRecord:
    """One validation request and its engines, in run order."""

    run_id: str
    profile_id: str
    profile_version: str
    host: HostIdentity
    requested_at: str
    engines: tuple[EngineRun, ...]
    device: str = ""
    """For a device diagnostic: the PCI "vendor:device" it is bound to; empty for an engine validation."""

    @property
    def finished(self) -> bool:
        return all(e.stage in FINAL_STAGES for e in self.engines)

    def engine(self, name: str) -> EngineRun | None:
        return next((e for e in self.engines if e.engine == name), None)

    def with_engine(self, run: EngineRun) -> RunRecord:
        return replace(self, engines=tuple(run if e.engine == run.engine else e for e in self.engines))

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "runId": self.run_id,
            "profileId": self.profile_id,
            "profileVersion": self.profile_version,
            "host": self.host.to_wire(),
            "requestedAt": self.requested_at,
            "engines": [e.to_wire() for e in self.engines],
        }
        if self.device:
            wire["device"] = self.device
        return wire

    @classmethod
    def from_wire(cls, raw: Mapping[str, Any]) -> RunRecord:
        host = raw["host"]
        return cls(
            run_id=str(raw["runId"]),
            profile_id=str(raw["profileId"]),
            profile_version=str(raw["profileVersion"]),
            host=HostIdentity.from_wire(host),
            requested_at=str(raw["requestedAt"]),
            engines=tuple(EngineRun.from_wire(e) for e in raw["engines"]),
            device=str(raw.get("device") or ""),
        )


class MalformedHistory(ValueError):
    """The history document cannot be read; it is never overwritten."""


class HistoryFull(ValueError):
    """Every kept run is unfinished and the bound is reached: a new request is refused."""


@dataclass(frozen=True)
class History:
    runs: Mapping[str, RunRecord] = field(default_factory=dict)

    def to_document(self) -> dict[str, Any]:
        return {
            "version": HISTORY_VERSION,
            "runs": {run_id: record.to_wire() for run_id, record in sorted(self.runs.items())},
        }


def read_history(text: str | None) -> History:
    """The history a stored text holds; empty for none. Raises MalformedHistory. Pure."""
    if text is None or not text.strip():
        return History()
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise MalformedHistory(f"{HISTORY_CONFIG_MAP} key {HISTORY_KEY} is not JSON ({error.msg})") from error
    if not isinstance(document, dict) or not isinstance(document.get("runs", {}), dict):
        raise MalformedHistory(f"{HISTORY_CONFIG_MAP} key {HISTORY_KEY} must be an object with a runs object")
    try:
        runs = {str(run_id): RunRecord.from_wire(raw) for run_id, raw in document.get("runs", {}).items()}
    except (KeyError, TypeError, ValueError) as error:
        raise MalformedHistory(
            f"{HISTORY_CONFIG_MAP} key {HISTORY_KEY} holds a run that cannot be read ({error})"
        ) from error
    return History(runs=runs)


def with_run(history: History, record: RunRecord, *, bound: int = MAX_HISTORY_RUNS) -> History:
    """`history` with `record` set; a new run beyond `bound` drops the oldest finished runs first.
    Raises HistoryFull when only unfinished runs could be dropped. Pure."""
    runs = dict(history.runs)
    runs[record.run_id] = record
    if len(runs) <= bound:
        return History(runs=runs)
    droppable = sorted(
        (r for r in runs.values() if r.finished and r.run_id != record.run_id), key=lambda r: (r.requested_at, r.run_id)
    )
    excess = len(runs) - bound
    if len(droppable) < excess:
        raise HistoryFull(
            f"{HISTORY_CONFIG_MAP} holds {len(history.runs)} runs, none of them finished, and the limit is {bound}"
        )
    for dropped in droppable[:excess]:
        del runs[dropped.run_id]
    return History(runs=runs)


def run_hash(run_id: str) -> str:
    """A label-safe, stable digest of a run ID (run IDs may hold '.' and '_' and be 128 long). Pure."""
    return hashlib.sha256(run_id.encode()).hexdigest()[:12]


def job_name(run_id: str, engine: str) -> str:
    """`magicstick-gpu-validation-<hash>-<engine>`: one name per run and engine, so a second
    create of the same stage finds the first Job. At most 63 characters. Pure."""
    return f"magicstick-gpu-validation-{run_hash(run_id)}-{engine.lower()}"[:63]


_DIGEST = re.compile(r"sha256:[a-f0-9]{64}")


def image_digest(image_id: str) -> str | None:
    """The `sha256:...` digest an image ID names (containerStatuses[].imageID), or None. Pure."""
    match = _DIGEST.search(image_id or "")
    return match.group(0) if match else None


def pinned_image(image: str, image_id: str) -> str | None:
    """`repository@sha256:...`: the catalogued image's repository at the digest that ran. Pure."""
    digest = image_digest(image_id)
    if digest is None:
        return None
    repository = image.split("@", 1)[0]
    last = repository.rsplit("/", 1)
    if ":" in last[-1]:
        repository = repository.rsplit(":", 1)[0]
    return f"{repository}@{digest}"


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: VerdictReason
    message: str


def verdict(engine: str, report: str | None) -> Verdict:
    """The verdict of an engine's finished, successful container from its termination message.

    The validation image writes one JSON object to /dev/termination-log:
      OLlama: {"gpuBuffersMi": <int>, "arithmetic": <bool>, "cpuFallback": <bool>}
      VLLM:   {"hip": <bool>, "inference": <bool>, "cpuFallback": <bool>}
    CPU fallback is failure, whatever else the report says. Pure.
    """
    try:
        raw = json.loads(report) if report else None
    except json.JSONDecodeError:
        raw = None
    if not isinstance(raw, dict):
        return Verdict(
            False,
            VerdictReason.NO_REPORT,
            f"{engine}: the validation container left no JSON report in its termination message",
        )
    if raw.get("cpuFallback") is not False:
        return Verdict(
            False,
            VerdictReason.CPU_FALLBACK,
            f"{engine} ran on the CPU (or did not say it did not): CPU fallback is failure",
        )
    if engine == "OLlama":
        buffers = raw.get("gpuBuffersMi")
        if not isinstance(buffers, int) or isinstance(buffers, bool) or buffers <= 0:
            return Verdict(False, VerdictReason.NO_GPU_BUFFERS, "Ollama reported no GPU buffers")
        if raw.get("arithmetic") is not True:
            return Verdict(False, VerdictReason.WRONG_ANSWER, "Ollama did not answer the arithmetic request correctly")
        return Verdict(True, VerdictReason.PASSED, f"Ollama used {buffers} MiB of GPU buffers and answered correctly")
    if raw.get("hip") is not True:
        return Verdict(False, VerdictReason.HIP_FAILED, f"{engine}: the HIP computation failed")
    if raw.get("inference") is not True:
        return Verdict(False, VerdictReason.INFERENCE_FAILED, f"{engine}: the small inference request failed")
    return Verdict(True, VerdictReason.PASSED, f"{engine} passed the HIP computation and the inference request")


@dataclass(frozen=True)
class PodSecurity:
    """Who the test container runs as: non-root where the image allows it (catalog)."""

    run_as_user: int | None
    supplemental_groups: tuple[int, ...] = ()


def validation_job(
    *,
    run_id: str,
    engine: EngineRun,
    node: str,
    namespace: str,
    security: PodSecurity,
    field_manager_annotation: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """The bounded Job of one engine of one run. Pure.

    backoffLimit 0 (a failure is a verdict, not a retry), activeDeadlineSeconds the catalog's
    timeout, ttlSecondsAfterFinished JOB_TTL_SECONDS. Its Pod asks for one amd.com/gpu on the
    bound node and has no service-account token, no host path, no host namespaces, no
    privilege, a read-only root filesystem and an emptyDir for scratch.
    """
    labels = {
        MANAGED_BY: MANAGED_BY_VALUE,
        "app.kubernetes.io/component": COMPONENT,
        RUN_LABEL: run_hash(run_id),
        ENGINE_LABEL: engine.engine.lower(),
    }
    annotations = {"appliance.magicstick.dev/gpu-validation-run-id": run_id}
    if field_manager_annotation is not None:
        annotations[field_manager_annotation[0]] = field_manager_annotation[1]
    pod_security: dict[str, Any] = {"seccompProfile": {"type": "RuntimeDefault"}}
    container_security: dict[str, Any] = {
        "privileged": False,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    if security.run_as_user is not None:
        pod_security |= {"runAsNonRoot": True, "runAsUser": security.run_as_user, "runAsGroup": security.run_as_user}
        container_security["runAsNonRoot"] = True
    if security.supplemental_groups:
        pod_security["supplementalGroups"] = list(security.supplemental_groups)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(run_id, engine.engine),
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": engine.timeout_seconds,
            "ttlSecondsAfterFinished": JOB_TTL_SECONDS,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "hostNetwork": False,
                    "hostPID": False,
                    "hostIPC": False,
                    "nodeSelector": {"kubernetes.io/hostname": node},
                    "securityContext": pod_security,
                    "containers": [
                        {
                            "name": "validation",
                            "image": engine.image,
                            "imagePullPolicy": "IfNotPresent",
                            "env": [
                                {"name": "MAGICSTICK_VALIDATION_ENGINE", "value": engine.engine},
                                {"name": "MAGICSTICK_VALIDATION_RUN", "value": run_id},
                                {"name": "HOME", "value": "/scratch"},
                            ],
                            "resources": {"requests": {GPU_RESOURCE: "1"}, "limits": {GPU_RESOURCE: "1"}},
                            "securityContext": container_security,
                            "terminationMessagePolicy": "File",
                            "volumeMounts": [
                                {"name": "scratch", "mountPath": "/scratch"},
                                {"name": "tmp", "mountPath": "/tmp"},
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "scratch", "emptyDir": {"sizeLimit": "16Gi"}},
                        {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}},
                    ],
                },
            },
        },
    }


def runtime_images_values(images: Mapping[str, str]) -> dict[str, Any]:
    """The KubeAI values the runtime-images store holds for `images` (engine -> pinned image):
    `modelServers.<engine>.images.amd-gpu`. Pure."""
    return {
        "modelServers": {engine: {"images": {RUNTIME_IMAGE_NAME: image}} for engine, image in sorted(images.items())}
    }


def read_runtime_images(text: str | None) -> dict[str, str]:
    """Engine -> pinned image the runtime-images store holds (runtime-owned keys only); {} for
    none or an unreadable document. Pure."""
    try:
        document = json.loads(text) if text else {}
    except json.JSONDecodeError:
        return {}
    servers = document.get("modelServers") if isinstance(document, dict) else None
    found = {}
    for engine, server in (servers or {}).items() if isinstance(servers, dict) else ():
        image = ((server or {}).get("images") or {}).get(RUNTIME_IMAGE_NAME) if isinstance(server, dict) else None
        if isinstance(image, str) and image:
            found[str(engine)] = image
    return found
