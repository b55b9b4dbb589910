"""What an error does to a pass (the fast layer): it ends the operation it happened in, the agent
goes on with the others, and only a transient refusal of the API server is tried again.

- a permanent refusal (403, 404, 422, ...) ends the operation Failed with the server's reason
  (OutcomeUncertain once the host may have changed);
- a transient one (no connection, 5xx, 429) leaves the operation for the next pass;
- any other error in an action ends that operation: Failed before the host was touched,
  or what the action can tell from the host (OutcomeUncertain when it cannot) after;
- KeyboardInterrupt and SystemExit are not errors of an action: they stop the agent.
"""

from __future__ import annotations

import base64
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from providers.kube import Forbidden, Invalid, KubeConnectionError, KubeError, ServerError, TooManyRequests
from providers.kube.errors import ConnectionFailure
from services.host_agent.actions import cache
from services.host_agent.engine import Engine
from services.host_agent.journal import Journal, Stage
from tests.services.host_agent.fake_host import strix_halo
from tests.services.host_agent.stand_ins import RecordingCluster, RecordingRunner, context, operation

NODE_PATH = "/api/v1/nodes/halo"
SECRET_PATH = "/api/v1/namespaces/magicstick-host-network/secrets/home-network"
SECRET_REF = {"name": "home-network", "uid": "5e4d3c2b-1a09-4f8e-a7d6-c5b4a3928170"}


def _engine(root: Path, cluster: RecordingCluster | None = None) -> tuple[Engine, RecordingCluster, RecordingRunner]:
    cluster, runner = cluster or RecordingCluster(), RecordingRunner()
    return (
        Engine(Journal(root / "var/lib/magicstick/journal"), context(root, cluster=cluster, runner=runner)),
        cluster,
        runner,
    )


def _statuses(cluster: RecordingCluster, name: str) -> list[dict[str, Any]]:
    return [status for written, status in cluster.statuses if written == name]


def _then_reboot(engine: Engine, first: dict[str, Any]) -> list[dict[str, Any]]:
    """`first` (op-1) and, after it in name order, a reboot (op-2)."""
    return [first, operation(engine.context, "reboot", name="op-2", uid="op-uid-2")]


def _clear_then_reboot(engine: Engine) -> list[dict[str, Any]]:
    return _then_reboot(engine, operation(engine.context, "clear-model-cache", name="op-1", uid="op-uid-1"))


def _prepare_gpu_then_reboot(engine: Engine) -> list[dict[str, Any]]:
    return _then_reboot(
        engine, operation(engine.context, "prepare-gpu", name="op-1", uid="op-uid-1", experimentConsent=True)
    )


@pytest.mark.parametrize(
    "refusal",
    [
        pytest.param(
            Forbidden(method="PATCH", path=NODE_PATH, code=403, reason="Forbidden", message="the policy refused it"),
            id="403",
        ),
        pytest.param(
            Invalid(
                method="PATCH",
                path=NODE_PATH,
                code=422,
                reason="Invalid",
                message="metadata.annotations: Invalid value",
            ),
            id="422",
        ),
    ],
)
def test_a_permanent_refusal_of_the_api_server_ends_the_operation_failed_with_its_reason_and_the_next_one_runs(
    tmp_path: Path, refusal: KubeError, caplog: pytest.LogCaptureFixture
) -> None:
    strix_halo(tmp_path)
    engine, cluster, runner = _engine(tmp_path)
    cluster.refusals["annotate_node"] = refusal
    objects = _prepare_gpu_then_reboot(engine)

    engine.run_once(objects)

    status = _statuses(cluster, "op-1")[-1]
    assert (status["phase"], status["reason"]) == ("Failed", "OutcomeUncertain")
    assert (
        f"{refusal.code} {refusal.reason}: {refusal.message}" in status["message"]
        and "not repeated" in status["message"]
    )
    assert runner.calls == [("systemctl", "reboot")]
    objects[0]["status"] = status
    cluster.statuses.clear()
    caplog.clear()
    engine.run_once(objects[:1])
    assert cluster.statuses == [] and not [record for record in caplog.records if record.levelno >= logging.WARNING]


@pytest.mark.parametrize(
    "refusal",
    [
        pytest.param(
            ServerError(method="GET", path=SECRET_PATH, code=503, reason="ServiceUnavailable", message="etcd is away"),
            id="503",
        ),
        pytest.param(
            TooManyRequests(method="GET", path=SECRET_PATH, code=429, reason="TooManyRequests", message="slow down"),
            id="429",
        ),
        pytest.param(
            KubeConnectionError(
                method="GET",
                path=SECRET_PATH,
                url="https://127.0.0.1:6443",
                failure=ConnectionFailure.REFUSED,
                cause="connection refused",
            ),
            id="no connection",
        ),
    ],
)
def test_a_transient_refusal_leaves_the_operation_for_the_next_pass(tmp_path: Path, refusal: KubeError) -> None:
    strix_halo(tmp_path)
    engine, cluster, runner = _engine(tmp_path)
    cluster.secrets[SECRET_REF["name"]] = {
        "metadata": {"uid": SECRET_REF["uid"]},
        "data": {"interface": base64.b64encode(b"eth0").decode()},
    }
    cluster.refusals["secret"] = refusal
    objects = _then_reboot(
        engine, operation(engine.context, "configure-network", name="op-1", uid="op-uid-1", networkRef=SECRET_REF)
    )

    engine.run_once(objects)
    assert _statuses(cluster, "op-1") == [] and runner.calls == [("systemctl", "reboot")]

    del cluster.refusals["secret"]
    engine.run_once(objects[:1])
    assert _statuses(cluster, "op-1")[-1]["phase"] == "AwaitingConfirmation"


