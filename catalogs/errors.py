"""The one error a catalog raises: it names the file, the entry and the field at fault."""

from __future__ import annotations

from collections.abc import Callable

DOCUMENT = "(document)"


class CatalogError(Exception):
    """A catalog file that cannot be used as written.

    ``str(error)`` reads ``<file>: <entry>: <field>: <message>``. ``entry`` is the name of
    the catalog entry at fault, or ``(document)`` when the problem sits outside any entry;
    ``field`` is the YAML (camelCase) path inside that entry.
    """

    def __init__(self, *, file: str, entry: str, field: str, message: str) -> None:
        self.file = file
        self.entry = entry
        self.field = field
        self.message = message
        super().__init__(f"{file}: {entry}: {field}: {message}")

    def __reduce__(self) -> tuple[Callable[[str, str, str, str], CatalogError], tuple[str, str, str, str]]:
        return _rebuild, (self.file, self.entry, self.field, self.message)


def _rebuild(file: str, entry: str, field: str, message: str) -> CatalogError:
    return CatalogError(file=file, entry=entry, field=field, message=message)
