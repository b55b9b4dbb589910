"""Planning with the catalog ConfigMaps of the snapshot in force, as a run does."""

from __future__ import annotations

from catalogs import Catalogs
from planning.catalog_overrides import catalogs_in_force
from planning.plan import Plan, plan
from planning.snapshot import Snapshot
from tests.planning.builders import CATALOGS, NOW, NS, SETTINGS, JsonObject, status_of, with_flux


def planned(*objects: JsonObject, base: Catalogs = CATALOGS) -> Plan:
    """What a run plans: the base catalogs, overridden by the snapshot's catalog ConfigMaps."""
    snapshot = Snapshot.from_objects(with_flux(objects))
    in_force = catalogs_in_force(snapshot, base, system_namespace=NS)
    return plan(
        snapshot=snapshot, catalogs=in_force.catalogs, catalog_problems=in_force.problems, now=NOW, settings=SETTINGS
    )


def ready_condition(result: Plan) -> JsonObject:
    condition: JsonObject = status_of(result, "Appliance", "local")["conditions"][0]
    return condition
