"""scripts/toolchain/build.sh: cache, lock, progress and errors, without building.

Each test gives the script its own cache directory (MAGICSTICK_TOOLCHAIN_CACHE). A cache holding
a double of every tool, shell scripts that answer as the pinned versions do, sends the script
down its "already built" path for each step: nothing is compiled and nothing is downloaded.
Where a test needs the module proxy, it is a folder of its own (`GOPROXY=file://...`, with an
empty module cache) or none at all (`GOPROXY=off`): never the network.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import re
import select
import shutil
import subprocess
import tarfile
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.toolchain import BUILD_SCRIPT, REPO_ROOT, VERSIONS_FILE, parse_versions, versions

BASH = shutil.which("bash") or "/bin/bash"
PREFLIGHT_COMMANDS = {
    "flock": "util-linux",
    "go": "golang",
    "sha256sum": "coreutils",
    "cp": "coreutils",
    "tar": "tar",
    "gzip": "gzip",
}
LANGUAGE_HOST_MODULE = "github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3"
SOURCES_ENV = "MAGICSTICK_GO_SOURCES"
SAFETY_TIMEOUT_SECONDS = 60
"""Only a bound for a broken script: no test waits for time to pass."""


def _double(path: Path, script: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return path


KUBE_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "kubelet")
"""What build.sh builds from k8s.io/kubernetes, in its order."""
PKO_COMMANDS = ("manager", "agent")
"""What build.sh builds from the Pulumi Kubernetes Operator's module, in its order."""
STEP_COUNT = 15


def flux_controller_versions() -> dict[str, str]:
    """Flux's controllers in the order build.sh builds them, at their pinned versions."""
    pinned = versions()
    return {
        "source-controller": pinned.source_controller,
        "kustomize-controller": pinned.kustomize_controller,
        "helm-controller": pinned.helm_controller,
    }


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """A cache directory holding a double of every tool at its pinned version."""
    pinned = versions()
    directory = tmp_path / "cache"
    _double(
        directory / f"etcd-{pinned.etcd}" / "etcd", f'[ "$1" = --version ] && echo "etcd Version: {pinned.etcd[1:]}"\n'
    )
    for command in KUBE_COMMANDS:
        _double(
            directory / f"kube-apiserver-{pinned.kube}" / command,
            f'[ "$1" = --version ] && echo "Kubernetes {pinned.kube}"\n',
        )
    cli = directory / f"pulumi-{pinned.pulumi}"
    # `pulumi version` prints the version; `pulumi plugin install ... --file` succeeds.
    _double(cli / "pulumi", f'[ "$1" = version ] && echo "{pinned.pulumi}"; exit 0\n')
    _double(cli / "pulumi-language-python", f'[ "$1" = -version ] && echo "{pinned.pulumi}"\n')
    _double(cli / "pulumi-resource-pulumi-python", "exit 0\n")
    _double(cli / "pulumi-language-python-exec", "exit 0\n")
    provider = _double(
        directory / f"pulumi-resource-kubernetes-{pinned.pulumi_kubernetes}" / "pulumi-resource-kubernetes", "exit 0\n"
    )
    Path(f"{provider}.stamp").write_text(f"version={pinned.pulumi_kubernetes}\n")
    egctl = _double(directory / f"egctl-{pinned.envoy_gateway}" / "egctl", "exit 0\n")
    Path(f"{egctl}.stamp").write_text(f"version={pinned.envoy_gateway}\n")
    _double(directory / f"helm-{pinned.helm}" / "helm", f'[ "$1" = version ] && echo "{pinned.helm}"\n')
    _double(
        directory / f"flux-{pinned.flux}" / "flux", f'[ "$1" = --version ] && echo "flux version {pinned.flux[1:]}"\n'
    )
    for controller, version in flux_controller_versions().items():
        binary = _double(directory / f"flux-controllers-{pinned.flux}" / controller, "exit 0\n")
        Path(f"{binary}.stamp").write_text(f"version={version}\n")
    _double(
        directory / f"coredns-{pinned.coredns}" / "coredns",
        f'[ "$1" = -version ] && echo "CoreDNS-{pinned.coredns[1:]}"\n',
    )
    for command in PKO_COMMANDS:
        binary = _double(directory / f"pulumi-kubernetes-operator-{pinned.pko}" / command, "exit 0\n")
        Path(f"{binary}.stamp").write_text(f"version={pinned.pko}\n")
    kubeai = _double(directory / f"kubeai-{pinned.kubeai}" / "kubeai", "exit 0\n")
    Path(f"{kubeai}.stamp").write_text(f"version={pinned.kubeai}\n")
    ollama = _double(
        directory / f"ollama-{pinned.ollama}" / "ollama",
        f'[ "$1" = --version ] && echo "ollama version is {pinned.ollama[1:]}"\n',
    )
    Path(f"{ollama}.stamp").write_text(f"version={pinned.ollama}\n")
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
        str(cache / f"coredns-{pinned.coredns}" / "coredns"),
        *(str(cache / f"pulumi-kubernetes-operator-{pinned.pko}" / command) for command in PKO_COMMANDS),
        str(cache / f"kubeai-{pinned.kubeai}" / "kubeai"),
        str(cache / f"ollama-{pinned.ollama}" / "ollama"),
    ]


