"""`kubectl wait` understands the status the program writes: the kstatus conditions (Ready,
Reconciling, Stalled) planned by the real plan, written by the real status writer through
/status, each for the object's current generation."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

from planning.frozen import thaw
from providers.kinds import MODULE_ACTIVATION
from providers.kube import KubeClient
from providers.status_writer import StatusTarget, write_status
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo
from tests.live.world import load
from tests.planning.builders import activation, appliance, plan_of, ready_modules, status_of

KUBECTL = shutil.which("kubectl")


def _planned(kind: str, name: str, *objects: dict[str, Any]) -> dict[str, Any]:
    return thaw(status_of(plan_of(*objects), kind, name))


def _written(client: KubeClient, namespace: str, obj: dict[str, Any], status: dict[str, Any]) -> None:
    stored = {**obj, "metadata": {**obj["metadata"], "namespace": namespace}}
    stored["metadata"].pop("generation", None)
    stored["metadata"].pop("uid", None)
    load(client, [stored])
    target = StatusTarget(
        api_version=obj["apiVersion"],
        kind=obj["kind"],
        namespace=namespace,
        name=obj["metadata"]["name"],
        status=status,
    )
    assert write_status(client, target) is True


def kubectl_wait(
    cluster: ClusterInfo, namespace: str, resource: str, condition: str, *, timeout: str = "60s"
) -> subprocess.CompletedProcess[str]:
    """`kubectl wait --for=condition=<condition>`; a timeout of 0s checks once without waiting."""
    assert KUBECTL is not None, "kubectl is needed; see README, Tests"
    return subprocess.run(
        [
            KUBECTL,
            "--kubeconfig",
            str(cluster.kubeconfig_path(ADMIN_USER)),
            "-n",
            namespace,
            "wait",
            f"--for=condition={condition}",
            f"--timeout={timeout}",
            resource,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_kubectl_waits_for_ready_on_a_module_activation_whose_status_the_program_wrote(
    own_crds, namespace, admin: KubeClient
):
    basis = activation("basis")
    _written(
        admin, namespace, basis, _planned("ModuleActivation", "basis", appliance(), basis, *ready_modules("basis"))
    )

    waited = kubectl_wait(own_crds, namespace, "moduleactivation/basis", "Ready")

    assert waited.returncode == 0, waited.stderr
    assert "condition met" in waited.stdout


def test_kubectl_waits_for_stalled_on_an_activation_of_an_unknown_module(own_crds, namespace, admin: KubeClient):
    unknown = activation("nonsense")
    _written(admin, namespace, unknown, _planned("ModuleActivation", "nonsense", appliance(), unknown))

    assert kubectl_wait(own_crds, namespace, "moduleactivation/nonsense", "Stalled").returncode == 0
    assert kubectl_wait(own_crds, namespace, "moduleactivation/nonsense", "Ready=false").returncode == 0


def test_kubectl_waits_for_reconciling_on_an_appliance_waiting_for_its_modules(own_crds, namespace, admin: KubeClient):
    local = appliance({"basis": True})
    _written(admin, namespace, local, _planned("Appliance", "local", local))

    waited = kubectl_wait(own_crds, namespace, "appliance/local", "Reconciling")

    assert waited.returncode == 0, waited.stderr


def test_kubectl_does_not_take_a_ready_written_for_an_older_generation(own_crds, namespace, admin: KubeClient):
    basis = activation("basis")
    _written(
        admin, namespace, basis, _planned("ModuleActivation", "basis", appliance(), basis, *ready_modules("basis"))
    )
    edited = {
        **basis,
        "metadata": {"name": "basis", "namespace": namespace},
        "spec": {**basis["spec"], "enabled": False},
    }
    load(admin, [edited])
    assert admin.get(MODULE_ACTIVATION, "basis", namespace)["metadata"]["generation"] == 2

    checked_once = kubectl_wait(own_crds, namespace, "moduleactivation/basis", "Ready", timeout="0s")

    assert checked_once.returncode != 0
    assert "condition not met" in checked_once.stderr
