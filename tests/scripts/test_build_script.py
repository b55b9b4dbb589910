"""scripts/toolchain/build.sh: cache, lock, progress and errors, without building.

Each test gives the script its own cache directory (MAGICSTICK_TOOLCHAIN_CACHE). A cache holding
a double of every tool, shell scripts that answer as the pinned versions do, sends the script
down its "already built" path for each step: nothing is compiled and nothing is downloaded.
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

from tests.toolchain import BUILD_SCRIPT, versions

BASH = shutil.which("bash") or "/bin/bash"
PREFLIGHT_COMMANDS = {"flock": "util-linux", "go": "golang", "sha256sum": "coreutils", "cp": "coreutils"}
SAFETY_TIMEOUT_SECONDS = 60
"""Only a bound for a broken script: no test waits for time to pass."""


def _double(path: Path, script: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return path


KUBE_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "kubelet")
"""What build.sh builds from k8s.io/kubernetes, in its order."""


def flux_controller_versions() -> dict[str, str]:
    """Flux's controllers in the order build.sh builds them, at their pinned versions."""
    pinned = versions()
    return {"source-controller": pinned.source_controller, "kustomize-controller": pinned.kustomize_controller, "helm-controller": pinned.helm_controller}


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """A cache directory holding a double of every tool at its pinned version."""
    pinned = versions()
    directory = tmp_path / "cache"
    _double(directory / f"etcd-{pinned.etcd}" / "etcd", f'[ "$1" = --version ] && echo "etcd Version: {pinned.etcd[1:]}"\n')
    for command in KUBE_COMMANDS:
        _double(directory / f"kube-apiserver-{pinned.kube}" / command, f'[ "$1" = --version ] && echo "Kubernetes {pinned.kube}"\n')
    cli = directory / f"pulumi-{pinned.pulumi}"
    # `pulumi version` prints the version; `pulumi plugin install ... --file` succeeds.
    _double(cli / "pulumi", f'[ "$1" = version ] && echo "{pinned.pulumi}"; exit 0\n')
    _double(cli / "pulumi-language-python", f'[ "$1" = -version ] && echo "{pinned.pulumi}"\n')
    _double(cli / "pulumi-resource-pulumi-python", "exit 0\n")
    _double(cli / "pulumi-language-python-exec", "exit 0\n")
    provider = _double(directory / f"pulumi-resource-kubernetes-{pinned.pulumi_kubernetes}" / "pulumi-resource-kubernetes", "exit 0\n")
    Path(f"{provider}.stamp").write_text(f"version={pinned.pulumi_kubernetes}\n")
    egctl = _double(directory / f"egctl-{pinned.envoy_gateway}" / "egctl", "exit 0\n")
    Path(f"{egctl}.stamp").write_text(f"version={pinned.envoy_gateway}\n")
    _double(directory / f"helm-{pinned.helm}" / "helm", f'[ "$1" = version ] && echo "{pinned.helm}"\n')
    _double(directory / f"flux-{pinned.flux}" / "flux", f'[ "$1" = --version ] && echo "flux version {pinned.flux[1:]}"\n')
    for controller, version in flux_controller_versions().items():
        binary = _double(directory / f"flux-controllers-{pinned.flux}" / controller, "exit 0\n")
        Path(f"{binary}.stamp").write_text(f"version={version}\n")
    return directory


def cached_paths(cache: Path) -> list[str]:
    pinned = versions()
    cli = cache / f"pulumi-{pinned.pulumi}"
    return [
        str(cache / f"etcd-{pinned.etcd}" / "etcd"),
        *(str(cache / f"kube-apiserver-{pinned.kube}" / command) for command in KUBE_COMMANDS),
        str(cli / "pulumi"),
        str(cli / "pulumi-resource-pulumi-python"),
        str(cli / "pulumi-language-python-exec"),
        str(cli / "pulumi-language-python"),
        str(cache / f"pulumi-resource-kubernetes-{pinned.pulumi_kubernetes}" / "pulumi-resource-kubernetes"),
        str(cache / f"egctl-{pinned.envoy_gateway}" / "egctl"),
        str(cache / f"helm-{pinned.helm}" / "helm"),
        str(cache / f"flux-{pinned.flux}" / "flux"),
        *(str(cache / f"flux-controllers-{pinned.flux}" / controller) for controller in flux_controller_versions()),
    ]


def environment(cache: Path, path: str | None = None) -> dict[str, str]:
    return {**os.environ, "MAGICSTICK_TOOLCHAIN_CACHE": str(cache), "PATH": path or os.environ["PATH"]}


def build(cache: Path, path: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BASH, str(BUILD_SCRIPT)],
        env=environment(cache, path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        timeout=SAFETY_TIMEOUT_SECONDS,
    )


