"""The engine benchmark's goal verdicts (benchmarks/engine.py `verdicts`), from figures given here:
what "met" and "NOT met" mean, never a time measured by a test."""

from __future__ import annotations

import math

from benchmarks.engine import MIB, Figures, verdicts


def figures(
    activations: int, *, up: float, floor: float, resources: int, state_bytes: int, memory_mib: float = 600
) -> Figures:
    return Figures(
        activations=activations,
        seconds={"converged up": up, "converged up --refresh": up * 1.2},
        floor_seconds={"converged up": floor, "converged up --refresh": floor * 1.2},
        resources=resources,
        state_bytes=state_bytes,
        memory={"engine": int(memory_mib * MIB)},
    )


def by_number(rows: list[Figures]) -> dict[int, bool]:
    return {verdict.number: verdict.met for verdict in verdicts(rows)}


def test_a_program_close_to_its_floor_growing_linearly_meets_goals_2_to_5():
    rows = [
        figures(20, up=5, floor=4, resources=55, state_bytes=400_000),
        figures(100, up=8, floor=6, resources=134, state_bytes=800_000),
        figures(1000, up=40, floor=30, resources=914, state_bytes=5_300_000),
    ]
    assert by_number(rows) == {2: True, 3: True, 4: True, 5: True}


def test_a_converged_up_above_one_and_a_half_floors_misses_goal_2():
    rows = [
        figures(100, up=8, floor=6, resources=134, state_bytes=800_000),
        figures(1000, up=46, floor=30, resources=914, state_bytes=5_300_000),
    ]
    assert by_number(rows)[2] is False


def test_growth_is_judged_between_the_two_largest_sizes():
    rows = [
        figures(20, up=1, floor=4, resources=55, state_bytes=400_000),
        figures(100, up=8, floor=6, resources=134, state_bytes=800_000),
        figures(1000, up=40, floor=30, resources=914, state_bytes=5_300_000),
    ]
    (growth,) = [v for v in verdicts(rows) if v.number == 3]
    assert growth.met and growth.figures.startswith("5.0x")


def test_growth_beyond_eleven_times_for_ten_times_the_activations_misses_goal_3():
    rows = [
        figures(100, up=4, floor=6, resources=134, state_bytes=800_000),
        figures(1000, up=45, floor=30, resources=914, state_bytes=5_300_000),
    ]
    assert by_number(rows)[3] is False


def test_state_bytes_per_added_activation_that_double_miss_goal_3():
    rows = [
        figures(20, up=5, floor=4, resources=55, state_bytes=400_000),
        figures(100, up=8, floor=6, resources=134, state_bytes=600_000),
        figures(1000, up=40, floor=30, resources=914, state_bytes=5_100_000),
    ]
    assert by_number(rows)[3] is False


def test_more_than_one_resource_per_added_activation_misses_goal_4():
    rows = [
        figures(100, up=8, floor=6, resources=134, state_bytes=800_000),
        figures(1000, up=40, floor=30, resources=1100, state_bytes=5_300_000),
    ]
    assert by_number(rows)[4] is False


def test_memory_above_a_gibibyte_or_not_measured_misses_goal_5():
    assert by_number([figures(1000, up=40, floor=30, resources=914, state_bytes=1, memory_mib=1100)])[5] is False
    assert by_number([figures(1000, up=40, floor=30, resources=914, state_bytes=1, memory_mib=0)])[5] is False


def test_a_command_that_outlived_its_bound_misses_the_goals_it_feeds():
    rows = [
        figures(100, up=8, floor=6, resources=134, state_bytes=800_000),
        figures(1000, up=math.inf, floor=30, resources=914, state_bytes=5_300_000),
    ]
    found = by_number(rows)
    assert (found[2], found[3]) == (False, False)
