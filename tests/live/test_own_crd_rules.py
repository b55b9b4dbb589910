"""The CEL rules of our CRDs, as the API server enforces them.

Every `x-kubernetes-validations` rule of the committed CRDs (`api/crds/`) is found by walking
their schemas; `VIOLATIONS` holds, for each one, by (CRD, rule path, rule message), an object
that breaks that rule and no other, built from a valid base object of its kind (`BASES`). The
server, with our CRDs installed as the program installs them, must accept every base and
refuse every violation with 422, naming the rule's node and its message. A rule without a case
fails `test_an_object_breaking_a_rule_is_refused_with_422_and_the_rules_message` by name; a
case whose rule is gone fails `test_every_violating_case_names_a_rule_of_our_crds`.

Requests are dry-run creates with strict field validation: a misspelt field in a case is an
error, never silently pruned. The transition rule (`oldSelf`) is checked on an update of a
stored object.

The cel-python harness (`tests.support.cel_rules`) still serves the property tests of
tests/api/test_api_cel_rules.py; `test_the_cel_python_harness_finds_exactly_the_rule_the_server_enforces`
keeps it in step with the server on every case here.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx
import pytest
import yaml

from api.crdgen import load_committed_crds
from api.meta import API_VERSION
from tests.api.api_examples import EXAMPLES
from tests.live.world import without_server_fields
from tests.support.cel_rules import CelValidator
from tests.support.vendored import REPOSITORY_ROOT

RULES_KEY: Final = "x-kubernetes-validations"
NO_FIELD: Final = "<nil>"
"""The field of a cause that names none (the server's summary of rules it did not run)."""
GROUP_PATH: Final = f"/apis/{API_VERSION}"
STRICT_DRY_RUN: Final = {"dryRun": "All", "fieldValidation": "Strict", "fieldManager": "magicstick-tests"}


@dataclass(frozen=True)
class Rule:
    """One rule of one served version of a committed CRD, and where its schema node sits."""

    crd: str
    kind: str
    plural: str
    version: str
    path: str
    """The node's wire path: `spec.local`; `[*]` for list items and map values."""
    message: str
    rule: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.crd, self.path, self.message)

    @property
    def field(self) -> re.Pattern[str]:
        """The field the server names in its cause: the path, with list indexes and map keys."""
        return re.compile(re.escape(self.path).replace(re.escape("[*]"), r"\[[^\]]+\]"))

    def __str__(self) -> str:
        return f"{self.crd} {self.path}: {self.message}"


def _nodes(schema: Mapping[str, Any], path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    yield path, schema
    for name, child in (schema.get("properties") or {}).items():
        yield from _nodes(child, f"{path}.{name}" if path else name)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), Mapping):
            yield from _nodes(schema[key], f"{path}[*]")


def committed_rules() -> tuple[Rule, ...]:
    """Every CEL rule of every served version of the committed CRDs, in schema order."""
    found = []
    for crd in load_committed_crds():
        spec = crd["spec"]
        for version in spec["versions"]:
            if not version.get("served"):
                continue
            for path, node in _nodes(version["schema"]["openAPIV3Schema"], ""):
                for entry in node.get(RULES_KEY, ()):
                    found.append(
                        Rule(
                            crd=crd["metadata"]["name"],
                            kind=spec["names"]["kind"],
                            plural=spec["names"]["plural"],
                            version=version["name"],
                            path=path,
                            message=entry.get("message") or f"failed rule: {entry['rule']}",
                            rule=entry["rule"],
                        )
                    )
    return tuple(found)


RULES: Final = committed_rules()

# --- valid bases and the objects that break each rule ---------------------------------------

HOST_OPERATION: Final = {
    "action": "reboot",
    "nodeName": "worker-1",
    "nodeUID": "0f6e2d1c-0000-4000-8000-000000000001",
    "bootID": "6b1f2c3d-0000-4000-8000-000000000002",
    "requestID": "request-1",
    "acknowledgeDisruption": True,
}
PLAN: Final = {"planId": "plan-1"}
GPU_MEMORY: Final = {"gpuMemory": {"carveoutIndex": 2, "dynamicLimitMi": 98304}}
NETWORK_REF: Final = {"networkRef": {"name": "wifi-credentials", "uid": "3c1d0000-0000-4000-8000-000000000003"}}

