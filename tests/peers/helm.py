"""The real `helm` (scripts/toolchain/build.sh), run on a chart with given values.

Values go to Helm as a file, exactly as helm-controller hands them over: Helm checks them
against the chart's values.schema.json and renders the templates for the test API server's
Kubernetes version (`--kube-version`). Helm v4, the major helm-controller renders with.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests import toolchain

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class HelmAnswer:
    returncode: int
    stdout: str
    stderr: str


def helm(*arguments: str, values: Mapping[str, Any] | None = None) -> HelmAnswer:
    with tempfile.TemporaryDirectory(prefix="magicstick-helm-") as directory:
        command = [str(toolchain.helm()), *arguments]
        if values is not None:
            values_file = Path(directory) / "values.json"
            values_file.write_text(json.dumps(values))
            command += ["--values", str(values_file)]
        answer = subprocess.run(
            command, capture_output=True, text=True, check=False, env={"HOME": directory, "PATH": "/usr/bin:/bin"}
        )
    return HelmAnswer(answer.returncode, answer.stdout, answer.stderr)


def template(chart: Path, values: Mapping[str, Any], *, release: str, namespace: str) -> list[JsonObject]:
    """Every object `helm template` renders; a failure names the chart and Helm's message."""
    answer = helm(
        "template",
        release,
        str(chart),
        "--namespace",
        namespace,
        "--kube-version",
        toolchain.versions().kube,
        values=values,
    )
    assert answer.returncode == 0, f"helm template {chart.name}: {answer.stderr}"
    return [doc for doc in yaml.safe_load_all(answer.stdout) if doc]


def lint(chart: Path, values: Mapping[str, Any], *, namespace: str) -> HelmAnswer:
    """`helm lint --strict`: warnings fail too."""
    return helm(
        "lint",
        "--strict",
        str(chart),
        "--namespace",
        namespace,
        "--kube-version",
        toolchain.versions().kube,
        values=values,
    )
