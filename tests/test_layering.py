"""The import layering of docs/architecture.md holds, and import-linter notices when it is broken.

The contracts live in pyproject.toml under [tool.importlinter]: the pure core (api,
catalogs, planning) never imports pulumi, pulumi_kubernetes or httpx, and the layers run
cli > program > components | providers > planning > catalogs > api, with components and
providers independent of each other. Each violation test runs import-linter with the
project's own configuration on a temporary copy of the packages plus one offending module,
so a contract that checks nothing would fail here.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
FORBIDDEN_CONTRACT = "The pure core never imports Pulumi or an HTTP client"
LAYERS_CONTRACT = "Layers: program wires components, components map plans, planning is pure"
PROBE = "_layering_probe"


def importlinter_config() -> dict[str, Any]:
    with (REPO_ROOT / "pyproject.toml").open("rb") as stream:
        config: dict[str, Any] = tomllib.load(stream)["tool"]["importlinter"]
    return config


def contract(name: str) -> dict[str, Any]:
    contracts: list[dict[str, Any]] = importlinter_config()["contracts"]
    [found] = [entry for entry in contracts if entry["name"] == name]
    return found


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """Run lint-imports from `root`, which import-linter puts first on sys.path."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(root / "pyproject.toml")],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def project_copy_with_probe(destination: Path, package: str, imported: str) -> Path:
    """The root packages and pyproject.toml, plus `package._layering_probe` importing `imported`."""
    shutil.copy2(REPO_ROOT / "pyproject.toml", destination / "pyproject.toml")
    for root_package in importlinter_config()["root_packages"]:
        shutil.copytree(
            REPO_ROOT / root_package,
            destination / root_package,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    (destination / package / f"{PROBE}.py").write_text(f"import {imported}\n", encoding="utf-8")
    return destination


def test_the_contracts_encode_the_pure_core_and_the_layers_of_the_design() -> None:
    config = importlinter_config()
    forbidden = contract(FORBIDDEN_CONTRACT)
    layers = contract(LAYERS_CONTRACT)
    assert config["include_external_packages"] is True
    assert forbidden["type"] == "forbidden"
    assert set(forbidden["source_modules"]) == {"api", "catalogs", "planning"}
    assert {"pulumi", "pulumi_kubernetes", "httpx"} <= set(forbidden["forbidden_modules"])
    assert forbidden.get("allow_indirect_imports") is False
    assert layers["type"] == "layers"
    assert layers["layers"] == [
        "cli",
        "program",
        "components | providers",
        "planning",
        "catalogs",
        "api",
    ]


def test_the_project_keeps_its_import_contracts() -> None:
    result = lint_imports(REPO_ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{FORBIDDEN_CONTRACT} KEPT" in result.stdout
    assert f"{LAYERS_CONTRACT} KEPT" in result.stdout


@pytest.mark.parametrize(
    ("package", "imported"),
    [("api", "pulumi"), ("catalogs", "httpx"), ("planning", "pulumi_kubernetes")],
)
def test_the_forbidden_contract_reports_a_pure_core_module_importing_an_outside_world_library(
    tmp_path: Path, package: str, imported: str
) -> None:
    result = lint_imports(project_copy_with_probe(tmp_path, package, imported))
    assert result.returncode != 0, result.stdout
    assert f"{FORBIDDEN_CONTRACT} BROKEN" in result.stdout
    assert f"{LAYERS_CONTRACT} KEPT" in result.stdout
    assert f"{package}.{PROBE} -> {imported}" in result.stdout


@pytest.mark.parametrize(
    ("package", "imported"),
    [
        ("api", "planning"),
        ("catalogs", "planning"),
        ("planning", "components"),
        ("components", "providers"),
        ("providers", "program"),
        ("program", "cli"),
    ],
)
def test_the_layers_contract_reports_a_lower_layer_importing_a_higher_or_sibling_one(
    tmp_path: Path, package: str, imported: str
) -> None:
    result = lint_imports(project_copy_with_probe(tmp_path, package, imported))
    assert result.returncode != 0, result.stdout
    assert f"{LAYERS_CONTRACT} BROKEN" in result.stdout
    assert f"{FORBIDDEN_CONTRACT} KEPT" in result.stdout
    assert f"{package}.{PROBE} -> {imported}" in result.stdout


def test_a_higher_layer_may_import_a_lower_one(tmp_path: Path) -> None:
    result = lint_imports(project_copy_with_probe(tmp_path, "program", "api"))
    assert result.returncode == 0, result.stdout + result.stderr
