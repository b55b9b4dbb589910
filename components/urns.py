"""Alias URNs written out as text.

A resource that had another name, or another parent, in an earlier version keeps its place in
the stack through aliases. Given as `pulumi.Alias(name=..., parent=...)`, each alias is turned
into a URN by the SDK through a chain of Outputs, for every resource at every run, whether or
not the stack still holds the old name: a third of a large program's time. A URN is plain text,
`urn:pulumi:<stack>::<project>::<qualified type>::<name>`, where the qualified type is the type
of each parent from the outermost one (the root Stack left out), then the resource's own, joined
by `$`. The program knows all of it when it registers a resource, so it writes the URNs out.

Every component records its own qualified type (`set_qualified_type`). A resource whose parent
does not (none of the program's today) gets `pulumi.Alias` objects as before: correct, slower.
"""

from __future__ import annotations

from typing import Any, Final

import pulumi

QUALIFIED_TYPE_ATTRIBUTE: Final = "qualified_type"
TYPE_DELIMITER: Final = "$"


def qualified_type(parent: pulumi.Resource | None, type_: str) -> str | None:
    """The qualified type of a resource of `type_` under `parent` (None: the root Stack), or
    None when `parent` does not record its own."""
    if parent is None:
        return type_
    chain = getattr(parent, QUALIFIED_TYPE_ATTRIBUTE, None)
    return f"{chain}{TYPE_DELIMITER}{type_}" if isinstance(chain, str) else None


def urn(qualified: str, name: str) -> str:
    """The URN of the resource named `name` of qualified type `qualified` in this stack."""
    return f"urn:pulumi:{pulumi.get_stack()}::{pulumi.get_project()}::{qualified}::{name}"


def aliases(
    *,
    parent: pulumi.Resource | None,
    type_: str,
    name: str,
    previous: tuple[str, ...],
    former_parent_type: str | None = None,
) -> list[Any]:
    """The aliases of a resource: each `previous` name under its parent; with
    `former_parent_type` (the qualified type of the component it lived under in earlier
    versions), its name and each previous one under that component instead."""
    if former_parent_type is not None:
        former = f"{former_parent_type}{TYPE_DELIMITER}{type_}"
        return [urn(former, earlier) for earlier in (name, *previous)]
    current = qualified_type(parent, type_)
    if current is None:
        return [pulumi.Alias(name=earlier) for earlier in previous]
    return [urn(current, earlier) for earlier in previous]


def set_qualified_type(component: pulumi.ComponentResource, parent: pulumi.Resource | None, type_: str) -> None:
    """Record `component`'s qualified type on it, for its children's aliases."""
    setattr(component, QUALIFIED_TYPE_ATTRIBUTE, qualified_type(parent, type_))