BASES: Final[dict[str, dict[str, Any]]] = {
    "ModelActivation": {"type": "local", "enabled": True, "targetNamespace": "ai", "local": {"preset": "qwen2505bcpu"}},
    "AppInstance": {"application": "openclaw", "targetNamespace": "ai", "access": {"authentication": "sso"}},
    "HostOperation": HOST_OPERATION,
}
"""A valid spec of each kind with rules; every rule holds for it."""


def model(**spec: Any) -> dict[str, Any]:
    return {**BASES["ModelActivation"], **spec}


def local(**fields: Any) -> dict[str, Any]:
    """The base local model with `fields` added (wire names)."""
    return model(local={**BASES["ModelActivation"]["local"], **fields})


def instance(**access: Any) -> dict[str, Any]:
    return {**BASES["AppInstance"], "access": access}


def host(action: str, **fields: Any) -> dict[str, Any]:
    return {**HOST_OPERATION, "action": action, **fields}


@dataclass(frozen=True)
class Violation:
    """A spec of `kind` that breaks one rule; with `old`, an update of a stored `old` spec."""

    kind: str
    spec: dict[str, Any]
    old: dict[str, Any] | None = None


MODELS = "modelactivations.appliance.magicstick.dev"
INSTANCES = "appinstances.appliance.magicstick.dev"
HOSTS = "hostoperations.appliance.magicstick.dev"

VIOLATIONS: Final[dict[tuple[str, str, str], Violation]] = {
    (
        MODELS,
        "spec",
        "exactly the section matching type is required: local for local, external for external",
    ): Violation("ModelActivation", {"type": "local"}),
    (
        MODELS,
        "spec.external",
        "apiBase must use https:// when apiKeySecretRef is set: an API key is never sent in clear text",
    ): Violation(
        "ModelActivation",
        {
            "type": "external",
            "external": {
                "model": "openai/example",
                "apiBase": "http://api.example.com/v1",
                "apiKeySecretRef": {"name": "k", "key": "api-key"},
            },
        },
    ),
    (MODELS, "spec.local", "engine VLLM accepts kvCacheType auto, or fp8 on nvidia-gpu or amd-gpu"): Violation(
        "ModelActivation", local(kvCacheType="fp8")
    ),
    (MODELS, "spec.local", "engine OLlama accepts kvCacheType f16, q8_0 or q4_0"): Violation(
        "ModelActivation", local(engine="OLlama", kvCacheType="auto")
    ),
    (MODELS, "spec.local", "engine FreeToken takes no vLLM/Ollama offloading or KV-cache fields"): Violation(
        "ModelActivation", local(engine="FreeToken", computeTarget="nvidia-gpu", kvCacheMemoryBytes=536870912)
    ),
    (MODELS, "spec.local", "engine OLlama does not support computeTarget intel-gpu"): Violation(
        "ModelActivation", local(engine="OLlama", computeTarget="intel-gpu")
    ),
    (MODELS, "spec.local", "vllm settings require engine VLLM"): Violation(
        "ModelActivation", local(engine="OLlama", vllm={"visionAttention": "auto"})
    ),
    (MODELS, "spec.local", "realtime settings require engine VLLM"): Violation(
        "ModelActivation",
        local(engine="OLlama", computeTarget="nvidia-gpu", realtime={"profile": "omni-cuda", "gpuNode": "worker-1"}),
    ),
    (MODELS, "spec.local", "freetoken settings require engine FreeToken"): Violation(
        "ModelActivation", local(freetoken={"gpuCount": 1})
    ),
    (MODELS, "spec.local", "cpuOffloading true requires computeTarget nvidia-gpu and engine VLLM or OLlama"): Violation(
        "ModelActivation", local(cpuOffloading=True, memoryRequiredMi=65536, cpuOffloadMi=1024)
    ),
    (MODELS, "spec.local.cpuResources", "a positive limitMillicores must be at least requestMillicores"): Violation(
        "ModelActivation", local(cpuResources={"requestMillicores": 2000, "limitMillicores": 1500})
    ),
    (INSTANCES, "spec.access", "sharing mode selected requires authentication sso"): Violation(
        "AppInstance", instance(authentication="none", sharing={"mode": "selected", "users": ["u-1"]})
    ),
    (INSTANCES, "spec.access.sharing", "sharing mode all requires empty users and groups"): Violation(
        "AppInstance", instance(sharing={"mode": "all", "users": ["id-1"]})
    ),
    (HOSTS, "spec", "spec is immutable"): Violation(
        "HostOperation", host("reboot", requestID="request-2"), old=host("reboot")
    ),
    (HOSTS, "spec", "acknowledgeDisruption must be true"): Violation(
        "HostOperation", host("reboot", acknowledgeDisruption=False)
    ),
    (HOSTS, "spec", "planId is required for this action"): Violation(
        "HostOperation", host("configure-network", **NETWORK_REF)
    ),
    (HOSTS, "spec", "gpuMemory is required for configure-gpu-memory and rejected otherwise"): Violation(
        "HostOperation", host("reboot", **GPU_MEMORY)
    ),
    (HOSTS, "spec", "configure-gpu-memory requires experimentConsent true"): Violation(
        "HostOperation", host("configure-gpu-memory", **PLAN, **GPU_MEMORY, experimentConsent=False)
    ),
    (HOSTS, "spec", "configure-gpu-memory cannot use the mixed-system experimentMode"): Violation(
        "HostOperation",
        host("configure-gpu-memory", **PLAN, **GPU_MEMORY, experimentConsent=True, experimentMode="mixed-system"),
    ),
    (HOSTS, "spec", "prepare-gpu requires an explicit experimentConsent"): Violation(
        "HostOperation", host("prepare-gpu", **PLAN)
    ),
    (HOSTS, "spec", "networkRef is only accepted for configure-network"): Violation(
        "HostOperation", host("reboot", **NETWORK_REF)
    ),
    (HOSTS, "spec", "clear-model-cache accepts no hardware, network or experiment fields"): Violation(
        "HostOperation", host("clear-model-cache", planId="cache-plan-1", experimentConsent=True)
    ),
}
"""For each rule of our CRDs, by (CRD, rule path, rule message): an object breaking it alone."""


