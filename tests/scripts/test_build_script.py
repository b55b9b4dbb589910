"""scripts/kube-apiserver/build.sh: cache, lock, progress and errors, without building.

Each test gives the script its own cache directory (MAGICSTICK_KUBE_CACHE). A cache holding
a double binary, a shell script that answers `--version` as v1.20.2 does, sends the script
down its "already built" path. The script's first step still checks with dpkg-query that
Debian's etcd-server is installed, as on every machine that runs the cluster tests (the
script itself installs it there).
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "kube-apiserver" / "build.sh"
BASH = shutil.which("bash") or "/bin/bash"
PREFLIGHT_COMMANDS = {"flock": "util-linux", "dpkg-query": "dpkg", "apt-get": "apt"}
SAFETY_TIMEOUT_SECONDS = 60
"""Only a bound for a broken script: no test waits for time to pass."""


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """A cache directory holding a kube-apiserver double that answers --version as v1.20.2."""
    directory = tmp_path / "cache"
    directory.mkdir()
    double = directory / "kube-apiserver"
    double.write_text('#!/bin/sh\n[ "$1" = --version ] && echo "Kubernetes v1.20.2"\n')
    double.chmod(0o755)
    return directory


def environment(cache: Path, path: str | None = None) -> dict[str, str]:
    return {**os.environ, "MAGICSTICK_KUBE_CACHE": str(cache), "PATH": path or os.environ["PATH"]}


def build(cache: Path, path: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BASH, str(SCRIPT)],
        env=environment(cache, path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        timeout=SAFETY_TIMEOUT_SECONDS,
    )


def start_build(cache: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [BASH, str(SCRIPT)],
        env=environment(cache),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def first_stderr_line(process: subprocess.Popen[str]) -> str:
    assert process.stderr is not None
    readable, _, _ = select.select([process.stderr], [], [], SAFETY_TIMEOUT_SECONDS)
    assert readable, "the script printed nothing on stderr"
    return process.stderr.readline()


def progress(stderr: str) -> list[str]:
    """The stderr lines without the elapsed time a step line may end with."""
    return [re.sub(r" \(at \d+ s\)$", "", line) for line in stderr.splitlines()]


@contextmanager
def held_lock(lock_file: Path) -> Iterator[None]:
    """Hold `lock_file` as another build would: flock(2), exclusive."""
    with lock_file.open("a") as stream:
        fcntl.flock(stream, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(stream, fcntl.LOCK_UN)


def bin_dir_with(directory: Path, commands: Sequence[str]) -> str:
    """A PATH of one directory that holds symlinks to `commands` and nothing else."""
    directory.mkdir()
    for command in commands:
        found = shutil.which(command)
        assert found is not None, f"{command} is needed to run this test"
        (directory / command).symlink_to(found)
    return str(directory)


class TestTheCachedBinary:
    def test_a_cached_binary_is_printed_on_stdout_with_a_progress_line_per_step_on_stderr(self, cache: Path):
        result = build(cache)
        assert (result.returncode, result.stdout) == (0, f"{cache}/kube-apiserver\n")
        assert progress(result.stderr) == [
            "build-kube-apiserver: [1/7] installing runtime packages: etcd-server",
            f"build-kube-apiserver: [2/7] checking the cache: {cache}",
            f"build-kube-apiserver: already built: {cache}/kube-apiserver",
        ]

    def test_running_it_again_changes_nothing_in_the_cache_but_its_log(self, cache: Path):
        build(cache)
        before = {path.name: path.read_bytes() for path in cache.iterdir() if path.name != "build.log"}
        again = build(cache)
        assert again.returncode == 0
        assert {path.name: path.read_bytes() for path in cache.iterdir() if path.name != "build.log"} == before

    def test_the_lock_is_free_once_the_script_has_ended(self, cache: Path):
        build(cache)
        with (cache / "build.lock").open("a") as stream:
            fcntl.flock(stream, fcntl.LOCK_EX | fcntl.LOCK_NB)


class TestTheLock:
    def test_builds_started_while_another_holds_the_lock_wait_say_so_and_then_use_its_binary(self, cache: Path):
        lock_file = cache / "build.lock"
        with held_lock(lock_file):
            waiting = [start_build(cache), start_build(cache)]
            lines = [first_stderr_line(process) for process in waiting]
            still_running = [process.poll() is None for process in waiting]
        outcomes = [process.communicate(timeout=SAFETY_TIMEOUT_SECONDS) for process in waiting]
        assert lines == [f"build-kube-apiserver: waiting for another build (lock {lock_file})\n"] * 2
        assert still_running == [True, True]
        assert [process.returncode for process in waiting] == [0, 0]
        assert [stdout for stdout, _ in outcomes] == [f"{cache}/kube-apiserver\n"] * 2
        already_built = f"build-kube-apiserver: already built: {cache}/kube-apiserver"
        assert [progress(stderr)[-1] for _, stderr in outcomes] == [already_built] * 2


class TestFailures:
    @pytest.mark.parametrize("missing", sorted(PREFLIGHT_COMMANDS))
    def test_a_missing_command_stops_the_script_before_it_starts_naming_the_command_and_its_package(
        self, tmp_path: Path, missing: str
    ):
        path = bin_dir_with(tmp_path / "bin", [command for command in PREFLIGHT_COMMANDS if command != missing])
        cache = tmp_path / "never-created"
        result = build(cache, path)
        assert (result.returncode, result.stdout) == (127, "")
        assert result.stderr == (
            "build-kube-apiserver: step 'checking the required commands' failed (exit 127): "
            f"missing command {missing} (Debian package {PREFLIGHT_COMMANDS[missing]})\n"
        )
        assert not cache.exists()

    def test_several_missing_commands_are_named_together(self, tmp_path: Path):
        result = build(tmp_path / "never-created", bin_dir_with(tmp_path / "bin", []))
        assert result.returncode == 127
        assert "missing commands flock (Debian package util-linux), dpkg-query (Debian package dpkg), apt-get" in result.stderr

    def test_a_cache_directory_that_cannot_be_created_is_named(self, tmp_path: Path):
        (tmp_path / "a-file").write_text("")
        result = build(tmp_path / "a-file" / "cache")
        assert (result.returncode, result.stdout) == (1, "")
        assert result.stderr == (
            "build-kube-apiserver: step 'locking the cache' failed (exit 1): "
            f"cannot create the cache directory {tmp_path}/a-file/cache\n"
        )
