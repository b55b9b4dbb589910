"""The AMD hardware status speaks the field names of the status contract: hostBootId,
memoryAccountingVerified, and per-engine results on the physical device entries."""

from __future__ import annotations

from dataclasses import replace

from planning.hardware.validation import Stage
from tests.planning.builders import status_of
from tests.planning.hardware.test_validation import diagnostic, halo, history_map, record


def amd_operator(result) -> dict:
    return status_of(result, "Appliance", "local")["hardwareOperators"]["amd-gpu"]


def test_the_host_boot_id_is_written_as_host_boot_id_at_the_top_and_on_each_node() -> None:
    compatibility = amd_operator(halo(history_map(), request=""))["compatibility"]
    assert compatibility["hostBootId"] == "boot-halo"
    assert [n["hostBootId"] for n in compatibility["nodes"]] == ["boot-halo"]
    assert "hostBootID" not in compatibility
    assert all("hostBootID" not in n for n in compatibility["nodes"])


def test_memory_accounting_is_written_as_not_verified_and_never_inferred() -> None:
    compatibility = amd_operator(halo(history_map(), request=""))["compatibility"]
    assert compatibility["memoryAccountingVerified"] is False


def test_a_device_entry_carries_the_engine_results_of_its_finished_diagnostic() -> None:
    finished = replace(record("device-d1", stages=(Stage.PASSED, Stage.FAILED)), device="1002:1586")
    operator = amd_operator(halo(history_map(finished), request="", annotations=diagnostic("d1")))
    (device,) = operator["devices"]
    assert (device["vendor"], device["device"]) == ("1002", "1586")
    assert {engine: result["state"] for engine, result in device["engines"].items()} == {
        "OLlama": "Passed",
        "VLLM": "Failed",
    }
    assert device["diagnosticRequest"] == "d1"


def test_a_device_without_a_diagnostic_carries_no_engine_results() -> None:
    (device,) = amd_operator(halo(history_map(), request=""))["devices"]
    assert "engines" not in device or device["engines"] == {}
