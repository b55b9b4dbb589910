"""ApplianceSetup/local from the agent: Pending with the installer's marker, CompletedLegacy
without it, untouched when it exists; never inferred again once the marker is consumed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from api.meta import API_VERSION
from providers.kinds import APPLIANCE_SETUP
from providers.kube import KubeClient, NotFound
from tests.services.host_agent.world import AgentWorld

SETUP_NAMESPACE = "identity-system"
INSTALLATION_ID = "11111111-2222-4333-8444-555555555555"


@pytest.fixture(autouse=True)
def no_setup(admin: KubeClient) -> Iterator[None]:
    """ApplianceSetup/local is one object per cluster: each test starts and ends without it."""
    for _ in ("before", "after"):
        try:
            admin.delete(APPLIANCE_SETUP, "local", SETUP_NAMESPACE)
        except NotFound:
            pass
        if _ == "before":
            yield


def _marker(world: AgentWorld) -> None:
    path = world.host.root / "var/lib/magicstick/installer-marker"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"setupVersion": "v1", "installationId": INSTALLATION_ID}))


def _created(world: AgentWorld) -> dict[str, Any]:
    agent = world.start()
    return world.watch_until(
        APPLIANCE_SETUP,
        SETUP_NAMESPACE,
        "local",
        lambda obj: obj is not None and bool((obj.get("status") or {}).get("phase")),
        process=agent,
    )


def test_a_new_installation_creates_a_pending_setup_with_the_markers_identity(world: AgentWorld) -> None:
    _marker(world)
    setup = _created(world)
    assert setup["spec"] == {"setupVersion": "v1", "installationId": INSTALLATION_ID}
    assert setup["status"]["phase"] == "Pending"
    assert not (world.host.root / "var/lib/magicstick/installer-marker").exists()
    assert (world.host.root / "var/lib/magicstick/installer-marker.consumed").exists()


def test_an_upgrade_without_the_marker_creates_a_completed_legacy_setup(world: AgentWorld) -> None:
    setup = _created(world)
    assert setup["status"]["phase"] == "CompletedLegacy"
    assert setup["spec"]["installationId"] != INSTALLATION_ID


def test_an_existing_setup_is_left_as_it_is_and_the_marker_is_consumed(world: AgentWorld) -> None:
    existing = {
        "apiVersion": API_VERSION,
        "kind": "ApplianceSetup",
        "metadata": {"name": "local", "namespace": SETUP_NAMESPACE},
        "spec": {"setupVersion": "v1", "installationId": "99999999-8888-4777-8666-555555555555"},
    }
    world.admin.create(APPLIANCE_SETUP, existing, field_manager="setup-flow")
    world.admin.apply(
        APPLIANCE_SETUP,
        {**existing, "status": {"phase": "Completed"}},
        field_manager="setup-flow",
        subresource="status",
    )
    _marker(world)
    world.start()  # READY=1 comes after the first pass, which looked at the setup
    assert (world.host.root / "var/lib/magicstick/installer-marker.consumed").exists(), world.log_text()
    setup = world.admin.get(APPLIANCE_SETUP, "local", SETUP_NAMESPACE)
    assert setup["status"]["phase"] == "Completed"
    assert setup["spec"]["installationId"] == "99999999-8888-4777-8666-555555555555"


def test_no_field_of_the_setup_holds_a_claim_session_password_or_recovery_code(world: AgentWorld) -> None:
    _marker(world)
    text = json.dumps({key: value for key, value in _created(world).items() if key != "metadata"}).lower()
    for word in ('claim"', "session", "password", "recovery"):
        assert word not in text
