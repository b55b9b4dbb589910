"""How a rendered file reads in a diff (pure).

A ConfigMap the program writes may hold a whole JSON document under one key (the model
catalog's models.json and values.json, the runtime-profile store): in the file it is one long
line, so a change of one key would show as that line replaced. In a diff each such value is
shown pretty-printed, keys sorted, one key per line, as a YAML block; a file that is no
ConfigMap, or not YAML, is shown as it is.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from api import yamlio

_INDENT = 2


# A base chosen at import (libyaml's dumper or the pure one), which mypy cannot take as a class.
class _BlockDumper(yamlio.SafeDumper):  # type: ignore[misc, valid-type]
    """Writes a string that spans lines as a literal block (`|`), so each line diffs on its own."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_BlockDumper.add_representer(str, _string)


def readable(text: str) -> str:
    """Pure. `text` as a diff shows it: the JSON values of a ConfigMap's data pretty-printed."""
    try:
        document = yamlio.safe_load(text)
    except yaml.YAMLError:
        return text
    if (
        not isinstance(document, dict)
        or document.get("kind") != "ConfigMap"
        or not isinstance(document.get("data"), dict)
    ):
        return text
    data = {key: _pretty(value) for key, value in document["data"].items()}
    if data == document["data"]:
        return text
    return yaml.dump({**document, "data": data}, Dumper=_BlockDumper, sort_keys=True, default_flow_style=False)


def _pretty(value: Any) -> Any:
    """A JSON object or array as indented text with sorted keys; any other value as it is."""
    if not isinstance(value, str) or not value.lstrip().startswith(("{", "[")):
        return value
    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    return json.dumps(parsed, indent=_INDENT, sort_keys=True, ensure_ascii=False) + "\n"
