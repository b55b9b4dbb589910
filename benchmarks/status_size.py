"""Benchmark of status sizes: the bytes of JSON the status writer sends for Appliance/local and
for the largest ModuleActivation, ModelActivation and AppInstance status, at 3,000 and 5,000
ModelActivations (and 200 AppInstances), with short names and with names of the full 253
characters. Figures, not assertions: tests/planning/test_status_bounds.py asserts the bounds
(planning.status.APPLIANCE_STATUS_BUDGET, RUNTIME_STATUS_BUDGET).

Run from the repository root:

    venv/bin/python -m benchmarks.status_size
"""

from __future__ import annotations

import argparse
import json

from catalogs import load_catalogs
from planning.frozen import thaw
from planning.plan import plan
from planning.snapshot import Snapshot
from tests.planning.builders import NOW
from tests.planning.large import large_cluster

SCENARIOS = ((3000, 0, False), (5000, 200, False), (5000, 200, True))
"""(ModelActivations, AppInstances, names of 253 characters)."""
KINDS = ("Appliance", "ModuleActivation", "ModelActivation", "AppInstance")


def status_sizes(models: int, instances: int, *, long_names: bool) -> dict[str, int]:
    """Kind -> bytes of JSON of its largest planned status."""
    snapshot = Snapshot.from_objects(large_cluster(models, instances, long_names=long_names))
    result = plan(snapshot=snapshot, catalogs=load_catalogs(), now=NOW)
    sizes: dict[str, int] = {}
    for update in result.statuses:
        sizes[update.kind] = max(sizes.get(update.kind, 0), len(json.dumps(thaw(update.status))))
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    header = " ".join(f"{kind:>17}" for kind in KINDS)
    print(f"{'activations':>11} {'instances':>9} {'names':>5} {header}   (bytes of JSON; largest status of each kind)")
    for models, instances, long_names in SCENARIOS:
        sizes = status_sizes(models, instances, long_names=long_names)
        row = " ".join(f"{sizes.get(kind, 0):>17,}" for kind in KINDS)
        print(f"{models:>11,} {instances:>9} {'253' if long_names else 'short':>5} {row}")


if __name__ == "__main__":
    main()
