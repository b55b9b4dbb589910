"""The dynamic resources under Pulumi's mocks: inputs name their object only, names cannot collide.

Cluster access reaches the dynamic providers through the stack configuration (`configure`),
so none of it is declared as a resource input, where it would be kept in the state.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pulumi
import pytest
import yaml
from pulumi.runtime import rpc

from cli.offline import OfflineRun, RecordingMonitor, run_offline
from components.dynamic import OllamaAlias, ollama_alias_name, pod_recovery_name
from planning.models.plan import AliasRequest, PodDeletion
from planning.models.recovery import TerminalPod
from program import main as program
from program.settings import CONFIG_NAMESPACE
from providers.cluster_access import CONTEXT_KEY, KUBECONFIG_KEY
from providers.ollama import OllamaAliasProvider
from tests.planning.builders import activation, with_flux
from tests.planning.models.world import catalog_publishing, local_model, observed_model, platform, pod

DYNAMIC = "pulumi-python:dynamic/magicstick:"
STATUS = f"{DYNAMIC}StatusBatch"
RUNTIME_PROFILE = f"{DYNAMIC}RuntimeProfile"
POD_RECOVERY = f"{DYNAMIC}PodRecovery"
OLLAMA_ALIAS = f"{DYNAMIC}OllamaAlias"
KUBECONFIG_CONTENTS = (
    "apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n# CHANGEME-kubeconfig-contents-marker\n"
)


def every_dynamic_kind() -> list[dict]:
    """A world in which the program declares each kind of dynamic resource at least once."""
    return [
        *platform(),
        activation("basis"),
        local_model("chat", engine="OLlama"),
        observed_model("chat", ready=1, all_=1, engine="OLlama"),
        pod("chat-0", "chat"),
        catalog_publishing("chat"),
        local_model("broken"),
        observed_model("broken"),
        pod("broken-0", "broken", phase="Failed", ready=False),
    ]


@pytest.fixture
def run_with(tmp_path: Path):
    def run(objects: list[dict], monitor: RecordingMonitor | None = None, **config: str) -> OfflineRun:
        snapshot = tmp_path / "snapshot.yaml"
        snapshot.write_text(yaml.safe_dump_all(with_flux(objects)))
        settings = {"snapshotFile": str(snapshot), "now": "2026-01-01T00:00:00Z", **config}
        _, recorded = run_offline(program.run, settings, monitor=monitor)
        return recorded

    return run


def dynamic_resources(run: OfflineRun) -> list:
    return [r for r in run.registrations if r.type.startswith(DYNAMIC)]


def test_the_world_declares_every_kind_of_dynamic_resource(run_with):
    run = run_with(every_dynamic_kind())
    assert {r.type for r in dynamic_resources(run)} == {STATUS, RUNTIME_PROFILE, POD_RECOVERY, OLLAMA_ALIAS}


def test_no_dynamic_resource_has_kubeconfig_or_context_inputs(run_with, tmp_path):
    run = run_with(every_dynamic_kind(), kubeconfig=str(tmp_path / "kubeconfig"), context="workstation")
    carrying = {(r.type, r.name): sorted({"kubeconfig", "context"} & set(r.inputs)) for r in dynamic_resources(run)}
    assert {resource: keys for resource, keys in carrying.items() if keys} == {}


def test_kubeconfig_contents_appear_in_no_dynamic_resource_input_nor_in_its_serialized_provider(run_with):
    run = run_with(every_dynamic_kind(), kubeconfig=KUBECONFIG_CONTENTS)
    for resource in dynamic_resources(run):
        provider = resource.inputs["__provider"]
        serialized = base64.b64decode(provider["value"] if rpc.is_rpc_secret(provider) else provider)
        assert b"kubeconfig-contents-marker" not in serialized, resource.name
        others = {key: value for key, value in resource.inputs.items() if key != "__provider"}
        assert "kubeconfig-contents-marker" not in repr(others), resource.name


def test_the_dynamic_resources_are_named_by_their_parts_joined_with_a_slash(run_with):
    run = run_with(every_dynamic_kind())
    names = {r.type: set() for r in dynamic_resources(run)}
    for resource in dynamic_resources(run):
        names[resource.type].add(resource.name)
    assert "statuses/moduleactivation/0" in names[STATUS]
    assert "statuses/appliance/0" in names[STATUS]
    assert names[POD_RECOVERY] == {"pod-recovery/ai/broken-0/1"}
    assert all(name.startswith("runtime-profile/magicstick-cpu-") for name in names[RUNTIME_PROFILE])


def test_every_renamed_dynamic_resource_keeps_its_previous_name_as_an_alias(run_with):
    run = run_with(every_dynamic_kind())
    expected = {
        "pod-recovery/ai/broken-0/1": "pod-recovery-ai-broken-0-1",
    }
    for profile in run.of_type(RUNTIME_PROFILE):
        expected[profile.name] = f"runtime-profile-{profile.inputs['profileName']}"
    for name, previous in expected.items():
        (resource,) = [r for r in dynamic_resources(run) if r.name == name]
        assert resource.aliases == (previous,)


def test_an_ollama_alias_named_by_its_activation_is_renamed_with_its_previous_name_as_an_alias():
    request = AliasRequest(namespace="ai", pods=("chat-0",), source="qwen2.5:0.5b", alias="chat")

    def declare() -> None:
        OllamaAlias(
            request,
            logical_name=ollama_alias_name("chat"),
            provider=OllamaAliasProvider(),
            opts=pulumi.ResourceOptions(),
        )

    _, run = run_offline(declare, {})
    (alias,) = run.of_type(OLLAMA_ALIAS)
    assert alias.name == "ollama-alias/chat"
    assert alias.aliases == ("chat-ollama-alias",)


def test_two_pods_whose_dashed_names_coincide_get_two_recovery_resource_names():
    first = PodDeletion(namespace="ai-x", pod=_terminal("m-0"), attempt=1)
    second = PodDeletion(namespace="ai", pod=_terminal("x-m-0"), attempt=1)
    assert pod_recovery_name(first).previous == pod_recovery_name(second).previous
    assert pod_recovery_name(first).name != pod_recovery_name(second).name


def test_the_program_and_the_dynamic_providers_read_the_same_kubeconfig_and_context_keys():
    assert (f"{CONFIG_NAMESPACE}:kubeconfig", f"{CONFIG_NAMESPACE}:context") == (KUBECONFIG_KEY, CONTEXT_KEY)


def _terminal(name: str) -> TerminalPod:
    return TerminalPod(
        name=name, uid=f"uid-{name}", resource_version="7", phase="Failed", reason="", message="", owner_uid="m"
    )
