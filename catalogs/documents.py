"""Reading one catalog file (or its text) into a YAML mapping, or a CatalogError naming the file."""

from __future__ import annotations

from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml

from api import yamlio
from catalogs.errors import DOCUMENT, CatalogError

Source = Path | Traversable


class _StrictLoader(yaml.SafeLoader):
    """A safe loader that refuses a key written twice in one mapping."""


# A base chosen at import (libyaml's loader or the pure one), which mypy cannot take as a class.
class _FastStrictLoader(yamlio.SafeLoader):  # type: ignore[misc,valid-type]
    """_StrictLoader on libyaml's parser when there is one (api/yamlio.py)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key '{key}'", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


for _loader in (_StrictLoader, _FastStrictLoader):
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _position(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    if mark is None:
        return "(syntax)"
    return f"line {mark.line + 1}, column {mark.column + 1}"


def _problem(error: yaml.YAMLError) -> str:
    problem = getattr(error, "problem", None)
    return str(problem) if problem else str(error)


def read_document(source: Source) -> dict[str, Any]:
    """The top-level mapping of the YAML file ``source``.

    Unreadable files, YAML syntax errors, duplicate keys and documents that are not one
    mapping raise :class:`CatalogError` naming the file.
    """
    file = str(source)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CatalogError(file=file, entry=DOCUMENT, field="(file)", message=f"cannot be read: {error}") from error
    return parse_document(text, file=file)


def parse_document(text: str, *, file: str) -> dict[str, Any]:
    """The top-level mapping of the YAML ``text``; errors name it ``file``. Pure.

    YAML syntax errors, duplicate keys and documents that are not one mapping raise
    :class:`CatalogError`.
    """
    try:
        documents = yamlio.safe_load_all(text, loader=_FastStrictLoader, pure=_StrictLoader)
    except yaml.YAMLError as error:
        raise CatalogError(
            file=file, entry=DOCUMENT, field=_position(error), message=f"invalid YAML: {_problem(error)}"
        ) from error
    if len(documents) != 1:
        raise CatalogError(
            file=file, entry=DOCUMENT, field="(root)", message=f"expected one YAML document, found {len(documents)}"
        )
    document = documents[0]
    if not isinstance(document, dict):
        raise CatalogError(
            file=file, entry=DOCUMENT, field="(root)", message=f"expected a mapping, found {type(document).__name__}"
        )
    return document
