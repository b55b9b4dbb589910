"""The live snapshot reader against the real apiserver."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from cli.main import main
from planning.snapshot import ObjectMeta, Snapshot
from providers.kube import KubeAccess, KubeClient, ResourceKind, open_client
from providers.live_reader import Read, SnapshotReadError, read_objects, read_snapshot, reads
from providers.snapshot_file import read_snapshot_file
from tests.cluster.apiserver import READER_USER, ClusterInfo, install_crds
from tests.live.world import load
from tests.planning.builders import appliance, cpu_model

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo" / "snapshot.yaml"


def _demo_objects() -> list[dict]:
    return [o for o in yaml.safe_load_all(DEMO.read_text()) if o and o["kind"] != "CustomResourceDefinition"]


def _identity_only(meta: ObjectMeta) -> ObjectMeta:
    return dataclasses.replace(meta, uid=None, resource_version=None, generation=0, creation_timestamp=None)


def _comparable(snapshot: Snapshot, crds: frozenset[str]) -> Snapshot:
    """Drop what the server assigns (uid, resourceVersion, generation, creationTimestamp) and CRDs outside `crds`."""

    def strip(items):
        return tuple(dataclasses.replace(item, meta=_identity_only(item.meta)) for item in items)

    return Snapshot(
        runtime_objects=strip(snapshot.runtime_objects),
        kustomizations=strip(snapshot.kustomizations),
        nodes=strip(snapshot.nodes),
        config_maps=strip(snapshot.config_maps),
        served_crds=snapshot.served_crds & crds,
    )


OPENCLAW_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "openclawinstances.openclaw.rocks"},
    "spec": {
        "group": "openclaw.rocks",
        "scope": "Namespaced",
        "names": {"plural": "openclawinstances", "singular": "openclawinstance", "kind": "OpenClawInstance"},
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}
"""What installing the OpenClaw operator module brings: the demo shows it served."""


def test_the_live_snapshot_of_a_cluster_loaded_with_the_demo_equals_the_demo_file(
    clean_shared_namespaces, admin, admin_access, cluster, tmp_path
):
    (tmp_path / "openclaw-crd.yaml").write_text(yaml.safe_dump(OPENCLAW_CRD))
    install_crds(cluster, [tmp_path / "openclaw-crd.yaml"])
    load(admin, _demo_objects())
    from_file = read_snapshot_file(DEMO)
    live = read_snapshot(admin_access, system_namespace="ai-system")
    assert from_file.served_crds <= live.served_crds
    assert _comparable(live, from_file.served_crds) == _comparable(from_file, from_file.served_crds)


def test_a_captured_snapshot_file_renders_the_same_view_as_the_live_read(
    clean_shared_namespaces, admin, admin_access, tmp_path, cluster: ClusterInfo
):
    load(admin, _demo_objects())
    out = tmp_path / "captured.yaml"
    code = main(["snapshot", "--out", str(out), "--kubeconfig", admin_access.kubeconfig])
    assert code == 0
    assert read_snapshot_file(out) == read_snapshot(admin_access, system_namespace="ai-system")
    assert "managedFields" not in out.read_text()


def test_a_kind_whose_api_is_not_served_reads_as_empty(admin: KubeClient):
    absent = ResourceKind(group="widgets.example.com", version="v1", kind="Widget", plural="widgets", namespaced=True)
    assert read_objects(admin, [Read(absent, "ai-system")]) == []


def test_a_forbidden_list_stops_the_read_naming_the_kind_and_the_server_answer(cluster: ClusterInfo, own_crds):
    reader = KubeAccess(kubeconfig=str(cluster.kubeconfig_path(READER_USER)))
    with pytest.raises(SnapshotReadError) as raised:
        read_snapshot(reader, system_namespace="ai-system")
    message = str(raised.value)
    assert "CustomResourceDefinition" in message
    assert "403 Forbidden" in message
    assert READER_USER in message


def _in(namespace: str, objects: list[dict]) -> list[dict]:
    return [dict(o, metadata={**o["metadata"], "namespace": namespace}) for o in objects]


def _requests_of_one_read(access: KubeAccess, namespace: str) -> int:
    with open_client(access) as client:
        read_objects(client, reads(namespace))
        return client.requests


def test_the_number_of_requests_does_not_grow_with_the_number_of_objects(own_crds, namespace, admin, admin_access):
    load(admin, _in(namespace, [appliance(), cpu_model("model-0")]))
    with_one_model = _requests_of_one_read(admin_access, namespace)
    load(admin, _in(namespace, [cpu_model(f"model-{i}") for i in range(1, 60)]))
    assert _requests_of_one_read(admin_access, namespace) == with_one_model


def test_the_snapshot_command_exits_2_with_one_line_when_the_cluster_refuses_a_read(
    cluster: ClusterInfo, own_crds, tmp_path, capsys
):
    code = main(
        ["snapshot", "--out", str(tmp_path / "s.yaml"), "--kubeconfig", str(cluster.kubeconfig_path(READER_USER))]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "403 Forbidden" in err
    assert not (tmp_path / "s.yaml").exists()


def test_the_reader_takes_kubeais_release_and_configuration_and_no_other_config_map_of_its_namespace(
    clean_shared_namespaces, admin, admin_access, cluster
):
    kubeai_labels = {"app.kubernetes.io/name": "kubeai", "app.kubernetes.io/instance": "kubeai"}
    load(
        admin,
        [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "kubeai-config", "namespace": "ai", "labels": kubeai_labels},
                "data": {"system.yaml": "modelServers: {}\n"},
            },
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "someone-elses", "namespace": "ai"},
                "data": {"x": "y"},
            },
            {
                "apiVersion": "helm.toolkit.fluxcd.io/v2",
                "kind": "HelmRelease",
                "metadata": {"name": "kubeai", "namespace": "flux-system"},
                "spec": {
                    "interval": "30m",
                    "chart": {"spec": {"chart": "kubeai", "sourceRef": {"kind": "HelmRepository", "name": "kubeai"}}},
                },
            },
        ],
    )
    live = read_snapshot(admin_access, system_namespace="ai-system")
    assert live.config_map("ai", "kubeai-config") is not None
    assert live.config_map("ai", "someone-elses") is None
    assert live.generic("HelmRelease", "flux-system", "kubeai") is not None
