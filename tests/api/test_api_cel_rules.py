"""The CEL rules of our CRDs agree with the API types, over many more cases than a server test.

What the rules enforce is the API server's to say: tests/live/test_own_crd_rules.py installs
the committed CRDs in the test kube-apiserver and checks one violating case per rule, and that
every documented and rendered object of ours is accepted. This module compares the same rules
with the pydantic API types (`api/`), which the program validates with and the CRDs are
generated from; it stays on cel-python (`tests.support.cel_rules`, kept in step with the
server by that module) because it evaluates hundreds of cases and hypothesis-generated specs,
in moments and without a server.

Each invalid case below is a schema-valid object that the API types reject; the CEL rule it
names must reject it too, and alone. What the types reject but no CEL rule does is listed by
name in `PYDANTIC_ONLY`; what CEL rejects but the types cannot see (an update) in `CEL_ONLY`.
Every cross-field validator of the types is tied to the cases that exercise it, so adding or
removing a rule on either side changes this file.

Field constraints (enums, patterns, bounds, required fields) are OpenAPI schema keywords,
not CEL; `test_api_crds.py` and `test_api_examples.py` check those. The catalog-dependent CPU
rule (`api.validation.validate_cpu_resources`, a limit below the inherited engine request)
cannot have a CEL twin: the CRD does not know the catalog.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from spec_cases import (
    GPU_MEMORY,
    NETWORK_REF,
    VALID_HOST_OPERATIONS,
    gpu_sharing,
    host_operation,
    instance,
    local_model,
)

from api.crdgen import CRD_DIRECTORY, load_committed_crds
from api.meta import API_VERSION
from api.modules import GPU_MODULE_PARAMETERS
from api.validation import SPEC_TYPES, SpecError, parse_spec
from tests.support.cel_rules import CelRule, CelValidator, compile_rule, rules_of
from tests.support.crd_schema import CrdSchemaRegistry

RULES: tuple[CelRule, ...] = tuple(rule for crd in load_committed_crds() for rule in rules_of(crd))


@functools.cache
def cel() -> CelValidator:
    return CelValidator(load_committed_crds())


@functools.cache
def schema() -> CrdSchemaRegistry:
    return CrdSchemaRegistry(CRD_DIRECTORY)


@dataclass(frozen=True)
class Case:
    """A raw spec of one kind; `old` makes it an update; `validators` are the API's own."""

    kind: str
    spec: dict[str, Any]
    validators: tuple[str, ...] = ()
    old: dict[str, Any] | None = None


def obj(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": {"name": "case", "namespace": "ai-system"},
        "spec": spec,
    }


def cel_violations(case: Case) -> set[str]:
    old = obj(case.kind, case.old) if case.old is not None else None
    return {violation.rule.id for violation in cel().violations(obj(case.kind, case.spec), old=old)}


def api_accepts(case: Case) -> bool:
    try:
        parse_spec(case.kind, case.spec)
    except SpecError:
        return False
    return True


REALTIME = {"profile": "omni-cuda", "gpuNode": "worker-1"}


def without(spec: dict[str, Any], field: str) -> dict[str, Any]:
    return {key: value for key, value in spec.items() if key != field}


def kv_case(**local: Any) -> Case:
    return local_case("_kv_cache_type_fits_engine_and_target", **local)


def valid_local(**local: Any) -> Case:
    return Case("ModelActivation", local_model(**local))


def local_case(validator: str, **local: Any) -> Case:
    return Case("ModelActivation", local_model(**local), (f"LocalModelSpec.{validator}",))


def host_case(validator: str, spec: dict[str, Any]) -> Case:
    return Case("HostOperation", spec, (f"HostOperationSpec.{validator}",))


OFFLOAD = {"cpuOffloading": True, "memoryRequiredMi": 65536, "cpuOffloadMi": 1024}

