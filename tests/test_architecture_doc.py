"""The design the code cites lives in the repository: docs/architecture.md.

The code names its rules as "invariant N"; each such N must be a numbered invariant of
docs/architecture.md ("## Invariants"), so a reader can look it up. And the code cites only
what the repository holds: no references to documents outside it (`seed 000`,
`DESIGN.md`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Final

REPO_ROOT: Final = Path(__file__).resolve().parents[1]
ARCHITECTURE: Final = REPO_ROOT / "docs" / "architecture.md"
README: Final = REPO_ROOT / "README.md"
CODE_DIRECTORIES: Final = (
    "api",
    "catalogs",
    "planning",
    "components",
    "providers",
    "program",
    "cli",
    "services",
    "benchmarks",
)
CODE_FILES: Final = ("__main__.py",)
SKIPPED_PARTS: Final = frozenset({"__pycache__"})

CITATION: Final = re.compile(r"\binvariants?\s+(\d+(?:(?:\s*,\s*|\s+and\s+|\s*/\s*)\d+)*)", re.IGNORECASE)
"""`invariant 4`, `Invariant 11`, `invariants 2 and 4`, `invariants 5, 6`."""
SEED_CITATION: Final = re.compile(r"\bseeds?\s+0\d\d\b", re.IGNORECASE)
DESIGN_CITATION: Final = re.compile(r"\bDESIGN(?:\.md|\s*§)")
"""A citation of a design document that is not part of the repository."""
NUMBERED_INVARIANT: Final = re.compile(r"^(\d+)\.\s+\*\*", re.MULTILINE)
"""A numbered invariant of the doc: `3. **Stable, unique identities.** ...`."""


def code_files() -> Iterator[Path]:
    """Every text file of the code directories, and the top-level code files."""
    for directory in CODE_DIRECTORIES:
        for path in sorted((REPO_ROOT / directory).rglob("*")):
            if path.is_file() and not SKIPPED_PARTS & set(path.parts):
                yield path
    for name in CODE_FILES:
        yield REPO_ROOT / name


def text_of(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None


def cited_invariants(text: str) -> set[int]:
    return {int(number) for match in CITATION.finditer(text) for number in re.findall(r"\d+", match.group(1))}


def documented_invariants() -> list[int]:
    """The numbers of the doc's `## Invariants` section, in their order."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = re.search(r"^## Invariants\b(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert section is not None, f"{ARCHITECTURE.relative_to(REPO_ROOT)} has no '## Invariants' section"
    return [int(number) for number in NUMBERED_INVARIANT.findall(section.group(1))]


def test_the_citation_pattern_reads_single_and_joined_citations() -> None:
    assert cited_invariants("kept (invariant 6); Invariant 11: ...") == {6, 11}
    assert cited_invariants("writes nothing (invariants 2 and 4)") == {2, 4}
    assert cited_invariants("an invariant of the store") == set()


def test_the_invariants_are_numbered_one_after_another_from_one() -> None:
    numbers = documented_invariants()
    assert numbers == list(range(1, len(numbers) + 1)), numbers


def test_every_invariant_the_code_cites_is_a_numbered_invariant_of_the_architecture_doc() -> None:
    documented = set(documented_invariants())
    unresolved = []
    for path in code_files():
        text = text_of(path)
        if text is None:
            continue
        for number in sorted(cited_invariants(text) - documented):
            unresolved.append(f"{path.relative_to(REPO_ROOT)}: invariant {number}")
    assert not unresolved, "cited but not in docs/architecture.md: " + "; ".join(unresolved)


def test_no_code_file_and_not_the_readme_cites_a_document_outside_the_repository() -> None:
    found = []
    for path in (*code_files(), README, ARCHITECTURE):
        text = text_of(path) if path.exists() else None
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if SEED_CITATION.search(line) or DESIGN_CITATION.search(line):
                found.append(f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_readme_layout_links_the_architecture_doc() -> None:
    readme = README.read_text(encoding="utf-8")
    layout = re.search(r"^## Layout\b(.*?)(?=^## |\Z)", readme, re.MULTILINE | re.DOTALL)
    assert layout is not None
    assert "(docs/architecture.md)" in layout.group(1)
