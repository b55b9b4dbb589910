"""Alias URNs written out as text (components/urns.py) are the URNs the Pulumi SDK computes for
the same aliases: a wrong one would silently miss the old state and replace the resource."""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.runtime.resource import collapse_alias_to_urn, create_urn

from cli.offline import run_offline
from components.appliance import Appliance
from components.model import FORMER_COMPONENT_TYPE
from components.module import Module
from components.urns import aliases, qualified_type, set_qualified_type

RESOURCE_TYPE = "kubernetes:kustomize.toolkit.fluxcd.io/v1:Kustomization"


class Component(pulumi.ComponentResource):
    """A component of a given type that records its qualified type, as the program's do."""

    def __init__(self, type_: str, name: str, parent: pulumi.Resource | None = None) -> None:
        super().__init__(type_, name, None, pulumi.ResourceOptions(parent=parent))
        set_qualified_type(self, parent, type_)


def _collect(into: list[Any], *outputs: pulumi.Output[Any]) -> None:
    """Append each output's value to `into` once it resolves (before run_offline returns)."""
    for output in outputs:
        output.apply(into.append)


def test_a_previous_name_under_a_component_of_a_component_is_the_urn_the_sdk_computes():
    ours: list[Any] = []
    theirs: list[Any] = []

    def program() -> None:
        appliance = Component(Appliance.TYPE, "local")
        module = Component(Module.TYPE, "basis", parent=appliance)
        ours.extend(
            aliases(
                parent=module,
                type_=RESOURCE_TYPE,
                name="kustomization/flux-system/b",
                previous=("kustomization-flux-system-b",),
            )
        )
        _collect(
            theirs,
            collapse_alias_to_urn(
                pulumi.Alias(name="kustomization-flux-system-b"), "kustomization/flux-system/b", RESOURCE_TYPE, module
            ),
        )

    run_offline(program, {})
    assert ours == theirs
    assert ours == [
        "urn:pulumi:offline::magicstick::magicstick:index:Appliance$magicstick:index:Module$"
        + RESOURCE_TYPE
        + "::kustomization-flux-system-b"
    ]


def test_a_former_parent_alias_is_the_urn_the_sdk_computes_under_that_component():
    ours: list[Any] = []
    theirs: list[Any] = []

    def program() -> None:
        appliance = Component(Appliance.TYPE, "local")
        former = Component(FORMER_COMPONENT_TYPE, "m", parent=appliance)
        ours.extend(
            aliases(
                parent=appliance,
                type_=RESOURCE_TYPE,
                name="n",
                previous=("old-n",),
                former_parent_type=qualified_type(appliance, FORMER_COMPONENT_TYPE),
            )
        )
        _collect(
            theirs, create_urn("n", RESOURCE_TYPE, parent=former), create_urn("old-n", RESOURCE_TYPE, parent=former)
        )

    run_offline(program, {})
    assert ours == theirs


def test_under_a_parent_that_records_no_qualified_type_the_aliases_stay_alias_specs():
    found: list[Any] = []

    def program() -> None:
        plain = pulumi.ComponentResource("example:index:Plain", "p")
        found.extend(aliases(parent=plain, type_=RESOURCE_TYPE, name="n", previous=("old-n",)))

    run_offline(program, {})
    assert [(type(alias), alias.name) for alias in found] == [(pulumi.Alias, "old-n")]