BROKEN_BY: dict[str, dict[str, Case]] = {
    "ModelActivation spec: exactly the section matching type is required: local for local, external for external": {
        f"type {kind} {shape}": Case("ModelActivation", spec, ("ModelActivationSpec._section_matches_type",))
        for kind, shape, spec in [
            ("local", "without local", {"type": "local"}),
            ("external", "without external", {"type": "external"}),
            ("local", "with external", {"type": "local", "local": {}, "external": {"model": "openai/example"}}),
            ("external", "with local", {"type": "external", "local": {}, "external": {"model": "openai/example"}}),
        ]
    },
    "ModelActivation spec.external: apiBase must use https:// when apiKeySecretRef is set: an API key is never sent in clear text": {
        "a key sent over plain http": Case(
            "ModelActivation",
            {
                "type": "external",
                "external": {
                    "model": "openai/example",
                    "apiBase": "http://api.example.com/v1",
                    "apiKeySecretRef": {"name": "k", "key": "api-key"},
                },
            },
            ("ExternalModelSpec._no_key_over_plain_http",),
        ),
    },
    "ModelActivation spec.local: engine VLLM accepts kvCacheType auto, or fp8 on nvidia-gpu or amd-gpu": {
        "fp8 on cpu": kv_case(engine="VLLM", computeTarget="cpu", kvCacheType="fp8"),
        "fp8 on intel-gpu": kv_case(engine="VLLM", computeTarget="intel-gpu", kvCacheType="fp8"),
        "fp8 on the default target": kv_case(kvCacheType="fp8"),
        "f16 with VLLM": kv_case(engine="VLLM", computeTarget="nvidia-gpu", kvCacheType="f16"),
        "q8_0 with the default engine": kv_case(computeTarget="nvidia-gpu", kvCacheType="q8_0"),
    },
    "ModelActivation spec.local: engine OLlama accepts kvCacheType f16, q8_0 or q4_0": {
        f"{kv} with OLlama": kv_case(engine="OLlama", computeTarget="nvidia-gpu", kvCacheType=kv)
        for kv in ("auto", "fp8")
    },
    "ModelActivation spec.local: engine FreeToken takes no vLLM/Ollama offloading or KV-cache fields": {
        "kvCacheType with FreeToken": kv_case(engine="FreeToken", computeTarget="nvidia-gpu", kvCacheType="auto"),
        "cpuOffloading false with FreeToken": local_case(
            "_cpu_offloading_supported", engine="FreeToken", computeTarget="nvidia-gpu", cpuOffloading=False
        ),
        **{
            f"{field} with FreeToken": local_case(
                "_not_with_freetoken", engine="FreeToken", computeTarget="nvidia-gpu", **{field: value}
            )
            for field, value in [("kvCacheMemoryBytes", 536870912), ("cpuOffloadMi", 1024), ("ollamaGpuLayers", 10)]
        },
    },
    "ModelActivation spec.local: engine OLlama does not support computeTarget intel-gpu": {
        "OLlama on intel-gpu": local_case("_engine_supports_target", engine="OLlama", computeTarget="intel-gpu"),
    },
    "ModelActivation spec.local: vllm settings require engine VLLM": {
        f"vllm settings with {engine}": local_case("_vllm_only", engine=engine, computeTarget="nvidia-gpu", vllm={})
        for engine in ("OLlama", "FreeToken")
    },
    "ModelActivation spec.local: realtime settings require engine VLLM": {
        f"realtime settings with {engine}": local_case(
            "_vllm_only", engine=engine, computeTarget="nvidia-gpu", realtime=REALTIME
        )
        for engine in ("OLlama", "FreeToken")
    },
    "ModelActivation spec.local: freetoken settings require engine FreeToken": {
        "freetoken settings with OLlama": local_case("_freetoken_only", engine="OLlama", freetoken={"gpuCount": 1}),
        "freetoken settings with the default engine": local_case("_freetoken_only", freetoken={"gpuCount": 1}),
    },
    "ModelActivation spec.local: cpuOffloading true requires computeTarget nvidia-gpu and engine VLLM or OLlama": {
        **{
            f"cpuOffloading on {target}": local_case("_cpu_offloading_supported", computeTarget=target, **OFFLOAD)
            for target in ("cpu", "amd-gpu", "intel-gpu")
        },
        "cpuOffloading on the default target": local_case("_cpu_offloading_supported", **OFFLOAD),
    },
    "ModelActivation spec.local.cpuResources: a positive limitMillicores must be at least requestMillicores": {
        "limit below the request": Case(
            "ModelActivation",
            local_model(cpuResources={"requestMillicores": 2000, "limitMillicores": 1500}),
            ("CpuResources._limit_covers_explicit_request",),
        ),
    },
    "AppInstance spec.access: sharing mode selected requires authentication sso": {
        "selected sharing without authentication": Case(
            "AppInstance",
            instance(authentication="none", sharing={"mode": "selected", "users": ["u-1"]}),
            ("AccessSpec._selected_requires_sso",),
        ),
    },
    "AppInstance spec.access.sharing: sharing mode all requires empty users and groups": {
        f"sharing mode all with {field}": Case(
            "AppInstance",
            instance(sharing={"mode": "all", field: ["id-1"]}),
            ("SharingSpec._unique_and_empty_for_all",),
        )
        for field in ("users", "groups")
    },
    "HostOperation spec: spec is immutable": {
        "an update of the request ID": Case(
            "HostOperation", host_operation("reboot", requestID="request-2"), old=host_operation("reboot")
        ),
        "an update that adds a plan": Case(
            "HostOperation", host_operation("reboot", planId="plan-1"), old=host_operation("reboot")
        ),
    },
    "HostOperation spec: acknowledgeDisruption must be true": {
        "reboot without acknowledgement": host_case(
            "_acknowledged", host_operation("reboot", acknowledgeDisruption=False)
        ),
    },
    "HostOperation spec: planId is required for this action": {
        f"{action} without planId": host_case("_plan_bound", without(VALID_HOST_OPERATIONS[action], "planId"))
        for action in ("prepare-gpu", "configure-gpu-memory", "configure-network", "clear-model-cache")
    },
    "HostOperation spec: gpuMemory is required for configure-gpu-memory and rejected otherwise": {
        "configure-gpu-memory without gpuMemory": host_case(
            "_gpu_memory_only_for_memory_action", without(VALID_HOST_OPERATIONS["configure-gpu-memory"], "gpuMemory")
        ),
        **{
            f"gpuMemory with {action}": host_case(
                "_gpu_memory_only_for_memory_action", {**VALID_HOST_OPERATIONS[action], "gpuMemory": GPU_MEMORY}
            )
            for action in VALID_HOST_OPERATIONS
            if action != "configure-gpu-memory"
        },
    },
    "HostOperation spec: configure-gpu-memory requires experimentConsent true": {
        "configure-gpu-memory without consent": host_case(
            "_consent", without(VALID_HOST_OPERATIONS["configure-gpu-memory"], "experimentConsent")
        ),
        "configure-gpu-memory with declined consent": host_case(
            "_consent", {**VALID_HOST_OPERATIONS["configure-gpu-memory"], "experimentConsent": False}
        ),
    },
    "HostOperation spec: configure-gpu-memory cannot use the mixed-system experimentMode": {
        "configure-gpu-memory in mixed-system mode": host_case(
            "_experiment_mode", {**VALID_HOST_OPERATIONS["configure-gpu-memory"], "experimentMode": "mixed-system"}
        ),
    },
    "HostOperation spec: prepare-gpu requires an explicit experimentConsent": {
        "prepare-gpu without consent": host_case(
            "_consent", without(VALID_HOST_OPERATIONS["prepare-gpu"], "experimentConsent")
        ),
    },
    "HostOperation spec: networkRef is only accepted for configure-network": {
        f"networkRef with {action}": host_case(
            "_network_ref_only_for_network_action", {**VALID_HOST_OPERATIONS[action], "networkRef": NETWORK_REF}
        )
        for action in VALID_HOST_OPERATIONS
        if action != "configure-network"
    },
    "HostOperation spec: clear-model-cache accepts no hardware, network or experiment fields": {
        **{
            f"clear-model-cache with consent {consent}": host_case(
                "_consent", {**VALID_HOST_OPERATIONS["clear-model-cache"], "experimentConsent": consent}
            )
            for consent in (True, False)
        },
        "clear-model-cache with an experiment mode": host_case(
            "_experiment_mode", {**VALID_HOST_OPERATIONS["clear-model-cache"], "experimentMode": "single-gpu"}
        ),
    },
}
"""Each CEL rule, by `Kind path: message`, and schema-valid cases that break it (and no other rule)."""

