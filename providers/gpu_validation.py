"""GPU validation runs as a dynamic provider: one resource per validation request or device
diagnostic, which advances its run one step at a time, every run of the program, until done.

Order of one step (`advance`), the same in `create` and `update`:
1. read the run's record from the history store (providers/gpu_stores.py). Absent: record it
   now, every stage Pending, bound to the host identity of the inputs. Nothing starts before
   this write succeeds (a history that cannot be read or written blocks the run, reported as
   ValidationHistoryUnavailable; driver reconciliation is another resource and goes on);
2. walk the engines in order; stop at the first that is not final:
   - Pending: may start only while `hostCurrent` (the bound node's evidence is current and
     still describes the recorded host). When current evidence describes another host
     (`currentHost`: rebooted, other kernel or fingerprint), every Pending stage becomes NotRun
     (EvidenceChanged) and no new Job starts: a new request is needed. Without current
     evidence the run waits;
   - Starting: recorded first, then the Job is created under its fixed name
     (planning.hardware.validation.job_name); a Job that already exists is adopted, so a
     restart between the record and the create never makes a second Job. Then Running;
   - Running: its Job is read. Still active: wait (the next run looks again). Gone before a
     verdict: Interrupted (JobLost), reported and never run again. Finished: the verdict from
     its Pod's termination message and the image ID that ran (Passed / Failed), recorded; a
     Passed engine validation writes its digest to the runtime-images store;
3. outputs: the inputs, `stages` (engine -> stage), `complete` and `problem`.

`diff` asks for an update while the run is not complete, so each run of the program advances
it by a step (in-cluster, every resync); once complete, only a change of inputs does. A new
`runId` replaces the resource. `delete` deletes the run's Jobs (absence is success) and keeps
the history: the record outlives the request.

Problems (a refused Job, an unwritable history) never raise out of create or update; they are
the `problem` output, logged as warnings, and the engine's record carries the reason where the
plan reads it. They are deliberately not merged into any status write: validation is advisory
and must never mark the hardware, the module or the Appliance unavailable.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final

from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, UpdateResult

from api.vocabulary import ProblemReason, VerdictReason
from planning.hardware.compatibility import ValidationRunPlan
from planning.hardware.validation import (
    FINAL_STAGES,
    HISTORY_CONFIG_MAP,
    EngineRun,
    HistoryFull,
    PodSecurity,
    RunRecord,
    Stage,
    job_name,
    pinned_image,
    validation_job,
    verdict,
)
from planning.labels import FIELD_MANAGER_ANNOTATION
from planning.provider_wire import PROBLEM_OUTPUT
from providers.cluster_access import ClusterResourceProvider, without_legacy_access
from providers.gpu_stores import MalformedStore, StoreContended, bootstrap_history, put_run, put_runtime_image, read_run
from providers.kinds import CONFIG_MAP, JOB, POD
from providers.kube import Conflict, KubeClient, KubeError, NotFound, open_client
from providers.outcomes import Problem, kube_problem, retry_requested, with_problem
from providers.pulumi_values import is_unknown, restore_integers

FIELD_MANAGER: Final = "magicstick-gpu-validation"
REPLACING_INPUTS: Final = ("runId", "namespace", "historyNamespace", "device", "runtimeImagesNamespace")
CHANGING_INPUTS: Final = ("profileId", "profileVersion", "host", "hostCurrent", "currentHost", "engines", "security")
_RUN_ID = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _stamp(clock: Clock) -> str:
    return clock().strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class RunInputs(ValidationRunPlan):
    """The run as its resource's inputs carry it (ValidationRunPlan.to_inputs)."""

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> RunInputs:
        return cls.from_inputs(restore_integers(props))

    def new_record(self, clock: Clock) -> RunRecord:
        return RunRecord(
            run_id=self.run_id,
            profile_id=self.profile_id,
            profile_version=self.profile_version,
            host=self.host,
            requested_at=_stamp(clock),
            engines=self.engines,
            device=self.device,
        )


@dataclass(frozen=True)
class Step:
    """Where one `advance` left the run."""

    record: RunRecord | None
    problem: Problem | None = None


