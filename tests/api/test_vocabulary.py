"""One typed vocabulary of phases, condition types and reasons (api/vocabulary.py): what the
README and the CRDs name is in it, the code uses all of it, and no status gets a bare string."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import yaml

from api.status import AppliancePhase, ModulePhase
from api.vocabulary import (
    REASON_VOCABULARIES,
    ConditionType,
    ForeignReason,
    Phase,
    ProblemReason,
    Reason,
    every_reason,
    reason_of,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
CODE = ("planning", "providers", "components", "program", "api", "services")
VOCABULARY_FILE = REPO_ROOT / "api" / "vocabulary.py"
FOREIGN_REASONS = frozenset({"UpdateFailed"})
"""Reasons the README quotes from another controller (a PKO Stack's Stalled condition)."""

PHASE_AND_REASON = re.compile(r"`([A-Z][A-Za-z]+)` / `([A-Z][A-Za-z]+)`")
NAMED_REASON = re.compile(r"\breason:? `?([A-Z][A-Za-z]+)`?")
REASON_LIST = re.compile(r"\(reason `[A-Z][A-Za-z]+`(?:, `[A-Z][A-Za-z]+`)*(?: or `[A-Z][A-Za-z]+`)?\)")
BACKTICKED = re.compile(r"`([A-Z][A-Za-z]+)`")


def _documentation() -> Iterator[str]:
    yield (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    for path in sorted((REPO_ROOT / "api" / "crds").glob("*.yaml")):
        yield from _descriptions(yaml.safe_load(path.read_text(encoding="utf-8")))


def _descriptions(node: object) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                yield value
            else:
                yield from _descriptions(value)
    elif isinstance(node, list):
        for item in node:
            yield from _descriptions(item)


def documented_reasons() -> set[str]:
    """Every reason the README and the CRDs' descriptions name as one."""
    found: set[str] = set()
    for text in _documentation():
        found |= {reason for _phase, reason in PHASE_AND_REASON.findall(text)}
        found |= set(NAMED_REASON.findall(text))
        for listing in REASON_LIST.findall(text):
            found |= set(BACKTICKED.findall(listing))
    return found - FOREIGN_REASONS


def documented_phases() -> set[str]:
    return {phase for text in _documentation() for phase, _reason in PHASE_AND_REASON.findall(text)}


def _sources() -> Iterator[Path]:
    for package in CODE:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            if path != VOCABULARY_FILE:
                yield path


def test_every_reason_the_readme_and_the_crds_name_is_in_the_vocabulary():
    documented = documented_reasons()
    assert {"InvalidSpec", "OllamaUnreachable", "HostnameConflict", "NamespaceUnreadable"} <= documented
    assert documented - every_reason() == set()


def test_every_phase_the_readme_names_beside_a_reason_is_a_phase():
    assert documented_phases() - {str(phase) for phase in Phase} == set()


def test_every_reason_of_the_vocabulary_is_used_by_the_code():
    code = "\n".join(path.read_text(encoding="utf-8") for path in _sources())
    unused = {
        f"{vocabulary.__name__}.{member.name}"
        for vocabulary in REASON_VOCABULARIES
        for member in vocabulary
        if not re.search(rf"\b{vocabulary.__name__}\.{member.name}\b", code)
    }
    assert unused == set()


def test_no_two_vocabularies_spell_one_reason_differently_or_share_a_name_for_two_meanings():
    spellings = [str(member) for vocabulary in REASON_VOCABULARIES for member in vocabulary]
    shared = {spelling for spelling in spellings if spellings.count(spelling) > 1}
    assert shared == {"ValidationHistoryUnavailable"}


def _names_a_reason(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id.endswith("Reason")


def _bare_status_words(path: Path) -> Iterator[str]:
    """Phases and reasons passed to a status as string literals: `phase="Failed"`, `reason="X"`,
    `lifecycle("Starting", "WaitingForReplica", ...)` or `return outcome, "Pending", Reason.X, ...`."""
    words = every_reason() | {str(phase) for phase in Phase}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        literals: list[ast.expr] = []
        if isinstance(node, ast.Call):
            literals += [k.value for k in node.keywords if k.arg in ("phase", "reason", "condition_type")]
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name in ("lifecycle", "Lifecycle", "RuntimeState", "hold"):
                literals += node.args[:2]
        if (
            isinstance(node, ast.Return)
            and isinstance(node.value, ast.Tuple)
            and any(map(_names_a_reason, node.value.elts))
        ):
            literals += node.value.elts
        for literal in literals:
            if isinstance(literal, ast.Constant) and isinstance(literal.value, str) and literal.value in words:
                yield f"{path.relative_to(REPO_ROOT)}:{literal.lineno}: {literal.value!r}"


def test_no_status_phase_or_reason_is_written_as_a_bare_string():
    bare = [found for path in _sources() if path.parts[-2] != "services" for found in _bare_status_words(path)]
    assert bare == []


def test_the_condition_types_are_the_kstatus_ones_and_the_operators():
    assert [str(kind) for kind in ConditionType] == ["Ready", "Reconciling", "Stalled", "OperatorStalled"]


def test_the_phases_the_status_types_allow_are_phases_of_the_vocabulary():
    assert {*get_args(ModulePhase), *get_args(AppliancePhase)} - {str(phase) for phase in Phase} == set()


def test_a_reason_read_back_from_a_status_is_the_vocabularys_member_or_a_foreign_one():
    assert reason_of("InvalidSpec") is Reason.INVALID_SPEC
    assert reason_of("OllamaUnreachable") is ProblemReason.OLLAMA_UNREACHABLE
    assert reason_of("UpdateFailed") == ForeignReason("UpdateFailed")
