"""Removing a stale generated Kustomization on the real API server: under its UID, outcomes
instead of errors, a failed removal tried again."""

from __future__ import annotations

import pytest

from providers.kinds import KUSTOMIZATION
from providers.kube import KubeAccess, KubeClient
from providers.stale_removal import RemovalOutcome, StaleRemovalProvider
from tests.cluster.apiserver import READER_USER
from tests.live.world import ensure_namespace
from tests.providers.engine import configured, kubeconfig_config

NAME = "platform-stale-test"


def _kustomization(client: KubeClient) -> dict:
    body = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {
            "name": NAME,
            "namespace": "flux-system",
            "labels": {"app.kubernetes.io/managed-by": "magicstick", "appliance.magicstick.dev/module": "litellm"},
        },
        "spec": {"interval": "10m0s", "prune": True, "sourceRef": {"kind": "GitRepository", "name": "flux-system"}},
    }
    return client.apply(KUSTOMIZATION, body, field_manager="earlier-operator")


def _inputs(uid: str) -> dict:
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "namespace": "flux-system",
        "name": NAME,
        "uid": uid,
    }


@pytest.fixture
def flux_system(admin: KubeClient, clean_shared_namespaces) -> KubeClient:
    ensure_namespace(admin, "flux-system")
    return admin


def test_the_stale_kustomization_is_removed_and_a_second_removal_finds_it_gone(flux_system, admin_access: KubeAccess):
    uid = _kustomization(flux_system)["metadata"]["uid"]
    provider = configured(StaleRemovalProvider(), kubeconfig_config(admin_access.kubeconfig))
    removed = provider.create(_inputs(uid)).outs
    assert (removed["outcome"], removed["problem"]) == (RemovalOutcome.REMOVED, {})
    assert flux_system.get_or_none(KUSTOMIZATION, NAME, "flux-system") is None
    assert provider.create(_inputs(uid)).outs["outcome"] == RemovalOutcome.ALREADY_GONE


def test_an_object_recreated_under_the_same_name_is_left_alone(flux_system, admin_access: KubeAccess):
    old_uid = _kustomization(flux_system)["metadata"]["uid"]
    flux_system.delete(KUSTOMIZATION, NAME, "flux-system")
    _kustomization(flux_system)
    provider = configured(StaleRemovalProvider(), kubeconfig_config(admin_access.kubeconfig))
    assert provider.create(_inputs(old_uid)).outs["outcome"] == RemovalOutcome.REPLACED
    assert flux_system.get_or_none(KUSTOMIZATION, NAME, "flux-system") is not None


def test_a_refused_removal_is_an_outcome_with_the_servers_answer_and_is_tried_again(flux_system, cluster):
    uid = _kustomization(flux_system)["metadata"]["uid"]
    provider = configured(StaleRemovalProvider(), kubeconfig_config(str(cluster.kubeconfig_path(READER_USER))))
    created = provider.create(_inputs(uid))
    assert created.outs["outcome"] == RemovalOutcome.FAILED
    assert created.outs["message"].startswith("403 Forbidden")
    problem = created.outs["problem"]
    assert (problem["reason"], problem["persistence"]) == ("StaleRemovalFailed", "Temporary")
    assert problem["message"] == created.outs["message"]
    assert flux_system.get_or_none(KUSTOMIZATION, NAME, "flux-system") is not None
    again = provider.diff("id", created.outs, _inputs(uid))
    assert again.changes and again.replaces == ["outcome"]


def test_check_refuses_a_kind_the_program_never_removes():
    result = StaleRemovalProvider().check({}, {**_inputs("u"), "apiVersion": "v1", "kind": "Namespace"})
    assert [f.property for f in result.failures] == ["kind"]


def test_a_successful_removal_with_unchanged_inputs_shows_no_change():
    provider = StaleRemovalProvider()
    olds = {**_inputs("u"), "outcome": RemovalOutcome.REMOVED.value, "message": ""}
    assert provider.diff("id", olds, _inputs("u")).changes is False