def _history_problem(error: Exception) -> Problem:
    if isinstance(error, KubeError):
        return kube_problem(error, refused=ProblemReason.VALIDATION_HISTORY_UNAVAILABLE)
    return Problem(ProblemReason.VALIDATION_HISTORY_UNAVAILABLE, f"{error}; no new diagnostic starts")


def advance(client: KubeClient, run: RunInputs, *, clock: Clock = _utc_now) -> Step:
    """One step of the run, as the module docstring orders it."""
    try:
        record = read_run(client, run.history_namespace, run.run_id)
        if record is None:
            if not run.host_current:
                return Step(None)
            record = put_run(client, run.history_namespace, run.new_record(clock), only_if_absent=True)
    except (MalformedStore, HistoryFull, StoreContended, KubeError) as error:
        return Step(None, _history_problem(error))
    return _walk(client, run, record, clock)


def _walk(client: KubeClient, run: RunInputs, record: RunRecord, clock: Clock) -> Step:
    for engine in record.engines:
        if engine.stage in FINAL_STAGES:
            # Idempotent: a digest whose first write failed is written on a later run.
            problem = _publish(client, run, engine) if engine.stage is Stage.PASSED and not record.device else None
            if problem is not None:
                return Step(record, problem)
            continue
        try:
            if engine.stage is Stage.PENDING and not run.host_current:
                changed = run.current_host is not None and run.current_host != record.host
                if not changed:
                    return Step(record)  # evidence not current right now: wait, start nothing
                record = _save(client, run, record.with_engine(_not_run(engine, clock)))
                continue
            if engine.stage is Stage.PENDING:
                record = _save(
                    client,
                    run,
                    record.with_engine(
                        replace(
                            engine,
                            stage=Stage.STARTING,
                            job=job_name(run.run_id, engine.engine),
                            started_at=_stamp(clock),
                        )
                    ),
                )
                engine = record.engine(engine.engine) or engine
            if engine.stage is Stage.STARTING:
                problem = _create_job(client, run, record, engine)
                if problem is not None:
                    record = _save(
                        client,
                        run,
                        record.with_engine(replace(engine, reason=str(problem.reason), message=problem.message)),
                    )
                    return Step(record, problem)
                record = _save(
                    client, run, record.with_engine(replace(engine, stage=Stage.RUNNING, reason="", message=""))
                )
                return Step(record)
            finished = _finished(client, run, engine, clock)
            if finished is None:
                return Step(record)
            record = _save(client, run, record.with_engine(finished))
            if finished.stage is Stage.PASSED and not record.device:
                problem = _publish(client, run, finished)
                if problem is not None:
                    return Step(record, problem)
        except (MalformedStore, HistoryFull, StoreContended) as error:
            return Step(record, _history_problem(error))
        except KubeError as error:
            return Step(record, kube_problem(error, refused=ProblemReason.VALIDATION_JOB_REFUSED))
    return Step(record)


def _publish(client: KubeClient, run: RunInputs, passed: EngineRun) -> Problem | None:
    """Write the digest that passed to the runtime-images store; the verdict is already recorded."""
    image = pinned_image(passed.image, passed.image_id)
    if image is None:
        return None
    try:
        put_runtime_image(client, passed.engine, image, namespace=run.runtime_images_namespace)
    except KubeError as error:
        return kube_problem(error, refused=ProblemReason.RUNTIME_IMAGES_REFUSED)
    except (MalformedStore, StoreContended) as error:
        return Problem(ProblemReason.RUNTIME_IMAGES_REFUSED, str(error))
    return None


def _save(client: KubeClient, run: RunInputs, record: RunRecord) -> RunRecord:
    return put_run(client, run.history_namespace, record)


def _not_run(engine: EngineRun, clock: Clock) -> EngineRun:
    return replace(
        engine,
        stage=Stage.NOT_RUN,
        finished_at=_stamp(clock),
        reason=VerdictReason.EVIDENCE_CHANGED.value,
        message="the host changed since the request (boot, kernel or host fingerprint); a new validationRequest is needed",
    )


