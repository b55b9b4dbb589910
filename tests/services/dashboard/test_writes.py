"""What the dashboard writes for each form: the form's own fields, and what must be kept."""

from __future__ import annotations

import json
from typing import Any

import pytest

from api.host_evidence import HOST_PLANS_ANNOTATION
from services.dashboard import writes
from services.dashboard.forms import (
    GpuSharingChange,
    HostOperationCreate,
    InstanceEdit,
    LocalModelCreate,
    LocalModelEdit,
    ModelRestart,
    ModuleChange,
)
from services.dashboard.refusals import Refusal

SHARING = '{"mode": "time-slicing", "nodeName": "gpu-1", "nodeUID": "uid-1", "namespace": "ai", "slots": 4}'


def module(parameters: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "gpu", "resourceVersion": "7"}, "spec": {"module": "gpu", "parameters": parameters}}


def test_a_module_edit_keeps_the_current_gpu_sharing_whatever_the_client_sends() -> None:
    change = ModuleChange(resource_version="7", enabled=True, parameters={"gpuSharing": "{}", "other": "x"})
    body = writes.module_body("gpu", "gpu", change, current=module({"gpuSharing": SHARING}))
    assert body["spec"]["parameters"] == {"other": "x", "gpuSharing": SHARING}
    assert body["metadata"] == {"name": "gpu", "resourceVersion": "7"}


def test_a_module_change_without_parameters_leaves_them_out() -> None:
    body = writes.module_body("litellm", "litellm", ModuleChange(enabled=False), current=None)
    assert body["spec"] == {"module": "litellm", "enabled": False}


def test_shared_gpu_sharing_is_the_vendors_own_mode_bound_to_the_node_uid() -> None:
    body = writes.gpu_sharing_body(
        module({}), GpuSharingChange(resource_version="7", mode="shared", node_name="gpu-1", slots=3), node_uid="uid-9"
    )
    sharing = json.loads(body["spec"]["parameters"]["gpuSharing"])
    assert sharing == {"mode": "time-slicing", "nodeName": "gpu-1", "nodeUID": "uid-9", "namespace": "ai", "slots": 3}
    amd = writes.gpu_sharing_body(
        {"metadata": {"name": "amd-gpu"}, "spec": {"module": "amd-gpu"}},
        GpuSharingChange(resource_version="7", mode="shared", node_name="gpu-1", slots=2),
        node_uid="uid-9",
    )
    assert json.loads(amd["spec"]["parameters"]["gpuSharing"])["mode"] == "dra-shared"


def test_shared_gpu_sharing_without_slots_is_refused_naming_the_field() -> None:
    with pytest.raises(Refusal) as refused:
        writes.gpu_sharing_body(
            module({}), GpuSharingChange(resource_version="7", mode="shared", node_name="gpu-1"), node_uid="uid-9"
        )
    assert refused.value.status == 422
    assert refused.value.fields[0].field == "slots"


def test_a_local_model_carries_the_derived_fields_and_the_risk_flag_only_when_given() -> None:
    form = LocalModelCreate(name="chat", preset="qwen2505bcpu", allow_memory_risk=True)
    body = writes.local_model_body(form, kv_cache_memory_bytes=64 * 1024 * 1024, cpu_offload_mi=None)
    assert body["spec"]["local"] == {
        "preset": "qwen2505bcpu",
        "engine": "VLLM",
        "computeTarget": "cpu",
        "kvCacheMemoryBytes": 67108864,
        "allowMemoryRisk": True,
    }
    assert "resourceVersion" not in body["metadata"]


@pytest.mark.parametrize("field", ["preset", "engine", "computeTarget", "artifact"])
def test_source_and_profile_are_immutable_in_edit(field: str) -> None:
    current = {
        "metadata": {"name": "chat"},
        "spec": {
            "type": "local",
            "local": {"preset": "p", "engine": "VLLM", "computeTarget": "cpu", "artifact": "bf16"},
        },
    }
    attribute = {"computeTarget": "compute_target"}.get(field, field)
    form = LocalModelEdit(resource_version="3", **{attribute: "changed"})
    with pytest.raises(Refusal) as refused:
        writes.local_model_edit_body(current, form, kv_cache_memory_bytes=None, cpu_offload_mi=None)
    assert refused.value.fields[0].field == f"spec.local.{field}"


