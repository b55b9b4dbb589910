"""README.md's workstation commands, word for word, in a fresh checkout: the way a user runs the
program from a workstation against a cluster.

The checkout holds the files git would commit (tracked, and untracked but not ignored), copied
into a temporary directory: no `venv`, no caches, nothing built. The commands are read from the
README's "Running it against a cluster" block and each runs in `bash` (so `~` and the comments
are the shell's), in the checkout, with:
- the toolchain's directory first on `PATH`: the `pulumi` it built, its Python language host and
  plugin scripts beside it, as the README's "Getting the Pulumi CLI" tells a user to set it up,
  with the Kubernetes provider installed from the file the toolchain built, as it says too;
- a home of its own whose `~/.kube/config` is the admin's kubeconfig of the test API server (the
  file the README's `pulumi config set` names), and whose `~/.pulumi` holds the CLI's plugins;
- a local file backend and the passphrase secrets provider, as the e2e suite runs them;
- `PULUMI_SKIP_CONFIRMATIONS`: the "yes" a user types at `pulumi up`'s question in a terminal.
`./venv` is not made beforehand: as the README says, Pulumi creates it and installs
`requirements.txt` into it (the first `pulumi preview`), from the package index pip is set up
with, and the user's pip cache.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from api.crdgen import load_committed_crds
from providers.kinds import CRD
from providers.kube import KubeClient
from tests import toolchain
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo
from tests.e2e.engine import COMMAND_TIMEOUT, REPO_ROOT

README: Final = REPO_ROOT / "README.md"
SECTION: Final = "## Running it against a cluster"
STACK: Final = "dev"


def workstation_commands(readme: str) -> list[str]:
    """The first indented block of the README's "Running it against a cluster" section, line by
    line, as written (comments included). Pure."""
    section = readme.split(f"\n{SECTION}\n", 1)[1]
    block = re.search(r"(?:\n {4}\S[^\n]*)+", section)
    assert block is not None, f"no indented command block under {SECTION!r} in README.md"
    return [line.removeprefix("    ") for line in block.group(0).strip("\n").splitlines()]


def fresh_checkout(target: Path) -> Path:
    """The files git would commit, as they are in the working tree, copied to `target`."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO_ROOT / name
        if source.exists() or source.is_symlink():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name, follow_symlinks=False)
    return target


@dataclass(frozen=True)
class Workstation:
    checkout: Path
    home: Path
    commands: list[str]
    results: list[subprocess.CompletedProcess[str]]

    def output(self, command: str) -> str:
        """What the README's line that starts with `command` printed."""
        (index,) = [i for i, line in enumerate(self.commands) if line.startswith(f"{command} ")]
        result = self.results[index]
        return result.stdout + result.stderr


def _environment(home: Path, state: Path) -> dict[str, str]:
    keep = {
        key: value for key, value in os.environ.items() if not key.startswith(("PULUMI_", "KUBECONFIG", "VIRTUAL_ENV"))
    }
    return {
        **keep,
        "PATH": f"{toolchain.pulumi().parent}{os.pathsep}{keep.get('PATH', '')}",
        "HOME": str(home),
        "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip")),
        "PULUMI_BACKEND_URL": state.as_uri(),
        "PULUMI_CONFIG_PASSPHRASE": "a workstation passphrase",
        "PULUMI_SKIP_CONFIRMATIONS": "true",
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "NO_COLOR": "1",
    }


def _shell(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", line],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )


@pytest.fixture(scope="module")
def workstation(engine_cluster: ClusterInfo, demo: list[dict], tmp_path_factory: pytest.TempPathFactory) -> Workstation:
    """The README's commands run in order in a fresh checkout; stops at the first that fails."""
    root = tmp_path_factory.mktemp("workstation")
    checkout = fresh_checkout(root / "magicstick")
    home, state = root / "home", root / "state"
    (home / ".kube").mkdir(parents=True)
    state.mkdir()
    shutil.copy(engine_cluster.kubeconfig_path(ADMIN_USER), home / ".kube" / "config")
    env = _environment(home, state)
    provider = toolchain.versions().pulumi_kubernetes.removeprefix("v")
    installed = _shell(
        shlex.join(
            [
                "pulumi",
                "plugin",
                "install",
                "resource",
                "kubernetes",
                provider,
                "--file",
                str(toolchain.kubernetes_provider()),
            ]
        ),
        checkout,
        env,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    commands = workstation_commands(README.read_text())
    results = []
    for line in commands:
        results.append(_shell(line, checkout, env))
        if results[-1].returncode != 0:
            break
    return Workstation(checkout=checkout, home=home, commands=commands, results=results)


def test_the_readme_gives_a_workstation_stack_init_config_set_preview_diff_and_up():
    commands = [line.split("#")[0].split() for line in workstation_commands(README.read_text())]
    assert [words[:2] for words in commands] == [
        ["pulumi", "stack"],
        ["pulumi", "config"],
        ["pulumi", "preview"],
        ["pulumi", "up"],
    ]
    assert commands[0] == ["pulumi", "stack", "init", STACK]
    assert commands[2] == ["pulumi", "preview", "--diff"]


def test_every_workstation_command_of_the_readme_succeeds_in_a_fresh_checkout(workstation: Workstation):
    failed = [
        (line, result.returncode, (result.stdout + result.stderr)[-4000:])
        for line, result in zip(workstation.commands, workstation.results, strict=False)
        if result.returncode != 0
    ]
    assert not failed, failed
    assert len(workstation.results) == len(workstation.commands)


def test_pulumi_creates_the_checkouts_venv_from_requirements_txt_as_the_readme_says(workstation: Workstation):
    assert "Creating virtual environment" in workstation.output("pulumi preview --diff")
    python = workstation.checkout / "venv" / "bin" / "python"
    assert python.is_file()
    # Isolated (-I) and from the home: only the venv's own installation can find the package.
    imported = subprocess.run(
        [str(python), "-I", "-c", "import program; print(program.__file__)"],
        cwd=workstation.home,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(imported.stdout.strip()).is_relative_to(workstation.checkout)


def test_the_preview_shows_the_programs_resources_to_create_and_the_up_applies_them(
    workstation: Workstation, kube: KubeClient
):
    assert re.search(r"\+ \d+ to create", workstation.output("pulumi preview --diff"))
    served = {crd["metadata"]["name"] for crd in kube.list(CRD)}
    ours = {crd["metadata"]["name"] for crd in load_committed_crds()}
    assert ours <= served, sorted(ours - served)


def test_the_checkout_keeps_the_stack_config_the_readme_set(workstation: Workstation):
    stack_file = workstation.checkout / f"Pulumi.{STACK}.yaml"
    assert "magicstick:kubeconfig: " + str(workstation.home / ".kube" / "config") in stack_file.read_text()
