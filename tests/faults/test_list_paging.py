"""A paged LIST whose `continue` token expires (410 Gone, as after an etcd compaction) lists
again from the first page, a bounded number of times; it never returns a partial list."""

from __future__ import annotations

import pytest

from providers.kinds import MODEL_ACTIVATION
from providers.kube import Gone, KubeClient
from providers.kube.client import RELISTS
from tests.faults.conftest import Faulty, in_namespace
from tests.faults.proxy import Answer, Fault
from tests.live.world import load
from tests.planning.builders import cpu_model

pytestmark = pytest.mark.usefixtures("own_crds")

PAGE = 2
MODELS = 5
"""Three pages of PAGE objects: the first without a token, two with one."""


def _models(admin: KubeClient, namespace: str) -> set[str]:
    names = {f"model-{index}" for index in range(MODELS)}
    load(admin, [in_namespace(cpu_model(name), namespace) for name in sorted(names)])
    return names


def _path(namespace: str) -> str:
    return MODEL_ACTIVATION.collection_path(namespace)


def _tokens(faulty: Faulty, namespace: str) -> list[bool]:
    """For each LIST of the namespace's activations, in order: whether it carried a continue token."""
    return ["continue=" in e.query for e in faulty.proxy.exchanges if e.method == "GET" and e.path == _path(namespace)]


def test_an_expired_continue_token_lists_again_from_the_first_page_and_returns_every_object(
    faulty: Faulty, admin: KubeClient, namespace: str
):
    names = _models(admin, namespace)
    faulty.proxy.plan(Fault("GET", _path(namespace), Answer(410), on=(2,)))

    listed = faulty.client.list(MODEL_ACTIVATION, namespace=namespace, page_size=PAGE)

    assert sorted(o["metadata"]["name"] for o in listed) == sorted(names)
    assert _tokens(faulty, namespace) == [False, True, False, True, True], "page 1, page 2 expired; then pages 1, 2, 3"


def test_a_continue_token_that_keeps_expiring_raises_gone_after_the_bounded_relists(
    faulty: Faulty, admin: KubeClient, namespace: str
):
    _models(admin, namespace)
    faulty.proxy.plan(Fault("GET", _path(namespace), Answer(410), on=tuple(range(2, 2 * (RELISTS + 1) + 1, 2))))

    with pytest.raises(Gone):
        faulty.client.list(MODEL_ACTIVATION, namespace=namespace, page_size=PAGE)

    assert _tokens(faulty, namespace) == [False, True] * (RELISTS + 1)


def test_a_gone_first_page_is_raised_without_listing_again(faulty: Faulty, admin: KubeClient, namespace: str):
    _models(admin, namespace)
    faulty.proxy.plan(Fault("GET", _path(namespace), Answer(410), on=(1,)))

    with pytest.raises(Gone):
        faulty.client.list(MODEL_ACTIVATION, namespace=namespace, page_size=PAGE)

    assert _tokens(faulty, namespace) == [False]
