"""The API requests of a converged run, counted by verb on the test API server (through the
counting proxy): the observation reads each kind with LIST pages whose number does not grow
with the objects apart from one page per DEFAULT_PAGE_SIZE objects of a kind, and nothing is
written. The status writes compare before writing: one GET per status object, the per-object
cost a `pulumi up` with `refresh: true` also pays per resource (README "Scale")."""

from __future__ import annotations

import math
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

from catalogs import load_catalogs
from planning.plan import Plan, plan
from planning.settings import PlanSettings
from providers.kube import KubeClient, open_client
from providers.kube.client import DEFAULT_PAGE_SIZE
from providers.live_reader import read_snapshot
from tests.faults.conftest import Faulty, in_namespace
from tests.faults.proxy import Exchange
from tests.live.world import kind_of, load, without_server_fields, write_planned_statuses
from tests.planning.builders import NOW, activation, appliance, cpu_model

pytestmark = pytest.mark.usefixtures("own_crds")

LARGE = 1000


PATIENT = 30.0
"""Seconds a request of these tests may take: a slow answer retried would count twice."""


def _plan(faulty: Faulty, namespace: str) -> Plan:
    snapshot = read_snapshot(replace(faulty.access, timeout_seconds=PATIENT), system_namespace=namespace)
    return plan(snapshot=snapshot, catalogs=load_catalogs(), now=NOW, settings=PlanSettings(system_namespace=namespace))


def _converged_round(faulty: Faulty, admin: KubeClient, namespace: str) -> tuple[list[Exchange], int]:
    """Write statuses until nothing changes; then one more observation and status round through
    the proxy: its requests, and the statuses it compared."""
    for _ in range(3):
        if write_planned_statuses(admin, _plan(faulty, namespace)) == 0:
            break
    before = len(faulty.proxy.exchanges)
    desired = _plan(faulty, namespace)
    with open_client(replace(faulty.access, timeout_seconds=PATIENT)) as client:
        assert write_planned_statuses(client, desired) == 0
    return faulty.proxy.exchanges[before:], len(desired.statuses)


def _load(admin: KubeClient, namespace: str, models: int) -> None:
    load(admin, [in_namespace(appliance({"basis": True}), namespace), in_namespace(activation("kubeai"), namespace)])
    objects = [in_namespace(cpu_model(f"model-{index:04d}"), namespace) for index in range(models)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda o: admin.apply(kind_of(o), without_server_fields(o), field_manager="loader"), objects))


def _lists(exchanges: list[Exchange]) -> int:
    return sum(1 for e in exchanges if e.method == "GET" and "limit=" in e.query)


def _by_verb(exchanges: list[Exchange]) -> Counter[str]:
    return Counter(e.method for e in exchanges)


def test_a_converged_run_writes_nothing_and_lists_as_often_for_a_thousand_activations_as_for_one(
    faulty: Faulty, admin: KubeClient, namespace: str
):
    _load(admin, namespace, 1)
    small, small_statuses = _converged_round(faulty, admin, namespace)
    _load(admin, namespace, LARGE)
    large, large_statuses = _converged_round(faulty, admin, namespace)

    assert set(_by_verb(small)) == {"GET"} and set(_by_verb(large)) == {"GET"}, "a converged run writes nothing"
    extra_pages = math.ceil(LARGE / DEFAULT_PAGE_SIZE) - 1
    assert _lists(large) == _lists(small) + extra_pages, "one more LIST page per DEFAULT_PAGE_SIZE activations, no more"
    assert large_statuses - small_statuses == LARGE - 1
    object_gets = _by_verb(large)["GET"] - _lists(large)
    assert object_gets - (_by_verb(small)["GET"] - _lists(small)) == LARGE - 1, "one GET per status object compared"
