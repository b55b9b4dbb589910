"""The toolchain the suite tests with is the one users run: the CLI and provider that
scripts/toolchain/build.sh builds match the SDKs pyproject.toml pins, the lock the workspace
image installs, and the image's Pulumi CLI."""

from __future__ import annotations

import pytest

from tests.deploy.test_workspace_image import BASE_IMAGE, instructions, locked, runtime_requirements
from tests.toolchain import parse_versions, versions


def test_the_pulumi_sdk_pin_is_the_cli_the_toolchain_builds():
    (pulumi,) = [r for r in runtime_requirements() if r.name == "pulumi"]
    assert str(pulumi.specifier) == f"=={versions().pulumi.removeprefix('v')}"
    assert str(locked()["pulumi"].version) == versions().pulumi.removeprefix("v")


def test_the_kubernetes_sdk_pin_is_the_provider_the_toolchain_builds():
    (sdk,) = [r for r in runtime_requirements() if r.name == "pulumi-kubernetes"]
    assert str(sdk.specifier) == f"=={versions().pulumi_kubernetes.removeprefix('v')}"
    assert str(locked()["pulumi-kubernetes"].version) == versions().pulumi_kubernetes.removeprefix("v")


def test_the_workspace_image_runs_the_cli_the_e2e_suite_tests():
    (base,) = [instruction.arguments for instruction in instructions() if instruction.keyword == "FROM"]
    match = BASE_IMAGE.fullmatch(base)
    assert match is not None
    assert f"v{match['pulumi']}" == versions().pulumi


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A=1\n", {"A": "1"}),
        ("# comment\n\nA=v1.2.3\nB=x=y\n", {"A": "v1.2.3", "B": "x=y"}),
    ],
)
def test_the_versions_file_is_key_value_lines(text: str, expected: dict[str, str]):
    assert parse_versions(text) == expected


def test_a_versions_line_without_an_equals_sign_is_refused_naming_the_line():
    with pytest.raises(ValueError, match="not KEY=VALUE: 'oops'"):
        parse_versions("oops\n")
