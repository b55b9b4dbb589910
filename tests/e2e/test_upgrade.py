"""Upgrading from the state an earlier release left: the program of this commit, previewed by the
real engine against that state, replaces nothing and creates or deletes no Kubernetes object
(the aliases carry renamed resources over); an object this release adds is the only create.

Each `tests/e2e/fixtures/state-<commit>.json` is the state of a release's own real `pulumi up`
of the demo (`python -m tests.e2e.upgrade_state`). The cluster is the demo again, converged by
the stand-ins, holding every object that release applied (from the state's outputs, by the field
manager that applied it), and the state is imported as the same workstation's: its kubeconfig
path is this cluster's. A preview that updates an object reads it from the cluster, so the
objects must be there as that release left them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from providers.kube import KubeClient
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo, install_crds
from tests.e2e.engine import REPO_ROOT, PulumiProject
from tests.e2e.lifecycle import STATUS_TYPE, changes, converge, logical_name, resource_type
from tests.e2e.upgrade_state import (
    FIXTURE_PASSPHRASE,
    FIXTURES,
    KUBECONFIG_PLACEHOLDER,
    MACHINE_FIELDS,
    applied_objects,
    identity,
)
from tests.e2e.world import load_demo, play_controllers
from tests.live.ollama_double import OllamaDouble
from tests.live.world import kind_of

STATES = sorted(FIXTURES.glob("state-*.json"))
REPLACING = frozenset({"replace", "create-replacement", "delete-replaced"})
EARLIER_STATUS_TYPE = "pulumi-python:dynamic/magicstick:Status"
"""The one-object status write of releases before the status batches."""


@pytest.fixture(scope="module")
def project(
    engine_cluster: ClusterInfo,
    kube: KubeClient,
    demo: list[dict],
    ollama: OllamaDouble,
    tmp_path_factory: pytest.TempPathFactory,
) -> PulumiProject:
    """The demo in the cluster, as the earlier release left it, and a stack with the same passphrase."""
    install_crds(engine_cluster, [REPO_ROOT / "api" / "crds"])
    load_demo(kube, demo)
    for _ in range(4):
        play_controllers(kube, ollama)
    project = PulumiProject.create(tmp_path_factory.mktemp("upgrade"), passphrase=FIXTURE_PASSPHRASE)
    project.config_set({"magicstick:kubeconfig": str(engine_cluster.kubeconfig_path(ADMIN_USER))})
    return project


def test_there_is_a_state_of_an_earlier_release():
    assert STATES, f"no state-*.json in {FIXTURES}"


@pytest.mark.parametrize("state", STATES, ids=[path.stem for path in STATES])
def test_a_preview_from_an_earlier_release_state_replaces_nothing_deletes_nothing_and_creates_only_new_objects(
    state: Path, project: PulumiProject, engine_cluster: ClusterInfo, kube: KubeClient
):
    kubeconfig = str(engine_cluster.kubeconfig_path(ADMIN_USER))
    exported = json.loads(state.read_text())
    left = applied_objects(exported)
    for field_manager, body in left:
        kube.apply(kind_of(body), body, field_manager=field_manager)
    imported = project.root / f"import-{state.name}"
    imported.write_text(state.read_text().replace(KUBECONFIG_PLACEHOLDER, kubeconfig))
    project.pulumi("stack", "import", "--file", str(imported))
    steps = project.pulumi("preview", "--json").json().get("steps", [])
    replaced = [step["urn"] for step in steps if step["op"] in REPLACING]
    assert replaced == []
    objects = [step for step in steps if resource_type(step["urn"]).startswith("kubernetes:")]
    assert [step["urn"] for step in objects if step["op"] == "delete"] == []
    created = [
        identity(step["newState"].get("outputs") or step["newState"]["inputs"])
        for step in objects
        if step["op"] == "create"
    ]
    assert set(created) & {identity(body) for _, body in left} == set()


def _import(
    state: Path, project: PulumiProject, engine_cluster: ClusterInfo, kube: KubeClient
) -> list[tuple[str, dict]]:
    """The objects the release left applied again, and its state imported as this workstation's."""
    kubeconfig = str(engine_cluster.kubeconfig_path(ADMIN_USER))
    left = applied_objects(json.loads(state.read_text()))
    for field_manager, body in left:
        kube.apply(kind_of(body), body, field_manager=field_manager)
    imported = project.root / f"import-{state.name}"
    imported.write_text(state.read_text().replace(KUBECONFIG_PLACEHOLDER, kubeconfig))
    project.pulumi("stack", "import", "--file", str(imported))
    return left


@pytest.mark.parametrize("state", STATES, ids=[path.stem for path in STATES])
def test_an_up_from_an_earlier_release_state_moves_the_statuses_into_batches_and_converges(
    state: Path, project: PulumiProject, engine_cluster: ClusterInfo, kube: KubeClient, ollama: OllamaDouble
):
    """The state migration of the status batches: each earlier one-object `Status` resource is
    deleted by its own provider, which touches no object, and the batches are created; then the
    stack converges with no `Status` left and every runtime object's status written."""
    _import(state, project, engine_cluster, kube)
    earlier = {
        r["urn"] for r in json.loads(state.read_text())["deployment"]["resources"] if r["type"] == EARLIER_STATUS_TYPE
    }
    assert earlier, "the earlier release wrote statuses one resource per object"

    upgrade = project.pulumi("up", "--yes", "--skip-preview", events=True)

    steps = changes(upgrade)
    assert {urn for urn, op in steps.items() if resource_type(urn) == EARLIER_STATUS_TYPE} == earlier
    assert all(steps[urn] == "delete" for urn in earlier)
    assert {logical_name(urn) for urn, op in steps.items() if resource_type(urn) == STATUS_TYPE and op == "create"} >= {
        "statuses/appliance/0",
        "statuses/modelactivation/0",
    }
    runs = converge(project, kube, ollama)
    assert changes(runs[-1]) == {}
    kept = [r for r in project.export()["deployment"]["resources"] if r["type"] == EARLIER_STATUS_TYPE]
    assert kept == []
    written = [obj for obj in objects_written_by_the_program(kube) if "status" not in obj]
    assert written == []


def objects_written_by_the_program(kube: KubeClient) -> list[dict]:
    from providers.kinds import APPLIANCE, MODEL_ACTIVATION, MODULE_ACTIVATION

    return [obj for kind in (APPLIANCE, MODULE_ACTIVATION, MODEL_ACTIVATION) for obj in kube.list(kind)]


@pytest.mark.parametrize("state", STATES, ids=[path.stem for path in STATES])
def test_a_committed_state_holds_no_path_of_the_machine_that_wrote_it(state: Path):
    resources = json.loads(state.read_text())["deployment"]["resources"]
    assert [key for resource in resources for key in resource if key in MACHINE_FIELDS] == []
    assert KUBECONFIG_PLACEHOLDER in state.read_text()
