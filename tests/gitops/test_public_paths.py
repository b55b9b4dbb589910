"""The public paths an external GitOps repository imports, and the documents that go with them.

Overlays import module bases by path (`.../magic-cluster/apps/ai/litellm/base`); operators that
run app instances sit under `magic-cluster/platform/ai/`. Every substitution variable the tree
reads is documented in `magic-cluster/configuration.md`, and the checklist a maintainer runs
before publishing is `magic-cluster/public-release-checklist.md`.
"""

from __future__ import annotations

import re

import pytest

from tests.gitops.tree import REPOSITORY, build, in_repository, module_entries, variables

TREE = REPOSITORY / "magic-cluster"
CONFIGURATION = TREE / "configuration.md"
CHECKLIST = TREE / "public-release-checklist.md"
OPERATORS = tuple(entry for entry in module_entries() if entry.kustomization.startswith("operator-"))
IMPORTED_BASES = ("magic-cluster/apps/ai/litellm/base", "magic-cluster/platform/basis")


@pytest.mark.parametrize("path", IMPORTED_BASES)
def test_a_base_an_overlay_imports_by_its_public_path_builds_with_kustomize(path):
    assert build(path), f"{path} builds to nothing"


def test_an_external_overlay_that_includes_this_tree_builds_from_the_public_base_paths(tmp_path):
    checkout = tmp_path / "deployment"
    (checkout / "vendor").mkdir(parents=True)
    (checkout / "vendor" / "magicstick").symlink_to(REPOSITORY, target_is_directory=True)
    overlay = checkout / "overlays" / "ai"
    overlay.mkdir(parents=True)
    resources = "".join(f"  - ../../vendor/magicstick/{path}\n" for path in IMPORTED_BASES)
    (overlay / "kustomization.yaml").write_text(
        f"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n{resources}", encoding="utf-8"
    )
    names = {(o["kind"], o["metadata"]["name"]) for o in build(overlay)}
    assert {("HelmRelease", "litellm"), ("HelmRelease", "envoy-gateway")} <= names


@pytest.mark.parametrize("entry", OPERATORS, ids=lambda e: e.name)
def test_every_operator_module_sits_under_platform_ai_and_builds(entry):
    assert entry.path.startswith("./magic-cluster/platform/ai/"), entry.path
    assert build(in_repository(entry.path)), entry.path


def test_the_litellm_module_applies_the_public_litellm_base():
    (litellm,) = [e for e in module_entries() if e.name == "litellm"]
    assert litellm.path == "./magic-cluster/apps/ai/litellm/base"


def _used_variables() -> dict[str, list[str]]:
    used: dict[str, list[str]] = {}
    for path in sorted(TREE.rglob("*")):
        if path.is_file() and path.suffix in {".yaml", ".yml", ".json", ".tpl"}:
            for match in variables(path.read_text(encoding="utf-8")):
                used.setdefault(match["name"], []).append(str(path.relative_to(REPOSITORY)))
    return used


def _documented_variables() -> set[str]:
    return set(
        re.findall(r"^\|\s*`([A-Za-z_][A-Za-z0-9_]*)`\s*\|", CONFIGURATION.read_text(encoding="utf-8"), re.MULTILINE)
    )


def test_every_variable_the_tree_reads_is_documented_in_the_configuration_reference():
    missing = {name: files for name, files in _used_variables().items() if name not in _documented_variables()}
    assert missing == {}, "undocumented in magic-cluster/configuration.md"


def test_every_module_parameter_variable_is_documented_with_its_default():
    text = CONFIGURATION.read_text(encoding="utf-8")
    for entry in module_entries():
        for parameter in entry.parameters:
            if parameter.variable:
                row = next((line for line in text.splitlines() if line.startswith(f"| `{parameter.variable}`")), "")
                assert f"`{parameter.default}`" in row and f"`{parameter.name}`" in row, parameter.variable


def test_the_configuration_reference_documents_no_variable_the_tree_no_longer_reads():
    assert _documented_variables() - set(_used_variables()) == set()


@pytest.mark.parametrize("document", ["README.md", "magic-cluster/README.md"])
def test_the_readmes_link_the_configuration_reference_and_the_release_checklist(document):
    text = (REPOSITORY / document).read_text(encoding="utf-8")
    base = "" if document.startswith("magic-cluster/") else "magic-cluster/"
    assert f"]({base}configuration.md)" in text
    assert f"]({base}public-release-checklist.md)" in text


def test_the_release_checklist_covers_the_public_boundary():
    text = CHECKLIST.read_text(encoding="utf-8")
    items = [line for line in text.splitlines() if line.startswith("- [ ] ")]
    assert len(items) >= 5
    for words in ("example.com", "CHANGEME", "configuration.md", "token", "kubectl kustomize"):
        assert words in text, words
