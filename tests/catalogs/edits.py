"""Reading shipped catalog documents so a test can change one field and write a user copy."""

from __future__ import annotations

from typing import Any

import yaml

from catalogs.loader import shipped_directory

Document = dict[str, Any]


def shipped_document(file_name: str) -> Document:
    document: Document = yaml.safe_load(shipped_directory().joinpath(file_name).read_text(encoding="utf-8"))
    return document


def entry_named(document: Document, section: str, name: str) -> Document:
    return next(item for item in document[section] if item.get("name", item.get("id")) == name)


def variant_of(document: Document, preset: str, engine: str, compute_target: str) -> Document:
    return next(
        variant
        for variant in entry_named(document, "presets", preset)["variants"]
        if variant["engine"] == engine and variant["computeTarget"] == compute_target
    )