def test_an_instance_edit_without_sharing_keeps_the_current_restriction() -> None:
    sharing = {"mode": "selected", "users": ["u-1"], "groups": []}
    current = {"metadata": {"name": "claw"}, "spec": {"application": "openclaw", "access": {"sharing": sharing}}}
    body = writes.instance_edit_body(
        current, InstanceEdit.model_validate({"resourceVersion": "5", "access": {"role": "operator"}})
    )
    assert body["spec"]["access"] == {"role": "operator", "exposure": "localAndPublic", "sharing": sharing}


def test_a_host_operation_is_bound_to_the_nodes_uid_and_boot_and_the_acknowledgement() -> None:
    node = {"metadata": {"uid": "uid-1"}, "status": {"nodeInfo": {"bootID": "boot-1"}}}
    body = writes.host_operation_body(
        HostOperationCreate(action="reboot", node_name="gpu-1", acknowledge_disruption=True),
        node=node,
        request_id="0f0e7a52-0000-4000-8000-000000000000",
    )
    assert body["spec"] == {
        "action": "reboot",
        "nodeName": "gpu-1",
        "nodeUID": "uid-1",
        "bootID": "boot-1",
        "requestID": "0f0e7a52-0000-4000-8000-000000000000",
        "acknowledgeDisruption": True,
    }
    assert body["metadata"]["name"] == "reboot-0f0e7a52"


def test_clearing_the_model_cache_needs_a_cache_plan_the_node_publishes_or_the_form_gives() -> None:
    node = {"metadata": {"uid": "uid-1"}, "status": {"nodeInfo": {"bootID": "boot-1"}}}
    with pytest.raises(Refusal) as refused:
        writes.host_operation_body(
            HostOperationCreate(action="clear-model-cache", node_name="gpu-1", acknowledge_disruption=True),
            node=node,
            request_id="x" * 36,
        )
    assert refused.value.fields[0].field == "planId"


def test_clearing_the_model_cache_binds_the_plan_the_nodes_host_agent_publishes() -> None:
    plans = json.dumps({"modelCache": {"planId": "model-cache-0123", "locations": ["ollama"]}})
    node = {
        "metadata": {"uid": "uid-1", "annotations": {HOST_PLANS_ANNOTATION: plans}},
        "status": {"nodeInfo": {"bootID": "boot-1"}},
    }
    body = writes.host_operation_body(
        HostOperationCreate(action="clear-model-cache", node_name="gpu-1", acknowledge_disruption=True),
        node=node,
        request_id="x" * 36,
    )
    assert body["spec"]["planId"] == "model-cache-0123"


def test_a_restart_sets_only_the_runtimes_restart_nonce() -> None:
    current = {
        "metadata": {"name": "omni"},
        "spec": {"type": "local", "local": {"engine": "VLLM", "realtime": {"profile": "p", "gpuNode": "n"}}},
    }
    body = writes.restart_body(current, ModelRestart(resource_version="4"), nonce="nonce-1")
    assert body["spec"] == {"type": "local", "local": {"realtime": {"restartNonce": "nonce-1"}}}
    assert body["metadata"] == {"name": "omni", "resourceVersion": "4"}


def test_a_vllm_model_has_no_restart_nonce_to_set() -> None:
    current = {"metadata": {"name": "chat"}, "spec": {"type": "local", "local": {"engine": "VLLM", "preset": "p"}}}
    with pytest.raises(Refusal) as refused:
        writes.restart_body(current, ModelRestart(resource_version="4"), nonce="nonce-1")
    assert refused.value.fields[0].field == "spec.local.engine"
