"""The Python language host the engine runs every program through: the toolchain's
`pulumi-language-python` beside the CLI, and no other way to run the program.

Every e2e test and benchmark runs the program through it (tests/e2e/engine.py finds no other);
these tests say what it is, and that nothing brings back the SDK's inline language server or
the CLI's `--client`.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Final

from tests import toolchain
from tests.e2e.engine import REPO_ROOT

SCANNED: Final = (
    "tests",
    "benchmarks",
    "scripts",
    "cli",
    "program",
    "providers",
    "components",
    "services",
    ".ci",
    "deploy",
)
INLINE: Final = re.compile(r"automation\._server|LanguageServer\(|[\"'\s]--client[=\"'\s]")
"""What running a program without its language host looks like: the Automation API's inline
server, or `pulumi ... --client=ADDRESS` (`kubectl version --client` is another command's flag)."""


def test_the_language_host_beside_the_cli_answers_with_its_version_and_its_stamp_names_its_source(own_engine: None):
    # own_engine: only for the `e2e` marker; the test needs the toolchain, not an API server.
    host = toolchain.python_language_host()
    assert host.parent == toolchain.pulumi().parent
    answered = subprocess.run([str(host), "-version"], capture_output=True, text=True, check=True)
    assert answered.stdout.strip() == toolchain.versions().pulumi
    stamp = Path(f"{host}.stamp").read_text().splitlines()
    sources = [line for line in stamp if line.startswith("source=")]
    assert len(sources) == 1 and re.fullmatch(
        r"source=(proxy \S+@\S+|archive \S+\.tar\.gz sha256=[0-9a-f]{64})", sources[0]
    ), stamp


def test_no_code_runs_a_program_through_an_inline_language_server_or_the_clis_client_flag():
    found = []
    for top in SCANNED:
        for path in sorted((REPO_ROOT / top).rglob("*")):
            if (
                path.is_file()
                and (path.suffix in {".py", ".sh", ".yaml"} or path.parent.name == ".ci")
                and path != Path(__file__)
            ):
                for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                    if INLINE.search(line) and "kubectl" not in line:
                        found.append(f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}")
    assert not found, found
