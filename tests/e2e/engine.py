"""The real Pulumi CLI, the real Kubernetes provider and the project's real program, for the e2e suite.

`PulumiProject` is one project directory and one local file backend: `Pulumi.yaml` copied from
the repository unmodified, `__main__.py` and `venv` linked from it, so that `pulumi config set`
writes its stack file there and never into the checkout. Every command runs the toolchain's
`pulumi` with:

- `PULUMI_HOME` of its own, holding only the Kubernetes provider installed from the file the
  toolchain built (`pulumi plugin install resource kubernetes VERSION --file ...`);
- `PULUMI_IGNORE_AMBIENT_PLUGINS` and no automatic plugin download, so a provider of another
  version than the pinned SDK asks for fails loudly instead of being fetched;
- the local file backend (`file://`) with the passphrase secrets provider, the way the
  workspace image and the README set it up;
- the program run by the real Python language host, `pulumi-language-python`, which the CLI
  finds beside itself (the toolchain builds it there), with `Pulumi.yaml`'s runtime options:
  `venv/bin/python` of the project directory runs `__main__.py`, and the engine hands the same
  options to the dynamic providers' process (`PULUMI_RUNTIME_VIRTUALENV`).

Nothing here interprets what the engine does: tests read its JSON output, its event log and the
state `pulumi stack export` prints.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from tests import toolchain

REPO_ROOT: Final = toolchain.REPO_ROOT
COMMAND_TIMEOUT: Final = 900.0
"""A bound for a broken engine only; no test waits for time to pass."""

JsonObject = dict[str, Any]


class PulumiFailed(Exception):
    """A pulumi command exited with a non-zero status; carries its output."""

    def __init__(self, args: Sequence[str], result: subprocess.CompletedProcess[str]) -> None:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-60:])
        super().__init__(f"pulumi {' '.join(args)} exited with {result.returncode}:\n{tail}")
        self.result = result


@dataclass(frozen=True)
class Run:
    """What one pulumi command printed and the engine events it logged."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    events: tuple[JsonObject, ...] = ()

    def json(self) -> Any:
        return json.loads(self.stdout)

    def operations(self) -> dict[str, str]:
        """URN -> step op of every resource step the engine reported (`--event-log`), `same` included."""
        steps: dict[str, str] = {}
        for event in self.events:
            outputs = event.get("resOutputsEvent") or event.get("resOpFailedEvent")
            pre = event.get("resourcePreEvent")
            chosen = pre or outputs
            if chosen:
                metadata = chosen["metadata"]
                steps[metadata["urn"]] = metadata["op"]
        return steps


@dataclass
class PulumiProject:
    """A project directory and file backend for the real program, driven by the real CLI."""

    root: Path
    stack: str = "e2e"
    source: Path = REPO_ROOT
    """The directory of the program (`Pulumi.yaml`, `__main__.py`): the repository's, or a benchmark's."""
    settings: dict[str, str] = field(default_factory=dict)
    """Engine settings (`PULUMI_*` variables) for every command, beside the suite's own: a benchmark's tuning."""
    passphrase: str = field(default_factory=lambda: secrets.token_urlsafe(24))

    @property
    def project_dir(self) -> Path:
        return self.root / "project"

    @property
    def home(self) -> Path:
        return self.root / "pulumi-home"

    @property
    def backend_dir(self) -> Path:
        return self.root / "state"

    @classmethod
    def create(
        cls, root: Path, *, stack: str = "e2e", source: Path = REPO_ROOT, passphrase: str | None = None
    ) -> PulumiProject:
        """A new project under `root` with an initialised stack and the provider plugin installed."""
        project = (
            cls(root=root, stack=stack, source=source)
            if passphrase is None
            else cls(root=root, stack=stack, source=source, passphrase=passphrase)
        )
        project.project_dir.mkdir(parents=True)
        project.backend_dir.mkdir()
        shutil.copy2(source / "Pulumi.yaml", project.project_dir / "Pulumi.yaml")
        (project.project_dir / "__main__.py").symlink_to(source / "__main__.py")
        (project.project_dir / "venv").symlink_to(REPO_ROOT / "venv")
        project.install_provider()
        project.pulumi("stack", "init", stack, "--secrets-provider", "passphrase")
        return project

    def install_provider(self) -> None:
        version = toolchain.versions().pulumi_kubernetes.removeprefix("v")
        self.pulumi(
            "plugin", "install", "resource", "kubernetes", version, "--file", str(toolchain.kubernetes_provider())
        )

    def environment(self) -> dict[str, str]:
        cli = toolchain.pulumi()
        # The CLI runs the program through the language host beside it: missing, say how to build it.
        toolchain.python_language_host()
        keep = {key: value for key, value in os.environ.items() if not key.startswith(("PULUMI_", "KUBECONFIG"))}
        return {
            **keep,
            # The CLI finds pulumi-language-python and pulumi-resource-pulumi-python (dynamic
            # providers) beside itself; the language host finds pulumi-language-python-exec there.
            "PATH": f"{cli.parent}{os.pathsep}{keep.get('PATH', '')}",
            "PULUMI_HOME": str(self.home),
            "PULUMI_BACKEND_URL": self.backend_dir.as_uri(),
            "PULUMI_CONFIG_PASSPHRASE": self.passphrase,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_IGNORE_AMBIENT_PLUGINS": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK": "true",
            # `--event-log` (the engine's events as JSON lines, what Automation API reads) is
            # offered only with debug commands on.
            "PULUMI_DEBUG_COMMANDS": "true",
            "NO_COLOR": "1",
            **self.settings,
        }

    def pulumi(self, *args: str, check: bool = True, events: bool = False) -> Run:
        """Run `pulumi ARGS` in the project directory."""
        command = [str(toolchain.pulumi()), *args]
        if args[0] != "plugin":
            command.append("--non-interactive")
        event_log = self.root / f"events-{secrets.token_hex(4)}.jsonl"
        if events:
            command += ["--event-log", str(event_log)]
        result = subprocess.run(
            command,
            cwd=self.project_dir,
            env=self.environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
        logged = (
            tuple(json.loads(line) for line in event_log.read_text().splitlines() if line.strip())
            if events and event_log.exists()
            else ()
        )
        if check and result.returncode != 0:
            raise PulumiFailed(args, result)
        return Run(
            args=tuple(args), returncode=result.returncode, stdout=result.stdout, stderr=result.stderr, events=logged
        )

    def config_set(self, values: Mapping[str, str], *, secret: Sequence[str] = ()) -> None:
        for key, value in values.items():
            flags = ["--secret"] if key in secret else ["--plaintext"]
            self.pulumi("config", "set", key, value, *flags)

    def export(self) -> JsonObject:
        exported: JsonObject = self.pulumi("stack", "export", "--show-secrets=false").json()  # a JSON object
        return exported
