"""The pages' form and query fields, read strictly. Pure.

What a browser sends is text; what any other client sends may be anything. starlette's
FormData and QueryParams hold every value given for a name, each a string (or, in a multipart
body, a file). FormFields reads them by these rules, and names every field that breaks one,
all at once, in one 422 Invalid (FieldProblem: the field as the form names it, and the rule):

- **Empty is absent.** A field that is missing or empty ("") is None: the form model's default
  applies. Nothing is trimmed: " 4" is not a number, and "  " is text.
- **Once.** A field given more than once (`?contextWindow=1&contextWindow=2`) is refused, never
  resolved to the first or the last value.
- **Text**: at most MAX_TEXT characters unless the field says otherwise, no control character
  (NUL, a line break, DEL), not a file.
- **Whole numbers**: at most MAX_DIGITS of the ASCII digits 0-9 (no sign, no space, no other
  script's digits such as "²" or "٣", which `str.isdigit` accepts and `int` refuses or reads),
  then within the field's range, which is the form model's own (`bounds`). `int` sees only what
  passed, so neither its Unicode digits nor its 4,300-digit limit is ever reached.
- **Checkboxes**: true, on, 1 or yes is checked; false, off, 0, no or absence is not (any
  case); anything else is refused.
- **Names in a path** (`object_name`): a DNS-1123 subdomain, as every object's name is;
  anything else is a 404 before any request to the API server.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import TypeAdapter

from services.dashboard.refusals import FieldProblem, Refusal

MAX_TEXT = 2048
"""Characters of a text field: the longest the forms' models accept (an external model's apiBase)."""
MAX_DIGITS = 18
"""ASCII digits of a whole number: every 18-digit number is below 2^63."""
MAX_NAME = 253
OBJECT_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
DIGITS = re.compile(r"[0-9]+")
CHECKED = frozenset({"true", "on", "1", "yes"})
UNCHECKED = frozenset({"false", "off", "0", "no"})
SHOWN_NAME = 80
"""Characters of a field's name a refusal repeats (a form may send any name)."""


class Fields(Protocol):
    """Every value given for each name: starlette's FormData and QueryParams."""

    def getlist(self, key: Any) -> list[Any]: ...

    def keys(self) -> Any: ...


@dataclass(frozen=True)
class Bounds:
    minimum: int
    maximum: int


def bounds(annotated: Any) -> Bounds:
    """The range of an `Annotated[int, Field(ge=..., le=...)]` of forms.py (as its JSON
    schema states it), so that a page's rule is the API's."""
    schema = TypeAdapter(annotated).json_schema()
    minimum, maximum = schema.get("minimum"), schema.get("maximum")
    if schema.get("type") != "integer" or not isinstance(minimum, int) or not isinstance(maximum, int):
        raise TypeError(f"{annotated!r} bounds no whole number from both sides")
    return Bounds(minimum, maximum)


@dataclass
class FormFields:
    """The fields of one form or query; each read records the rule its value breaks."""

    fields: Fields
    problems: list[FieldProblem] = field(default_factory=list)

    def text(self, name: str, *, max_length: int = MAX_TEXT) -> str | None:
        """The field's text, None when absent or empty (or refused)."""
        value = self._once(name)
        if value is None or value == "":
            return None
        rule = None
        if not isinstance(value, str):
            rule = "must be text, not a file"
        elif len(value) > max_length:
            rule = f"must be at most {max_length} characters long"
        elif any(unicodedata.category(character) == "Cc" for character in value):
            rule = "must not contain control characters (such as NUL or a line break)"
        else:
            return value
        self.refuse(name, rule)
        return None

    def whole_number(self, name: str, within: Bounds) -> int | None:
        """The field's number, None when absent or empty (or refused)."""
        value = self._once(name)
        if value is None or value == "":
            return None
        if isinstance(value, str) and len(value) <= MAX_DIGITS and DIGITS.fullmatch(value):
            number = int(value)
            if within.minimum <= number <= within.maximum:
                return number
        self.refuse(name, f"must be a whole number from {within.minimum} to {within.maximum}, in the digits 0-9 only")
        return None

    def checked(self, name: str) -> bool:
        """Whether the checkbox (or button) `name` was sent checked."""
        text = self.text(name)
        if text is not None and text.lower() in CHECKED:
            return True
        if text is not None and text.lower() not in UNCHECKED:
            self.refuse(name, "must be true or false (a checkbox)")
        return False

    def names(self, prefix: str) -> list[str]:
        """Every field name that starts with `prefix`, once each, in the order sent."""
        return list(dict.fromkeys(str(key) for key in self.fields.keys() if str(key).startswith(prefix)))  # noqa: SIM118

    def refuse(self, name: str, rule: str) -> None:
        """Record that field `name` breaks `rule` (also a rule of the caller's own)."""
        shown = name if len(name) <= SHOWN_NAME else name[:SHOWN_NAME] + "…"
        self.problems.append(FieldProblem(shown, rule))

    def check(self) -> None:
        """Raise the 422 naming every field read so far that broke its rule, if any did."""
        if self.problems:
            raise Refusal(
                422,
                "Invalid",
                "; ".join(f"{problem.field}: {problem.message}" for problem in self.problems),
                tuple(self.problems),
            )

    def _once(self, name: str) -> object:
        values = self.fields.getlist(name)
        if len(values) > 1:
            self.refuse(name, f"was given {len(values)} times; give it once")
            return None
        return values[0] if values else None


def object_name(plural: str, name: str) -> str:
    """`name` from a page's path, when it can name an object; else a 404 (none has that name)."""
    if len(name) > MAX_NAME or not OBJECT_NAME.fullmatch(name):
        raise Refusal(
            404,
            "NotFound",
            f"there are no {plural} of that name: a name is a DNS-1123 subdomain of at most {MAX_NAME} characters",
        )
    return name
