"""What a page shows of an object's status: the current generation only."""

from __future__ import annotations

from services.dashboard.summaries import summary_of


def model(generation: int, observed: int | None, ready_generation: int | None) -> dict[str, object]:
    status: dict[str, object] = {"phase": "Ready"}
    if observed is not None:
        status["observedGeneration"] = observed
    if ready_generation is not None:
        status["conditions"] = [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Ready",
                "message": "ok",
                "observedGeneration": ready_generation,
            }
        ]
    return {
        "kind": "ModelActivation",
        "metadata": {"name": "chat", "generation": generation, "resourceVersion": "9"},
        "status": status,
    }


def test_a_ready_of_the_current_generation_counts() -> None:
    summary = summary_of(model(2, 2, 2))
    assert (summary.ready, summary.phase, summary.current) == ("True", "Ready", True)


def test_a_ready_of_an_older_generation_is_in_progress() -> None:
    summary = summary_of(model(3, 2, 2))
    assert (summary.ready, summary.phase, summary.current) == ("Unknown", "Ready (in progress)", False)


def test_an_object_without_status_is_pending() -> None:
    summary = summary_of({"kind": "AppInstance", "metadata": {"name": "claw", "generation": 1}})
    assert (summary.phase, summary.ready, summary.key) == ("Pending", "Unknown", "AppInstance/claw")
