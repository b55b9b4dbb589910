"""The README says what the command and the program have: every flag in the synopsis, every
dynamic resource in the table."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re

import pulumi.dynamic
import pytest

import components
from cli.main import _parser
from tests.cli.inputs import REPOSITORY

README = (REPOSITORY / "README.md").read_text()


def _section(title: str) -> str:
    start = README.index(f"\n{title}\n")
    end = README.find("\n#", start + len(title) + 2)
    return README[start:end]


def _synopsis(command: str) -> str:
    """The synopsis of `command`: its lines in the indented block at the top of "Offline render"."""
    block = _section("## Offline render").split("\n\n")[1]
    lines = block.splitlines()
    first = next(i for i, line in enumerate(lines) if line.strip().startswith(f"magicstick {command} "))
    continued = []
    for line in lines[first + 1 :]:
        if line.strip().startswith("magicstick "):
            break
        continued.append(line)
    return " ".join([lines[first], *continued])


def _subcommand(command: str) -> argparse.ArgumentParser:
    actions = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return actions.choices[command]


def _flags(command: str) -> list[tuple[str, ...]]:
    """The spellings of each flag of `command`, but --help and the access flags."""
    parser = _subcommand(command)
    access = {
        id(action)
        for group in parser._action_groups
        if group.title and group.title.startswith("single sign-on")
        for action in group._group_actions
    }
    return [
        tuple(action.option_strings)
        for action in parser._actions
        if action.option_strings and id(action) not in access and "--help" not in action.option_strings
    ]


@pytest.mark.parametrize("command", ["render", "diff", "snapshot"])
def test_the_synopsis_of_each_command_shows_every_one_of_its_flags(command):
    shown = set(re.findall(r"--[a-z-]+|-[a-z]\b", _synopsis(command)))
    assert [spellings[-1] for spellings in _flags(command) if not set(spellings) & shown] == []


def _dynamic_resource_names() -> set[str]:
    for module in pkgutil.iter_modules(components.__path__):
        importlib.import_module(f"components.{module.name}")
    found, pending = set(), [pulumi.dynamic.Resource]
    while pending:
        for sub in pending.pop().__subclasses__():
            pending.append(sub)
            token = getattr(sub, "_resource_type_name", "")
            if token.startswith("dynamic/magicstick:"):
                found.add(token.rpartition(":")[2])
    return found


def test_the_table_of_dynamic_resources_lists_every_dynamic_resource_of_the_program():
    table = _section("### Components and dynamic resources")
    listed = set(re.findall(r"^\| `(\w+)` \| `providers/", table, flags=re.MULTILINE))
    assert _dynamic_resource_names() - listed == set()
