"""YAML text in and out, through libyaml when PyYAML was built with it.

PyYAML's C parser and emitter (`CSafeLoader`, `CSafeDumper`) do what its pure-Python
`SafeLoader` and `SafeDumper` do several times faster; they share the Python constructor,
representer and resolver, so the values read and the text written are the same. Without
libyaml the pure classes are used. Every YAML site of the project that reads or writes more
than a few lines (snapshots, renders, the committed CRDs, catalogs) goes through here.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import yaml

WITH_LIBYAML: Final = bool(getattr(yaml, "__with_libyaml__", False))
"""True when PyYAML's C extension is importable."""

# PyYAML's stubs do not make CSafeLoader a SafeLoader, though it has SafeLoader's constructors.
SafeLoader: type[yaml.SafeLoader] = yaml.CSafeLoader if WITH_LIBYAML else yaml.SafeLoader  # type: ignore[assignment]
"""The fastest safe loader here; subclass it to add constructors."""


def _represent_str(dumper: yaml.representer.SafeRepresenter, data: str) -> yaml.ScalarNode:
    # libyaml and the pure emitter fold a long multi-line string into different quoted text; as
    # a literal block both write the same (and a script or config file stays readable). The
    # emitter still falls back to quotes where a literal block cannot hold the string.
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_str(data)


class PureSafeDumper(yaml.SafeDumper):
    """The pure-Python safe dumper, multi-line strings as literal blocks."""


PureSafeDumper.add_representer(str, _represent_str)

if WITH_LIBYAML:

    class _FastSafeDumper(yaml.CSafeDumper):
        """libyaml's emitter with the same representers as PureSafeDumper."""

    _FastSafeDumper.add_representer(str, _represent_str)
    # PyYAML's stubs do not make CSafeDumper a SafeDumper, though it has SafeDumper's representers.
    SafeDumper: type[yaml.SafeDumper] = _FastSafeDumper  # type: ignore[assignment]
else:
    SafeDumper = PureSafeDumper
"""The fastest safe dumper here; multi-line strings as literal blocks."""


def safe_load(
    text: str, *, loader: type[yaml.SafeLoader] | None = None, pure: type[yaml.SafeLoader] = yaml.SafeLoader
) -> Any:
    """The one document of `text` (`yaml.safe_load`). Raises yaml.YAMLError.

    Read with `loader` (default SafeLoader); text it refuses is read again with `pure`, the
    pure-Python loader of the same constructors, so an error carries the words and position
    the pure loader gives (libyaml words its problems differently).
    """
    return _load(yaml.load, text, loader or SafeLoader, pure)


def safe_load_all(
    text: str, *, loader: type[yaml.SafeLoader] | None = None, pure: type[yaml.SafeLoader] = yaml.SafeLoader
) -> list[Any]:
    """Every document of `text` (`yaml.safe_load_all`), as `safe_load` reads one. Raises yaml.YAMLError."""
    documents: list[Any] = _load(
        lambda stream, chosen: list(yaml.load_all(stream, Loader=chosen)), text, loader or SafeLoader, pure
    )
    return documents


def _load(read: Callable[..., Any], text: str, loader: type[yaml.SafeLoader], pure: type[yaml.SafeLoader]) -> Any:
    try:
        return read(text, loader)
    except yaml.YAMLError:
        if loader is pure:
            raise
    return read(text, pure)


def safe_dump(document: Any, **options: Any) -> str:
    """`yaml.safe_dump` to a string, with the same options."""
    text: str = yaml.dump(document, Dumper=SafeDumper, **options)
    return text


def safe_dump_all(documents: Any, **options: Any) -> str:
    """`yaml.safe_dump_all` to a string, with the same options."""
    text: str = yaml.dump_all(documents, Dumper=SafeDumper, **options)
    return text
