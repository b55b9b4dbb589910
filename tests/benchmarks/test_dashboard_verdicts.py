"""The dashboard benchmark's pure parts (benchmarks/dashboard.py): what "met" and "NOT met" mean,
how its percentiles are taken, and how it reads the dashboard's answers, from figures and lines
given here, never from a time measured by a test."""

from __future__ import annotations

import json
import math
import statistics

import pytest

from benchmarks.dashboard import (
    EventParser,
    ServerSentEvent,
    app_instance,
    crowd_verdict,
    is_change,
    model_activation,
    other_phase,
    percentile,
    server_duration_ms,
    spread,
    status_of,
    stream_users,
    verdicts,
)
from services.dashboard.summaries import summary_of


def by_goal(overview_ms: list[float], change_ms: list[float]) -> tuple[bool, bool]:
    overview, change = verdicts(overview_ms, change_ms)
    return overview.met, change.met


def test_an_overview_whose_p95_is_within_100_ms_meets_its_goal():
    assert by_goal([40.0] * 19 + [100.0], [200.0])[0] is True


def test_an_overview_slower_than_100_ms_at_p95_misses_its_goal_however_fast_its_median():
    assert by_goal([20.0] * 18 + [150.0, 160.0], [200.0])[0] is False


def test_a_status_change_is_held_to_one_second_at_p95():
    assert by_goal([40.0], [300.0] * 19 + [1000.0])[1] is True
    assert by_goal([40.0], [300.0] * 18 + [1200.0, 1300.0])[1] is False


def test_a_change_that_never_reached_the_page_counts_as_infinitely_late():
    figures = spread([300.0] * 18 + [math.inf, math.inf])
    assert (figures.p95, figures.max, figures.missed) == (math.inf, math.inf, 2)
    assert by_goal([40.0], [300.0] * 18 + [math.inf, math.inf])[1] is False
    assert "2 missed" in verdicts([40.0], [300.0] * 18 + [math.inf, math.inf])[1].line()


def test_no_samples_meet_no_goal():
    assert by_goal([], []) == (False, False)


def test_a_verdict_line_says_met_or_not_met_with_the_bound_and_the_figures():
    overview, change = verdicts([50.0, 60.0], [2000.0])
    assert overview.line().startswith(
        "goal (the overview renders on the server at 200 models and 50 instances: p95 <= 100 ms): met (p50 55 ms"
    )
    assert change.line().startswith("goal (a status change reaches an open page: p95 <= 1000 ms): NOT met (")


@pytest.mark.parametrize(
    "values", [[5.0, 1.0], [3.0, 1.0, 2.0], [float(n) for n in range(1, 21)], [7.5, 1.25, 100.0, 42.0, 3.0]]
)
@pytest.mark.parametrize("p", [50, 95])
def test_percentiles_are_interpolated_as_statistics_inclusive_quantiles_are(values, p):
    assert percentile(values, p) == pytest.approx(statistics.quantiles(values, n=100, method="inclusive")[p - 1])


def test_a_single_value_is_every_percentile_and_none_is_not_a_number():
    assert percentile([12.0], 95) == 12.0
    assert math.isnan(percentile([], 50))


def test_the_server_time_is_read_from_the_app_metric_of_server_timing():
    assert server_duration_ms("app;dur=12.34") == 12.34
    assert server_duration_ms('db;dur=3, app;desc="dashboard";dur=7.5') == 7.5
    assert server_duration_ms("db;dur=3") is None
    assert server_duration_ms(None) is None


def test_events_are_read_from_their_event_and_data_lines_and_end_at_a_blank_line():
    parser = EventParser()
    lines = [
        "event: ready",
        "data: {}",
        "",
        ": ping - 2026-01-01 00:00:00",
        "",
        "event: status",
        'data: {"key":',
        'data: "x"}\r',
        "",
    ]
    events = [event for event in map(parser.feed, lines) if event is not None]
    assert events == [ServerSentEvent("ready", "{}"), ServerSentEvent("status", '{"key":\n"x"}')]


def test_an_event_without_a_type_is_a_message():
    parser = EventParser()
    assert [parser.feed(line) for line in ["data:x", ""]] == [None, ServerSentEvent("message", "x")]


def status_event(**data: object) -> ServerSentEvent:
    return ServerSentEvent("status", json.dumps(data))


def test_only_the_status_event_of_the_written_key_phase_and_version_is_the_change():
    wanted = {"key": "ModelActivation/m", "phase": "Starting", "resource_version": "42"}
    assert is_change(status_event(key="ModelActivation/m", phase="Starting", resourceVersion="42"), **wanted)
    assert not is_change(status_event(key="ModelActivation/m", phase="Ready", resourceVersion="41"), **wanted)
    assert not is_change(status_event(key="ModelActivation/n", phase="Starting", resourceVersion="42"), **wanted)
    assert not is_change(ServerSentEvent("unavailable", '{"key": "ModelActivation/m"}'), **wanted)
    assert not is_change(ServerSentEvent("status", "not json"), **wanted)


@pytest.mark.parametrize("phase", ["Ready", "Starting"])
def test_the_statuses_written_are_of_the_current_generation_so_the_page_shows_them_as_they_are(phase):
    created = {
        **model_activation("m"),
        "metadata": {**model_activation("m")["metadata"], "generation": 3, "resourceVersion": "7"},
    }
    summary = summary_of({**created, "status": status_of(created, phase)["status"]})
    assert (summary.phase, summary.current, summary.ready) == (phase, True, "True" if phase == "Ready" else "False")


def test_a_status_body_names_only_the_object_and_its_status():
    body = status_of(
        {**app_instance("a"), "metadata": {**app_instance("a")["metadata"], "generation": 1}},
        "Ready",
        extra={"url": "https://a.example.local/"},
    )
    assert set(body) == {"apiVersion", "kind", "metadata", "status"}
    assert body["metadata"] == {"name": "a", "namespace": "ai-system"}
    assert body["status"]["url"] == "https://a.example.local/"


def test_each_change_writes_the_other_phase():
    assert [other_phase("Ready"), other_phase("Starting")] == ["Starting", "Ready"]


def test_the_overview_among_open_streams_meets_its_goal_within_twice_its_p95_with_none():
    assert crowd_verdict([50.0] * 20, [100.0] * 20).met is True
    assert crowd_verdict([50.0] * 20, [101.0] * 20).met is False
    assert crowd_verdict([], [10.0]).met is False


def test_the_crowd_verdict_line_names_the_streams_both_p95s_and_their_ratio():
    line = crowd_verdict([40.0] * 20, [60.0] * 20, streams=200).line()
    assert (
        line
        == "goal (the overview with 200 streams open: p95 within 2x of none): met (p95 60 ms with the streams open, 40 ms with none: 1.50x)"
    )


def test_two_hundred_streams_are_spread_over_thirteen_viewers_none_past_the_per_user_bound():
    users = stream_users(200, per_user=16)
    assert len(users) == 200
    assert len(set(users)) == 13
    assert max(users.count(user) for user in set(users)) == 16