def test_a_file_that_cannot_be_deleted_fails_clear_model_cache_naming_it_the_rest_is_cleared_and_the_next_operation_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = strix_halo(tmp_path)
    stuck = host.cache("ollama") / "models--example"
    rmtree = shutil.rmtree

    def immutable(path: Path, *args: Any, **kwargs: Any) -> None:
        if Path(path) == stuck:
            raise PermissionError(1, "Operation not permitted", str(stuck / "blob.bin"))
        rmtree(path, *args, **kwargs)

    monkeypatch.setattr(cache.shutil, "rmtree", immutable)
    engine, cluster, runner = _engine(tmp_path)

    engine.run_once(_clear_then_reboot(engine))

    status = _statuses(cluster, "op-1")[-1]
    assert (status["phase"], status["reason"]) == ("Failed", "CommandFailed")
    assert "ollama/models--example/blob.bin" in status["message"] and "Operation not permitted" in status["message"]
    assert stuck.exists() and not any(host.cache("huggingface").iterdir())
    assert runner.calls == [("systemctl", "reboot")]
    entry = engine.journal.read("op-uid-1")
    assert entry is not None and entry.stage is Stage.FINISHED


def test_an_unexpected_error_in_an_action_ends_it_uncertain_without_repeating_it_and_the_next_operation_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = strix_halo(tmp_path)

    def broken(path: Path, *args: Any, **kwargs: Any) -> None:
        raise LookupError("a stand-in's unexpected error")

    monkeypatch.setattr(cache.shutil, "rmtree", broken)
    engine, cluster, runner = _engine(tmp_path)
    objects = _clear_then_reboot(engine)

    engine.run_once(objects)

    status = _statuses(cluster, "op-1")[-1]
    assert (status["phase"], status["reason"]) == ("Failed", "OutcomeUncertain")
    assert "LookupError" in status["message"] and "not repeated" in status["message"]
    assert any(host.cache("ollama").iterdir())
    assert runner.calls == [("systemctl", "reboot")]
    objects[0]["status"] = status
    monkeypatch.setattr(cache.shutil, "rmtree", lambda *args, **kwargs: pytest.fail("the clearing was started again"))
    engine.run_once(objects)


def test_an_unexpected_error_before_the_host_is_touched_fails_the_operation_saying_nothing_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    strix_halo(tmp_path)
    engine, cluster, runner = _engine(tmp_path)
    cluster.refusals["secret"] = ZeroDivisionError()

    engine.run_once(
        _then_reboot(
            engine, operation(engine.context, "configure-network", name="op-1", uid="op-uid-1", networkRef=SECRET_REF)
        )
    )

    status = _statuses(cluster, "op-1")[-1]
    assert (status["phase"], status["reason"]) == ("Failed", "CommandFailed")
    assert "ZeroDivisionError" in status["message"] and "nothing on the host was changed" in status["message"]
    assert engine.journal.read("op-uid-1") is None
    assert runner.calls == [("systemctl", "reboot")]


@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit])
def test_keyboard_interrupt_and_system_exit_stop_the_pass_instead_of_ending_the_operation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: type[BaseException]
) -> None:
    strix_halo(tmp_path)

    def interrupted(path: Path, *args: Any, **kwargs: Any) -> None:
        raise stop()

    monkeypatch.setattr(cache.shutil, "rmtree", interrupted)
    engine, cluster, runner = _engine(tmp_path)

    with pytest.raises(stop):
        engine.run_once(_clear_then_reboot(engine))
    assert runner.calls == [] and [status["phase"] for _, status in cluster.statuses] == ["Running"]


def test_a_journal_entry_that_cannot_be_removed_is_logged_and_the_pass_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    strix_halo(tmp_path)
    engine, cluster, runner = _engine(tmp_path)
    engine.run_once([operation(engine.context, "reboot", name="op-1", uid="op-uid-1")])
    unlink = Path.unlink

    def immutable(path: Path, missing_ok: bool = False) -> None:
        if path.name == "op-uid-1.json":
            raise PermissionError(1, "Operation not permitted", str(path))
        unlink(path, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", immutable)

    engine.run_once([operation(engine.context, "poweroff", name="op-2", uid="op-uid-2")])

    assert runner.calls == [("systemctl", "reboot"), ("systemctl", "poweroff")]
    assert "op-uid-1.json cannot be removed: Operation not permitted" in caplog.text
    assert engine.journal.operation_uids() == {"op-uid-1", "op-uid-2"}
