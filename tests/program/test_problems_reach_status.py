"""What happened at apply time reaches the status of the object it concerns, in the same run.

The engine is played by Pulumi's mocks: a dynamic resource's outputs are its inputs plus the
`problem` its provider returned, as the providers of this program do (providers/outcomes.py).
The object's member of its status batch takes those outputs as inputs; the batch provider's
check (providers/status_batch.py) and the merge (providers/status_writer.py) then give the
status that is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from pulumi.output import Unknown
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from cli.offline import OfflineRun, RecordingMonitor, run_offline
from components.dynamic import RuntimeProfile
from components.status import StatusBatchWrite
from planning.frozen import freeze
from planning.models.kubeai import CpuProfile
from planning.objects import StatusUpdate
from planning.status_batches import status_batches
from program import main as program
from providers.outcomes import Persistence, ProblemReason, problem_output
from providers.profile_store import RuntimeProfileProvider
from providers.status_batch import StatusBatchProvider, recorded_member
from tests.planning.builders import activation, appliance, kustomization_for, with_flux
from tests.planning.models.world import catalog_publishing, local_model, observed_model, platform, pod
from tests.program.statuses import STATUS_BATCH, MemberWrite, status_write, status_writes, written_status

DYNAMIC = "pulumi-python:dynamic/magicstick:"
STATUS = STATUS_BATCH
RUNTIME_PROFILE = f"{DYNAMIC}RuntimeProfile"
POD_RECOVERY = f"{DYNAMIC}PodRecovery"
OLLAMA_ALIAS = f"{DYNAMIC}OllamaAlias"
STALE_REMOVAL = f"{DYNAMIC}StaleRemoval"
WRITTEN_AT = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)

STORE_FULL = problem_output(ProblemReason.PROFILE_STORE_FULL, "cannot add resource profile: the limit is 64")
OLLAMA_DOWN = problem_output(
    ProblemReason.OLLAMA_UNREACHABLE, "503 ServiceUnavailable: no endpoints available for pod m-0"
)
RECOVERY_CONFLICT = problem_output(
    ProblemReason.POD_RECOVERY_CONFLICT, "409 Conflict: precondition failed", Persistence.PERMANENT
)
REMOVAL_REFUSED = problem_output(ProblemReason.STALE_REMOVAL_FAILED, "403 Forbidden: cannot delete kustomizations")
STATUS_REFUSED = problem_output(
    ProblemReason.STATUS_WRITE_REFUSED, "403 Forbidden: cannot patch modelactivations/status"
)


class ProviderProblems(pulumi.runtime.Mocks):
    """The engine calling the providers: outputs are the inputs, plus `problem` for the failing types."""

    def __init__(self, failing: Mapping[str, dict[str, Any]]) -> None:
        self.failing = failing

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        outputs = dict(args.inputs)
        if args.typ in self.failing:
            outputs["problem"] = self.failing[args.typ]
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, list | None]:
        raise NotImplementedError(args.token)


class ProblemMonitor(RecordingMonitor):
    def __init__(self, failing: Mapping[str, dict[str, Any]]) -> None:
        super().__init__()
        self.mocks = ProviderProblems(failing)


@pytest.fixture
def run_failing(tmp_path: Path):
    def run(objects: list[dict], failing: Mapping[str, dict[str, Any]]) -> OfflineRun:
        snapshot = tmp_path / "snapshot.yaml"
        snapshot.write_text(yaml.safe_dump_all(with_flux(objects)))
        config = {"snapshotFile": str(snapshot), "now": "2026-01-01T00:00:00Z"}
        _, recorded = run_offline(program.run, config, monitor=ProblemMonitor(failing))
        return recorded

    return run


def written(write: MemberWrite) -> dict[str, Any]:
    """The status the batch provider writes for this member, onto an object with no status yet."""
    return written_status(write, now=WRITTEN_AT)


def model_with_profile() -> list[dict]:
    return [*platform(), local_model("qwen2505bcpu")]


def test_a_full_profile_store_degrades_the_activation_that_names_the_profile_in_the_same_run(run_failing):
    run = run_failing(model_with_profile(), {RUNTIME_PROFILE: STORE_FULL})
    (profile,) = run.of_type(RUNTIME_PROFILE)
    write = status_write(run, "ModelActivation", "qwen2505bcpu")

    assert write.inputs["problems"] == {profile.name: STORE_FULL}
    assert profile.urn in write.dependencies
    status = written(write)
    assert (status["phase"], status["reason"], status["message"]) == (
        "Degraded",
        "ProfileStoreFull",
        STORE_FULL["message"],
    )
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("Ready", "False", "ProfileStoreFull"),
        ("Reconciling", "True", "ProfileStoreFull"),
    ]


def test_a_problem_of_one_activation_leaves_the_status_writes_of_other_objects_without_problems(run_failing):
    run = run_failing(model_with_profile(), {RUNTIME_PROFILE: STORE_FULL})
    others = [w for w in status_writes(run) if w.inputs["kind"] != "ModelActivation"]
    assert others and all("problems" not in w.inputs for w in others)


def test_an_unreachable_ollama_degrades_its_activation(run_failing):
    world = [
        *platform(),
        local_model("m", engine="OLlama"),
        observed_model("m", ready=1, all_=1, engine="OLlama"),
        pod("m-0", "m"),
        catalog_publishing("m"),
    ]
    run = run_failing(world, {OLLAMA_ALIAS: OLLAMA_DOWN})
    write = status_write(run, "ModelActivation", "m")
    assert write.inputs["problems"]["ollama-alias/m"] == OLLAMA_DOWN
    assert (written(write)["phase"], written(write)["reason"]) == ("Degraded", "OllamaUnreachable")


def test_a_pod_recovery_conflict_degrades_its_activation(run_failing):
    world = [*platform(), local_model("m"), observed_model("m"), pod("m-0", "m", phase="Failed", ready=False)]
    run = run_failing(world, {POD_RECOVERY: RECOVERY_CONFLICT})
    write = status_write(run, "ModelActivation", "m")
    assert write.inputs["problems"]["pod-recovery/ai/m-0/1"] == RECOVERY_CONFLICT
    assert (written(write)["phase"], written(write)["message"]) == ("Degraded", RECOVERY_CONFLICT["message"])


def test_a_failed_stale_removal_degrades_the_appliance(run_failing):
    leftover = kustomization_for("litellm")
    leftover["metadata"]["uid"] = "uid-litellm"
    run = run_failing([appliance(), activation("litellm", enabled=False), leftover], {STALE_REMOVAL: REMOVAL_REFUSED})
    write = status_write(run, "Appliance", "local")
    assert write.inputs["problems"] == {
        f"stale/kustomization/flux-system/{leftover['metadata']['name']}": REMOVAL_REFUSED
    }
    status = written(write)
    assert (status["phase"], status["conditions"][0]["reason"]) == ("Degraded", "StaleRemovalFailed")


def test_without_problems_the_status_write_has_the_inputs_of_a_converged_run_and_shows_no_change(run_failing):
    run = run_failing(model_with_profile(), {})
    write = status_write(run, "ModelActivation", "qwen2505bcpu")
    provider = StatusBatchProvider()
    checked = provider.check({}, dict(write.batch.inputs)).inputs
    assert "problems" not in checked["members"][write.key]
    members = {key: recorded_member(member) for key, member in checked["members"].items()}
    stored_by_the_last_run = {**checked, "members": members, "problem": {}, "writeProblems": {}, "retries": {}}
    assert provider.diff("id", stored_by_the_last_run, checked).changes is False
    assert written(write) == dict(checked["members"][write.key]["status"])


def test_a_refused_status_write_is_logged_as_a_warning_and_does_not_fail_the_run(run_failing, caplog):
    caplog.set_level("WARNING")
    run = run_failing(model_with_profile(), {STATUS: STATUS_REFUSED})
    assert run.of_type(STATUS)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    expected = f"StatusWriteRefused: {STATUS_REFUSED['message']}; tried again on the next run"
    assert warnings.count(expected) == len(run.of_type(STATUS))


def test_every_problem_of_a_dynamic_resource_is_logged_once_as_a_warning(run_failing, caplog):
    caplog.set_level("WARNING")
    run_failing(model_with_profile(), {RUNTIME_PROFILE: STORE_FULL})
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings.count(f"ProfileStoreFull: {STORE_FULL['message']}; tried again on the next run") == 1


def status_inputs_in_a_preview(no_problem: Any) -> Mapping[str, Any]:
    """The inputs a status write gets in a preview, when its profile's stored `problem` is `no_problem`."""
    monitor = ProblemMonitor({RUNTIME_PROFILE: no_problem})
    pulumi.runtime.set_mocks(monitor.mocks, project="magicstick", stack="preview", preview=True, monitor=monitor)

    def declare() -> None:
        profile = RuntimeProfile(
            CpuProfile(name="magicstick-cpu-4", body=freeze({})),
            provider=RuntimeProfileProvider(),
            opts=pulumi.ResourceOptions(),
        )
        update = StatusUpdate(
            api_version="appliance.magicstick.dev/v1alpha1",
            kind="ModelActivation",
            namespace="ai",
            name="m",
            status=freeze({"phase": "Ready"}),
        )
        (batch,) = status_batches([update])
        problems = {"ai/m": {"runtime-profile/magicstick-cpu-4": profile.problem}}
        StatusBatchWrite(batch, provider=StatusBatchProvider(), opts=pulumi.ResourceOptions(), problems=problems)

    _sync_await(run_pulumi_func(declare))
    (write,) = [r for r in monitor.registrations if r.type == STATUS]
    return write.inputs


def test_in_a_preview_an_empty_problem_is_known_so_an_unchanged_status_write_shows_no_change():
    inputs = status_inputs_in_a_preview({})
    assert inputs["members"]["ai/m"]["problems"] == {"runtime-profile/magicstick-cpu-4": {}}
    checked = StatusBatchProvider().check({}, dict(inputs)).inputs
    members = {key: recorded_member(member) for key, member in checked["members"].items()}
    assert StatusBatchProvider().diff("id", {**checked, "members": members, "problem": {}}, checked).changes is False


def test_in_a_preview_a_null_problem_would_be_unknown_and_show_a_change_in_every_preview():
    inputs = status_inputs_in_a_preview(None)
    assert isinstance(inputs["members"]["ai/m"]["problems"]["runtime-profile/magicstick-cpu-4"], Unknown)
    checked = StatusBatchProvider().check({}, dict(inputs)).inputs
    without = {
        **checked,
        "members": {"ai/m": recorded_member({k: v for k, v in checked["members"]["ai/m"].items() if k != "problems"})},
    }
    assert StatusBatchProvider().diff("id", without, checked).changes is True
