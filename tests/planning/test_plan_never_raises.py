"""Invariant 5: one bad object never fails the run.

Whatever a runtime custom resource holds (a spec the API would refuse, a status someone edited
by hand, a valid spec nobody tried yet), planning gives it a status and plans every other
object; it never raises. The property test mutates the demo snapshot's runtime objects at
random and plans the result.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planning.plan import plan
from planning.snapshot import Snapshot
from tests.planning.builders import CATALOGS, NOW, appliance, external_model, plan_of, ready_modules, runtime, status_of
from tests.planning.worlds import world_after

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo" / "snapshot.yaml"
RUNTIME_KINDS = ("Appliance", "ModuleActivation", "ModelActivation", "AppInstance", "HostOperation")


def keyless(name: str) -> dict:
    """An external model of a local OpenAI-compatible endpoint: no API key, so no Secret."""
    model = external_model(name)
    del model["spec"]["external"]["apiKeySecretRef"]
    return model


def test_an_external_model_without_an_api_key_is_listed_without_a_key_reference():
    result = plan_of(appliance(), keyless("local-endpoint"), *ready_modules("litellm", "model-catalog"))
    (entry,) = json.loads(result.models.external_models.body["data"]["models.json"])
    assert entry["id"] == "local-endpoint"
    assert "apiKeySecretRef" not in entry
    assert status_of(result, "ModelActivation", "local-endpoint")["phase"] != "Failed"


def test_an_external_model_without_an_api_key_leaves_every_other_object_planned():
    others = (appliance(), external_model("with-key"), *ready_modules("litellm", "model-catalog"))
    result = plan_of(*others, keyless("local-endpoint"))
    assert {o.identity for o in plan_of(*others).objects} <= {o.identity for o in result.objects}
    ids = [e["id"] for e in json.loads(result.models.external_models.body["data"]["models.json"])]
    assert ids == ["local-endpoint", "with-key"]


# Random mutations of the demo's runtime objects.

RECORDS = {
    # Status fields the plan reads back, so that the mutations reach them too.
    "podCreation": {"since": "2026-01-01T11:00:00Z", "revision": "r1"},
    "podRecovery": {
        "revision": "r1",
        "attempts": 2,
        "lastAttemptTime": "2026-01-01T11:00:00Z",
        "podUID": "pod-uid",
        "failure": {"phase": "Failed", "reason": "Error", "message": "exit 1"},
    },
    "memoryUsage": {
        "ramMi": 1,
        "vramMi": 0,
        "totalMi": 1,
        "source": "ollama /api/ps",
        "replicas": 1,
        "sampledAt": "2026-01-01T11:00:00Z",
    },
}


def _demo_applied() -> list[dict]:
    """The demo after one run (its objects, what the run declared, every status written), with a
    finished clear-model-cache HostOperation and the model status records the plan reads back."""
    demo = [o for o in yaml.safe_load_all(DEMO.read_text()) if o]
    demo.append(
        runtime(
            "HostOperation",
            "clear-cache",
            {"action": "clear-model-cache", "planId": "plan-1"},
            status={"phase": "Succeeded"},
        )
    )
    applied = list(world_after(plan(snapshot=Snapshot.from_objects(demo), catalogs=CATALOGS, now=NOW), demo))
    for obj in applied:
        if obj.get("kind") == "ModelActivation":
            obj.setdefault("status", {}).update(copy.deepcopy(RECORDS))
    return applied


DEMO_OBJECTS: list[dict] = _demo_applied()
RUNTIME_INDEXES = [i for i, o in enumerate(DEMO_OBJECTS) if o.get("kind") in RUNTIME_KINDS]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(
        [
            "",
            "x",
            "cpu",
            "nvidia-gpu",
            "amd-gpu",
            "intel-gpu",
            "VLLM",
            "OLlama",
            "FreeToken",
            "local",
            "external",
            "litellm",
            "gpu",
            "openclaw",
            "paperclip",
            "auto",
            "fp8",
            "none",
            "sso",
            "local",
        ]
    ),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=6,
)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a mapping entry or list item below `value`."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append((*prefix, key))
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.append((*prefix, index))
            found += _paths(item, (*prefix, index))
    return found


@st.composite
def mutation(draw) -> tuple[int, str, tuple, str, Any]:
    index = draw(st.sampled_from(RUNTIME_INDEXES))
    part = draw(st.sampled_from(["spec", "status"]))
    body = DEMO_OBJECTS[index].get(part) or {}
    paths = _paths(body)
    path = draw(st.sampled_from(paths)) if paths and draw(st.integers(0, 9)) else ()
    action = draw(st.sampled_from(["set", "delete", "delete", "add"]))
    return index, part, path, action, draw(values)


def _apply(objects: list[dict], change: tuple[int, str, tuple, str, Any]) -> None:
    index, part, path, action, value = change
    obj = objects[index]
    if not path:
        obj[part] = value if action == "set" else {"x": value}
        return
    parent = obj.setdefault(part, {})
    for key in path[:-1]:
        parent = parent[key]
    leaf = path[-1]
    if action == "delete":
        del parent[leaf]
    elif action == "add" and isinstance(parent[leaf], dict):
        parent[leaf]["extra"] = value
    else:
        parent[leaf] = value


def _mutated(changes: list) -> list[dict]:
    objects = copy.deepcopy(DEMO_OBJECTS)
    for change in changes:
        try:
            _apply(objects, change)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed or replaced this path
    return objects


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(mutation(), min_size=1, max_size=4))
def test_planning_the_demo_with_any_runtime_object_mutated_never_raises(changes):
    objects = _mutated(changes)
    for obj in objects:
        if obj.get("kind") in RUNTIME_KINDS and not isinstance(obj.get("spec"), (dict, type(None))):
            obj["spec"] = {"replaced": obj["spec"]}  # the reader refuses a spec that is not a mapping
        if obj.get("kind") in RUNTIME_KINDS and not isinstance(obj.get("status"), (dict, type(None))):
            obj["status"] = {"replaced": obj["status"]}
    result = plan(snapshot=Snapshot.from_objects(objects), catalogs=CATALOGS, now=NOW)
    assert result.statuses


def test_the_demo_itself_plans_every_runtime_object():
    result = plan(snapshot=Snapshot.from_objects(DEMO_OBJECTS), catalogs=CATALOGS, now=NOW)
    planned = {(s.kind, s.name) for s in result.statuses}
    expected = {
        (o["kind"], o["metadata"]["name"])
        for o in map(DEMO_OBJECTS.__getitem__, RUNTIME_INDEXES)
        if o["kind"] != "HostOperation"
    }
    assert planned == expected
