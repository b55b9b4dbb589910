"""Every image of the repository installs exactly requirements.lock, with hashes, and then the
project without resolving anything: what runs in a Pod is what the lock pins.

The Containerfiles are read as instructions (tests/deploy/containerfiles.py); every Containerfile
in the repository is checked, so a new image cannot bypass the lock unnoticed.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from tests.deploy.containerfiles import instructions, lock_python, pip_installs, repository_containerfiles
from tests.support.vendored import REPOSITORY_ROOT

PYTHON_BASE = re.compile(
    r"(?:docker\.io/)?(?:library/python:(?P<python>3\.\d+)[.\d]*-slim-\w+|pulumi/pulumi-python-(?P<pulumi_python>3\.\d+):[\d.]+)(?:@sha256:[0-9a-f]{64})?"
)
IMAGES = repository_containerfiles()


def _pyproject() -> dict[str, Any]:
    with (REPOSITORY_ROOT / "pyproject.toml").open("rb") as stream:
        return tomllib.load(stream)


def _requirement_files(command: list[str]) -> list[str]:
    return [command[index + 1] for index, word in enumerate(command[:-1]) if word in ("-r", "--requirement")]


def test_the_repository_defines_the_workspace_image_and_the_one_image_of_the_services():
    assert {str(path) for path in IMAGES} >= {"deploy/workspace/Containerfile", "services/Containerfile"}


@pytest.mark.parametrize("containerfile", IMAGES, ids=str)
class TestEveryImage:
    def test_its_one_install_with_a_requirements_file_is_requirements_lock_with_hashes_and_wheels_only(
        self, containerfile: Path
    ):
        with_a_file = [command for command in pip_installs(containerfile) if _requirement_files(command)]

        assert len(with_a_file) == 1, with_a_file
        (command,) = with_a_file
        assert [Path(name).name for name in _requirement_files(command)] == ["requirements.lock"]
        assert "--require-hashes" in command
        assert "--only-binary=:all:" in command
        assert "--no-deps" not in command and "-e" not in command

    def test_the_lock_it_installs_is_the_repositorys_copied_into_the_image(self, containerfile: Path):
        (install,) = [command for command in pip_installs(containerfile) if _requirement_files(command)]
        (installed,) = _requirement_files(install)
        copies = [i.arguments.split() for i in instructions(containerfile) if i.keyword == "COPY"]

        assert any(
            "requirements.lock" in words[:-1]
            and (words[-1] in (installed, "./") or words[-1].rstrip("/") == str(Path(installed).parent))
            for words in copies
        ), copies

    def test_every_other_install_is_the_project_alone_without_dependencies_or_build_isolation(
        self, containerfile: Path
    ):
        others = [command for command in pip_installs(containerfile) if not _requirement_files(command)]

        assert others, "the project itself is never installed"
        for command in others:
            assert [word for word in command[2:] if not word.startswith("-")] == ["."], command
            assert {"--no-deps", "--no-build-isolation"} <= set(command), command

    def test_the_lock_is_installed_before_the_project(self, containerfile: Path):
        installs = pip_installs(containerfile)

        assert _requirement_files(installs[0]), installs

    def test_its_python_is_the_one_the_lock_was_compiled_with(self, containerfile: Path):
        (base,) = [
            instruction.arguments for instruction in instructions(containerfile) if instruction.keyword == "FROM"
        ]
        match = PYTHON_BASE.fullmatch(base)

        assert match, base
        assert (match["python"] or match["pulumi_python"]) == lock_python()


def test_the_pyjwt_range_excludes_the_releases_whose_issuer_check_can_be_bypassed():
    """CVE-2024-53861: PyJWT 2.10.0 compared a string `iss` as a substring of the expected issuer."""
    (pyjwt,) = [
        Requirement(text) for text in _pyproject()["project"]["dependencies"] if Requirement(text).name == "pyjwt"
    ]

    assert not pyjwt.specifier.contains("2.10.0")
    assert pyjwt.specifier.contains("2.10.1")


LOCAL_BUILD = REPOSITORY_ROOT / "scripts" / "images" / "build.sh"


def _local_build_installs() -> list[list[str]]:
    """The `pip install` commands of scripts/images/build.sh, as words (quotes and variables kept)."""
    commands = (
        line.split("pip' install", 1)[1].split("&&")[0].split('"')[0]
        for line in LOCAL_BUILD.read_text().splitlines()
        if "pip' install" in line
    )
    return [command.split() for command in commands]


def test_the_local_image_build_installs_the_lock_with_the_containerfiles_flags_then_the_project_alone():
    """scripts/images/build.sh, the build without Docker, installs as the Containerfiles do; what
    its images then hold is checked on the real node (tests/node/test_service_images.py)."""
    lock, project = _local_build_installs()

    assert {"--require-hashes", "--only-binary=:all:", "-r", "/tmp/requirements.lock"} <= set(lock), lock
    assert "--no-deps" not in lock
    assert {"--no-deps", "--no-build-isolation", "."} <= set(project), project
    assert 'cp "$REPOSITORY/requirements.lock" "$rootfs/tmp/requirements.lock"' in LOCAL_BUILD.read_text()
