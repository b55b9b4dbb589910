"""Generated Kustomizations outside the stack's state: adopted when planned, removed when not."""

from __future__ import annotations

from tests.planning.builders import CATALOGS, activation, appliance, kustomization_for, plan_of, ready_modules


def _with_uid(obj: dict, uid: str) -> dict:
    obj["metadata"]["uid"] = uid
    return obj


def test_a_generated_kustomization_of_a_disabled_module_is_removed_under_its_uid():
    leftover = _with_uid(kustomization_for("litellm"), "uid-litellm")
    result = plan_of(appliance(), activation("litellm", enabled=False), leftover)
    (stale,) = result.stale
    assert (stale.namespace, stale.name, stale.uid, stale.module) == (
        "flux-system",
        CATALOGS.modules.get("litellm").kustomization,
        "uid-litellm",
        "litellm",
    )
    assert stale.logical_name == f"stale/kustomization/flux-system/{stale.name}"


def test_a_generated_kustomization_without_any_activation_is_removed():
    leftover = _with_uid(kustomization_for("kubeai"), "uid-kubeai")
    assert [s.module for s in plan_of(appliance(), leftover).stale] == ["kubeai"]


def test_a_generated_kustomization_the_plan_wants_is_adopted_not_removed():
    observed = _with_uid(kustomization_for("basis"), "uid-basis")
    result = plan_of(appliance(), activation("basis"), observed)
    assert result.stale == ()
    assert [k.name for k in result.modules.kustomizations] == [CATALOGS.modules.get("basis").kustomization]


def test_the_kustomization_of_an_invalid_activation_is_kept_as_applied_not_removed():
    broken = activation("basis")
    broken["spec"]["enabled"] = "sometimes"
    observed = _with_uid(kustomization_for("basis"), "uid-basis")
    observed["metadata"]["labels"]["appliance.magicstick.dev/activation"] = "basis"
    result = plan_of(appliance(), broken, observed)
    assert result.stale == ()
    assert [k.name for k in result.modules.kustomizations] == [observed["metadata"]["name"]]


def test_a_kustomization_without_the_generated_labels_is_never_touched():
    foreign = _with_uid(kustomization_for("litellm", labels={"team": "platform"}), "uid-foreign")
    assert plan_of(appliance(), foreign).stale == ()


def test_a_kustomization_of_a_module_waiting_for_a_disabled_dependency_is_removed():
    leftover = _with_uid(kustomization_for("model-catalog"), "uid-catalog")
    result = plan_of(
        appliance(),
        activation("litellm", enabled=False),
        activation("model-catalog"),
        *ready_modules("basis"),
        leftover,
    )
    assert [s.module for s in result.stale] == ["model-catalog"]
