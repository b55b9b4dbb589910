"""Services are not the program: import-linter reports a service importing the program's layers.

Runs import-linter with the project's configuration on a copy of the packages plus one
offending module in `services` (tests.test_layering builds the copy).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_layering import REPO_ROOT, contract, lint_imports, project_copy_with_probe

SERVICES_CONTRACT = (
    "Services are not the program: services import neither planning, components, program, cli nor pulumi"
)


def _flat(output: str) -> str:
    """import-linter wraps long contract names; compare with whitespace collapsed."""
    return " ".join(output.split())


def test_the_services_contract_forbids_the_program_layers_and_pulumi_directly_and_indirectly() -> None:
    found = contract(SERVICES_CONTRACT)
    assert found["type"] == "forbidden"
    assert found["source_modules"] == ["services"]
    assert {"planning", "components", "program", "cli", "pulumi", "pulumi_kubernetes"} <= set(
        found["forbidden_modules"]
    )
    assert found["allow_indirect_imports"] is False


def test_the_services_keep_the_contract() -> None:
    result = lint_imports(REPO_ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{SERVICES_CONTRACT} KEPT" in _flat(result.stdout)


@pytest.mark.parametrize("imported", ["planning", "components", "program", "cli", "pulumi", "pulumi_kubernetes"])
def test_a_service_importing_the_program_or_pulumi_breaks_the_contract(tmp_path: Path, imported: str) -> None:
    result = lint_imports(project_copy_with_probe(tmp_path, "services", imported))
    assert result.returncode != 0, result.stdout
    assert f"{SERVICES_CONTRACT} BROKEN" in _flat(result.stdout)
    assert "services._layering_probe -> " + imported in result.stdout


def test_a_service_may_import_api(tmp_path: Path) -> None:
    result = lint_imports(project_copy_with_probe(tmp_path, "services", "api"))
    assert result.returncode == 0, result.stdout + result.stderr
