"""Appliance/local.status shows what the Pulumi Kubernetes Operator did with the program's Stack."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from planning.operator import FIELD_LIMIT, OPERATOR_STALLED
from tests.planning.builders import LATER, NOW, NS, SETTINGS, appliance, plan_of, status_of

STACK = "magicstick"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
NEXT_COMMIT = "89abcdef0123456789abcdef0123456789abcdef"
RESYNC = "2026-01-01T00:00:00Z"


def last_update(
    state: str = "succeeded", *, commit: str = COMMIT, kind: str = "up", resync: str = RESYNC, **extra: Any
) -> dict:
    """status.lastUpdate as PKO writes it after one update."""
    update = {
        "generation": 1,
        "name": f"{STACK}-{resync[-9:-1].replace(':', '')}",
        "type": kind,
        "state": state,
        "lastAttemptedCommit": commit,
        "lastResyncTime": resync,
        "permalink": f"https://app.pulumi.example.com/organization/magicstick/appliance/updates/{resync[-3:-1]}",
        "failures": 0 if state == "succeeded" else 1,
    }
    if state == "succeeded":
        update["lastSuccessfulCommit"] = commit
    return {**update, **extra}


def stack(
    *,
    name: str = STACK,
    namespace: str = NS,
    generation: int = 1,
    observed_generation: int | None = 1,
    update: dict | None = None,
    conditions: list[dict] | None = None,
) -> dict:
    """A pulumi.com/v1 Stack as PKO leaves it: status.observedGeneration, lastUpdate, the ready-protocol conditions."""
    status: dict[str, Any] = {"conditions": conditions if conditions is not None else [ready_condition()]}
    if observed_generation is not None:
        status["observedGeneration"] = observed_generation
    if update is not None:
        status["lastUpdate"] = update
    return {
        "apiVersion": "pulumi.com/v1",
        "kind": "Stack",
        "metadata": {"name": name, "namespace": namespace, "generation": generation, "uid": f"uid-stack-{name}"},
        "status": status,
    }


def ready_condition() -> dict:
    return {
        "type": "Ready",
        "status": "True",
        "reason": "ProcessingCompleted",
        "message": "the stack has been processed and is up to date",
        "lastTransitionTime": RESYNC,
    }


def stalled_conditions(
    reason: str = "UpdateFailed", message: str = "up failed 3 times; not retrying until the spec or source changes"
) -> list[dict]:
    return [
        {
            "type": "Ready",
            "status": "False",
            "reason": "NotReadyStalled",
            "message": "reconciliation is stalled",
            "lastTransitionTime": RESYNC,
        },
        {"type": "Stalled", "status": "True", "reason": reason, "message": message, "lastTransitionTime": RESYNC},
    ]


def appliance_status(*objects: dict, now=NOW, settings=SETTINGS) -> dict:
    return status_of(plan_of(*objects, now=now, settings=settings), "Appliance", "local")


def conditions_by_type(status: dict) -> dict[str, dict]:
    return {c["type"]: c for c in status["conditions"]}


def test_without_a_stack_the_appliance_status_shows_no_operator_and_no_operator_stalled_condition():
    status = appliance_status(appliance())

    assert "operator" not in status
    assert set(conditions_by_type(status)) == {"Ready"}


def test_a_stack_that_has_not_updated_yet_is_named_without_a_last_update():
    status = appliance_status(appliance(), stack(update=None))

    assert status["operator"] == {"stack": "ai-system/magicstick"}
    assert conditions_by_type(status)[OPERATOR_STALLED]["status"] == "False"


def test_a_succeeded_update_shows_its_result_commit_type_and_time():
    status = appliance_status(appliance(), stack(update=last_update()))

    assert status["operator"] == {
        "stack": "ai-system/magicstick",
        "lastUpdate": {"result": "succeeded", "commit": COMMIT, "type": "up", "time": RESYNC},
    }
    stalled = conditions_by_type(status)[OPERATOR_STALLED]
    assert (stalled["status"], stalled["reason"]) == ("False", "NotStalled")


def test_a_failed_update_shows_the_commit_it_attempted_and_leaves_the_appliance_phase_alone():
    failed = last_update("failed", commit=NEXT_COMMIT, lastSuccessfulCommit=COMMIT, message="error: update failed")
    status = appliance_status(appliance(), stack(update=failed))

    assert status["operator"]["lastUpdate"] == {"result": "failed", "commit": NEXT_COMMIT, "type": "up", "time": RESYNC}
    assert conditions_by_type(status)[OPERATOR_STALLED]["status"] == "False"
    assert status["phase"] == appliance_status(appliance())["phase"]


@pytest.mark.parametrize(
    ("reason", "message"),
    [
        ("UpdateFailed", "up failed 3 times; not retrying until the spec or source changes"),
        ("SourceUnavailable", "failed to resolve git source: authentication required"),
        ("SpecInvalid", "cross-namespace refs are not allowed"),
    ],
)
def test_a_stalled_stack_makes_operator_stalled_true_with_the_stacks_reason_and_message(reason, message):
    stalled = stack(update=last_update("failed", failures=3), conditions=stalled_conditions(reason, message))
    status = appliance_status(appliance(), stalled)

    condition = conditions_by_type(status)[OPERATOR_STALLED]
    assert (condition["status"], condition["reason"], condition["message"]) == ("True", reason, message)
    assert condition["lastTransitionTime"] == "2026-01-01T00:00:00Z"


def test_a_stalled_condition_of_an_older_generation_does_not_count():
    edited = stack(
        generation=2, observed_generation=1, update=last_update("failed", failures=3), conditions=stalled_conditions()
    )
    status = appliance_status(appliance(), edited)

    assert conditions_by_type(status)[OPERATOR_STALLED]["status"] == "False"


def test_an_unchanged_stack_gives_the_identical_status_on_the_next_run():
    objects = (stack(update=last_update()),)
    first = appliance_status(appliance(), *objects)

    again = appliance_status(appliance(status=first), *objects, now=LATER)

    assert again == first


def test_a_resync_with_the_same_outcome_writes_nothing_new():
    first = appliance_status(appliance(), stack(update=last_update()))
    resynced = last_update(
        resync="2026-01-01T00:05:00Z", name="magicstick-0000abcd", permalink="https://app.pulumi.example.com/u/2"
    )

    again = appliance_status(appliance(status=first), stack(update=resynced), now=LATER)

    assert again == first
    assert again["operator"]["lastUpdate"]["time"] == RESYNC


def test_a_new_commit_moves_the_time_to_that_updates():
    first = appliance_status(appliance(), stack(update=last_update()))

    moved = appliance_status(
        appliance(status=first), stack(update=last_update(commit=NEXT_COMMIT, resync="2026-01-01T00:05:00Z")), now=LATER
    )

    assert moved["operator"]["lastUpdate"] == {
        "result": "succeeded",
        "commit": NEXT_COMMIT,
        "type": "up",
        "time": "2026-01-01T00:05:00Z",
    }


def test_recovering_from_a_stall_flips_operator_stalled_to_false_at_that_run():
    stalled = appliance_status(
        appliance(), stack(update=last_update("failed", failures=3), conditions=stalled_conditions())
    )

    recovered = appliance_status(
        appliance(status=stalled), stack(update=last_update(resync="2026-01-01T01:00:00Z")), now=LATER
    )

    condition = conditions_by_type(recovered)[OPERATOR_STALLED]
    assert (condition["status"], condition["lastTransitionTime"]) == ("False", "2026-01-02T00:00:00Z")


def test_the_stack_is_found_under_the_configured_stack_name_only():
    settings = replace(SETTINGS, stack_name="appliance-loop")
    objects = (stack(update=last_update()), stack(name="appliance-loop", update=last_update("failed")))

    status = appliance_status(appliance(), *objects, settings=settings)

    assert status["operator"]["stack"] == "ai-system/appliance-loop"
    assert status["operator"]["lastUpdate"]["result"] == "failed"


def test_a_stack_of_another_namespace_is_not_the_programs():
    status = appliance_status(appliance(), stack(namespace="pulumi-operator", update=last_update()))

    assert "operator" not in status


def test_every_operator_string_is_bounded():
    flux_revision = "main@sha1:" + "f" * 40 + "/" + "x" * 1000
    status = appliance_status(appliance(), stack(update=last_update(commit=flux_revision, kind="u" * 1000)))

    update = status["operator"]["lastUpdate"]
    assert len(update["commit"]) == FIELD_LIMIT and update["commit"].startswith("main@sha1:")
    assert len(update["type"]) == FIELD_LIMIT