CEL_ONLY: frozenset[str] = frozenset({"HostOperation spec: spec is immutable"})
"""Rules the API types cannot twin: they judge one spec, never a change from the stored one."""


@dataclass(frozen=True)
class PydanticOnly:
    """A rule the API types enforce and no CEL rule does; `case` breaks it."""

    case: Case
    schema_rejects: bool
    instead: str


PYDANTIC_ONLY: dict[str, PydanticOnly] = {
    "cpuOffloading true supports one replica": PydanticOnly(
        local_case("_cpu_offloading_supported", computeTarget="nvidia-gpu", replicas=2, **OFFLOAD),
        schema_rejects=False,
        instead="nothing in the CRD; the program reports it in status",
    ),
    "cpuOffloading true requires memoryRequiredMi": PydanticOnly(
        local_case("_cpu_offloading_supported", computeTarget="nvidia-gpu", cpuOffloading=True, cpuOffloadMi=1024),
        schema_rejects=False,
        instead="nothing in the CRD; the program reports it in status",
    ),
    "cpuOffloading true with VLLM requires cpuOffloadMi": PydanticOnly(
        local_case("_cpu_offloading_supported", computeTarget="nvidia-gpu", cpuOffloading=True, memoryRequiredMi=65536),
        schema_rejects=False,
        instead="nothing in the CRD; the program reports it in status",
    ),
    "cpuOffloading true with OLlama requires cpuOffloadMi 0 or omitted": PydanticOnly(
        local_case("_cpu_offloading_supported", engine="OLlama", computeTarget="nvidia-gpu", **OFFLOAD),
        schema_rejects=False,
        instead="nothing in the CRD; the program reports it in status",
    ),
    "application is one of the catalogued applications": PydanticOnly(
        Case("AppInstance", {"application": "jupyter"}, ("AppInstanceSpec._known_application",)),
        schema_rejects=False,
        instead="nothing in the CRD (the field has no enum); the program reports it in status",
    ),
    "sharing IDs are unique": PydanticOnly(
        Case(
            "AppInstance",
            instance(sharing={"mode": "selected", "users": ["id-1", "id-1"]}),
            ("SharingSpec._unique_and_empty_for_all",),
        ),
        schema_rejects=True,
        instead="the schema: x-kubernetes-list-type set",
    ),
    "an external model takes no plain apiKey": PydanticOnly(
        Case(
            "ModelActivation",
            {"type": "external", "external": {"model": "openai/example", "apiKey": "CHANGEME"}},
            ("ExternalModelSpec._no_plain_api_key",),
        ),
        schema_rejects=True,
        instead="the schema: the API server prunes the undeclared field",
    ),
    "amd-gpu parameters are a bounded set": PydanticOnly(
        Case(
            "ModuleActivation",
            {"module": "amd-gpu", "parameters": {"image": "CHANGEME"}},
            ("ModuleActivationSpec._bounded_gpu_parameters",),
        ),
        schema_rejects=False,
        instead="nothing in the CRD (parameters are free-form); the program reports it in status",
    ),
    "gpuSharing given as text is a JSON object": PydanticOnly(
        Case(
            "ModuleActivation",
            {"module": "gpu", "parameters": {"gpuSharing": "[1, 2]"}},
            ("ModuleActivationSpec._bounded_gpu_parameters", "NvidiaGpuParameters._decode"),
        ),
        schema_rejects=False,
        instead="nothing in the CRD (parameters are free-form); the program reports it in status",
    ),
    "amd-gpu gpuSharing given as text is valid JSON": PydanticOnly(
        Case(
            "ModuleActivation",
            {"module": "amd-gpu", "parameters": {"gpuSharing": "{not json"}},
            ("ModuleActivationSpec._bounded_gpu_parameters", "AmdGpuParameters._decode"),
        ),
        schema_rejects=False,
        instead="nothing in the CRD (parameters are free-form); the program reports it in status",
    ),
    "a shared GPU mode needs slots": PydanticOnly(
        Case(
            "ModuleActivation",
            {"module": "amd-gpu", "parameters": {"gpuSharing": gpu_sharing("dra-shared")}},
            ("ModuleActivationSpec._bounded_gpu_parameters", "GpuSharing._shared_modes_need_slots"),
        ),
        schema_rejects=False,
        instead="nothing in the CRD (parameters are free-form); the program reports it in status",
    ),
}
"""The rules only the API types enforce, by name: each has no CEL twin."""

