"""The pure run hides every tool of the test toolchain (tests/pure_environment.py).

Each finder of tests/toolchain.py is called in the pure run's environment, made from one in
which every MAGICSTICK_ variable the finders read points at a tool that exists, and with every
file reported as an existing executable: a finder that still answers with a path outside the
pure run's missing cache would let a pure test use a real tool. A finder added with a lookup of
its own (a variable of another name, a fixed path, $PATH) fails here until it is hidden.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import toolchain
from tests.pure_environment import CACHES, KEPT, NOWHERE, pure_environment

FINDERS = [
    function
    for name, function in inspect.getmembers(toolchain, inspect.isfunction)
    if function.__module__ == toolchain.__name__
    and not name.startswith("_")
    and name != "tool"  # the lookup the finders share, tested through each of them
    and function.__annotations__.get("return") == "Path"
]
ARGUMENTS: dict[str, tuple[str, ...]] = {"flux_controller": toolchain.FLUX_CONTROLLERS}


def calls() -> list[tuple[str, Callable[[], Path]]]:
    found: list[tuple[str, Callable[[], Path]]] = []
    for function in FINDERS:
        parameters = inspect.signature(function).parameters
        if not parameters:
            found.append((function.__name__, function))
            continue
        assert function.__name__ in ARGUMENTS, f"tell this test which arguments {function.__name__} takes"
        found.extend((f"{function.__name__}({a})", lambda f=function, a=a: f(a)) for a in ARGUMENTS[function.__name__])
    return found


def test_every_finder_of_the_toolchain_is_called() -> None:
    names = {name for name, _ in calls()}
    assert {
        "kube_apiserver",
        "kubelet",
        "kube_scheduler",
        "kube_proxy",
        "pko_manager",
        "kubeai",
        "python_language_host",
    } <= names


@pytest.mark.parametrize(("name", "find"), calls(), ids=[name for name, _ in calls()])
def test_in_the_pure_environment_no_finder_answers_with_a_real_tool(
    name: str, find: Callable[[], Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    named = set(re.findall(r"MAGICSTICK_[A-Z_]+", Path(toolchain.__file__).read_text())) | {
        f"MAGICSTICK_{c.upper().replace('-', '_')}" for c in toolchain.FLUX_CONTROLLERS
    }
    leaky = {**os.environ, **{variable: str(tmp_path / variable.lower()) for variable in named}}
    monkeypatch.setattr(os, "environ", pure_environment(leaky))
    monkeypatch.setattr(Path, "is_file", lambda self: True)
    monkeypatch.setattr(os, "access", lambda path, mode: True)

    assert find().is_relative_to(NOWHERE), f"{name} finds a tool the pure run does not hide"


def test_the_pure_environment_keeps_the_source_archives_and_drops_every_other_magicstick_variable() -> None:
    environment = pure_environment(
        {"PATH": "/usr/bin", "MAGICSTICK_GO_SOURCES": "/sources", "MAGICSTICK_KUBELET": "/k"}
    )

    assert environment["PATH"] == "/usr/bin"
    assert environment["MAGICSTICK_GO_SOURCES"] == "/sources" and "MAGICSTICK_GO_SOURCES" in KEPT
    assert "MAGICSTICK_KUBELET" not in environment
    assert all(not Path(environment[cache]).exists() for cache in CACHES)
