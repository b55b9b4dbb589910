"""The services' one image definition: services/Containerfile, built once per service, the
service chosen by build arguments. Read as instructions (tests/deploy/containerfiles.py); no
image is built here.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest

from services.access_guard.settings import DEFAULT_LISTEN
from services.flags import listen_address
from services.reconcile_trigger.settings import DEFAULT_PROBE_ADDRESS
from tests.deploy.containerfiles import instructions, pip_installs, repository_containerfiles
from tests.support.vendored import REPOSITORY_ROOT

SERVICES_CONTAINERFILE = Path("services/Containerfile")
BUILD_COMMAND = re.compile(r"^docker build -f services/Containerfile\b.*?\.$", re.MULTILINE | re.DOTALL)
SERVICES = [
    # (the service's README, its console script, the port its image exposes)
    ("services/access_guard/README.md", "magicstick-access-guard", listen_address(DEFAULT_LISTEN, "--listen").port),
    ("services/reconcile_trigger/README.md", "magicstick-reconcile-trigger", DEFAULT_PROBE_ADDRESS.port),
]


def _console_scripts() -> dict[str, str]:
    with (REPOSITORY_ROOT / "pyproject.toml").open("rb") as stream:
        return tomllib.load(stream)["project"]["scripts"]


def _build_arguments(readme: str) -> dict[str, str]:
    """The `--build-arg NAME=VALUE` pairs of the one `docker build` command the README gives."""
    (command,) = BUILD_COMMAND.findall((REPOSITORY_ROOT / readme).read_text())
    words = shlex.split(command.replace("\\\n", " "))
    return dict(words[index + 1].split("=", 1) for index, word in enumerate(words[:-1]) if word == "--build-arg")


def test_every_service_is_built_from_the_one_services_containerfile():
    assert [path for path in repository_containerfiles() if path.parts[0] == "services"] == [SERVICES_CONTAINERFILE]


def test_the_service_arguments_come_after_every_install_so_both_images_share_those_layers():
    steps = instructions(SERVICES_CONTAINERFILE)
    arguments = [index for index, step in enumerate(steps) if step.keyword == "ARG"]
    installs = [index for index, step in enumerate(steps) if step.keyword == "RUN" and "pip install" in step.arguments]

    assert [steps[index].arguments for index in arguments] == ["SERVICE", "PORT"]
    assert installs and min(arguments) > max(installs)
    assert len(pip_installs(SERVICES_CONTAINERFILE)) == 2


def test_the_entry_point_is_the_console_script_the_service_argument_names():
    steps = instructions(SERVICES_CONTAINERFILE)
    (entry_point,) = [step.arguments for step in steps if step.keyword == "ENTRYPOINT"]
    (exposed,) = [step.arguments for step in steps if step.keyword == "EXPOSE"]
    runs = " ".join(step.arguments for step in steps if step.keyword == "RUN")

    assert entry_point == '["magicstick-service"]'
    assert 'ln -s "$(command -v "magicstick-${SERVICE}")" /usr/local/bin/magicstick-service' in runs
    assert exposed == "${PORT}"


@pytest.mark.parametrize(("readme", "script", "port"), SERVICES, ids=[script for _, script, _ in SERVICES])
def test_each_services_readme_builds_its_console_script_and_exposes_the_port_it_listens_on(readme, script, port):
    arguments = _build_arguments(readme)

    assert f"magicstick-{arguments['SERVICE']}" == script
    assert script in _console_scripts()
    assert arguments["PORT"] == str(port)


@pytest.mark.parametrize(
    "path", ["README.md", "deploy/stack.yaml", "deploy/reconcile-trigger.yaml", *(readme for readme, _, _ in SERVICES)]
)
def test_every_containerfile_the_documents_name_exists(path):
    named = set(re.findall(r"[\w./-]*Containerfile[\w.-]*", (REPOSITORY_ROOT / path).read_text()))

    assert sorted(name for name in named if "/" in name and not (REPOSITORY_ROOT / name).is_file()) == []