ACCEPTED: dict[str, Case] = {
    **{
        f"VLLM auto on {target}": valid_local(engine="VLLM", computeTarget=target, kvCacheType="auto")
        for target in ("cpu", "nvidia-gpu", "amd-gpu", "intel-gpu")
    },
    **{
        f"VLLM fp8 on {target}": valid_local(computeTarget=target, kvCacheType="fp8")
        for target in ("nvidia-gpu", "amd-gpu")
    },
    **{
        f"OLlama {kv} on {target}": valid_local(engine="OLlama", computeTarget=target, kvCacheType=kv)
        for target in ("cpu", "nvidia-gpu", "amd-gpu")
        for kv in ("f16", "q8_0", "q4_0")
    },
    "FreeToken with its settings": valid_local(
        engine="FreeToken", computeTarget="nvidia-gpu", contextWindow=32768, freetoken={"gpuCount": 2}
    ),
    "vllm settings with the default engine": valid_local(computeTarget="amd-gpu", vllm={"visionAttention": "auto"}),
    "realtime settings with VLLM": valid_local(engine="VLLM", computeTarget="nvidia-gpu", realtime=REALTIME),
    "cpuOffloading true with VLLM on nvidia-gpu": valid_local(computeTarget="nvidia-gpu", replicas=1, **OFFLOAD),
    "cpuOffloading true with OLlama on nvidia-gpu": valid_local(
        engine="OLlama", computeTarget="nvidia-gpu", cpuOffloading=True, memoryRequiredMi=65536, cpuOffloadMi=0
    ),
    **{
        f"cpuOffloading false on {target}": valid_local(computeTarget=target, cpuOffloading=False)
        for target in ("cpu", "intel-gpu")
    },
    **{
        f"cpuResources {cpu}": valid_local(cpuResources=cpu)
        for cpu in (
            {"requestMillicores": 2000, "limitMillicores": 0},
            {"requestMillicores": 2000, "limitMillicores": 2000},
            {"limitMillicores": 1},
        )
    },
    "an external model with its key in a Secret": Case(
        "ModelActivation",
        {
            "type": "external",
            "external": {"model": "openai/example", "apiKeySecretRef": {"name": "k", "key": "api-key"}},
        },
    ),
    "a keyless local endpoint over plain http": Case(
        "ModelActivation",
        {"type": "external", "external": {"model": "openai/local", "apiBase": "http://llm.example.local:8080/v1"}},
    ),
    "a key sent to an https endpoint": Case(
        "ModelActivation",
        {
            "type": "external",
            "external": {
                "model": "openai/example",
                "apiBase": "https://api.example.com/v1",
                "apiKeySecretRef": {"name": "k", "key": "api-key"},
            },
        },
    ),
    "sharing mode all with empty lists": Case(
        "AppInstance", instance(sharing={"mode": "all", "users": [], "groups": []})
    ),
    "sharing mode selected with the default authentication": Case(
        "AppInstance", instance(sharing={"mode": "selected", "users": ["u-1"], "groups": ["g-1"]})
    ),
    "sharing mode selected with explicit sso": Case(
        "AppInstance", instance(authentication="sso", sharing={"mode": "selected"})
    ),
    "authentication none without sharing": Case("AppInstance", instance(authentication="none")),
    **{f"HostOperation {action}": Case("HostOperation", spec) for action, spec in VALID_HOST_OPERATIONS.items()},
    "HostOperation prepare-gpu with declined consent": Case(
        "HostOperation", {**VALID_HOST_OPERATIONS["prepare-gpu"], "experimentConsent": False}
    ),
    "HostOperation configure-gpu-memory in another experiment mode": Case(
        "HostOperation", {**VALID_HOST_OPERATIONS["configure-gpu-memory"], "experimentMode": "single-gpu"}
    ),
    "HostOperation update that keeps the spec": Case(
        "HostOperation", VALID_HOST_OPERATIONS["configure-network"], old=VALID_HOST_OPERATIONS["configure-network"]
    ),
}
"""Valid specs at the edge of each rule: the API types accept them, so every CEL rule must."""


