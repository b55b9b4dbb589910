"""Normalisation of the module keys users write."""

from __future__ import annotations

import re

_LOWER_TO_UPPER = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_ACRONYM_TO_WORD = re.compile(r"(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[-_\s]+")


def normalise_key(key: str) -> str:
    """The kebab-case form of a user key. Pure.

    camelCase and PascalCase words are split (``modelCatalog`` and ``ModelCatalog`` give
    ``model-catalog``), ``_`` counts as ``-``, case is ignored and repeated or surrounding
    separators collapse, so a canonical module name normalises to itself.
    """
    split = _ACRONYM_TO_WORD.sub("-", _LOWER_TO_UPPER.sub("-", key.strip()))
    return _SEPARATORS.sub("-", split).strip("-").lower()
