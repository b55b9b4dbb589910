"""Reading an identity out of verified claims, and the rule for names that travel in headers.

The claim names are configuration (`sub`, `roles`, `groups` by default; a dotted name such as
`realm_access.roles` reads a nested value). Both services refuse rather than alter an identity
whose subject or groups cannot travel in a header as they are: the access guard forwards them
to the applications, the dashboard to the API server as impersonation headers.

Exactly: the subject and each group must be printable ASCII, 0x20 to 0x7E, with a first and a
last character from 0x21 to 0x7E (no leading or trailing space); a group must also not be
empty and hold no comma, which separates the groups in the access guard's header. A header
parser trims surrounding whitespace (` alice` would arrive as `alice`, and ` ` as the
anonymous empty user), a tab or a control character could split or end a header, and a comma
would make one group two. Non-ASCII names are refused too: header values are bytes whose
encoding the receiver would have to guess.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

ROLES = ("admin", "operator", "user", "viewer")
"""Dashboard roles, highest first: each role holds the access of every role after it."""

_SUBJECT = re.compile(r"[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?")
"""A subject: printable ASCII, no space at either end."""
_GROUP = re.compile(r"[\x21-\x2b\x2d-\x7e]([\x20-\x2b\x2d-\x7e]*[\x21-\x2b\x2d-\x7e])?")
"""A group: the subject's rule without the comma (0x2C)."""


def claim(claims: Mapping[str, Any], name: str) -> object:
    """The claim `name`, or the nested value of a dotted path (`realm_access.roles`). Pure."""
    if name in claims:
        return claims[name]
    value: object = claims
    for part in name.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def string_list(value: object) -> tuple[str, ...] | None:
    """A claim that must be a list of strings: the strings (none when absent), or None when it is
    something else. Pure."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return None
    return tuple(value)


def unrepresentable(*, subject: str, groups: Sequence[str]) -> str | None:
    """Why the subject or a group cannot travel in a header as it is, or None. Pure."""
    if not _SUBJECT.fullmatch(subject):
        return "the subject is not printable ASCII without surrounding spaces"
    for group in groups:
        if not _GROUP.fullmatch(group):
            return "a group is empty, holds a comma, or is not printable ASCII without surrounding spaces"
    return None