def broken_cases() -> Iterator[tuple[str, str, Case]]:
    for rule_id, cases in BROKEN_BY.items():
        for name, case in cases.items():
            yield rule_id, name, case


def test_the_crds_carry_rules_for_the_three_kinds_with_cross_field_constraints() -> None:
    assert sorted({rule.kind for rule in RULES}) == ["AppInstance", "HostOperation", "ModelActivation"]
    assert {rule.version for rule in RULES} == {"v1alpha1"}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_a_valid_spec_at_the_edge_of_a_rule_passes_every_rule(name: str) -> None:
    case = ACCEPTED[name]
    assert api_accepts(case)
    assert schema().errors(obj(case.kind, case.spec)) == []
    assert cel_violations(case) == set()


@pytest.mark.parametrize(
    ("rule_id", "case"),
    [pytest.param(rule_id, case, id=name) for rule_id, name, case in broken_cases()],
)
def test_an_invalid_spec_is_rejected_by_its_cel_rule_alone(rule_id: str, case: Case) -> None:
    assert schema().errors(obj(case.kind, case.spec)) == [], "the case must pass the schema so only CEL can reject it"
    assert cel_violations(case) == {rule_id}
    assert api_accepts(case) is (rule_id in CEL_ONLY)


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.id)
def test_every_rule_is_broken_by_at_least_one_case(rule: CelRule) -> None:
    assert BROKEN_BY.get(rule.id), f"no case in BROKEN_BY breaks {rule.id!r} (rule: {rule.rule})"


