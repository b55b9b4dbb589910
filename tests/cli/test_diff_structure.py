"""`magicstick diff`: the JSON inside a ConfigMap compared key by key; an added object's content on request."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from cli.diff import RenderTree, compare
from cli.main import EXIT_FINDING, main

CATALOG = "resources/configmap.ai-system.magicstick-model-catalog.yaml"
VALUES = {
    "proxy_config": {
        "model_list": [
            {
                "model_name": "qwen",
                "litellm_params": {"api_base": "http://kubeai.ai.svc.cluster.local/openai/v1", "model": "openai/qwen"},
            },
            {
                "model_name": "gpt",
                "litellm_params": {"api_base": "https://api.example.com/v1", "model": "openai/gpt-4o-mini"},
            },
        ]
    }
}


def _config_map(values: dict, models: list[str]) -> str:
    document = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "magicstick-model-catalog", "namespace": "ai-system"},
        "data": {
            "models.json": json.dumps(models, separators=(",", ":")),
            "values.json": json.dumps(values, separators=(",", ":")),
        },
    }
    return yaml.safe_dump(document, sort_keys=True)


def _changed_values() -> dict:
    changed = json.loads(json.dumps(VALUES))
    changed["proxy_config"]["model_list"][1]["litellm_params"]["api_base"] = "https://llm.example.com/v1"
    return changed


def _report(old: str, new: str) -> list[str]:
    return list(compare(RenderTree(files={CATALOG: old}), RenderTree(files={CATALOG: new})).lines())


def _changes(report: list[str]) -> list[str]:
    """The removed and added lines of a report, each as its sign and its text without indentation."""
    return [line[0] + line[1:].strip() for line in report if line[:1] in "+-" and not line.startswith(("---", "+++"))]


def test_a_changed_json_value_in_a_config_map_shows_as_the_one_key_that_changed():
    report = _report(_config_map(VALUES, ["gpt", "qwen"]), _config_map(_changed_values(), ["gpt", "qwen"]))
    assert _changes(report) == [
        '-"api_base": "https://api.example.com/v1",',
        '+"api_base": "https://llm.example.com/v1",',
    ]


def test_an_added_entry_of_a_json_list_shows_as_one_added_line():
    report = _report(_config_map(VALUES, ["gpt"]), _config_map(VALUES, ["gpt", "qwen"]))
    assert _changes(report) == ['-"gpt"', '+"gpt",', '+"qwen"']


def test_no_line_of_the_diff_holds_a_whole_json_document():
    report = _report(_config_map(VALUES, ["gpt"]), _config_map(_changed_values(), ["gpt"]))
    assert all(len(line) < 120 for line in report)


def test_a_file_that_is_not_yaml_is_diffed_as_text():
    report = _report("a: [unclosed\n", "a: [still unclosed\n")
    assert "-a: [unclosed\n" in report and "+a: [still unclosed\n" in report


def _render_tree(root: Path, files: dict[str, str]) -> Path:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def test_show_added_prints_the_content_of_an_added_object(tmp_path, capsys):
    old = _render_tree(tmp_path / "old", {"resources/namespace.ai-system.yaml": "kind: Namespace\n"})
    new = _render_tree(
        tmp_path / "new",
        {"resources/namespace.ai-system.yaml": "kind: Namespace\n", CATALOG: _config_map(VALUES, ["gpt"])},
    )
    assert main(["diff", str(old), str(new), "--show-added"]) == EXIT_FINDING
    out = capsys.readouterr().out
    assert f"added: {CATALOG}\n--- /dev/null\n+++ new/{CATALOG}\n@@ -0,0 +1," in out
    content = out.split("\n@@ ", 1)[1].splitlines()[1:-1]
    assert all(line.startswith("+") for line in content)
    assert '+"model_name": "qwen"' in _changes(content)
    assert "+kind: ConfigMap" in content
    assert out.endswith("1 added, 0 removed, 0 changed\n")


def test_without_show_added_an_added_object_is_only_named(tmp_path, capsys):
    old = _render_tree(tmp_path / "old", {"resources/namespace.ai-system.yaml": "kind: Namespace\n"})
    new = _render_tree(
        tmp_path / "new",
        {"resources/namespace.ai-system.yaml": "kind: Namespace\n", CATALOG: _config_map(VALUES, ["gpt"])},
    )
    assert main(["diff", str(old), str(new)]) == EXIT_FINDING
    assert capsys.readouterr().out == f"added: {CATALOG}\n1 added, 0 removed, 0 changed\n"
