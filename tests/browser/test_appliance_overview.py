"""The overview of the demo appliance, as the README shows it.

The runtime objects of examples/demo/snapshot.yaml are created on the test API server and given
the statuses the program writes for that snapshot (tests/golden/demo/status/, at the objects'
real generations); the overview then shows Appliance/local, its hardware operators, the modules,
models and instances as a user of the demo would see them, and is saved as a screenshot
(`overview-demo`, the source of docs/images/dashboard-overview.png).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from playwright.sync_api import Browser, Page, expect

from providers.kinds import APPLIANCE_KINDS, STACK
from tests.browser.harness import assert_accessible, save_screenshot
from tests.browser.test_dashboard import signed_in
from tests.cluster.apiserver import ClusterInfo
from tests.services.dashboard.world import NAMESPACE, REPO_ROOT, World, running_world

SNAPSHOT = REPO_ROOT / "examples" / "demo" / "snapshot.yaml"
STATUSES = REPO_ROOT / "tests" / "golden" / "demo" / "status"
SHOWN_KINDS = ("Appliance", "ModuleActivation", "ModelActivation", "AppInstance")


def _with_generation(value: Any, generation: int) -> Any:
    if isinstance(value, dict):
        return {
            key: (generation if key == "observedGeneration" else _with_generation(item, generation))
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_with_generation(item, generation) for item in value]
    return value


def load_demo(world: World) -> list[str]:
    """Create the demo's runtime objects and write the program's statuses on them; their keys."""
    keys = []
    for obj in (document for document in yaml.safe_load_all(SNAPSHOT.read_text()) if document):
        if obj["kind"] not in SHOWN_KINDS:
            continue
        kind = APPLIANCE_KINDS[obj["kind"]]
        name = obj["metadata"]["name"]
        if world.admin.get_or_none(kind, name, NAMESPACE) is None:
            body = {
                "apiVersion": obj["apiVersion"],
                "kind": obj["kind"],
                "metadata": {"name": name, "namespace": NAMESPACE},
                "spec": obj["spec"],
            }
            world.admin.create(kind, body, field_manager="demo")
        generation = world.admin.get(kind, name, NAMESPACE)["metadata"]["generation"]
        status_file = STATUSES / f"{obj['kind'].lower()}.{NAMESPACE}.{name}.yaml"
        if status_file.exists():
            written = yaml.safe_load(status_file.read_text())
            body = {
                "apiVersion": obj["apiVersion"],
                "kind": obj["kind"],
                "metadata": {"name": name, "namespace": NAMESPACE},
            }
            body["status"] = _with_generation(written["status"], generation)
            world.admin.apply(kind, body, field_manager="magicstick-status-stand-in", subresource="status")
        keys.append(f"{obj['kind']}/{name}")
    _stack_ran(world)
    return keys


def _stack_ran(world: World) -> None:
    """The program's PKO Stack after a successful update, as the operator reports it."""
    if world.admin.get_or_none(STACK, "magicstick", NAMESPACE) is None:
        body = {
            "apiVersion": "pulumi.com/v1",
            "kind": "Stack",
            "metadata": {"name": "magicstick", "namespace": NAMESPACE},
            "spec": {"stack": "organization/magicstick/appliance"},
        }
        world.admin.create(STACK, body, field_manager="pulumi-kubernetes-operator")
    last = {
        "type": "up",
        "state": "succeeded",
        "lastResyncTime": "2026-01-01T12:00:00Z",
        "lastSuccessfulCommit": "4e5ac0f54554a0c3",
    }
    status = {
        "apiVersion": "pulumi.com/v1",
        "kind": "Stack",
        "metadata": {"name": "magicstick", "namespace": NAMESPACE},
        "status": {"lastUpdate": last},
    }
    world.admin.apply(STACK, status, field_manager="pulumi-kubernetes-operator", subresource="status")


@pytest.fixture(scope="module")
def world(cluster: ClusterInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    yield from running_world(cluster, tmp_path_factory.mktemp("dashboard-demo"))


@pytest.fixture
def admin(browser: Browser, world: World) -> Iterator[Page]:
    yield from signed_in(browser, world, "admin")


def test_the_overview_of_the_demo_appliance(admin: Page, world: World) -> None:
    keys = load_demo(world)
    admin.goto("/")
    expect(admin.locator("[data-live-status]")).to_have_text("Status updates: live.")
    expect(admin.get_by_role("heading", name="Appliance/local")).to_be_visible()
    expect(admin.locator('dd[data-key="Appliance/local"][data-field="phase"]')).not_to_have_text("—")
    expect(admin.locator("[data-stack-update]")).to_contain_text("up succeeded")
    for key in keys:
        assert admin.locator(f'[data-key="{key}"]').count() > 0, key
    assert_accessible(admin, context="the demo appliance's overview")
    path: Path = save_screenshot(admin, "overview-demo")
    assert path.stat().st_size > 0