PLURALS: Final = {crd["spec"]["names"]["kind"]: crd["spec"]["names"]["plural"] for crd in load_committed_crds()}


@functools.cache
def harness() -> CelValidator:
    return CelValidator(load_committed_crds())


def body(kind: str, spec: Mapping[str, Any], namespace: str, name: str = "case") -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": dict(spec),
    }


def dry_run_create(client: httpx.Client, obj: Mapping[str, Any]) -> httpx.Response:
    namespace = obj["metadata"]["namespace"]
    return client.post(
        f"{GROUP_PATH}/namespaces/{namespace}/{PLURALS[obj['kind']]}", params=STRICT_DRY_RUN, json=dict(obj)
    )


def object_path(obj: Mapping[str, Any]) -> str:
    metadata = obj["metadata"]
    return f"{GROUP_PATH}/namespaces/{metadata['namespace']}/{PLURALS[obj['kind']]}/{metadata['name']}"


def created(client: httpx.Client, obj: Mapping[str, Any]) -> dict[str, Any]:
    """`obj` stored (a real create), as the server answered it."""
    response = client.post(
        f"{GROUP_PATH}/namespaces/{obj['metadata']['namespace']}/{PLURALS[obj['kind']]}", json=dict(obj)
    )
    assert response.status_code == 201, response.text
    return dict(response.json())


def dry_run_update(
    client: httpx.Client, stored: Mapping[str, Any], *, spec: Mapping[str, Any], labels: Mapping[str, str] | None = None
) -> httpx.Response:
    """A dry-run replace (PUT) of `stored` with `spec`, at its resourceVersion."""
    metadata = {**stored["metadata"], **({"labels": dict(labels)} if labels else {})}
    return client.put(
        object_path(stored), params=STRICT_DRY_RUN, json={**stored, "metadata": metadata, "spec": dict(spec)}
    )


def refusal(response: httpx.Response) -> tuple[str, list[dict[str, Any]]]:
    """The message and causes of a 422; fails the test on any other answer."""
    assert response.status_code == 422, f"expected 422, got {response.status_code}: {response.text}"
    status = response.json()
    assert status["reason"] == "Invalid"
    return status["message"], status["details"]["causes"]


def rule_named(key: tuple[str, str, str]) -> Rule:
    (rule,) = {rule for rule in RULES if rule.key == key}
    return rule


# --- the table is complete ------------------------------------------------------------------


def test_our_crds_carry_rules_for_exactly_the_kinds_with_a_valid_base():
    assert RULES
    assert {rule.kind for rule in RULES} == set(BASES)


