"""The service images built without a registry (scripts/images/build.sh) run on the real node.

- What the image holds: a Pod of each service image lists the distributions its virtualenv
  has; they are exactly requirements.lock's pins, the project itself and pip (which the
  Containerfiles' bases carry too). That is what the Containerfiles install, from the same lock
  with the same flags (tests/deploy/test_images_install_the_lock.py reads both).
- The workspace image: the same, in /magicstick/venv, the Pulumi CLI of the pinned version with
  the Python language host beside it and the Kubernetes provider plugin installed, and the
  program importable. tests/node/test_pko_stack.py runs the program in it under the operator.
- The access guard as the program plans it (planning.instances.guard): its ConfigMap, Service,
  Deployment, PodDisruptionBudget and NetworkPolicy applied as the program applies them, the
  image set to the local build. Its Pods start from that image (the kubelet reports the image ID
  of the configuration it was built with), their readiness probe passes, the Deployment rolls out, and the program's
  own readiness rule says the guard is ready. The guard answers /healthz on the Pod's address.
- The NetworkPolicy is accepted but not enforced: Debian's bridge plugin has no policy engine
  (README, "A real node").
"""

from __future__ import annotations

import re
from typing import Any, Final

import httpx
import pytest

from planning.access_settings import AccessSettings
from planning.frozen import thaw
from planning.instances.guard import guard_objects, guard_readiness
from planning.readiness import Readiness
from planning.snapshot import Snapshot
from providers.kinds import CONFIG_MAP, DEPLOYMENT, NETWORK_POLICY, POD, POD_DISRUPTION_BUDGET, SERVICE
from tests.deploy.containerfiles import LOCK_FILE
from tests.images import LocalImage
from tests.node.node import RealNode
from tests.node.rollout import ROLLOUT_SECONDS, deployment_ready, run_once, wait_for
from tests.toolchain import versions

SERVICE_VENV: Final = "/opt/magicstick/venv"
WORKSPACE_VENV: Final = "/magicstick/venv"
"""deploy/workspace/Containerfile's venv, the one Pulumi.yaml names."""
PROJECT_DISTRIBUTION: Final = "magicstick"
PIN: Final = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s\\;]+)", re.MULTILINE)
KINDS: Final = {kind.kind: kind for kind in (CONFIG_MAP, SERVICE, DEPLOYMENT, POD_DISRUPTION_BUDGET, NETWORK_POLICY)}
LIST_DISTRIBUTIONS: Final = (
    "import importlib.metadata as m, pathlib; "
    "pathlib.Path('/dev/termination-log').write_text('\\n'.join(sorted(f\"{d.metadata['Name']}=={d.version}\" for d in m.distributions())))"
)


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _locked() -> dict[str, str]:
    return {_normalized(match["name"]): match["version"] for match in PIN.finditer(LOCK_FILE.read_text())}


def _terminated(node: RealNode, namespace: str, image: LocalImage, command: list[str]) -> dict[str, Any]:
    """The terminated state of a Pod that ran `command` once in `image` (its message: what it wrote to the termination log)."""
    ended = run_once(node, namespace, {"image": image.reference, "command": command})
    (status,) = ended["status"]["containerStatuses"]
    terminated = status["state"]["terminated"]
    assert status["imageID"] == image.config_digest()
    return dict(terminated)


def _distributions_in(node: RealNode, namespace: str, image: LocalImage, venv: str = SERVICE_VENV) -> dict[str, str]:
    terminated = _terminated(node, namespace, image, [f"{venv}/bin/python", "-c", LIST_DISTRIBUTIONS])
    assert terminated["exitCode"] == 0, terminated
    pins = (line.partition("==") for line in terminated["message"].splitlines())
    return {_normalized(package): version for package, _, version in pins}


@pytest.mark.parametrize("image_name", ["access-guard", "reconcile-trigger", "dashboard"])
def test_a_service_image_holds_exactly_the_locked_packages_the_project_and_pip(
    real_node: RealNode, node_namespace: str, service_images: dict[str, LocalImage], image_name: str
) -> None:
    installed = _distributions_in(real_node, node_namespace, service_images[image_name])

    extra = set(installed) - set(_locked())
    assert extra == {PROJECT_DISTRIBUTION, "pip"}, extra
    assert {name: installed.get(name) for name in _locked()} == _locked()


def test_the_workspace_image_holds_the_locked_packages_the_project_the_pulumi_cli_its_language_host_and_the_kubernetes_plugin(
    real_node: RealNode, node_namespace: str, workspace_image: LocalImage
) -> None:
    installed = _distributions_in(real_node, node_namespace, workspace_image, WORKSPACE_VENV)
    assert set(installed) - set(_locked()) == {PROJECT_DISTRIBUTION, "pip"}
    assert {name: installed.get(name) for name in _locked()} == _locked()

    script = (
        "cd /magicstick && { pulumi version; pulumi-language-python -version; pulumi plugin ls; venv/bin/python -c 'import program.main'; }"
        " > /dev/termination-log 2>&1"
    )
    terminated = _terminated(real_node, node_namespace, workspace_image, ["/bin/sh", "-c", script])

    assert terminated["exitCode"] == 0, terminated
    lines = terminated["message"].splitlines()
    assert lines[:2] == [versions().pulumi, versions().pulumi]
    assert any(
        line.split()[:3] == ["kubernetes", "resource", versions().pulumi_kubernetes.removeprefix("v")] for line in lines
    ), lines


def _guard_settings(namespace: str, image: LocalImage) -> AccessSettings:
    return AccessSettings(gateway_namespace=namespace, guard_image=image.reference)


def test_the_access_guard_the_program_plans_rolls_out_from_its_image_and_the_program_calls_it_ready(
    real_node: RealNode, node_namespace: str, service_images: dict[str, LocalImage]
) -> None:
    image = service_images["access-guard"]
    settings = _guard_settings(node_namespace, image)
    planned = guard_objects({}, settings, field_manager="magicstick")
    for desired in planned:
        real_node.admin.apply(KINDS[desired.kind], thaw(desired.body), field_manager="magicstick")
    deployment = next(d for d in planned if d.kind == "Deployment")

    rolled_out = wait_for(real_node, DEPLOYMENT, node_namespace, deployment.name, deployment_ready, ROLLOUT_SECONDS)

    verdict = guard_readiness(Snapshot.from_objects([rolled_out]), settings, planned)
    assert verdict.readiness is Readiness.READY, verdict
    pods = real_node.admin.request("GET", POD.collection_path(node_namespace))["items"]
    assert len(pods) == rolled_out["spec"]["replicas"]
    for pod in pods:
        (status,) = pod["status"]["containerStatuses"]
        assert status["ready"] is True
        assert status["image"] == image.reference
        assert status["imageID"] == image.config_digest()
        answer = httpx.get(f"http://{pod['status']['podIP']}:{settings.guard_port}/healthz", timeout=5)
        assert answer.status_code == 200, answer.text
