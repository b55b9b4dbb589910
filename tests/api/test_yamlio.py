"""YAML through libyaml when there is one, with the pure-Python classes as fallback."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import yaml

from api import yamlio

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo" / "snapshot.yaml"


def test_the_fast_loader_reads_the_demo_snapshot_as_the_pure_loader_does():
    text = DEMO.read_text(encoding="utf-8")
    assert yamlio.safe_load_all(text) == list(yaml.safe_load_all(text))


def test_the_fast_dumper_writes_the_text_the_pure_dumper_writes():
    documents = yamlio.safe_load_all(DEMO.read_text(encoding="utf-8"))
    for document in documents:
        fast = yamlio.safe_dump(document, sort_keys=True, default_flow_style=False)
        assert fast == yaml.dump(document, Dumper=yamlio.PureSafeDumper, sort_keys=True, default_flow_style=False)


def test_a_long_multi_line_string_is_written_alike_by_both_dumpers_and_read_back_unchanged():
    document = {
        "data": {"system.yaml": "modelServers:\n  VLLM:\n    images:\n      amd-gpu: " + "r" * 90 + "\n", "one": "line"}
    }
    fast = yamlio.safe_dump(document, sort_keys=True)
    assert fast == yaml.dump(document, Dumper=yamlio.PureSafeDumper, sort_keys=True)
    assert "system.yaml: |" in fast
    assert yamlio.safe_load(fast) == document


def test_text_the_fast_loader_refuses_raises_the_pure_loaders_error_with_its_words_and_position():
    with pytest.raises(yaml.YAMLError) as pure:
        yaml.safe_load("modules: [\n")
    with pytest.raises(yaml.YAMLError) as fast:
        yamlio.safe_load("modules: [\n")
    assert (fast.value.problem, fast.value.problem_mark.line) == (pure.value.problem, pure.value.problem_mark.line)


def test_without_libyaml_the_pure_classes_are_used(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(yaml, "__with_libyaml__", False)
    try:
        fallback = importlib.reload(yamlio)
        assert (fallback.SafeLoader, fallback.SafeDumper) == (yaml.SafeLoader, fallback.PureSafeDumper)
        assert fallback.safe_load("a: 1\n") == {"a": 1}
    finally:
        monkeypatch.undo()
        importlib.reload(yamlio)


def test_this_environment_has_libyaml():
    assert yamlio.WITH_LIBYAML and yamlio.SafeLoader is yaml.CSafeLoader
