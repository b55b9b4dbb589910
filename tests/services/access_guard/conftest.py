"""Fixtures: one issuer and one guard for the session, a fresh instance name per use.

Tests that stop the issuer or need another cache lifetime start their own (see
test_key_set_outage.py); tests that attack the guard, signal it or need other limits start
their own through `own_guard`, on a grants directory of their own.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.services.access_guard.issuer import IssuerKeys, JwksServer, serving
from tests.services.access_guard.process import GuardProcess, start_guard
from tests.services.access_guard.volume import ConfigMapVolume


@pytest.fixture(scope="session")
def keys() -> IssuerKeys:
    return IssuerKeys()


@pytest.fixture(scope="session")
def jwks(keys: IssuerKeys) -> Iterator[JwksServer]:
    yield from serving(keys)


@pytest.fixture(scope="session")
def volume(tmp_path_factory: pytest.TempPathFactory) -> ConfigMapVolume:
    return ConfigMapVolume(tmp_path_factory.mktemp("grants"))


@pytest.fixture(scope="session")
def guard(
    volume: ConfigMapVolume, jwks: JwksServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GuardProcess]:
    process = start_guard(grants_dir=volume.root, jwks_uri=jwks.uri, log=tmp_path_factory.mktemp("guard") / "guard.log")
    yield process
    process.stop()


@pytest.fixture
def client(guard: GuardProcess) -> Iterator[httpx.Client]:
    with guard.client() as http:
        yield http


@pytest.fixture(scope="session")
def instance_serial() -> Iterator[int]:
    return itertools.count(1)


@pytest.fixture
def new_instance(instance_serial: Iterator[int]) -> Callable[[], str]:
    """Instance names never used before in the session; they hold a dot, as names may."""
    return lambda: f"app-{next(instance_serial)}.example"


@dataclass(frozen=True)
class OwnGuard:
    process: GuardProcess
    volume: ConfigMapVolume


@pytest.fixture
def own_guard(jwks: JwksServer, tmp_path: Path) -> Iterator[Callable[..., OwnGuard]]:
    """Start a guard with extra flags on a grants directory of its own; stopped after the test."""
    started: list[GuardProcess] = []

    def start(*extra: str) -> OwnGuard:
        serial = len(started)
        (tmp_path / f"grants-{serial}").mkdir()
        volume = ConfigMapVolume(tmp_path / f"grants-{serial}")
        process = start_guard(
            grants_dir=volume.root, jwks_uri=jwks.uri, log=tmp_path / f"guard-{serial}.log", extra=extra
        )
        started.append(process)
        return OwnGuard(process=process, volume=volume)

    yield start
    for process in started:
        process.stop()
