"""The status batch provider's check, diff and bookkeeping, without a cluster (providers/status_batch.py).
What it writes is tested against the API server in tests/live/test_status_batch.py."""

from __future__ import annotations

from pulumi.output import Unknown

from planning.objects import encode_status
from providers.outcomes import Persistence, Problem, ProblemReason, problem_output
from providers.status_batch import StatusBatchProvider, batch_problem, digest, members_to_write, recorded_member

READY = {"phase": "Ready", "observedGeneration": 1}
STORE_FULL = problem_output(ProblemReason.PROFILE_STORE_FULL, "cannot add resource profile: the limit is 64")
REFUSED = problem_output(ProblemReason.STATUS_WRITE_REFUSED, "403 Forbidden: cannot patch modelactivations/status")
INVALID = problem_output(ProblemReason.STATUS_WRITE_INVALID, "422 Invalid: observedGeneration", Persistence.PERMANENT)


def member(name: str, status: dict | None = None, **extra: object) -> dict:
    return {"namespace": "ai", "name": name, "status": encode_status(status or READY), **extra}


def batch(*members: dict) -> dict:
    return {
        "apiVersion": "appliance.magicstick.dev/v1alpha1",
        "kind": "ModelActivation",
        "members": {f"ai/{m['name']}": m for m in members},
        "problem": None,
    }


def checked(inputs: dict) -> dict:
    result = StatusBatchProvider().check({}, inputs)
    assert result.failures == []
    return result.inputs


def stored(inputs: dict, **outputs: object) -> dict:
    """The outputs a write that met no problem leaves in the state, with `outputs` over them."""
    inputs = checked(inputs)
    members = {key: recorded_member(member) for key, member in inputs["members"].items()}
    return {**inputs, "members": members, "problem": {}, "writeProblems": {}, "retries": {}, **outputs}


def test_check_decodes_each_members_status_and_drops_empty_problems():
    inputs = checked(batch(member("chat", problems={"runtime-profile/cpu-4": {}})))
    assert inputs["members"]["ai/chat"] == {"namespace": "ai", "name": "chat", "status": READY}


def test_check_names_a_bad_member_by_its_path():
    inputs = batch(member("chat"))
    inputs["members"]["ai/chat"]["status"] = "not json"
    inputs["members"]["ai/other"] = {"namespace": "ai", "name": "embed", "status": "{}"}
    failures = {(f.property, f.reason) for f in StatusBatchProvider().check({}, inputs).failures}
    assert failures == {
        ('members["ai/chat"].status', "status must be a mapping, or the JSON text of one"),
        ('members["ai/other"]', "the key of 'ai'/'embed' must be 'ai/embed'"),
    }


def test_check_refuses_a_kind_whose_status_the_program_does_not_own():
    result = StatusBatchProvider().check({}, {**batch(member("chat")), "kind": "Secret"})
    assert [f.property for f in result.failures] == ["kind"]


def test_a_converged_batch_shows_no_change():
    inputs = batch(member("chat"), member("embed"))
    assert StatusBatchProvider().diff("id", stored(inputs), checked(inputs)).changes is False


def test_only_the_changed_member_is_written():
    before = batch(member("chat"), member("embed"))
    after = batch(member("chat"), member("embed", {"phase": "Degraded", "observedGeneration": 2}))
    assert StatusBatchProvider().diff("id", stored(before), checked(after)).changes is True
    assert members_to_write(stored(before), checked(after)) == ["ai/embed"]


def test_a_new_member_is_written_and_a_removed_one_is_a_change_that_writes_nothing():
    before = batch(member("chat"), member("gone"))
    after = batch(member("chat"), member("new"))
    assert members_to_write(stored(before), checked(after)) == ["ai/new"]
    removed = batch(member("chat"))
    assert members_to_write(stored(before), checked(removed)) == []
    assert StatusBatchProvider().diff("id", stored(before), checked(removed)).changes is True


def test_a_member_whose_write_was_refused_is_tried_again_on_the_next_run_and_an_invalid_one_only_when_it_changes():
    inputs = batch(member("chat"), member("embed"), member("rerank"))
    olds = stored(inputs, writeProblems={"ai/chat": REFUSED, "ai/embed": INVALID})
    assert members_to_write(olds, checked(inputs)) == ["ai/chat"]


def test_a_member_with_a_temporary_problem_of_its_own_is_written_every_run_to_count_it():
    inputs = batch(member("chat", problems={"runtime-profile/cpu-4": STORE_FULL}), member("embed"))
    assert members_to_write(stored(inputs), checked(inputs)) == ["ai/chat"]


def test_a_members_problems_not_yet_known_in_a_preview_show_a_change():
    known = batch(member("chat", problems={"runtime-profile/cpu-4": {}}))
    unknown = batch(member("chat", problems={"runtime-profile/cpu-4": Unknown()}))
    assert (
        StatusBatchProvider().diff("id", stored(known), StatusBatchProvider().check({}, unknown).inputs).changes is True
    )


def test_the_batch_problem_names_every_member_that_was_not_written():
    problems = {
        "ai/embed": Problem(ProblemReason.STATUS_WRITE_INVALID, "422 Invalid", Persistence.PERMANENT),
        "ai/chat": Problem(ProblemReason.STATUS_WRITE_REFUSED, "403 Forbidden"),
    }
    summed = batch_problem(problems, 5)
    assert summed is not None
    assert (summed.reason, summed.persistence) == (ProblemReason.STATUS_WRITE_REFUSED, Persistence.TEMPORARY)
    assert (
        summed.message
        == "2 of 5 statuses not written: ai/chat: StatusWriteRefused: 403 Forbidden; ai/embed: StatusWriteInvalid: 422 Invalid"
    )
    assert batch_problem({}, 5) is None


def test_a_batch_of_only_permanent_problems_is_permanent():
    summed = batch_problem(
        {"ai/embed": Problem(ProblemReason.STATUS_WRITE_INVALID, "422 Invalid", Persistence.PERMANENT)}, 1
    )
    assert summed is not None and summed.persistence is Persistence.PERMANENT


def test_the_outputs_keep_a_members_identity_fields_and_digests_not_its_status():
    recorded = recorded_member(checked(batch(member("chat")))["members"]["ai/chat"])
    assert recorded == {
        "namespace": "ai",
        "name": "chat",
        "fields": ["observedGeneration", "phase"],
        "statusDigest": digest(READY),
        "problemsDigest": digest({}),
    }


def test_a_digest_reads_a_whole_float_as_the_integer_the_protocol_turned_into_it():
    assert digest({"observedGeneration": 3.0}) == digest({"observedGeneration": 3})
    assert digest({"observedGeneration": 3}) != digest({"observedGeneration": 4})


def test_a_digest_of_a_value_not_known_yet_is_none():
    assert digest({"problems": {"runtime-profile/cpu-4": Unknown()}}) is None
