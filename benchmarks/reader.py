"""Benchmark of the live snapshot reader: API requests and wall time for 10, 100 and 1000 models.

Run from the repository root (it starts its own kube-apiserver and etcd; build them first with
scripts/toolchain/build.sh):

    venv/bin/python -m benchmarks.reader

Without them it says what it needs in one line and exits 2.

The number of requests must not grow with the number of objects, apart from pagination
(one more LIST page per 500 objects of a kind).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from api.crdgen import load_committed_crds
from providers.kube import KubeAccess, open_client
from providers.live_reader import read_objects, reads
from tests.cluster.apiserver import (
    ADMIN_USER,
    BinaryNotFound,
    ClusterError,
    StartupFailed,
    install_crds,
    running_cluster,
)
from tests.live.world import NAMESPACE, load
from tests.planning.builders import appliance, cpu_model

SIZES = (10, 100, 1000)
PROGRAM = "benchmarks.reader"
EXIT_NO_CLUSTER = 2


def _in(namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
    return dict(obj, metadata={**obj["metadata"], "namespace": namespace})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROGRAM, description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="reads per size; the best wall time is reported")
    arguments = parser.parse_args(argv)
    try:
        _run(arguments.repeat)
    except (BinaryNotFound, StartupFailed) as error:
        print(f"{PROGRAM}: needs the test kube-apiserver and etcd: {_one_line(error)}", file=sys.stderr)
        return EXIT_NO_CLUSTER
    except ClusterError as error:
        print(f"{PROGRAM}: the test API server failed: {_one_line(error)}", file=sys.stderr)
        return EXIT_NO_CLUSTER
    return 0


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())


def _run(repeat: int) -> None:
    with running_cluster() as cluster, tempfile.TemporaryDirectory() as scratch:
        for crd in load_committed_crds():
            (Path(scratch) / f"{crd['metadata']['name']}.yaml").write_text(yaml.safe_dump(crd))
        install_crds(cluster, [Path(scratch)])
        access = KubeAccess(kubeconfig=str(cluster.kubeconfig_path(ADMIN_USER)))
        print(f"{'models':>7} {'requests':>9} {'list pages':>11} {'best wall ms':>13}")
        with open_client(access) as admin:
            for size in SIZES:
                namespace = f"bench-{size}"
                admin.apply(
                    NAMESPACE,
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
                    field_manager="bench",
                )
                load(
                    admin,
                    [_in(namespace, appliance())] + [_in(namespace, cpu_model(f"model-{i:04d}")) for i in range(size)],
                    field_manager="bench",
                )
                timings, requests = [], 0
                for _ in range(repeat):
                    with open_client(access) as client:
                        started = time.perf_counter()
                        objects = read_objects(client, reads(namespace))
                        timings.append(time.perf_counter() - started)
                        requests = client.requests
                models = sum(1 for o in objects if o["kind"] == "ModelActivation")
                assert models == size, f"read {models} models, loaded {size}"
                pages = requests - len({(r.kind.group, r.kind.version) for r in reads(namespace)})
                print(f"{size:>7} {requests:>9} {pages:>11} {min(timings) * 1000:>13.1f}")


if __name__ == "__main__":
    sys.exit(main())
