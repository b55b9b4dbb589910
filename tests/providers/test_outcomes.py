"""The `problem` output every dynamic provider returns: its wire form, its reading, its retry.

Pure: no test here opens a connection.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from pulumi.output import Unknown
from pulumi.runtime.rpc import UNKNOWN

from providers.kube import Conflict, ConnectionFailure, Forbidden, Invalid, KubeConnectionError, KubeError, ServerError
from providers.outcomes import (
    PROBLEM_OUTPUT,
    Persistence,
    Problem,
    ProblemReason,
    kube_problem,
    problem_from,
    problem_output,
    retry_requested,
    with_problem,
)
from providers.pulumi_values import is_unknown


def answered(cls: type[KubeError], code: int, reason: str, message: str) -> KubeError:
    return cls(method="PATCH", path="/apis/x", code=code, reason=reason, message=message)


UNREACHABLE = KubeConnectionError(
    method="GET",
    path="/api/v1/x",
    url="https://127.0.0.1:1",
    failure=ConnectionFailure.REFUSED,
    cause="connection refused",
)


def test_a_problem_output_holds_the_reason_the_message_and_the_persistence():
    assert problem_output(ProblemReason.OLLAMA_UNREACHABLE, "503 ServiceUnavailable: no endpoints") == {
        "reason": "OllamaUnreachable",
        "message": "503 ServiceUnavailable: no endpoints",
        "persistence": "Temporary",
    }


def test_outputs_without_a_problem_carry_an_empty_problem_object_which_a_preview_knows():
    assert with_problem({"name": "x"}, None) == {"name": "x", PROBLEM_OUTPUT: {}}


@pytest.mark.parametrize("value", [None, {}, UNKNOWN, "Broken", {"message": "no reason"}, {"reason": ""}])
def test_null_absent_unknown_or_shapeless_outputs_read_as_no_problem(value):
    assert problem_from(value) is None


def test_a_problem_reads_back_as_it_was_written():
    written = Problem(ProblemReason.STATUS_WRITE_INVALID, "422 Invalid: bad", Persistence.PERMANENT)
    assert problem_from(written.output()) == written


def test_a_reason_of_another_version_is_kept_as_written_and_retried():
    problem = problem_from({"reason": "SomethingNewer", "message": "m"})
    assert problem == Problem("SomethingNewer", "m", Persistence.TEMPORARY)
    assert problem is not None and problem.retried


def test_no_answer_from_the_api_server_is_cluster_unreachable_and_temporary():
    problem = kube_problem(UNREACHABLE, refused=ProblemReason.STATUS_WRITE_REFUSED)
    assert problem == Problem(ProblemReason.CLUSTER_UNREACHABLE, "cannot reach https://127.0.0.1:1: connection refused")


@pytest.mark.parametrize(
    "error",
    [
        answered(Forbidden, 403, "Forbidden", "user cannot patch"),
        answered(Conflict, 409, "Conflict", "the object has been modified"),
        answered(ServerError, 503, "ServiceUnavailable", "etcd timeout"),
    ],
)
def test_a_refusal_by_the_world_keeps_the_servers_status_and_is_temporary(error):
    problem = kube_problem(
        error, refused=ProblemReason.STATUS_WRITE_REFUSED, invalid=ProblemReason.STATUS_WRITE_INVALID
    )
    assert problem == Problem(ProblemReason.STATUS_WRITE_REFUSED, error.detail, Persistence.TEMPORARY)
    assert problem.message.startswith(f"{error.code} {error.reason}: ")


def test_a_refusal_of_the_request_body_itself_is_permanent_with_its_own_reason():
    error = answered(Invalid, 422, "Invalid", 'status.observedGeneration: Invalid value: "string"')
    problem = kube_problem(
        error, refused=ProblemReason.STATUS_WRITE_REFUSED, invalid=ProblemReason.STATUS_WRITE_INVALID
    )
    assert problem == Problem(ProblemReason.STATUS_WRITE_INVALID, error.detail, Persistence.PERMANENT)


@pytest.mark.parametrize(
    ("problem", "retried"),
    [
        (None, False),
        (problem_output(ProblemReason.PROFILE_STORE_FULL, "full"), True),
        (problem_output(ProblemReason.STATUS_WRITE_INVALID, "bad", Persistence.PERMANENT), False),
    ],
)
def test_the_next_run_tries_again_only_after_a_temporary_problem(problem, retried):
    assert retry_requested({"name": "x", PROBLEM_OUTPUT: problem}) is retried


def test_outputs_of_an_earlier_version_without_a_problem_key_ask_for_no_retry():
    assert retry_requested({"name": "x"}) is False


@pytest.mark.parametrize(
    ("value", "unknown"), [(Unknown(), True), (UNKNOWN, True), ({}, False), (None, False), ("text", False)]
)
def test_a_value_a_preview_does_not_know_is_recognised_in_both_of_its_forms(value, unknown):
    assert is_unknown(value) is unknown


def test_the_outcomes_module_imports_nothing_of_pulumi():
    import providers.outcomes

    tree = ast.parse(Path(providers.outcomes.__file__).read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert sorted(name for name in imported if name.split(".")[0] == "pulumi") == []