def test_every_case_names_a_rule_of_our_crds() -> None:
    assert set(BROKEN_BY) <= {rule.id for rule in RULES}


@pytest.mark.parametrize("rule_id", sorted(CEL_ONLY))
def test_a_cel_only_rule_is_a_transition_rule_skipped_on_create(rule_id: str) -> None:
    (rule,) = [rule for rule in RULES if rule.id == rule_id]
    assert compile_rule(rule).transition
    for case in BROKEN_BY[rule_id].values():
        assert case.old is not None and api_accepts(Case(case.kind, case.old))
        assert cel_violations(Case(case.kind, case.spec)) == set()


@pytest.mark.parametrize("name", sorted(PYDANTIC_ONLY))
def test_a_rule_only_the_api_types_enforce_has_no_cel_twin(name: str) -> None:
    only = PYDANTIC_ONLY[name]
    assert not api_accepts(only.case)
    assert cel_violations(only.case) == set(), f"a CEL rule now twins {name!r}: move its case to BROKEN_BY"
    assert bool(schema().errors(obj(only.case.kind, only.case.spec))) is only.schema_rejects, only.instead


def _models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for argument in get_args(annotation):
        yield from _models_in(argument)


def api_validators() -> set[str]:
    """`Class._method` of every field and model validator reachable from a spec type."""
    pending = [*SPEC_TYPES.values(), *GPU_MODULE_PARAMETERS.values()]
    seen: set[type[BaseModel]] = set()
    names: set[str] = set()
    while pending:
        model_type = pending.pop()
        if model_type in seen:
            continue
        seen.add(model_type)
        decorators = model_type.__pydantic_decorators__
        for decorator in itertools.chain(decorators.field_validators.values(), decorators.model_validators.values()):
            names.add(decorator.func.__qualname__)
        for field_info in model_type.model_fields.values():
            pending.extend(_models_in(field_info.annotation))
    return names


