"""Where catalogs are read from, and how unreadable files are reported."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from catalogs import CatalogError, load_catalogs
from catalogs.loader import CATALOG_FILES, shipped_directory
from tests.catalogs.edits import entry_named


def test_a_user_file_replaces_the_shipped_file_of_the_same_name(override):
    directory = override(
        "engines.yaml", lambda d: entry_named(d, "engines", "VLLM")["cpuDefaults"].update(requestMillicores=3000)
    )
    assert load_catalogs(directory).engines.get("VLLM").cpu_defaults.request_millicores == 3000


def test_catalogs_absent_from_the_user_directory_fall_back_to_the_shipped_files(override):
    directory = override("engines.yaml", lambda d: None)
    assert load_catalogs(directory).modules == load_catalogs().modules


def test_an_empty_user_directory_gives_the_shipped_catalogs(tmp_path):
    assert load_catalogs(tmp_path) == load_catalogs()


def test_a_user_directory_may_be_given_as_a_string(override):
    directory = override("presets.yaml", lambda d: d["presets"].pop())
    assert len(load_catalogs(str(directory)).presets.entries) == len(load_catalogs().presets.entries) - 1


def test_a_missing_user_directory_is_an_error_naming_it(tmp_path, load_error):
    missing = tmp_path / "nowhere"
    error = load_error(missing)
    assert str(error) == f"{missing}: (document): (directory): catalog directory does not exist"


def test_a_yaml_file_with_an_unknown_name_is_rejected_rather_than_ignored(tmp_path, load_error):
    (tmp_path / "module.yaml").write_text("modules: []\n")
    error = load_error(tmp_path)
    assert (error.file, error.field) == (str(tmp_path / "module.yaml"), "(file name)")
    assert "modules.yaml" in error.message


def test_hidden_and_non_yaml_files_in_the_user_directory_are_ignored(tmp_path):
    (tmp_path / ".data").write_text("ignored")
    (tmp_path / "README.md").write_text("ignored")
    assert load_catalogs(tmp_path) == load_catalogs()


def test_a_yaml_syntax_error_names_the_file_and_the_line(tmp_path, load_error):
    (tmp_path / "modules.yaml").write_text("modules:\n  - name: basis\n    keys: [base\n")
    error = load_error(tmp_path)
    assert error.file == str(tmp_path / "modules.yaml")
    assert error.field.startswith("line ")
    assert error.message.startswith("invalid YAML")


def test_a_document_that_is_not_a_mapping_is_rejected_with_the_file_name(tmp_path, load_error):
    (tmp_path / "engines.yaml").write_text("- name: VLLM\n")
    error = load_error(tmp_path)
    assert str(error) == f"{tmp_path / 'engines.yaml'}: (document): (root): expected a mapping, found list"


def test_an_empty_file_is_rejected_with_the_file_name(tmp_path, load_error):
    (tmp_path / "presets.yaml").write_text("# nothing here\n")
    error = load_error(tmp_path)
    assert str(error) == f"{tmp_path / 'presets.yaml'}: (document): (root): expected one YAML document, found 0"


def test_a_key_written_twice_in_one_mapping_is_rejected(tmp_path, load_error):
    (tmp_path / "applications.yaml").write_text(
        "commonModules: [litellm]\ncommonModules: [litellm]\napplications: []\n"
    )
    error = load_error(tmp_path)
    assert (error.field, error.message) == ("line 2, column 1", "invalid YAML: duplicate key 'commonModules'")


def test_an_unknown_top_level_field_is_rejected(override, load_error):
    error = load_error(override("modules.yaml", lambda d: d.update(extras=[])))
    assert (error.entry, error.field, error.message) == ("(document)", "extras", "unknown field")


def test_an_unknown_entry_field_is_rejected_naming_the_entry(override, load_error):
    error = load_error(override("modules.yaml", lambda d: entry_named(d, "modules", "kubeai").update(colour="blue")))
    assert (error.entry, error.field, error.message) == ("kubeai", "colour", "unknown field")


def test_a_missing_required_field_is_reported_on_its_entry(override, load_error):
    error = load_error(override("applications.yaml", lambda d: entry_named(d, "applications", "hermes").pop("chart")))
    assert (error.entry, error.field, error.message) == ("hermes", "chart", "required field is missing")


def test_an_entry_without_a_name_is_named_by_its_position(override, load_error):
    error = load_error(override("engines.yaml", lambda d: d["engines"][1].pop("name")))
    assert (error.entry, error.field) == ("engines[1]", "name")


def test_a_nested_field_is_named_by_its_yaml_path(override, load_error):
    def break_url(document):
        entry_named(document, "presets", "qwen3635b")["variants"][0]["artifacts"][1]["url"] = "s3://bucket/model"

    error = load_error(override("presets.yaml", break_url))
    assert (error.entry, error.field) == ("qwen3635b", "variants[0].artifacts[1].url")


def test_further_problems_in_the_same_file_are_counted_in_the_message(override, load_error):
    def two_unknown_fields(document):
        entry_named(document, "modules", "basis")["colour"] = "blue"
        entry_named(document, "modules", "gpu")["colour"] = "green"

    error = load_error(override("modules.yaml", two_unknown_fields))
    assert error.message == "unknown field (and 1 more problem(s) in this file)"


def test_the_error_string_names_file_entry_field_and_message_in_order():
    error = CatalogError(file="modules.yaml", entry="gpu", field="keys", message="broken")
    assert str(error) == "modules.yaml: gpu: keys: broken"


def test_a_catalog_error_survives_pickling():
    error = CatalogError(file="modules.yaml", entry="gpu", field="keys", message="broken")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.file, copy.entry, copy.field, copy.message) == ("modules.yaml", "gpu", "keys", "broken")


@pytest.mark.parametrize(
    "file_name",
    [
        "modules.yaml",
        "applications.yaml",
        "engines.yaml",
        "compute-targets.yaml",
        "presets.yaml",
        "gpu-compatibility.yaml",
    ],
)
def test_every_shipped_file_can_be_copied_unchanged_into_a_user_directory(override, file_name):
    assert load_catalogs(override(file_name, lambda d: None)) == load_catalogs()


def test_every_catalog_file_is_shipped_inside_the_package():
    assert all(shipped_directory().joinpath(name).is_file() for name, _ in CATALOG_FILES.values())


def test_without_a_user_directory_a_catalog_file_in_the_working_directory_is_ignored(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("modules.yaml").write_text("not: [a catalog\n")
    assert load_catalogs().modules.get("basis") is not None
