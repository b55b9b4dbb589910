"""docs/engine-arguments.md against the engines' own source at each cited release.

The source comes from `make engine-sources`: vLLM's wheel of the release (PyPI, --no-deps) and
Ollama's Go module. A cited line must hold what the table says it holds; a setting the table calls
`absent` must appear nowhere in the cited file.
"""

from __future__ import annotations

import pytest

from tests.engine_sources import EngineArgument, Verdict, engine_arguments, release_source

ROWS = engine_arguments()
CITED = [row for row in ROWS if row.verdict is not Verdict.OUTSIDE]


def _id(row: EngineArgument) -> str:
    return f"{row.engine}-{row.release}-{row.setting}-{row.source}"


@pytest.mark.parametrize("row", [r for r in CITED if r.verdict is not Verdict.ABSENT], ids=_id)
def test_the_cited_line_of_the_engines_source_holds_what_the_table_says(row: EngineArgument) -> None:
    assert row.line is not None, f"{_id(row)}: a {row.verdict} row cites a line"
    lines = (release_source(row.engine, row.release) / row.source).read_text().splitlines()
    assert row.line <= len(lines), f"{row.source} has {len(lines)} lines, the table cites {row.line}"
    cited = lines[row.line - 1]
    assert row.holds in cited, f"{row.source}:{row.line} at {row.engine} {row.release} is {cited.strip()!r}"


@pytest.mark.parametrize("row", [r for r in CITED if r.verdict is Verdict.ABSENT], ids=_id)
def test_a_setting_the_table_calls_absent_is_nowhere_in_the_engines_file(row: EngineArgument) -> None:
    text = (release_source(row.engine, row.release) / row.source).read_text()
    assert row.holds not in text, f"{row.holds} is in {row.source} at {row.engine} {row.release}"


def test_a_setting_absent_at_one_release_is_read_at_the_release_the_catalog_names_as_its_minimum() -> None:
    """`--mm-encoder-attn-backend`: absent at 0.10.1 and 0.10.2, read at 0.11.1, the catalog's
    minimumEngineVersion of every amd-gpu visionAttention choice that passes it."""
    releases = {(row.release, row.verdict) for row in ROWS if row.setting == "--mm-encoder-attn-backend"}
    assert {("0.10.1", Verdict.ABSENT), ("0.10.2", Verdict.ABSENT), ("0.11.1", Verdict.READ)} <= releases