def start_build(cache: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [BASH, str(BUILD_SCRIPT)],
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
    """The stderr lines without the elapsed time a step line may end with, and step 2's Go details."""
    lines = [re.sub(r" \(at \d+ s\)$", "", line) for line in stderr.splitlines()]
    return [re.sub(r"^(build-toolchain: \[2/10\] checking Go): .*$", r"\1", line) for line in lines]


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
    """A PATH of one directory that holds symlinks to `commands` (and what bash itself needs)."""
    directory.mkdir()
    for command in commands:
        found = shutil.which(command)
        assert found is not None, f"{command} is needed to run this test"
        (directory / command).symlink_to(found)
    return str(directory)


class TestTheCachedToolchain:
    def test_cached_tools_are_printed_on_stdout_with_a_progress_line_per_step_on_stderr(self, cache: Path):
        result = build(cache)
        assert (result.returncode, result.stdout.splitlines()) == (0, cached_paths(cache))
        steps = [line for line in progress(result.stderr) if re.match(r"build-toolchain: \[\d+/11\]", line)]
        assert [int(re.match(r"build-toolchain: \[(\d+)/11\]", line).group(1)) for line in steps] == list(range(1, 12))
        assert steps[0] == f"build-toolchain: [1/11] checking the cache: {cache}"
        already = [line.removeprefix("build-toolchain: already built: ") for line in progress(result.stderr) if "already built" in line]
        paths = [path for path in cached_paths(cache) if "pulumi-resource-pulumi-python" not in path and "exec" not in path]
        kube, controllers = len(KUBE_COMMANDS), len(flux_controller_versions())
        assert already == [paths[0], " ".join(paths[1 : 1 + kube]), *paths[1 + kube : -controllers], " ".join(paths[-controllers:])]

    def test_running_it_again_changes_nothing_in_the_cache_but_its_log(self, cache: Path):
        build(cache)
        snapshot = lambda: {str(p.relative_to(cache)): p.read_bytes() for p in cache.rglob("*") if p.is_file() and p.name != "build.log"}  # noqa: E731
        before = snapshot()
        again = build(cache)
        assert again.returncode == 0
        assert snapshot() == before

    def test_the_lock_is_free_once_the_script_has_ended(self, cache: Path):
        build(cache)
        with (cache / "build.lock").open("a") as stream:
            fcntl.flock(stream, fcntl.LOCK_EX | fcntl.LOCK_NB)


class TestTheLock:
    def test_builds_started_while_another_holds_the_lock_wait_say_so_and_then_use_the_cache(self, cache: Path):
        lock_file = cache / "build.lock"
        with held_lock(lock_file):
            waiting = [start_build(cache), start_build(cache)]
            lines = [first_stderr_line(process) for process in waiting]
            still_running = [process.poll() is None for process in waiting]
        outcomes = [process.communicate(timeout=SAFETY_TIMEOUT_SECONDS) for process in waiting]
        assert lines == [f"build-toolchain: waiting for another build (lock {lock_file})\n"] * 2
        assert still_running == [True, True]
        assert [process.returncode for process in waiting] == [0, 0]
        assert [stdout.splitlines() for stdout, _ in outcomes] == [cached_paths(cache)] * 2


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
            "build-toolchain: step 'checking the required commands' failed (exit 127): "
            f"missing command {missing} (Debian package {PREFLIGHT_COMMANDS[missing]})\n"
        )
        assert not cache.exists()

    def test_several_missing_commands_are_named_together(self, tmp_path: Path):
        result = build(tmp_path / "never-created", bin_dir_with(tmp_path / "bin", []))
        assert result.returncode == 127
        assert "missing commands flock (Debian package util-linux), go (Debian package golang), sha256sum" in result.stderr

    def test_a_cache_directory_that_cannot_be_created_is_named(self, tmp_path: Path):
        (tmp_path / "a-file").write_text("")
        result = build(tmp_path / "a-file" / "cache")
        assert (result.returncode, result.stdout) == (1, "")
        assert result.stderr == (
            "build-toolchain: step 'locking the cache' failed (exit 1): "
            f"cannot create the cache directory {tmp_path}/a-file/cache\n"
        )

    def test_a_tool_that_fails_to_build_names_its_step_and_the_log(self, cache: Path, tmp_path: Path):
        pinned = versions()
        (cache / f"etcd-{pinned.etcd}" / "etcd").unlink()
        # A module proxy that refuses everything: the first download of the etcd step fails.
        result = subprocess.run(
            [BASH, str(BUILD_SCRIPT)],
            env={**environment(cache), "GOPROXY": "off", "GOMODCACHE": str(tmp_path / "empty-module-cache")},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
            timeout=SAFETY_TIMEOUT_SECONDS,
        )
        assert (result.returncode != 0, result.stdout) == (True, "")
        assert f"build-toolchain: step 'etcd {pinned.etcd}' failed" in result.stderr
        assert f"go mod tidy could not resolve etcd {pinned.etcd}; see {cache}/build.log" in result.stderr


def test_no_script_of_the_repository_installs_system_packages_or_asks_for_root():
    scripts = sorted((BUILD_SCRIPT.parents[1]).rglob("*.sh"))
    assert scripts, "scripts/ holds the toolchain build"
    for script in scripts:
        # Words, not parts of a path: a rootfs's /var/cache/apt is not the command apt.
        words = set(re.findall(r"(?<![/\w-])[A-Za-z][\w-]*(?![\w/-])", script.read_text()))
        assert not words & {"apt-get", "apt", "dpkg", "sudo", "su"}, script
