"""One catalog read from text (a ConfigMap's key) as a file would be, errors naming the given source."""

from __future__ import annotations

import pytest

from catalogs import CATALOG_FILES, CatalogError, load_catalogs, parse_catalog_text
from catalogs.loader import shipped_directory

SOURCE = "ConfigMap ai-system/magicstick-module-catalog key modules.yaml"


@pytest.mark.parametrize("attribute", list(CATALOG_FILES))
def test_the_text_of_a_shipped_file_parses_to_the_catalog_the_file_loads_to(attribute):
    file_name, _ = CATALOG_FILES[attribute]
    text = shipped_directory().joinpath(file_name).read_text(encoding="utf-8")

    assert parse_catalog_text(attribute, text, file=SOURCE) == getattr(load_catalogs(), attribute)


@pytest.mark.parametrize(
    ("text", "entry", "field", "message"),
    [
        ("modules: [\n", "(document)", "line 2, column 1", "invalid YAML: expected the node content"),
        ("modules: []\nmodules: []\n", "(document)", "line 2, column 1", "invalid YAML: duplicate key 'modules'"),
        ("a: 1\n---\nb: 2\n", "(document)", "(root)", "expected one YAML document, found 2"),
        ("- basis\n", "(document)", "(root)", "expected a mapping, found list"),
        (
            "modules:\n  - name: basis\n    displayName: Basis\n    description: x\n    path: ./x\n"
            "    kustomization: platform-basis\n    colour: red\n",
            "basis",
            "colour",
            "unknown field",
        ),
    ],
    ids=["yaml", "duplicate key", "two documents", "not a mapping", "schema"],
)
def test_a_problem_in_the_text_is_a_catalog_error_naming_the_source_entry_and_field(text, entry, field, message):
    with pytest.raises(CatalogError) as raised:
        parse_catalog_text("modules", text, file=SOURCE)

    error = raised.value
    assert (error.file, error.entry, error.field) == (SOURCE, entry, field)
    assert error.message.startswith(message)


def test_rules_across_catalogs_are_not_checked_from_text_alone():
    text = "modules:\n  - name: basis\n    displayName: Basis\n    description: x\n    path: ./x\n    kustomization: platform-basis\n    dependsOn: [nowhere]\n"

    assert parse_catalog_text("modules", text, file=SOURCE).get("basis").depends_on == ("nowhere",)
