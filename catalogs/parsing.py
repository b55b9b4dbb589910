"""Turning one YAML mapping into a typed catalog, with errors that name entry and field."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_core import ErrorDetails

from catalogs.errors import DOCUMENT, CatalogError

ModelT = TypeVar("ModelT", bound=BaseModel)

_SNAKE_CASE = re.compile(r"^[a-z]+(_[a-z0-9]+)+$")

_MESSAGES = {
    "extra_forbidden": "unknown field",
    "missing": "required field is missing",
}


def entry_label(document: Mapping[str, Any], section: str, index: int) -> str:
    """How an entry is named in errors: its ``name`` or ``id``, else ``<section>[<index>]``."""
    items = document.get(section)
    if isinstance(items, Sequence) and not isinstance(items, str) and 0 <= index < len(items):
        item = items[index]
        if isinstance(item, Mapping):
            for key in ("name", "id"):
                label = item.get(key)
                if isinstance(label, str) and label:
                    return label
    return f"{section}[{index}]"


def field_path(loc: Sequence[str | int]) -> str:
    """A location inside an entry as YAML reads: ``variants[1].defaultArtifact``."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
            continue
        name = to_camel(part) if _SNAKE_CASE.match(part) else part
        path += f".{name}" if path else name
    return path or "(entry)"


def _message(error: ErrorDetails) -> str:
    if error["type"] in _MESSAGES:
        return _MESSAGES[error["type"]]
    return error["msg"].removeprefix("Value error, ")


def _catalog_error(error: ErrorDetails, document: Mapping[str, Any], file: str, more: int) -> CatalogError:
    loc = error["loc"]
    message = _message(error) + (f" (and {more} more problem(s) in this file)" if more else "")
    if len(loc) >= 2 and isinstance(loc[0], str) and isinstance(loc[1], int):
        return CatalogError(
            file=file, entry=entry_label(document, loc[0], loc[1]), field=field_path(loc[2:]), message=message
        )
    return CatalogError(file=file, entry=DOCUMENT, field=field_path(loc), message=message)


def parse_catalog(model: type[ModelT], document: Mapping[str, Any], *, file: str) -> ModelT:
    """``document`` validated as ``model``; the first problem raises :class:`CatalogError`."""
    try:
        return model.model_validate(document)
    except ValidationError as error:
        errors = error.errors(include_url=False)
        raise _catalog_error(errors[0], document, file, len(errors) - 1) from error
