"""Rendered file names fit 255 bytes; a longer one keeps its start and ends in a stable hash."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from cli.files import MAX_FILE_NAME_BYTES, file_order, fit_file_name


def test_a_name_that_fits_is_kept_as_is():
    assert fit_file_name("configmap.ai-system.x") == "configmap.ai-system.x.yaml"


def test_a_name_over_255_bytes_is_cut_and_suffixed_with_the_sha256_of_the_full_name():
    stem = "modelactivation.ai-system." + "a" * 253
    fitted = fit_file_name(stem)
    digest = hashlib.sha256(f"{stem}.yaml".encode()).hexdigest()[:10]
    assert len(fitted.encode()) == MAX_FILE_NAME_BYTES
    assert fitted == stem[: MAX_FILE_NAME_BYTES - 16] + f"-{digest}.yaml"


def test_two_long_names_sharing_their_start_get_different_files():
    start = "status.ai-system." + "x" * 250
    assert fit_file_name(start + "one") != fit_file_name(start + "two")


def test_a_multibyte_name_is_never_cut_inside_a_character():
    fitted = fit_file_name("é" * 200)
    assert len(fitted.encode()) <= MAX_FILE_NAME_BYTES
    assert fitted.encode().decode() == fitted


@given(st.text(min_size=1, max_size=400))
def test_every_fitted_name_fits_ends_in_yaml_and_is_stable(stem):
    fitted = fit_file_name(stem)
    assert len(fitted.encode()) <= MAX_FILE_NAME_BYTES
    assert fitted.endswith(".yaml")
    assert fitted == fit_file_name(stem)


def test_render_order_is_resources_then_status_then_dynamic_each_by_name():
    paths = ["dynamic/a.yaml", "status/b.yaml", "resources/z.yaml", "status/a.yaml", "resources/a.yaml"]
    assert sorted(paths, key=file_order) == [
        "resources/a.yaml",
        "resources/z.yaml",
        "status/a.yaml",
        "status/b.yaml",
        "dynamic/a.yaml",
    ]
