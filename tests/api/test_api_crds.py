"""Generated CRDs: committed files match the types, schemas are structural, rules are in CEL."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from api.crdgen import build_crds, load_committed_crds, render
from api.meta import GROUP
from tests.support.hash_seeds import digest, digests_under_hash_seeds

KINDS = ["Appliance", "ModuleActivation", "ModelActivation", "AppInstance", "HostOperation", "ApplianceSetup"]
FREE_FORM = [
    ("ModuleActivation", "spec.parameters"),
    ("AppInstance", "spec.values"),
    ("ModelActivation", "spec.local.freetoken.advanced"),
    ("Appliance", "spec.instances"),
]


def crd_of(kind: str) -> dict:
    return next(crd for crd in build_crds() if crd["spec"]["names"]["kind"] == kind)


def root_schema(kind: str) -> dict:
    return crd_of(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def node_at(kind: str, dotted: str) -> dict:
    node = root_schema(kind)
    for part in dotted.split("."):
        node = node["properties"][part]
    return node


def nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node below and including ``schema``, with its dotted path."""
    yield path or "<root>", schema
    for name, child in schema.get("properties", {}).items():
        yield from nodes(child, f"{path}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from nodes(schema["additionalProperties"], f"{path}.*")
    if "items" in schema:
        yield from nodes(schema["items"], f"{path}[]")


def cel_messages(kind: str, dotted: str) -> list[str]:
    return [rule["message"] for rule in node_at(kind, dotted).get("x-kubernetes-validations", [])]


def test_load_committed_crds_returns_the_generated_crds_in_kind_order() -> None:
    assert load_committed_crds() == build_crds()


def test_generation_gives_the_same_text_whatever_the_hash_seed() -> None:
    imports = "from api.crdgen import build_crds, render"
    rendered = [render(crd) for crd in build_crds()]
    assert (
        digests_under_hash_seeds("[render(crd) for crd in build_crds()]", imports=imports)
        == [digest(repr(rendered))] * 2
    )


def test_there_is_one_crd_per_kind() -> None:
    assert [crd["spec"]["names"]["kind"] for crd in build_crds()] == KINDS


@pytest.mark.parametrize("kind", KINDS)
def test_every_crd_is_namespaced_served_stored_and_has_a_status_subresource(kind: str) -> None:
    crd = crd_of(kind)
    (version,) = crd["spec"]["versions"]
    assert (crd["spec"]["group"], crd["spec"]["scope"]) == (GROUP, "Namespaced")
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}
    assert crd["metadata"]["name"] == f"{crd['spec']['names']['plural']}.{GROUP}"


@pytest.mark.parametrize("kind", KINDS)
def test_every_crd_prints_phase_and_age(kind: str) -> None:
    columns = {
        column["name"]: column["jsonPath"] for column in crd_of(kind)["spec"]["versions"][0]["additionalPrinterColumns"]
    }
    assert columns["Phase"] == ".status.phase"
    assert columns["Age"] == ".metadata.creationTimestamp"


def test_appliance_names_are_appliances_with_short_names_msapp_and_appliance() -> None:
    names = crd_of("Appliance")["spec"]["names"]
    assert (names["plural"], names["singular"], names["shortNames"]) == (
        "appliances",
        "appliance",
        ["msapp", "appliance"],
    )


@pytest.mark.parametrize("kind", KINDS)
def test_every_schema_is_structural(kind: str) -> None:
    for path, node in nodes(root_schema(kind)):
        assert not {"$ref", "$defs", "anyOf", "oneOf", "allOf", "not", "const", "title"} & node.keys(), path
        assert (
            "type" in node
            or node.get("x-kubernetes-preserve-unknown-fields") is True
            or node.get("x-kubernetes-int-or-string") is True
        ), f"{path} has no type"
        assert not ("properties" in node and "additionalProperties" in node), path
        assert node.get("additionalProperties", {}) is not False, path
        assert "default" not in node or node["default"] is not None, path
        if node.get("type") == "array":
            assert "items" in node, path
        if isinstance(node.get("exclusiveMinimum"), (int, float)) and not isinstance(node["exclusiveMinimum"], bool):
            pytest.fail(f"{path} uses a numeric exclusiveMinimum")


@pytest.mark.parametrize(("kind", "path"), FREE_FORM)
def test_free_form_fields_preserve_unknown_fields(kind: str, path: str) -> None:
    assert node_at(kind, path)["x-kubernetes-preserve-unknown-fields"] is True


@pytest.mark.parametrize("kind", [kind for kind in KINDS if kind != "ApplianceSetup"])
def test_status_is_an_open_object_with_phase_reason_message_and_observed_generation(kind: str) -> None:
    status = node_at(kind, "status")
    assert status["type"] == "object"
    assert status["x-kubernetes-preserve-unknown-fields"] is True
    assert {"phase", "reason", "message", "observedGeneration"} <= status["properties"].keys()


def test_appliance_setup_status_is_closed_so_secret_fields_are_pruned() -> None:
    status = node_at("ApplianceSetup", "status")
    assert "x-kubernetes-preserve-unknown-fields" not in status
    assert set(status["properties"]) == {"phase", "claimedAt", "completedAt", "lastErrorCode", "observedGeneration"}
    assert status["properties"]["phase"]["enum"] == [
        "Pending",
        "Claimed",
        "Applying",
        "Completed",
        "Failed",
        "CompletedLegacy",
    ]


def test_host_operation_spec_is_immutable() -> None:
    rules = node_at("HostOperation", "spec")["x-kubernetes-validations"]
    assert {"rule": "self == oldSelf", "message": "spec is immutable"} in rules


