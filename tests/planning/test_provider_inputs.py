"""What a plan hands to a dynamic provider is written out once, on the planning side: each
type's `to_inputs` is what the component declares and its `from_inputs` what the provider reads
back, property names unchanged from the state Pulumi holds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from components import status as status_component
from planning.frozen import freeze
from planning.models.direct import DirectRuntime, DirectRuntimeInputs, DirectRuntimeKind
from planning.models.kubeai import CpuProfile
from planning.models.plan import AliasRequest, PodDeletion
from planning.models.profile_entry import ProfileEntry, ProfileStoreRef
from planning.models.recovery import RecoveryAttempt, TerminalPod
from planning.objects import DesiredObject, StatusUpdate
from planning.provider_wire import MEMBERS_INPUT, PROBLEMS_INPUT
from planning.stale import StaleObject, StaleTarget
from planning.status_batches import status_batches
from providers import direct_runtime, profile_store, status_batch, status_writer
from providers.ollama import AliasTarget
from providers.pod_recovery import RecoveryAttempt as ProviderRecoveryAttempt
from providers.stale_removal import StaleTarget as ProviderStaleTarget

text = st.text(min_size=1, max_size=12)

stale_targets = st.builds(StaleTarget, api_version=text, kind=text, namespace=text, name=text, uid=text)
recovery_attempts = st.builds(
    RecoveryAttempt, namespace=text, pod=text, pod_uid=text, resource_version=text, attempt=st.integers(0, 1_000)
)
alias_requests = st.builds(
    AliasRequest,
    namespace=text,
    pods=st.lists(text, max_size=3).map(tuple),
    source=text,
    alias=text,
    port=st.integers(1, 65_535),
)

values = st.recursive(
    st.none() | st.booleans() | st.integers(-1_000, 1_000) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
status_updates = st.builds(
    StatusUpdate,
    api_version=text,
    kind=text,
    namespace=text,
    name=text,
    status=st.dictionaries(text, values, max_size=4).map(freeze),
)

profile_entries = st.builds(
    ProfileEntry,
    ref=st.builds(ProfileStoreRef, namespace=text, name=text, key=text),
    profile_name=text,
    profile=st.dictionaries(text, values, max_size=4).map(freeze),
)


@given(profile_entries)
def test_a_profile_entry_read_back_from_its_inputs_is_the_same_entry(entry: ProfileEntry) -> None:
    assert ProfileEntry.from_inputs(entry.to_inputs()) == entry
    assert set(entry.to_inputs()) == {"namespace", "configMap", "key", "profileName", "profile"}


def test_a_cpu_profile_crosses_as_an_entry_of_its_store() -> None:
    profile = CpuProfile(name="magicstick-cpu-1", body=freeze({"limits": {"cpu": 2}, "nodeSelector": {}}))
    entry = ProfileEntry.of(profile, ProfileStoreRef())
    assert entry.to_inputs() == {
        "namespace": "flux-system",
        "configMap": "magicstick-runtime-profiles",
        "key": "values.json",
        "profileName": "magicstick-cpu-1",
        "profile": {"limits": {"cpu": 2}, "nodeSelector": {}},
    }
    read = profile_store.RuntimeProfileEntry.from_inputs(
        {**entry.to_inputs(), "profile": {"limits": {"cpu": 2.0}, "nodeSelector": {}}}
    )
    assert (read.ref, read.profile_name, read.body) == (
        entry.ref,
        entry.profile_name,
        {"limits": {"cpu": 2}, "nodeSelector": {}},
    )


bodies = st.builds(
    lambda kind, name, data: freeze({"apiVersion": "v1", "kind": kind, "metadata": {"name": name}, "data": data}),
    st.sampled_from(["ConfigMap", "Service"]),
    text,
    st.dictionaries(text, values, max_size=3),
)
direct_inputs = st.builds(
    DirectRuntimeInputs,
    runtime=st.sampled_from(DirectRuntimeKind),
    namespace=text,
    objects=st.lists(bodies, max_size=3).map(tuple),
    field_manager=text,
)


@given(direct_inputs)
def test_direct_runtime_inputs_read_back_from_their_inputs_are_the_same(inputs: DirectRuntimeInputs) -> None:
    assert DirectRuntimeInputs.from_inputs(inputs.to_inputs()) == inputs
    assert set(inputs.to_inputs()) == {"runtime", "namespace", "objects", "fieldManager"}


@given(direct_inputs)
def test_the_direct_runtime_provider_reads_the_objects_the_plan_declared(inputs: DirectRuntimeInputs) -> None:
    read = direct_runtime.RuntimeInputs.from_props(inputs.to_inputs())
    assert (read.runtime, read.namespace, read.field_manager) == (
        inputs.runtime,
        inputs.namespace,
        inputs.field_manager,
    )
    assert [obj.ref.name for obj in read.objects] == [body["metadata"]["name"] for body in inputs.objects]


def test_a_direct_runtime_crosses_as_its_kind_namespace_and_bodies() -> None:
    body = freeze(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m-a", "namespace": "ai"}, "data": {"a": "1"}}
    )
    config = DesiredObject("configmap/ai/m-a", "v1", "ConfigMap", "m-a", "ai", body)
    runtime = DirectRuntime(kind=DirectRuntimeKind.REALTIME, activation="a", namespace="ai", objects=(config,))
    assert runtime.inputs("magicstick").to_inputs() == {
        "runtime": "Realtime",
        "namespace": "ai",
        "objects": [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "m-a", "namespace": "ai"},
                "data": {"a": "1"},
            }
        ],
        "fieldManager": "magicstick",
    }


@given(status_updates)
def test_a_status_update_read_back_from_its_inputs_is_the_same_update(update: StatusUpdate) -> None:
    assert StatusUpdate.from_inputs(update.to_inputs()) == update
    assert set(update.to_inputs()) == {"apiVersion", "kind", "namespace", "name", "status"}


@given(status_updates)
def test_the_status_writer_reads_the_update_the_plan_declared(update: StatusUpdate) -> None:
    target = status_writer.StatusTarget.from_inputs(update.to_inputs())
    assert (target.api_version, target.kind, target.namespace, target.name, freeze(target.status)) == (
        update.api_version,
        update.kind,
        update.namespace,
        update.name,
        update.status,
    )


def test_the_members_and_problems_inputs_are_named_once_for_the_status_batch_and_its_provider() -> None:
    assert status_component.MEMBERS_INPUT is status_batch.MEMBERS_INPUT is MEMBERS_INPUT
    assert (
        status_component.PROBLEMS_INPUT is status_batch.PROBLEMS_INPUT is status_writer.PROBLEMS_INPUT is PROBLEMS_INPUT
    )


@given(status_updates)
def test_a_status_batch_member_reads_back_as_the_update_the_plan_declared(update: StatusUpdate) -> None:
    (batch,) = status_batches([update])
    inputs = {
        "apiVersion": batch.api_version,
        "kind": batch.kind,
        "members": status_component.member_inputs(batch, {}),
        "problem": None,
    }
    target = status_batch.Batch.from_props(status_batch.StatusBatchProvider().check({}, inputs).inputs).target(
        batch.key(update), {}
    )
    assert (target.api_version, target.kind, target.namespace, target.name) == (
        update.api_version,
        update.kind,
        update.namespace,
        update.name,
    )
    assert target.status == status_writer.StatusTarget.from_inputs(update.to_inputs()).status


@given(stale_targets)
def test_a_stale_target_read_back_from_its_inputs_is_the_same_target(target: StaleTarget) -> None:
    assert StaleTarget.from_inputs(target.to_inputs()) == target
    assert set(target.to_inputs()) == {"apiVersion", "kind", "namespace", "name", "uid"}


@given(recovery_attempts)
def test_a_recovery_attempt_read_back_from_its_inputs_is_the_same_attempt(attempt: RecoveryAttempt) -> None:
    assert RecoveryAttempt.from_inputs(attempt.to_inputs()) == attempt
    assert RecoveryAttempt.from_inputs({**attempt.to_inputs(), "attempt": float(attempt.attempt)}) == attempt
    assert set(attempt.to_inputs()) == {"namespace", "pod", "podUID", "resourceVersion", "attempt"}


@given(alias_requests)
def test_an_alias_request_read_back_from_its_inputs_is_the_same_request(request: AliasRequest) -> None:
    assert AliasRequest.from_inputs(request.to_inputs()) == request
    assert AliasRequest.from_inputs({**request.to_inputs(), "port": float(request.port)}) == request
    assert set(request.to_inputs()) == {"namespace", "pods", "source", "alias", "port"}


def test_a_stale_object_crosses_as_its_identity_and_uid() -> None:
    stale = StaleObject("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "litellm", "uid-1", "litellm")
    assert stale.target == StaleTarget(
        "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "litellm", "uid-1"
    )


def test_a_pod_deletion_crosses_as_the_pod_identity_its_preconditions_need() -> None:
    pod = TerminalPod("model-a-0", "uid-1", "41", "Failed", "Evicted", "low memory", "owner-1")
    deletion = PodDeletion(namespace="ai", pod=pod, attempt=2)
    assert deletion.attempt_inputs == RecoveryAttempt("ai", "model-a-0", "uid-1", "41", 2)


def test_the_providers_read_inputs_with_the_planning_types_serialisation() -> None:
    assert ProviderStaleTarget.from_inputs.__func__ is StaleTarget.from_inputs.__func__
    assert ProviderRecoveryAttempt is RecoveryAttempt
    request = AliasRequest("ai", ("model-a-0",), "qwen2.5:0.5b", "qwen-0.5b", 8000)
    assert AliasTarget.from_inputs(request.to_inputs()) == AliasTarget(
        "ai", ("model-a-0",), "qwen2.5:0.5b", "qwen-0.5b", 8000
    )