def test_every_rule_of_our_crds_has_a_violating_case():
    missing = [f"{rule} (rule: {rule.rule})" for rule in RULES if rule.key not in VIOLATIONS]
    assert missing == [], "add a case to VIOLATIONS for each"


def test_every_violating_case_names_a_rule_of_our_crds():
    assert sorted(set(VIOLATIONS) - {rule.key for rule in RULES}) == []


# --- the server -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(BASES))
def test_the_valid_base_of_each_kind_with_rules_is_accepted_by_the_server(
    own_crds, admin_client: httpx.Client, kind: str
):
    response = dry_run_create(admin_client, body(kind, BASES[kind], "ai-system"))
    assert response.status_code == 201, response.text


@pytest.mark.parametrize("rule", RULES, ids=str)
def test_an_object_breaking_a_rule_is_refused_with_422_and_the_rules_message(
    own_crds, admin_client: httpx.Client, namespace: str, rule: Rule
):
    case = VIOLATIONS.get(rule.key)
    assert case is not None, f"no case in VIOLATIONS breaks the rule {rule.key!r} (rule: {rule.rule})"
    assert case.kind == rule.kind
    if case.old is None:
        response = dry_run_create(admin_client, body(case.kind, case.spec, namespace))
    else:
        response = dry_run_update(
            admin_client, created(admin_client, body(case.kind, case.old, namespace)), spec=case.spec
        )

    message, causes = refusal(response)
    assert rule.message in message
    assert [c for c in causes if c["field"] != NO_FIELD and not rule.field.fullmatch(c["field"])] == [], (
        "another field refused"
    )
    assert [c for c in causes if rule.message in c["message"]], causes
    others = [other for other in RULES if other.key != rule.key and other.message in message]
    assert others == [], f"the case breaks other rules too: {[str(o) for o in others]}"


def test_an_update_that_keeps_a_host_operations_spec_is_accepted(own_crds, admin_client: httpx.Client, namespace: str):
    stored = created(admin_client, body("HostOperation", HOST_OPERATION, namespace))
    response = dry_run_update(admin_client, stored, spec=dict(HOST_OPERATION), labels={"seen": "yes"})
    assert response.status_code == 200, response.text
    assert response.json()["metadata"]["labels"] == {"seen": "yes"}


def our_examples() -> list[Any]:
    """The documented examples, our objects in the demo snapshot, and the golden renders."""
    found = [
        pytest.param(document, id=f"examples {document['kind']}/{document['metadata']['name']}")
        for document in EXAMPLES
    ]
    sources = [
        REPOSITORY_ROOT / "examples" / "demo" / "snapshot.yaml",
        *sorted((REPOSITORY_ROOT / "tests" / "golden").glob("*/resources/*.yaml")),
    ]
    for path in sources:
        for document in yaml.safe_load_all(Path(path).read_text(encoding="utf-8")):
            if isinstance(document, dict) and document.get("apiVersion") == API_VERSION and "spec" in document:
                where = path.relative_to(REPOSITORY_ROOT)
                found.append(pytest.param(document, id=f"{where} {document['kind']}/{document['metadata']['name']}"))
    return found


@pytest.mark.parametrize("document", our_examples())
def test_every_documented_and_rendered_object_of_ours_is_accepted_by_the_server(
    own_crds, admin_client: httpx.Client, document
):
    response = dry_run_create(admin_client, without_server_fields(document))
    assert response.status_code == 201, response.text


# --- the cel-python harness agrees with the server ------------------------------------------


@pytest.mark.parametrize("key", sorted(VIOLATIONS), ids=lambda key: f"{key[0]} {key[1]}: {key[2]}")
def test_the_cel_python_harness_finds_exactly_the_rule_the_server_enforces(key: tuple[str, str, str]):
    """The harness evaluates the same rules for the property tests of tests/api; on each case
    the server refuses above, it must find that rule broken and no other."""
    case = VIOLATIONS[key]
    old = body(case.kind, case.old, "ai-system") if case.old is not None else None
    found = {
        (v.rule.crd, v.rule.path, v.rule.message)
        for v in harness().violations(body(case.kind, case.spec, "ai-system"), old=old)
    }
    assert found == {key}
    assert harness().violations(body(case.kind, BASES[case.kind], "ai-system")) == []
