"""ModuleActivation.spec.parameters against the parameters the module catalog declares.

A parameter the module does not declare, or a value that does not fit its type, is a problem
named by field and rule; the activation is then rejected (planning.modules freezes its module).
Declared parameters with a substitution variable become the generated Kustomization's
post-build substitutions: the value given, else the catalog default. A declared boolean with a
component adds that Kustomize component of the module's path to the Kustomization's
`spec.components` while it is true (its default is false: the part stays off unless asked for).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from catalogs import ModuleEntry


def parameter_problems(entry: ModuleEntry, parameters: Mapping[str, Any]) -> tuple[str, ...]:
    """Every problem of ``parameters`` for ``entry``, sorted by parameter name. Pure."""
    declared = ", ".join(p.name for p in entry.parameters) or "none"
    problems: list[str] = []
    for name in sorted(parameters):
        parameter = entry.parameter(name)
        if parameter is None:
            problems.append(f"spec.parameters.{name}: not a parameter of module {entry.name} (declared: {declared})")
            continue
        rule = parameter.violation(parameters[name])
        if rule is not None:
            problems.append(f"spec.parameters.{name}: {rule}")
    return tuple(problems)


def substitutions(entry: ModuleEntry, parameters: Mapping[str, Any]) -> dict[str, str]:
    """Variable -> text for every declared parameter with a variable; ``parameters`` must have
    no problem. Pure."""
    found: dict[str, str] = {}
    for parameter in entry.parameters:
        if parameter.variable is None:
            continue
        value = parameters.get(parameter.name, parameter.default)
        if value is not None:
            found[parameter.variable] = parameter.substitution(value)
    return dict(sorted(found.items()))


def components(entry: ModuleEntry, parameters: Mapping[str, Any]) -> tuple[str, ...]:
    """The Kustomize components (relative to the module's path) the parameters switch on, sorted;
    ``parameters`` must have no problem. Pure."""
    return tuple(
        sorted(p.component for p in entry.parameters if p.component is not None and parameters.get(p.name) is True)
    )
