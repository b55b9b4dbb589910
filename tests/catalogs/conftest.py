from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from catalogs import CatalogError, load_catalogs
from tests.catalogs.edits import Document, shipped_document

Override = Callable[[str, Callable[[Document], object]], Path]
LoadError = Callable[[Path], CatalogError]


@pytest.fixture
def override(tmp_path: Path) -> Override:
    """Write a user copy of one shipped catalog file, changed by ``change``; return the directory."""

    def write(file_name: str, change: Callable[[Document], object]) -> Path:
        document = shipped_document(file_name)
        change(document)
        (tmp_path / file_name).write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        return tmp_path

    return write


@pytest.fixture
def load_error() -> LoadError:
    """The CatalogError raised when loading the catalogs of a directory."""

    def load(directory: Path) -> CatalogError:
        with pytest.raises(CatalogError) as caught:
            load_catalogs(directory)
        return caught.value

    return load
