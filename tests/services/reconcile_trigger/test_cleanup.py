"""The runtime cleanup's decisions (services/reconcile_trigger/cleanup.py), held to what the program plans.

Which activation the trigger holds with its finalizer, what a deleted one asks for, and the
selector that finds a runtime's objects are judged against the program's own plan: the status
it writes for each kind of model and the labels it puts on each direct runtime's objects.
"""

from __future__ import annotations

from typing import Any

from api.model_runtimes import RUNTIME_CLEANUP_FINALIZER, runtime_selector
from planning.frozen import thaw
from services.reconcile_trigger.cleanup import (
    Step,
    finalizers_patch,
    has_direct_runtime,
    next_step,
    with_finalizer,
    without_finalizer,
)
from services.reconcile_trigger.watches import runtime_namespaces, watch_targets
from tests.planning.builders import status_of
from tests.planning.models.direct_world import freetoken_model, plan_with, realtime_model, runtime_of
from tests.planning.models.world import gpu_node, local_model, platform

TARGETS = frozenset({"ai"})


def gpu_world(count: str = "1") -> list[dict[str, Any]]:
    return [*platform("gpu"), gpu_node("nvidia.com/gpu", count)]


def stored(activation: dict[str, Any], *, status: dict[str, Any] | None = None, **metadata: Any) -> dict[str, Any]:
    """`activation` as the API server holds it: a resourceVersion, the metadata given, the status given."""
    obj = {**activation, "metadata": {**activation["metadata"], "resourceVersion": "7", **metadata}}
    if status is not None:
        obj["status"] = status
    return obj


def planned_status(world: list[dict[str, Any]], activation: dict[str, Any]) -> dict[str, Any]:
    """The status the program writes for `activation` in `world`."""
    return status_of(plan_with(*world, activation), "ModelActivation", activation["metadata"]["name"])


def matches(selector: str, labels: dict[str, str]) -> bool:
    """Whether `labels` match a selector of `key=value` and `key` (exists) terms, as the API server reads it."""
    for term in selector.split(","):
        key, _, value = term.partition("=")
        if key not in labels or (value and labels[key] != value):
            return False
    return True


# Who is held ---------------------------------------------------------------------------------


def test_a_realtime_activation_is_held_from_its_spec_before_the_program_ran():
    assert next_step(stored(realtime_model("omni")), TARGETS) is Step.HOLD


def test_an_activation_the_program_runs_as_freetoken_is_held_from_the_status_the_program_writes():
    activation = freetoken_model("ft")
    status = planned_status(gpu_world(), activation)

    assert not has_direct_runtime(stored(activation))
    assert next_step(stored(activation, status=status), TARGETS) is Step.HOLD


def test_an_activation_kubeai_serves_is_never_held():
    activation = local_model("chat")
    status = planned_status(platform(), activation)

    assert next_step(stored(activation, status=status), TARGETS) is Step.NONE


def test_an_activation_whose_runtime_runs_where_the_trigger_does_not_clean_up_is_not_held():
    activation = realtime_model("omni")
    activation["spec"]["targetNamespace"] = "elsewhere"

    assert next_step(stored(activation), TARGETS) is Step.NONE


def test_an_activation_held_already_asks_for_nothing_more():
    assert next_step(stored(realtime_model("omni"), finalizers=[RUNTIME_CLEANUP_FINALIZER]), TARGETS) is Step.NONE


# Deletion ------------------------------------------------------------------------------------


def test_a_deleted_activation_the_trigger_holds_asks_for_its_runtime_to_be_cleaned_up():
    deleted = stored(
        realtime_model("omni"), finalizers=[RUNTIME_CLEANUP_FINALIZER], deletionTimestamp="2026-01-01T00:00:00Z"
    )

    assert next_step(deleted, TARGETS) is Step.CLEAN_UP


def test_a_deleted_activation_the_trigger_does_not_hold_is_left_alone():
    deleted = stored(realtime_model("omni"), finalizers=["example.com/other"], deletionTimestamp="2026-01-01T00:00:00Z")

    assert next_step(deleted, TARGETS) is Step.NONE


def test_the_finalizer_patch_keeps_every_other_finalizer_and_names_the_version_it_was_computed_from():
    held = stored(
        realtime_model("omni"), finalizers=["example.com/first", RUNTIME_CLEANUP_FINALIZER, "example.com/last"]
    )

    assert finalizers_patch(held, without_finalizer(held)) == {
        "metadata": {"resourceVersion": "7", "finalizers": ["example.com/first", "example.com/last"]}
    }
    assert with_finalizer(stored(realtime_model("omni"), finalizers=["example.com/first"])) == [
        "example.com/first",
        RUNTIME_CLEANUP_FINALIZER,
    ]


# What is cleaned up --------------------------------------------------------------------------


def planned_labels(world: list[dict[str, Any]], activation: dict[str, Any]) -> list[dict[str, str]]:
    runtime = runtime_of(plan_with(*world, activation), activation["metadata"]["name"])
    assert runtime is not None
    return [thaw(obj.body["metadata"]["labels"]) for obj in runtime.objects]


def test_the_selector_finds_every_object_the_program_plans_for_a_realtime_runtime():
    labels = planned_labels(gpu_world(), realtime_model("omni"))

    assert len(labels) == 3
    assert all(matches(runtime_selector("omni"), each) for each in labels)


def test_the_selector_finds_every_object_the_program_plans_for_a_freetoken_runtime():
    labels = planned_labels(gpu_world(), freetoken_model("ft"))

    assert len(labels) == 2
    assert all(matches(runtime_selector("ft"), each) for each in labels)


def test_the_selector_of_a_name_longer_than_a_label_value_finds_its_runtime_and_not_a_neighbours():
    long_name = "omni-" + "x" * 70
    labels = planned_labels(gpu_world(), realtime_model(long_name))
    neighbour = planned_labels(gpu_world(), realtime_model(long_name + "y"))

    assert all(matches(runtime_selector(long_name), each) for each in labels)
    assert not any(matches(runtime_selector(long_name), each) for each in neighbour)


def test_the_selector_never_finds_the_kubeai_model_of_an_activation_of_the_same_name():
    result = plan_with(*platform(), local_model("chat"))
    (model,) = [thaw(m.body) for m in result.models.models]

    assert not matches(runtime_selector("chat"), model["metadata"]["labels"])


def test_the_cleanup_acts_in_the_namespaces_whose_direct_runtimes_the_trigger_watches():
    targets = watch_targets(
        system_namespace="ai-system", target_namespaces=("ai", "lab"), gateway_namespace="ai-system"
    )

    assert runtime_namespaces(targets) == ("ai", "lab")
