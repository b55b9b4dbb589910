"""Planning with the catalog ConfigMaps of the snapshot in force, as a run does."""

from __future__ import annotations

from typing import Any

from catalogs import Catalogs
from planning.catalog_overrides import catalogs_in_force
from planning.plan import Plan, plan
from planning.snapshot import Snapshot
from tests.planning.builders import CATALOGS, NOW, NS, SETTINGS, status_of, with_flux


def planned(*objects: dict[str, Any], base: Catalogs = CATALOGS) -> Plan:
    """What a run plans: the base catalogs, overridden by the snapshot's catalog ConfigMaps."""
    snapshot = Snapshot.from_objects(with_flux(objects))
    in_force = catalogs_in_force(snapshot, base, system_namespace=NS)
    return plan(
        snapshot=snapshot, catalogs=in_force.catalogs, catalog_problems=in_force.problems, now=NOW, settings=SETTINGS
    )


def ready_condition(result: Plan) -> dict[str, Any]:
    return status_of(result, "Appliance", "local")["conditions"][0]
