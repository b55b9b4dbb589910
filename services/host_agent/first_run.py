"""ApplianceSetup/local, created once by host automation, never inferred from its absence.

- The installer's marker (`<state dir>/installer-marker`, written by `install.sh
  --first-install`: setupVersion and installationId) present and no ApplianceSetup/local:
  create it with the marker's values, status Pending. First run.
- No marker and no ApplianceSetup/local: an installation that predates the first-run flow
  (an upgrade). Create it CompletedLegacy, with a new installationId.
- ApplianceSetup/local exists: nothing is created or changed.

Once ApplianceSetup/local exists the marker is consumed (renamed to installer-marker.consumed),
so a later deletion of the resource can never reopen first run. Claims, sessions, passwords and
recovery codes are never fields of it.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from api.meta import API_VERSION
from api.setup import UUID_PATTERN
from providers.kube import Conflict
from services.host_agent.cluster import FIELD_MANAGER, AgentCluster

SETUP_NAME = "local"
MARKER = "installer-marker"
CONSUMED_MARKER = "installer-marker.consumed"
LEGACY_SETUP_VERSION = "v1"
LOGGER = logging.getLogger("services.host_agent")


class MarkerError(Exception):
    """The installer marker exists but is not what install.sh writes."""


@dataclass(frozen=True)
class InstallerMarker:
    setup_version: str
    installation_id: str


def read_marker(state_dir: Path) -> InstallerMarker | None:
    path = state_dir / MARKER
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise MarkerError(f"installer marker {path} is not JSON: {error}") from error
    version, installation = (
        (raw.get("setupVersion"), raw.get("installationId")) if isinstance(raw, dict) else (None, None)
    )
    if not isinstance(version, str) or not re.fullmatch(r"v[0-9]+", version):
        raise MarkerError(f"installer marker {path}: setupVersion must be v<number>, e.g. v1")
    if not isinstance(installation, str) or not re.fullmatch(UUID_PATTERN, installation):
        raise MarkerError(f"installer marker {path}: installationId must be a UUID")
    return InstallerMarker(version, installation)


def _consume(state_dir: Path) -> None:
    marker = state_dir / MARKER
    if marker.exists():
        marker.replace(state_dir / CONSUMED_MARKER)


def _created_by_agent(obj: dict[str, Any]) -> bool:
    return any(
        entry.get("manager") == FIELD_MANAGER for entry in (obj.get("metadata") or {}).get("managedFields") or ()
    )


def _finish_interrupted(cluster: AgentCluster, existing: dict[str, Any], marker: InstallerMarker | None) -> str | None:
    """The agent created it and stopped before its first status: write that status now."""
    if (existing.get("status") or {}).get("phase") or not _created_by_agent(existing):
        return None
    first_run = marker is not None and (existing.get("spec") or {}).get("installationId") == marker.installation_id
    phase = "Pending" if first_run else "CompletedLegacy"
    cluster.write_setup_status(
        SETUP_NAME, {"phase": phase, "observedGeneration": int(existing["metadata"].get("generation") or 1)}
    )
    return phase


def ensure_setup(cluster: AgentCluster, state_dir: Path) -> str | None:
    """Create ApplianceSetup/local when it is missing (Pending with the marker, else CompletedLegacy).
    Returns the phase it was created with, or None when it existed. Raises MarkerError, KubeError."""
    marker = read_marker(state_dir)
    existing = cluster.appliance_setup(SETUP_NAME)
    if existing is not None:
        finished = _finish_interrupted(cluster, existing, marker)
        _consume(state_dir)
        return finished
    if marker is not None:
        spec, phase = {"setupVersion": marker.setup_version, "installationId": marker.installation_id}, "Pending"
    else:
        spec, phase = {"setupVersion": LEGACY_SETUP_VERSION, "installationId": str(uuid.uuid4())}, "CompletedLegacy"
    body = {
        "apiVersion": API_VERSION,
        "kind": "ApplianceSetup",
        "metadata": {"name": SETUP_NAME, "namespace": cluster.setup_namespace},
        "spec": spec,
    }
    try:
        created = cluster.create_appliance_setup(body)
    except Conflict:
        _consume(state_dir)
        return None
    cluster.write_setup_status(
        SETUP_NAME, {"phase": phase, "observedGeneration": int(created["metadata"].get("generation") or 1)}
    )
    _consume(state_dir)
    LOGGER.info("created ApplianceSetup/%s in %s: %s", SETUP_NAME, cluster.setup_namespace, phase)
    return phase
