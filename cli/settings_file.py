"""`--settings FILE`: the `magicstick:` config of render and diff, from a YAML file.

The file is one of two forms:
- a mapping of config keys without their namespace, as a `config:` block spells them:
  `oidcIssuer: https://auth.example.com/realms/magicstick`;
- a Pulumi stack file (`Pulumi.<stack>.yaml`): its `config:` mapping holds
  `magicstick:oidcIssuer: ...`. The stack file's other top-level keys (secretsprovider,
  encryptedkey, ...) and the keys of other namespaces (`kubernetes:...`) are not ours: skipped.

Every key must be one Pulumi.yaml declares (program.settings.CONFIG_KEYS); another is an error
naming it. Render takes FILE_KEYS from the file; the other declared keys concern a live run
(kubeconfig, context, snapshotFile) or are read from their flags only (catalogDir, now).
Values are checked where the flags are (cli.render), and an error names the file and the key.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cli.errors import RenderInputError, filesystem_error
from program.access_config import ACCESS_KEYS
from program.settings import CONFIG_KEYS, CONFIG_NAMESPACE

_RUN_FILE_KEYS = ("systemNamespace", "domain", "localDomain")
FILE_KEYS = (*_RUN_FILE_KEYS, *(entry.key for entry in ACCESS_KEYS))
"""The keys render takes from a settings file."""
_STACK_CONFIG = "config"
_PROJECT_KEYS = ("name", "runtime")
"""A Pulumi project file (Pulumi.yaml) has them; a stack settings file never does."""


@dataclass(frozen=True)
class SettingsFile:
    """The values a settings file gives for FILE_KEYS, and how an error names each of them."""

    values: Mapping[str, Any] = field(default_factory=dict)
    """Key (without namespace) -> the value as the file holds it: a string, or a list."""
    names: Mapping[str, str] = field(default_factory=dict)
    """Key -> `<file>: <key as the file spells it>`."""


def load_settings_file(path: Path) -> SettingsFile:
    """The settings the YAML file at `path` gives. Raises RenderInputError naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise RenderInputError(f"{path}: not UTF-8 text (byte {error.start})") from error
    except OSError as error:
        raise filesystem_error(path, error) from error
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        problem = getattr(error, "problem", None) or type(error).__name__
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise RenderInputError(f"{path}: not YAML: {problem}{where}") from error
    return settings_document(document, source=str(path))


def settings_document(document: object, *, source: str) -> SettingsFile:
    """The settings of a parsed settings file, either form. Pure. Raises RenderInputError naming `source`."""
    if document is None:
        return SettingsFile()
    if not isinstance(document, Mapping):
        raise RenderInputError(
            f"{source}: must be a mapping of magicstick: settings, or a Pulumi stack file with config:"
        )
    if all(key in document for key in _PROJECT_KEYS):
        raise RenderInputError(
            f"{source}: a Pulumi project file (it declares name: and runtime:), not settings;"
            " give a stack settings file (Pulumi.<stack>.yaml) or a mapping of magicstick: keys"
        )
    if _STACK_CONFIG in document:
        return _entries(_stack_config(document[_STACK_CONFIG], source=source), source=source, other_namespaces=True)
    return _entries(document, source=source, other_namespaces=False)


def _stack_config(config: object, *, source: str) -> Mapping[Any, Any]:
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise RenderInputError(f"{source}: config: must be a mapping of config keys")
    return config


def _entries(mapping: Mapping[Any, Any], *, source: str, other_namespaces: bool) -> SettingsFile:
    """The FILE_KEYS of `mapping`; keys of another namespace are skipped when `other_namespaces`."""
    values: dict[str, Any] = {}
    names: dict[str, str] = {}
    seen: set[str] = set()
    for written, value in mapping.items():
        namespace, _, key = str(written).rpartition(":")
        if namespace not in ("", CONFIG_NAMESPACE):
            if other_namespaces:
                continue
            raise RenderInputError(f"{source}: {written}: not a {CONFIG_NAMESPACE}: setting")
        if key not in CONFIG_KEYS:
            raise RenderInputError(f"{source}: {written}: unknown setting{_suggestion(key)}")
        if key in seen:
            raise RenderInputError(f"{source}: {written}: {key} is set twice")
        seen.add(key)
        if key in _RUN_FILE_KEYS and value is not None and not isinstance(value, str):
            raise RenderInputError(f"{source}: {written}: must be a string, not {type(value).__name__}")
        if key in FILE_KEYS and value not in (None, ""):
            values[key] = value
            names[key] = f"{source}: {written}"
    return SettingsFile(values=values, names=names)


def _suggestion(key: str) -> str:
    close = difflib.get_close_matches(key, CONFIG_KEYS, n=1)
    return f" (did you mean {close[0]}?)" if close else " (Pulumi.yaml lists the settings)"
