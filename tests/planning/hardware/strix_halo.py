"""A Strix Halo node, its NFD NodeFeature, host evidence and the amd-gpu activation, for tests."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from api.host_evidence import HOST_EVIDENCE_ANNOTATION, evidence_document
from planning.hardware.validation import HISTORY_CONFIG_MAP, HISTORY_KEY, History, RunRecord
from planning.plan import Plan
from tests.planning.builders import NOW, NS, JsonObject, activation, crd, kustomization_for
from tests.planning.hardware.nodes import node, node_feature

STRIX_HALO = ("0300", "1002", "1586")
DISCRETE_AMD = ("0300", "1002", "744c")
NVIDIA = ("0300", "10de", "2684")
INTEL = ("0300", "8086", "56a0")
KERNEL = "6.14.0-magicstick"


def evidence(
    name: str = "halo",
    *,
    uid: str | None = None,
    boot: str | None = None,
    kernel: str = KERNEL,
    architecture: str = "gfx1151",
    driver_ready: bool = True,
    devices: tuple[str, ...] = ("1002:1586",),
    observed: datetime = NOW - timedelta(minutes=2),
) -> str:
    document = evidence_document(
        node_uid=uid or f"uid-{name}",
        boot_id=boot or f"boot-{name}",
        kernel=kernel,
        architecture=architecture,
        driver_ready=driver_ready,
        pci_devices=devices,
        observed_at=observed.strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    return json.dumps(document)


def halo_node(
    name: str = "halo",
    *,
    annotation: str | None = "default",
    registered: bool = True,
    vendors: tuple[str, ...] = ("amd",),
) -> JsonObject:
    obj = node(name, *vendors, allocatable={"amd.com/gpu": "1"} if registered else None)
    obj["status"]["nodeInfo"]["kernelVersion"] = KERNEL
    if annotation == "default":
        annotation = evidence(name)
    if annotation is not None:
        obj["metadata"]["annotations"] = {HOST_EVIDENCE_ANNOTATION: annotation}
    return obj


def halo_feature(name: str = "halo", *devices: tuple[str, str, str]) -> JsonObject:
    return node_feature(name, *(devices or (STRIX_HALO,)))


def amd_activation(*, annotations: dict[str, str] | None = None, **parameters: str) -> JsonObject:
    return _amd_activation(parameters, annotations)


def consented(**extra: str) -> JsonObject:
    return _amd_activation(dict(compatibilityProfile="strix-halo", allowExperimental="true", **extra), None)


def _amd_activation(parameters: dict[str, str], annotations: dict[str, str] | None) -> JsonObject:
    obj = activation("amd-gpu")
    obj["spec"]["parameters"] = dict(parameters)
    if annotations:
        obj["metadata"]["annotations"] = annotations
    return obj


def amd_installed() -> list[JsonObject]:
    return [kustomization_for("amd-gpu"), crd("deviceconfigs.amd.com")]


def history_map(*records: RunRecord, text: str | None = None) -> JsonObject:
    body = text if text is not None else json.dumps(History(runs={r.run_id: r for r in records}).to_document())
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": HISTORY_CONFIG_MAP, "namespace": NS},
        "data": {HISTORY_KEY: body},
    }


def node_patches(result: Plan) -> dict[str, dict[str, str]]:
    return {o.name: dict(o.body["metadata"]["labels"]) for o in result.objects if o.kind == "Node"}
