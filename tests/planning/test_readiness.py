"""Readiness counts only for the current generation, and "the planned policy" is decided by its hash.

Every observed object here is built as the API server returns it (tests.planning.builders:
CRD defaults, metadata.generation, the controller's observedGeneration).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from planning.frozen import freeze
from planning.instances.access import AccessSettings, access_objects
from planning.instances.releases import helm_release
from planning.kustomizations import SourceRef
from planning.readiness import (
    SPEC_HASH_ANNOTATION,
    Readiness,
    Waiting,
    flux_readiness,
    http_route_readiness,
    kubeai_model_readiness,
    security_policy_readiness,
    spec_hash,
)
from planning.snapshot import GenericObject, Snapshot
from tests.planning.builders import (
    CATALOGS,
    GATEWAY_REF,
    NS,
    accepted_policy,
    accepted_route,
    access_for,
    condition,
    kustomization_for,
    observed_release,
)
from tests.planning.models.world import observed_model

READY, IN_PROGRESS, FAILED = Readiness.READY, Readiness.IN_PROGRESS, Readiness.FAILED


def ready_status(
    ready: str = "True",
    *,
    status_og: int | None = 1,
    condition_og: int | None = 1,
    reason: str = "ReconciliationSucceeded",
) -> dict:
    status: dict[str, Any] = {
        "conditions": [
            condition("Ready", ready, reason=reason, message="flux says so", observed_generation=condition_og)
        ]
    }
    if status_og is not None:
        status["observedGeneration"] = status_og
    return status


def kustomization(status: dict | None, *, generation: int, suspend: bool = False):
    obj = kustomization_for("basis", None, generation=generation, suspend=suspend)
    if status is not None:
        obj["status"] = status
    (found,) = Snapshot.from_objects([obj]).kustomizations
    return found


def release(status: dict | None, *, generation: int, suspend: bool = False) -> GenericObject:
    planned = helm_release(
        instance="openclaw-default",
        release_name="openclaw-default",
        application=CATALOGS.applications.get("openclaw"),
        system_namespace=NS,
        target_namespace="ai",
        values={"name": "default"},
        source=SourceRef(),
        field_manager="magicstick",
    )
    obj = observed_release(planned, None, generation=generation)
    obj["spec"]["suspend"] = suspend
    if status is not None:
        obj["status"] = status
    (found,) = Snapshot.from_objects([obj]).generated
    return found


FLUX_CASES = {
    "ready-for-the-current-generation": (ready_status(), 1, False, READY, "ReconciliationSucceeded"),
    "ready-for-an-older-generation": (
        ready_status(status_og=1, condition_og=1),
        2,
        False,
        IN_PROGRESS,
        Waiting.STALE_GENERATION,
    ),
    "condition-without-generation-uses-the-status-one": (
        ready_status(condition_og=None),
        1,
        False,
        READY,
        "ReconciliationSucceeded",
    ),
    "condition-without-generation-and-an-older-status": (
        ready_status(status_og=1, condition_og=None),
        2,
        False,
        IN_PROGRESS,
        Waiting.STALE_GENERATION,
    ),
    "the-conditions-own-generation-wins": (
        ready_status(status_og=2, condition_og=1),
        2,
        False,
        IN_PROGRESS,
        Waiting.STALE_GENERATION,
    ),
    "no-generation-recorded-anywhere": (
        ready_status(status_og=None, condition_og=None),
        1,
        False,
        IN_PROGRESS,
        Waiting.STALE_GENERATION,
    ),
    "failed-for-the-current-generation": (ready_status("False", reason="BuildFailed"), 1, False, FAILED, "BuildFailed"),
    "failed-for-an-older-generation": (
        ready_status("False", reason="BuildFailed"),
        2,
        False,
        IN_PROGRESS,
        Waiting.STALE_GENERATION,
    ),
    "progressing": (ready_status("False", reason="Progressing"), 1, False, IN_PROGRESS, "Progressing"),
    "unknown": (ready_status("Unknown", reason="Progressing"), 1, False, IN_PROGRESS, "Progressing"),
    "just-created-by-the-server": (None, 1, False, IN_PROGRESS, Waiting.AWAITING_STATUS),
    "suspended": (ready_status(), 1, True, IN_PROGRESS, Waiting.SUSPENDED),
}


@pytest.mark.parametrize("build", [kustomization, release], ids=["Kustomization", "HelmRelease"])
@pytest.mark.parametrize("case", sorted(FLUX_CASES))
def test_a_flux_object_is_ready_only_for_its_current_generation(build: Callable[..., Any], case: str):
    status, generation, suspend, readiness, reason = FLUX_CASES[case]
    verdict = flux_readiness(build(status, generation=generation, suspend=suspend))
    assert (verdict.readiness, verdict.reason) == (readiness, reason)


def test_a_flux_object_not_in_the_cluster_is_in_progress():
    assert (flux_readiness(None).readiness, flux_readiness(None).reason) == (IN_PROGRESS, Waiting.NOT_FOUND)


def test_a_stale_verdict_names_both_generations():
    verdict = flux_readiness(kustomization(ready_status(status_og=1, condition_og=1), generation=2))
    assert (verdict.generation, verdict.observed_generation) == (2, 1)
    assert "generation 2" in verdict.message and "generation 1" in verdict.message


# The SecurityPolicy: the planned spec by its hash, accepted for the current generation


def planned_policy():
    (policy,) = [
        o
        for o in access_objects(access_for(), AccessSettings(), field_manager="magicstick")
        if o.kind == "SecurityPolicy"
    ]
    return policy


def generic(obj: dict) -> GenericObject:
    (found,) = Snapshot.from_objects([obj]).generated
    return found


def without_hash(obj: dict) -> dict:
    del obj["metadata"]["annotations"][SPEC_HASH_ANNOTATION]
    return obj


def with_hash(value: str) -> Callable[[dict], dict]:
    def change(obj: dict) -> dict:
        obj["metadata"]["annotations"][SPEC_HASH_ANNOTATION] = value
        return obj

    return change


def with_ancestors(*conditions: dict | None) -> Callable[[dict], dict]:
    def change(obj: dict) -> dict:
        obj["status"] = {
            "ancestors": [
                {
                    "ancestorRef": GATEWAY_REF,
                    "controllerName": "gateway.envoyproxy.io/gatewayclass-controller",
                    "conditions": [c] if c else [],
                }
                for c in conditions
            ]
        }
        return obj

    return change


def accepted(status: str = "True", generation: int | None = 1, reason: str = "Accepted") -> dict:
    return condition(
        "Accepted", status, reason=reason, message=f"{reason} by the gateway", observed_generation=generation
    )


POLICY_CASES: dict[str, tuple[dict[str, Any], Callable[[dict], dict], Readiness, str]] = {
    "accepted-with-the-planned-hash": ({}, lambda o: o, READY, "Accepted"),
    "no-hash-annotation": ({}, without_hash, IN_PROGRESS, Waiting.NOT_CURRENT),
    "the-hash-of-another-spec": ({}, with_hash("0123456789abcdef"), IN_PROGRESS, Waiting.NOT_CURRENT),
    "accepted-for-an-older-generation": (
        {"generation": 2, "observed_generation": 1},
        lambda o: o,
        IN_PROGRESS,
        Waiting.STALE_GENERATION,
    ),
    "accepted-without-an-observed-generation": (
        {},
        with_ancestors(accepted(generation=None)),
        IN_PROGRESS,
        Waiting.STALE_GENERATION,
    ),
    "rejected-for-the-current-generation": ({"accepted": "False", "reason": "Invalid"}, lambda o: o, FAILED, "Invalid"),
    "one-of-two-ancestors-rejects-it": (
        {},
        with_ancestors(accepted(), accepted("False", reason="Conflicted")),
        FAILED,
        "Conflicted",
    ),
    "one-of-two-ancestors-judged-an-older-generation": (
        {"generation": 2},
        with_ancestors(accepted(generation=2), accepted(generation=1)),
        IN_PROGRESS,
        Waiting.STALE_GENERATION,
    ),
    "no-ancestor-yet": ({}, with_ancestors(), IN_PROGRESS, Waiting.AWAITING_STATUS),
    "an-ancestor-without-accepted-condition": ({}, with_ancestors(None), IN_PROGRESS, Waiting.AWAITING_STATUS),
}


@pytest.mark.parametrize("case", sorted(POLICY_CASES))
def test_a_security_policy_is_ready_when_it_carries_the_planned_hash_and_its_generation_is_accepted(case: str):
    options, change, readiness, reason = POLICY_CASES[case]
    planned = planned_policy()
    observed = change(accepted_policy(planned, **options))
    verdict = security_policy_readiness(
        generic(observed), planned_hash=planned.body["metadata"]["annotations"][SPEC_HASH_ANNOTATION]
    )
    assert (verdict.readiness, verdict.reason) == (readiness, reason)


def test_the_stored_spec_differs_from_the_planned_one_and_does_not_matter():
    planned = planned_policy()
    observed = generic(accepted_policy(planned))
    assert observed.spec != planned.body["spec"]
    assert security_policy_readiness(observed, planned_hash=spec_hash(planned.body["spec"])).ready


def test_the_hash_is_read_from_the_observed_objects_annotations_not_recomputed_from_its_spec():
    planned = planned_policy()
    observed = accepted_policy(planned)
    observed["spec"] = dict(planned.body["spec"])
    del observed["metadata"]["annotations"][SPEC_HASH_ANNOTATION]
    verdict = security_policy_readiness(generic(observed), planned_hash=spec_hash(planned.body["spec"]))
    assert verdict.reason == Waiting.NOT_CURRENT


def test_a_security_policy_not_in_the_cluster_is_in_progress():
    assert security_policy_readiness(None, planned_hash="x").reason == Waiting.NOT_FOUND


def planned_route():
    return next(
        o
        for o in access_objects(access_for(guard_ready=True), AccessSettings(), field_manager="magicstick")
        if o.kind == "HTTPRoute"
    )


def route_with(conditions: list[dict], *, generation: int = 1) -> GenericObject:
    observed = accepted_route(planned_route(), generation=generation)
    observed["status"]["parents"][0]["conditions"] = conditions
    return generic(observed)


@pytest.mark.parametrize(
    ("route", "readiness"),
    [
        (lambda: generic(accepted_route(planned_route())), READY),
        (lambda: route_with([accepted(generation=1)], generation=2), IN_PROGRESS),
        (lambda: route_with([accepted("False", reason="NotAllowedByListeners")]), FAILED),
        (lambda: route_with([]), IN_PROGRESS),
        (lambda: None, IN_PROGRESS),
    ],
    ids=["accepted", "accepted-for-an-older-generation", "rejected", "no-condition", "absent"],
)
def test_an_http_route_is_ready_when_every_parent_accepted_its_current_generation(route, readiness):
    assert http_route_readiness(route()).readiness is readiness


@pytest.mark.parametrize(("ready", "readiness"), [(1, READY), (0, IN_PROGRESS)])
def test_a_kubeai_model_is_ready_with_a_ready_replica(ready, readiness):
    (model,) = Snapshot.from_objects([observed_model("m", ready=ready, all_=1)]).models
    assert kubeai_model_readiness(model).readiness is readiness


def test_the_spec_hash_ignores_key_order_and_freezing_and_changes_with_the_spec():
    spec = {"b": [1, {"y": True, "x": None}], "a": "é"}
    reordered = {"a": "é", "b": [1, {"x": None, "y": True}]}
    assert spec_hash(spec) == spec_hash(reordered) == spec_hash(freeze(spec))
    assert spec_hash(spec) != spec_hash({**spec, "a": "e"})
    assert len(spec_hash(spec)) == 16
