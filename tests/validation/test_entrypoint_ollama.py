"""validation/entrypoint-ollama.sh with a double `ollama` on PATH: serve in the background, the
check's exit code returned, the server stopped; a server that never answers still runs the check."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "validation" / "entrypoint-ollama.sh"
SH = shutil.which("sh") or "/bin/sh"


def _double(bin_dir: Path, *, answers: bool) -> None:
    """`ollama serve` records its pid and sleeps; `ollama list` answers when `answers`."""
    bin_dir.mkdir()
    ollama = bin_dir / "ollama"
    ollama.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        '  serve) echo $$ > "$HOME/serve.pid"; exec sleep 30 ;;\n'
        f'  list) [ -f "$HOME/serve.pid" ] && exit {0 if answers else 1}; exit 1 ;;\n'
        "esac\nexit 2\n"
    )
    ollama.chmod(0o755)


def _run(tmp_path: Path, *, answers: bool, check_exit: int) -> subprocess.CompletedProcess[str]:
    _double(tmp_path / "bin", answers=answers)
    check = tmp_path / "check.py"
    check.write_text(
        f"import os, sys\nprint('check ran', os.environ['MAGICSTICK_OLLAMA_URL'], os.environ['OLLAMA_MODELS'])\nsys.exit({check_exit})\n"
    )
    python = shutil.which("python3")
    assert python is not None
    (tmp_path / "bin" / "python3").symlink_to(python)
    environ = {
        "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "MAGICSTICK_OLLAMA_CHECK": str(check),
        "MAGICSTICK_OLLAMA_START_SECONDS": "1",
    }
    return subprocess.run([SH, str(SCRIPT)], env=environ, capture_output=True, text=True, timeout=30, check=False)


def _stopped(pid_file: Path) -> bool:
    pid = int(pid_file.read_text())
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("check_exit", [0, 1])
def test_runs_the_check_and_returns_its_exit_code(tmp_path: Path, check_exit: int) -> None:
    done = _run(tmp_path, answers=True, check_exit=check_exit)
    assert done.returncode == check_exit, done.stderr
    assert f"check ran http://127.0.0.1:11434 {tmp_path}/.ollama/models" in done.stdout
    assert _stopped(tmp_path / "serve.pid")


def test_a_server_that_never_answers_still_runs_the_check(tmp_path: Path) -> None:
    done = _run(tmp_path, answers=False, check_exit=1)
    assert done.returncode == 1
    assert "did not answer within 1s" in done.stderr
    assert "check ran" in done.stdout
    assert _stopped(tmp_path / "serve.pid")