def test_every_cross_field_validator_of_the_api_types_is_twinned_or_named_pydantic_only() -> None:
    claimed = {validator for _, _, case in broken_cases() for validator in case.validators}
    claimed |= {validator for only in PYDANTIC_ONLY.values() for validator in only.case.validators}
    assert claimed == api_validators()


def optional(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=fields)


local_specs = optional(
    engine=st.sampled_from(["VLLM", "OLlama", "FreeToken"]),
    computeTarget=st.sampled_from(["cpu", "nvidia-gpu", "amd-gpu", "intel-gpu"]),
    kvCacheType=st.sampled_from(["auto", "fp8", "f16", "q8_0", "q4_0"]),
    kvCacheMemoryBytes=st.just(536870912),
    cpuOffloadMi=st.integers(0, 2048),
    ollamaGpuLayers=st.integers(0, 80),
    cpuOffloading=st.just(False),
    cpuResources=optional(requestMillicores=st.integers(1, 4000), limitMillicores=st.integers(0, 4000)),
    vllm=optional(visionAttention=st.sampled_from(["auto", "triton"])),
    realtime=st.just(REALTIME),
    freetoken=optional(gpuCount=st.integers(1, 4)),
)
"""Local model specs over every field a twinned rule reads (cpuOffloading true has pydantic-only parts)."""

model_activation_specs = st.builds(
    lambda kind, local, external: {"type": kind, **local, **external},
    st.sampled_from(["local", "external"]),
    optional(local=local_specs),
    optional(external=st.just({"model": "openai/example"})),
)

host_operation_specs = st.builds(
    lambda action, fields: host_operation(action, **fields),
    st.sampled_from(sorted(VALID_HOST_OPERATIONS)),
    optional(
        acknowledgeDisruption=st.booleans(),
        planId=st.just("plan-1"),
        experimentConsent=st.booleans(),
        experimentMode=st.sampled_from(["single-gpu", "mixed-system"]),
        gpuMemory=st.just(GPU_MEMORY),
        networkRef=st.just(NETWORK_REF),
    ),
)

id_lists = st.sampled_from([[], ["id-1"], ["id-1", "id-2"]])
app_instance_specs = st.builds(
    lambda access: instance(**access),
    optional(
        authentication=st.sampled_from(["sso", "none"]),
        sharing=st.builds(
            lambda mode, lists: {"mode": mode, **lists},
            st.sampled_from(["all", "selected"]),
            optional(users=id_lists, groups=id_lists),
        ),
    ),
)


@settings(max_examples=300)
@given(
    case=st.one_of(
        model_activation_specs.map(lambda spec: Case("ModelActivation", spec)),
        host_operation_specs.map(lambda spec: Case("HostOperation", spec)),
        app_instance_specs.map(lambda spec: Case("AppInstance", spec)),
    )
)
def test_where_every_rule_is_twinned_the_cel_rules_accept_exactly_what_the_api_types_accept(case: Case) -> None:
    assert schema().errors(obj(case.kind, case.spec)) == []
    violations = cel_violations(case)
    assert api_accepts(case) is (violations == set()), violations or "CEL accepts what the API types reject"