def environment(cache: Path, path: str | None = None) -> dict[str, str]:
    """The caller's environment with this cache, and no folder of Go sources unless a test gives one."""
    inherited = {key: value for key, value in os.environ.items() if key != SOURCES_ENV}
    return {**inherited, "MAGICSTICK_TOOLCHAIN_CACHE": str(cache), "PATH": path or os.environ["PATH"]}


def build(cache: Path, path: str | None = None, **settings: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BASH, str(BUILD_SCRIPT)],
        env={**environment(cache, path), **settings},
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
    return [re.sub(r"^(build-toolchain: \[2/\d+\] checking Go): .*$", r"\1", line) for line in lines]


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
        steps = [line for line in progress(result.stderr) if re.match(rf"build-toolchain: \[\d+/{STEP_COUNT}\]", line)]
        assert [int(re.match(rf"build-toolchain: \[(\d+)/{STEP_COUNT}\]", line).group(1)) for line in steps] == list(
            range(1, STEP_COUNT + 1)
        )
        assert steps[0] == f"build-toolchain: [1/{STEP_COUNT}] checking the cache: {cache}"
        already = [
            line.removeprefix("build-toolchain: already built: ")
            for line in progress(result.stderr)
            if "already built" in line
        ]
        paths = [
            path for path in cached_paths(cache) if "pulumi-resource-pulumi-python" not in path and "exec" not in path
        ]
        kube, controllers, operator = len(KUBE_COMMANDS), len(flux_controller_versions()), len(PKO_COMMANDS)
        flux_end = len(paths) - 3 - operator
        coredns, kubeai, ollama = paths[flux_end], paths[-2], paths[-1]
        assert already == [
            paths[0],
            " ".join(paths[1 : 1 + kube]),
            *paths[1 + kube : flux_end - controllers],
            " ".join(paths[flux_end - controllers : flux_end]),
            coredns,
            " ".join(paths[flux_end + 1 : -2]),
            kubeai,
            ollama,
        ]

    def test_running_it_again_changes_nothing_in_the_cache_but_its_log(self, cache: Path):
        build(cache)

        def snapshot() -> dict[str, bytes]:
            return {
                str(p.relative_to(cache)): p.read_bytes()
                for p in cache.rglob("*")
                if p.is_file() and p.name != "build.log"
            }

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
        assert (
            "missing commands flock (Debian package util-linux), go (Debian package golang), sha256sum" in result.stderr
        )

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


def pinned(key: str) -> str:
    return parse_versions(VERSIONS_FILE.read_text())[key]


def language_host_module_version() -> str:
    return pinned("PULUMI_LANGUAGE_PYTHON_MODULE_VERSION")


def archive_name() -> str:
    return pinned("PULUMI_LANGUAGE_PYTHON_ARCHIVE")


def failures(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if " failed (exit " in line]


def file_proxy(root: Path, module: str, version: str, files: dict[str, str]) -> str:
    """A module proxy in a folder (GOPROXY=file://...) that serves `module@version` with `files`."""
    served = root / module / "@v"
    served.mkdir(parents=True)
    (served / f"{version}.info").write_text(json.dumps({"Version": version, "Time": "2026-08-28T09:51:27Z"}))
    (served / f"{version}.mod").write_text(files["go.mod"])
    with zipfile.ZipFile(served / f"{version}.zip", "w") as archive:
        for name, text in files.items():
            archive.writestr(f"{module}@{version}/{name}", text)
    return root.as_uri()


def offline(tmp_path: Path, proxy: str = "off") -> dict[str, str]:
    """Go settings that reach no network: this proxy only, no checksum database, an empty module cache."""
    return {"GOPROXY": proxy, "GOSUMDB": "off", "GOMODCACHE": str(tmp_path / "module-cache")}


def the_archive() -> Path | None:
    """The pinned archive of the language host, where this machine has it ($MAGICSTICK_GO_SOURCES)."""
    folder = os.environ.get(SOURCES_ENV)
    path = Path(folder) / archive_name() if folder else None
    return path if path is not None and path.is_file() else None


@pytest.fixture
def without_language_host(cache: Path) -> Path:
    """The cache of doubles, but for the language host: step 6 has to find its source."""
    (cache / f"pulumi-{versions().pulumi}" / "pulumi-language-python").unlink()
    return cache


