"""configure-network's status is no oracle for Secrets (the fast layer: no netplan needed).

Every viewer of HostOperations reads their status. A Secret the request cannot use (missing,
replaced by one of another UID, not readable by the agent, or holding a key that is no
configure-network setting) gets one message, the same for each: it tells neither which Secret
names exist nor any key's name. The agent's log says which it was (WARNING), never a value.
"""

from __future__ import annotations

import base64
import logging
from pathlib import Path
from typing import Any

import pytest

from providers.kube import Forbidden
from services.host_agent.engine import Engine
from services.host_agent.journal import Journal
from tests.services.host_agent.fake_host import strix_halo
from tests.services.host_agent.stand_ins import RecordingCluster, RecordingRunner, context, operation

SECRET = "home-network"
SECRET_UID = "5e4d3c2b-1a09-4f8e-a7d6-c5b4a3928170"
VALUE = "a-value-no-viewer-may-read-CHANGEME"


def _secret(data: dict[str, str], uid: str = SECRET_UID) -> dict[str, Any]:
    return {
        "metadata": {"name": SECRET, "namespace": "ai-system", "uid": uid},
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()},
    }


def _status(root: Path, cluster: RecordingCluster) -> dict[str, Any]:
    runner = RecordingRunner()
    engine = Engine(Journal(root / "var/lib/magicstick/journal"), context(root, cluster=cluster, runner=runner))
    engine.run_once([operation(engine.context, "configure-network", networkRef={"name": SECRET, "uid": SECRET_UID})])
    assert runner.calls == []
    return cluster.statuses[-1][1]


def _missing() -> RecordingCluster:
    return RecordingCluster()


def _replaced() -> RecordingCluster:
    return RecordingCluster(secrets={SECRET: _secret({"interface": "eth0"}, uid="a-newer-secret-of-the-same-name")})


def _unreadable() -> RecordingCluster:
    refusal = Forbidden(
        method="GET",
        path=f"/api/v1/namespaces/ai-system/secrets/{SECRET}",
        code=403,
        reason="Forbidden",
        message="forbidden",
    )
    return RecordingCluster(refusals={"secret": refusal})


def _foreign_key() -> RecordingCluster:
    return RecordingCluster(secrets={SECRET: _secret({"interface": "eth0", "passphrase": VALUE})})


CASES = {
    "missing": _missing,
    "replaced": _replaced,
    "unreadable": _unreadable,
    "a key that is no setting": _foreign_key,
}


def test_a_secret_the_request_cannot_use_gets_one_message_whatever_the_cause(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    strix_halo(tmp_path)
    caplog.set_level(logging.INFO, logger="services.host_agent")

    statuses = {case: _status(tmp_path, make()) for case, make in CASES.items()}

    assert {(status["phase"], status["reason"]) for status in statuses.values()} == {("Failed", "NetworkSecretInvalid")}
    assert len({status["message"] for status in statuses.values()}) == 1
    message = statuses["missing"]["message"]
    for tell in ("does not exist", "is not the UID", "forbidden", "403", "passphrase", VALUE):
        assert tell not in message
    assert message.startswith("spec.networkRef: ")


def test_the_agent_s_log_says_why_a_secret_cannot_be_used_without_its_values(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    strix_halo(tmp_path)
    caplog.set_level(logging.DEBUG, logger="services.host_agent")
    for make in CASES.values():
        _status(tmp_path, make())

    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert any("does not exist" in line for line in warnings)
    assert any("a-newer-secret-of-the-same-name" in line for line in warnings)
    assert any("403" in line for line in warnings)
    assert any("'passphrase'" in line for line in warnings)
    assert VALUE not in caplog.text
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


def test_a_value_that_breaks_its_rule_in_the_requested_secret_is_refused_naming_the_setting_not_the_value(
    tmp_path: Path,
) -> None:
    strix_halo(tmp_path)
    cluster = RecordingCluster(
        secrets={SECRET: _secret({"interface": "eth0", "nameservers": "192.0.2.53,dns.example"})}
    )

    status = _status(tmp_path, cluster)

    assert (status["phase"], status["reason"]) == ("Failed", "NetworkSecretInvalid")
    assert "'nameservers'" in status["message"] and "dns.example" not in status["message"]


def test_a_network_ref_name_that_is_not_a_secret_name_is_rejected_without_asking_the_api_server(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    cluster = RecordingCluster()
    engine = Engine(Journal(tmp_path / "var/lib/magicstick/journal"), context(tmp_path, cluster=cluster))
    beyond = {
        "name": "x/../../identity-system/secrets/idp-admin",
        "uid": SECRET_UID,
    }  # made before the CRD had its rule

    engine.run_once([operation(engine.context, "configure-network", networkRef=beyond)])

    status = cluster.statuses[-1][1]
    assert (status["phase"], status["reason"]) == ("Failed", "Rejected")
    assert status["message"].startswith("spec.networkRef.name: ")
    assert cluster.secret_reads == []
