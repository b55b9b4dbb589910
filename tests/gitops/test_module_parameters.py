"""Module parameters in the bases: each declared variable is read by its module's base as a quoted,
defaulted substitution whose default is the catalog's, and a value Flux substitutes lands where the
parameter says."""

from __future__ import annotations

import pytest

from catalogs import ModuleEntry
from tests.gitops.tree import flux_build, in_repository, module_entries, of_kind, variables

SUBSTITUTED = [(entry, parameter) for entry in module_entries() for parameter in entry.parameters if parameter.variable]


def _id(case: tuple[ModuleEntry, object]) -> str:
    entry, parameter = case
    return f"{entry.name}.{parameter.name}"


def _source_text(entry: ModuleEntry) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(in_repository(entry.path).rglob("*.yaml")))


@pytest.mark.parametrize("case", SUBSTITUTED, ids=_id)
def test_a_declared_variable_is_read_by_its_base_quoted_with_the_catalog_default(case):
    entry, parameter = case
    assert f'"${{{parameter.variable}:={parameter.default}}}"' in _source_text(entry), (
        f"{entry.path} does not read {parameter.variable}"
    )


@pytest.mark.parametrize("entry", module_entries(), ids=lambda e: e.name)
def test_every_upper_case_variable_of_a_base_is_a_parameter_of_its_module(entry):
    declared = {p.variable for p in entry.parameters if p.variable}
    used = {m["name"] for m in variables(_source_text(entry)) if m["name"].isupper()}
    assert used <= declared, f"{entry.name}: {sorted(used - declared)} not declared in catalogs/modules.yaml"


def _litellm_values(settings: dict[str, str] | None) -> dict:
    (release,) = of_kind(flux_build(in_repository("./magic-cluster/apps/ai/litellm/base"), settings), "HelmRelease")
    return release["spec"]["values"]


@pytest.mark.parametrize(
    ("settings", "size"),
    [({"LITELLM_POSTGRES_STORAGE": "7Gi"}, "7Gi"), (None, "5Gi")],
    ids=["substituted", "default"],
)
def test_litellm_postgres_storage_sizes_the_database_volume(settings, size):
    assert _litellm_values(settings)["postgresql"]["primary"]["persistence"]["size"] == size