class TestGoSourcesTheProxyRefuses:
    def test_a_refused_source_without_a_folder_of_archives_stops_the_build_in_one_line_naming_both(
        self, without_language_host: Path, tmp_path: Path
    ):
        result = build(without_language_host, **offline(tmp_path))
        assert (result.returncode, result.stdout) == (1, "")
        (line,) = failures(result.stderr)
        assert line.startswith(
            f"build-toolchain: step 'pulumi-language-python {versions().pulumi}' failed (exit 1): the module proxy refuses {LANGUAGE_HOST_MODULE}@{language_host_module_version()} ("
        )
        assert line.endswith(
            f" and {SOURCES_ENV} is not set (the folder holding {archive_name()}); see {without_language_host}/build.log"
        )

    def test_a_folder_without_the_archive_is_named(self, without_language_host: Path, tmp_path: Path):
        folder = tmp_path / "sources"
        folder.mkdir()
        result = build(without_language_host, **offline(tmp_path), **{SOURCES_ENV: str(folder)})
        (line,) = failures(result.stderr)
        assert f"and {SOURCES_ENV}={folder} holds no {archive_name()}" in line

    def test_an_archive_whose_sha256_is_not_the_pinned_one_is_refused_and_never_unpacked(
        self, without_language_host: Path, tmp_path: Path
    ):
        folder = tmp_path / "sources"
        folder.mkdir()
        forged = folder / archive_name()
        with tarfile.open(forged, "w:gz") as archive:
            data = b"package main\n"
            entry = tarfile.TarInfo(
                f"{archive_name().removesuffix('.tar.gz')}/sdk/python/cmd/pulumi-language-python/main.go"
            )
            entry.size = len(data)
            archive.addfile(entry, io.BytesIO(data))
        result = build(without_language_host, **offline(tmp_path), **{SOURCES_ENV: str(folder)})
        (line,) = failures(result.stderr)
        digest = hashlib.sha256(forged.read_bytes()).hexdigest()
        assert (
            f"{forged} has sha256 {digest}, versions.env pins {pinned('PULUMI_LANGUAGE_PYTHON_ARCHIVE_SHA256')}" in line
        )
        assert not (without_language_host / "sources").exists()

    @pytest.mark.skipif(
        the_archive() is None,
        reason=f"the pinned archive is not on this machine (${SOURCES_ENV}); a machine with internet needs none",
    )
    def test_the_pinned_archive_is_unpacked_into_the_cache_and_built_from_there(
        self, without_language_host: Path, tmp_path: Path
    ):
        archive = the_archive()
        assert archive is not None
        # No proxy at all: the build gets as far as resolving the language host's dependencies.
        result = build(without_language_host, **offline(tmp_path), **{SOURCES_ENV: str(archive.parent)})
        unpacked = without_language_host / "sources" / archive_name().removesuffix(".tar.gz")
        assert f"; pulumi-language-python from {archive} (sha256 as pinned), unpacked into {unpacked}" in result.stderr
        assert (unpacked / "sdk" / "python" / "cmd" / "pulumi-language-python" / "main.go").is_file()
        (line,) = failures(result.stderr)
        assert "go mod tidy could not resolve the language host" in line

    def test_a_source_the_proxy_serves_is_built_from_the_proxy_without_a_folder_of_archives(
        self, without_language_host: Path, tmp_path: Path
    ):
        version = language_host_module_version()
        # A stand-in main package that answers -version as the language host does, and needs only Go's own library.
        main = f'package main\n\nimport "fmt"\n\nfunc main() {{ fmt.Println("{versions().pulumi}") }}\n'
        proxy = file_proxy(
            tmp_path / "proxy",
            LANGUAGE_HOST_MODULE,
            version,
            {"go.mod": f"module {LANGUAGE_HOST_MODULE}\n\ngo 1.26\n", "main.go": main},
        )
        result = build(without_language_host, **offline(tmp_path, proxy))
        assert result.returncode == 0, result.stderr
        assert (
            f"build-toolchain: pulumi-language-python from the module proxy: {LANGUAGE_HOST_MODULE}@{version}"
            in result.stderr.splitlines()
        )
        host = without_language_host / f"pulumi-{versions().pulumi}" / "pulumi-language-python"
        assert str(host) in result.stdout.splitlines()
        assert f"source=proxy {LANGUAGE_HOST_MODULE}@{version}" in Path(f"{host}.stamp").read_text().splitlines()
        assert not (without_language_host / "sources").exists()


def test_only_the_system_packages_script_installs_system_packages_or_asks_for_root():
    system_packages = BUILD_SCRIPT.parents[1] / "system-packages.sh"
    scripts = sorted({*BUILD_SCRIPT.parents[1].rglob("*.sh"), REPO_ROOT / ".ci" / "run", REPO_ROOT / "Makefile"})
    assert system_packages in scripts and BUILD_SCRIPT in scripts
    for script in scripts:
        # Words, not parts of a path: a rootfs's /var/cache/apt is not the command apt.
        words = set(re.findall(r"(?<![/\w-])[A-Za-z][\w-]*(?![\w/-])", script.read_text()))
        package_tools = words & {"apt-get", "apt", "dpkg", "sudo", "su"}
        if script == system_packages:
            assert package_tools == {"apt-get", "sudo"}
        else:
            assert not package_tools, script