@pytest.mark.parametrize(
    ("kind", "path", "message"),
    [
        ("ModelActivation", "spec.local.cpuResources", "a positive limitMillicores must be at least requestMillicores"),
        ("ModelActivation", "spec.local", "engine VLLM accepts kvCacheType auto, or fp8 on nvidia-gpu or amd-gpu"),
        ("ModelActivation", "spec.local", "engine OLlama accepts kvCacheType f16, q8_0 or q4_0"),
        ("ModelActivation", "spec.local", "engine OLlama does not support computeTarget intel-gpu"),
        ("ModelActivation", "spec.local", "engine FreeToken takes no vLLM/Ollama offloading or KV-cache fields"),
        ("ModelActivation", "spec.local", "vllm settings require engine VLLM"),
        ("ModelActivation", "spec.local", "freetoken settings require engine FreeToken"),
        (
            "ModelActivation",
            "spec",
            "exactly the section matching type is required: local for local, external for external",
        ),
        ("AppInstance", "spec.access.sharing", "sharing mode all requires empty users and groups"),
        ("AppInstance", "spec.access", "sharing mode selected requires authentication sso"),
        ("HostOperation", "spec", "acknowledgeDisruption must be true"),
    ],
)
def test_the_crd_rejects_what_the_api_rejects_with_cel(kind: str, path: str, message: str) -> None:
    assert message in cel_messages(kind, path)


@pytest.mark.parametrize(
    "path", ["spec.local.cpuOffloading", "spec.local.kvCacheType", "spec.local.computeTarget", "spec.local.engine"]
)
def test_fields_whose_omission_means_something_have_no_crd_default(path: str) -> None:
    assert "default" not in node_at("ModelActivation", path)


@pytest.mark.parametrize(
    ("kind", "path", "default"),
    [
        ("ModelActivation", "spec.targetNamespace", "ai"),
        ("ModelActivation", "spec.local.vllm.visionAttention", "triton"),
        ("AppInstance", "spec.access.authentication", "sso"),
        ("Appliance", "spec.profile", "ai-workstation"),
    ],
)
def test_scalar_defaults_are_applied_by_the_api_server(kind: str, path: str, default: str) -> None:
    assert node_at(kind, path)["default"] == default


def test_sharing_lists_are_sets_of_at_most_one_hundred_ids() -> None:
    users = node_at("AppInstance", "spec.access.sharing.users")
    assert (users["x-kubernetes-list-type"], users["maxItems"]) == ("set", 100)


@pytest.mark.parametrize(
    ("kind", "spec"),
    [
        ("ModelActivation", {"type": "local", "local": {"memoryRequiredMi": 8}}),
        ("ModelActivation", {"type": "local", "local": {"cpuResources": {"requestMillicores": 0}}}),
        ("ModelActivation", {"type": "local", "local": {"engine": "Ollama"}}),
        (
            "ModelActivation",
            {"type": "local", "local": {"realtime": {"profile": "p", "gpuNode": "n", "gpuMemoryFraction": 0}}},
        ),
        (
            "AppInstance",
            {
                "application": "openclaw",
                "access": {"sharing": {"mode": "selected", "users": [str(i) for i in range(101)]}},
            },
        ),
        ("HostOperation", {"action": "reboot"}),
        ("ApplianceSetup", {"setupVersion": "v1", "installationId": "not-a-uuid"}),
    ],
)
def test_the_crd_schema_rejects_out_of_bound_values(kind: str, spec: dict) -> None:
    obj = {"apiVersion": f"{GROUP}/v1alpha1", "kind": kind, "metadata": {"name": "x"}, "spec": spec}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(root_schema(kind)).validate(obj)


def test_the_appliance_status_types_its_next_reconcile_deadline_and_stays_open() -> None:
    status = node_at("Appliance", "status")
    assert status["x-kubernetes-preserve-unknown-fields"] is True
    assert status["properties"]["nextReconcileAt"]["type"] == "string"
    assert status["properties"]["nextReconcileAt"]["format"] == "date-time"
    assert status["properties"]["nextReconcileReason"]["type"] == "string"
    assert "nextReconcileAt" not in node_at("ModelActivation", "status")["properties"]


@pytest.mark.parametrize(
    "spec",
    [
        {"networkRef": {"name": "x/../../identity-system/secrets/idp-admin", "uid": "u"}},
        {"requestID": "req-1\ninstall amdgpu /bin/sh"},
    ],
)
def test_the_crd_rejects_a_network_ref_that_is_no_secret_name_and_a_request_id_that_is_no_identifier(
    spec: dict,
) -> None:
    base = {
        "action": "configure-network",
        "nodeName": "n",
        "nodeUID": "u",
        "bootID": "b",
        "requestID": "r",
        "acknowledgeDisruption": True,
        "planId": "p",
    }
    obj = {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "HostOperation",
        "metadata": {"name": "x"},
        "spec": {**base, **spec},
    }
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(root_schema("HostOperation")).validate(obj)


def test_the_host_operation_status_types_scanned_networks_with_their_escaped_mark_and_stays_open() -> None:
    status = node_at("HostOperation", "status")
    assert status["x-kubernetes-preserve-unknown-fields"] is True
    network = status["properties"]["networks"]["items"]["properties"]
    assert network["ssidEscaped"]["type"] == "boolean"
    assert (network["ssid"]["type"], network["signalDbm"]["type"]) == ("string", "integer")
    assert set(network["security"]["enum"]) == {"wpa2", "wpa", "wep", "open"}