def _create_job(client: KubeClient, run: RunInputs, record: RunRecord, engine: EngineRun) -> Problem | None:
    body = validation_job(
        run_id=run.run_id,
        engine=engine,
        node=record.host.node,
        namespace=run.namespace,
        security=run.security.get(engine.engine, PodSecurity(run_as_user=None)),
        field_manager_annotation=(FIELD_MANAGER_ANNOTATION, FIELD_MANAGER),
    )
    try:
        client.request(
            "POST",
            JOB.collection_path(run.namespace),
            params={"fieldManager": FIELD_MANAGER},
            body=body,
            content_type="application/json",
        )
    except Conflict:
        return None
    except KubeError as error:
        return kube_problem(error, refused=ProblemReason.VALIDATION_JOB_REFUSED)
    return None


def _condition(job: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    return next(
        (
            c
            for c in (job.get("status") or {}).get("conditions") or ()
            if c.get("type") == kind and c.get("status") == "True"
        ),
        None,
    )


def _finished(client: KubeClient, run: RunInputs, engine: EngineRun, clock: Clock) -> EngineRun | None:
    """The engine with its verdict once its Job finished; None while it runs."""
    job = client.get_or_none(JOB, engine.job, run.namespace)
    complete, failed = (_condition(job, "Complete"), _condition(job, "Failed")) if job is not None else (None, None)
    deleting = (
        job is not None and bool(job["metadata"].get("deletionTimestamp")) and complete is None and failed is None
    )
    if job is None or deleting:
        return replace(
            engine,
            stage=Stage.INTERRUPTED,
            finished_at=_stamp(clock),
            reason=VerdictReason.JOB_LOST.value,
            message=f"Job {engine.job} vanished before its verdict was recorded; it is not run again",
        )
    if complete is None and failed is None:
        return None
    pods = client.list(POD, namespace=run.namespace, label_selector=f"job-name={engine.job}")
    image_id, report = _container_outcome(pods)
    if failed is not None:
        deadline = failed.get("reason") == "DeadlineExceeded"
        reason = VerdictReason.DEADLINE_EXCEEDED if deadline else VerdictReason.JOB_FAILED
        message = f"Job {engine.job} failed: {failed.get('reason', '')} {failed.get('message', '')}".strip()
        return replace(
            engine,
            stage=Stage.FAILED,
            image_id=image_id,
            finished_at=_stamp(clock),
            reason=reason.value,
            message=message[:512],
        )
    found = verdict(engine.engine, report)
    stage = Stage.PASSED if found.passed and image_id else Stage.FAILED
    message = (
        found.message if image_id else f"{found.message}; no image ID was reported, so the result binds to no image"
    )
    return replace(
        engine, stage=stage, image_id=image_id, finished_at=_stamp(clock), reason=found.reason.value, message=message
    )


def _container_outcome(pods: list[dict[str, Any]]) -> tuple[str, str | None]:
    """The image ID that ran and the termination message of the validation container."""
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        for status in (pod.get("status") or {}).get("containerStatuses") or ():
            if status.get("name") != "validation":
                continue
            terminated = (status.get("state") or {}).get("terminated") or {}
            return str(status.get("imageID") or ""), terminated.get("message")
    return "", None


def _outputs(props: Mapping[str, Any], step: Step) -> dict[str, Any]:
    stages = {e.engine: e.stage.value for e in step.record.engines} if step.record else {}
    complete = step.record is not None and step.record.finished
    return with_problem({**without_legacy_access(props), "stages": stages, "complete": complete}, step.problem)


class GpuValidationProvider(ClusterResourceProvider):
    """Advances one GPU validation run (or device diagnostic) a step per program run."""

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        inputs = without_legacy_access(news)
        failures = []
        run_id = inputs.get("runId")
        if not is_unknown(run_id) and (not isinstance(run_id, str) or len(run_id) > 140 or not _RUN_ID.match(run_id)):
            failures.append(
                CheckFailure("runId", "runId must be letters, digits, '.', '_' or '-', at most 140 characters")
            )
        for prop in ("namespace", "historyNamespace"):
            value = inputs.get(prop)
            if not is_unknown(value) and (not isinstance(value, str) or not _DNS_LABEL.match(value)):
                failures.append(CheckFailure(prop, f"{prop} must be a DNS-1123 label"))
        engines = inputs.get("engines")
        if not is_unknown(engines) and (not isinstance(engines, list) or not engines):
            failures.append(CheckFailure("engines", "engines must list at least one engine"))
        return CheckResult(inputs, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = [p for p in REPLACING_INPUTS if olds.get(p) != news.get(p)]
        changed = [p for p in CHANGING_INPUTS if olds.get(p) != news.get(p)]
        pending = not olds.get("complete") or PROBLEM_OUTPUT not in olds
        return DiffResult(
            changes=bool(replaces or changed) or pending or retry_requested(olds),
            replaces=replaces,
            delete_before_replace=False,
        )

    def create(self, props: dict[str, Any]) -> CreateResult:
        run = RunInputs.from_props(props)
        with open_client(self.cluster_access()) as client:
            step = advance(client, run)
        return CreateResult(id_=f"{run.history_namespace}/{run.run_id}", outs=_outputs(props, step))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        run = RunInputs.from_props(news)
        with open_client(self.cluster_access()) as client:
            step = advance(client, run)
        return UpdateResult(outs=_outputs(news, step))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        run = RunInputs.from_props(props)
        try:
            with open_client(self.cluster_access()) as client:
                record = read_run(client, run.history_namespace, run.run_id)
        except (MalformedStore, KubeError) as error:
            return ReadResult(id_=id_, outs=with_problem(without_legacy_access(props), _history_problem(error)))
        return ReadResult(id_=id_, outs=_outputs(props, Step(record)))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        run = RunInputs.from_props(props)
        with open_client(self.cluster_access()) as client:
            for engine in run.engines:
                try:
                    client.request(
                        "DELETE",
                        JOB.object_path(job_name(run.run_id, engine.engine), run.namespace),
                        body={"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"},
                        content_type="application/json",
                    )
                except NotFound:
                    continue


class GpuValidationHistoryProvider(ClusterResourceProvider):
    """Keeps the validation history store present and within its bound (providers/gpu_stores.py).

    Inputs: `namespace` and `bound`. `create`/`update` create it empty from absence and drop the
    oldest finished runs beyond the bound; an existing record is never reset. A history that
    cannot be read or written is the `problem` (ValidationHistoryUnavailable), which blocks new
    diagnostics only. `delete` keeps the store: it is runtime-owned and outlives the stack's
    resource, as the records in it outlive their requests.
    """

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        inputs = without_legacy_access(news)
        failures = []
        namespace = inputs.get("namespace")
        if not is_unknown(namespace) and (not isinstance(namespace, str) or not _DNS_LABEL.match(namespace)):
            failures.append(CheckFailure("namespace", "namespace must be a DNS-1123 label"))
        bound = inputs.get("bound")
        if not is_unknown(bound) and (not isinstance(bound, (int, float)) or int(bound) < 1):
            failures.append(CheckFailure("bound", "bound must be a positive number of runs"))
        return CheckResult(inputs, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = ["namespace"] if olds.get("namespace") != news.get("namespace") else []
        changed = olds.get("bound") != news.get("bound")
        return DiffResult(
            changes=bool(replaces) or changed or retry_requested(olds) or PROBLEM_OUTPUT not in olds, replaces=replaces
        )

    def _keep(self, props: Mapping[str, Any]) -> Problem | None:
        try:
            with open_client(self.cluster_access()) as client:
                bootstrap_history(client, props["namespace"], bound=int(props["bound"]))
        except (MalformedStore, StoreContended, KubeError) as error:
            return _history_problem(error)
        return None

    def create(self, props: dict[str, Any]) -> CreateResult:
        outs = with_problem(without_legacy_access(props), self._keep(props))
        return CreateResult(id_=f"{props['namespace']}/{HISTORY_CONFIG_MAP}", outs=outs)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=with_problem(without_legacy_access(news), self._keep(news)))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        try:
            with open_client(self.cluster_access()) as client:
                present = client.get_or_none(CONFIG_MAP, HISTORY_CONFIG_MAP, props["namespace"]) is not None
        except KubeError as error:
            return ReadResult(id_=id_, outs=with_problem(without_legacy_access(props), _history_problem(error)))
        return ReadResult(id_=id_ if present else "", outs=without_legacy_access(props) if present else {})

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None
