"""Models: from ModelActivations to KubeAI Models, runtime profiles and status.

Order, per activation: spec validity -> enabled -> required modules Ready -> resolution
against the catalogs -> clear-model-cache deferral -> GPU capacity (accelerator targets only)
-> the KubeAI Model -> its lifecycle. External activations become entries of the generated
external-model list that the model catalog publishes through LiteLLM; their API key stays a
Secret reference. Invariant 6: a Model whose activation is now rejected, or whose runtime is
deferred or waiting, stays declared as it was.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from types import MappingProxyType
from typing import Any, Self

from api.hostoperations import TERMINAL_PHASES as HOST_TERMINAL_PHASES
from api.validation import SpecError
from api.vocabulary import Phase, StatusReason
from catalogs import Catalogs
from planning.conditions import READY, rfc3339, status_update
from planning.frozen import freeze, thaw
from planning.hardware.capacity import AcceleratorCapacity, published_resource
from planning.hardware.memory import HostMemory, pool_for_target
from planning.hardware.sharing import (
    VendorSharing,
    activation_vendor,
    drained_deployment,
    drained_model,
    shared_gpu_count_error,
)
from planning.hardware.sharing_plan import SharingPlan
from planning.intent import Intent, Parsed
from planning.labels import FIELD_MANAGER_ANNOTATION, MANAGED_BY, MANAGED_BY_VALUE
from planning.models.catalog_format import MODEL_CATALOG_CONFIG_MAP, MODEL_CATALOG_KEY, listed_ids  # noqa: F401 (re-exported)
from planning.models.choice import CHOICE_FIELD, LocalChoice
from planning.models.direct import ClaimBinding, DirectRuntime
from planning.models.direct_plan import direct_kind, kept_direct, plan_direct
from planning.models.ignored import ignored_fields_note
from planning.models.kubeai import (
    ACTIVATION_LABEL,
    MAX_CPU_PROFILES,
    MODEL_SERVER_PORT,
    CpuProfile,
    accelerator_profile,
    applied_cpu_profile,
    cpu_profile,
    kept_model,
    kubeai_model,
    model_name,
)
from planning.models.lifecycle import Lifecycle, model_lifecycle
from planning.models.memory import MemoryRejected
from planning.models.model_cache import cache_node, cache_objects, cache_use
from planning.models.model_url import ollama_model
from planning.models.offloading import (
    MAX_OFFLOADING_PROFILES,
    OFFLOADING_PROFILE_PREFIX,
    Offloading,
    applied_offloading_profile,
    decide_offloading,
    observed_offloading_profiles,
)
from planning.models.recovery import RecoveryAttempt, TerminalPod
from planning.models.resolve import ResolvedLocalModel, resolve_admitted
from planning.modules import ModulePlan, waiting_on_modules
from planning.names import LABEL_VALUE_LIMIT, fit
from planning.objects import DesiredObject, StatusUpdate
from planning.reasons import Reason, listed
from planning.requirements import Requirement, requester_of
from planning.settings import PlanSettings
from planning.snapshot import KubeAIModel, OllamaObservation, OllamaProbe, Snapshot
from planning.unreadable import Hold, model_hold

EXTERNAL_MODELS_CONFIG_MAP = "magicstick-external-models"
EXTERNAL_MODELS_KEY = "models.json"
CLEAR_MODEL_CACHE = "clear-model-cache"


@dataclass(frozen=True)
class PodDeletion:
    namespace: str
    pod: TerminalPod
    attempt: int

    @property
    def attempt_inputs(self) -> RecoveryAttempt:
        """What its PodRecovery resource carries."""
        return RecoveryAttempt(
            namespace=self.namespace,
            pod=self.pod.name,
            pod_uid=self.pod.uid,
            resource_version=self.pod.resource_version,
            attempt=self.attempt,
        )


@dataclass(frozen=True)
class AliasRequest:
    namespace: str
    pods: tuple[str, ...]
    source: str
    alias: str
    port: int = MODEL_SERVER_PORT
    """Where the Pods' model server listens."""

    def to_inputs(self) -> dict[str, Any]:
        """The inputs of its OllamaAlias resource (providers/ollama.py). Pure."""
        return {
            "namespace": self.namespace,
            "pods": list(self.pods),
            "source": self.source,
            "alias": self.alias,
            "port": self.port,
        }

    @classmethod
    def from_inputs(cls, inputs: Mapping[str, Any]) -> Self:
        """The request `to_inputs` wrote; the port may come back as a float (Pulumi's numbers). Pure."""
        return cls(
            namespace=inputs["namespace"],
            pods=tuple(inputs.get("pods") or ()),
            source=inputs["source"],
            alias=inputs["alias"],
            port=int(inputs["port"]),
        )


@dataclass(frozen=True)
class ModelOutcome:
    activation: str
    model: DesiredObject | None = None
    cpu_profile: CpuProfile | None = None
    """The entry of the runtime-profile store the Model runs on (CPU models, accelerator CPU clones)."""
    offloading_profile: CpuProfile | None = None
    """The entry of the offloading store the Model runs on (planning/models/offloading.py)."""
    pod_deletion: PodDeletion | None = None
    alias: AliasRequest | None = None
    runtime: DirectRuntime | None = None
    """The Deployment (and Service, stage ConfigMap) of a direct runtime (planning/models/direct.py)."""
    catalog_entries: tuple[dict[str, Any], ...] = ()
    """Entries of the generated model list: a serving direct runtime's in-cluster endpoint."""


@dataclass(frozen=True)
class ModelPlan:
    outcomes: tuple[ModelOutcome, ...]
    statuses: tuple[StatusUpdate, ...]
    external_models: DesiredObject | None
    cache: tuple[DesiredObject, ...] = ()
    """The model cache's volumes and claim (planning/models/model_cache.py), while KubeAI is enabled."""

    @property
    def cpu_profiles(self) -> tuple[CpuProfile, ...]:
        found = {o.cpu_profile.name: o.cpu_profile for o in self.outcomes if o.cpu_profile is not None}
        return tuple(found[name] for name in sorted(found))

    @property
    def offloading_profiles(self) -> tuple[CpuProfile, ...]:
        found = {
            o.offloading_profile.name: o.offloading_profile for o in self.outcomes if o.offloading_profile is not None
        }
        return tuple(found[name] for name in sorted(found))

    @property
    def models(self) -> tuple[DesiredObject, ...]:
        return tuple(o.model for o in self.outcomes if o.model is not None)


def published_models(snapshot: Snapshot, namespace: str) -> frozenset[str]:
    """Model ids the model catalog publishes (planning/models/catalog_format.py). Pure."""
    catalog = snapshot.config_map(namespace, MODEL_CATALOG_CONFIG_MAP)
    return listed_ids(catalog.data) if catalog is not None else frozenset()


def clear_cache_pending(snapshot: Snapshot, namespace: str) -> str | None:
    """The pending or active clear-model-cache HostOperation, if any. A phase that is not a
    terminal phase's name (absent, or of another shape) counts as pending. Pure."""
    for operation in snapshot.of_kind("HostOperation", namespace):
        if operation.spec.get("action") != CLEAR_MODEL_CACHE:
            continue
        phase = operation.status.get("phase")
        if not isinstance(phase, str) or phase not in HOST_TERMINAL_PHASES:
            return operation.meta.name
    return None


def _target_namespace(parsed: Parsed[Any]) -> str:
    if parsed.spec is not None:
        namespace: str = parsed.spec.target_namespace
        return namespace
    raw = parsed.obj.spec.get("targetNamespace")
    return raw if isinstance(raw, str) and raw else "ai"


def _observed_model(snapshot: Snapshot, parsed: Parsed[Any]) -> KubeAIModel | None:
    namespace = _target_namespace(parsed)
    wanted = fit(parsed.name, LABEL_VALUE_LIMIT)
    return next(
        (m for m in snapshot.models if m.meta.namespace == namespace and m.meta.labels.get(ACTIVATION_LABEL) == wanted),
        None,
    )


def _resolved_fields(resolved: ResolvedLocalModel, namespace: str, name: str, profile: str | None) -> dict[str, Any]:
    return resolved.status_fields(model_ref=f"{namespace}/{name}", catalog_id=name) | {
        "requestedKvCacheType": resolved.kv_cache_type,
        "requestedKvCacheMemoryBytes": resolved.kv_cache_memory_bytes,
        "resolvedResourceProfile": profile,
        "memoryRequiredMi": resolved.memory_required_mi,
        "vramRequiredMi": resolved.vram_mi,
    }


def _engine_profile(
    resolved: ResolvedLocalModel, capacity: tuple[AcceleratorCapacity, ...], catalogs: Catalogs
) -> str | None:
    """The catalog's engine profile for the published resource of an accelerator target; None
    on CPU or while no GPU resource is published. Pure."""
    if resolved.on_cpu:
        return None
    resource = published_resource(capacity, resolved.compute_target, catalogs)
    if resource is None:
        return None
    return catalogs.compute_targets.require(resolved.compute_target).resource_profile(
        engine=resolved.engine, resource=resource
    )


def _resource_profile(
    resolved: ResolvedLocalModel, engine_profile: str | None, offloading: Offloading
) -> tuple[str | None, CpuProfile | None]:
    """The `<profile>:<count>` the Model asks for and the runtime-store entry it needs; (None,
    None) while no GPU resource is published. An offloading profile lives in the other store."""
    if resolved.on_cpu:
        profile = cpu_profile(resolved)
        return f"{profile.name}:1", profile
    if engine_profile is None:
        return None, None
    if offloading.profile is not None:
        return f"{offloading.profile.name}:1", None
    clone = accelerator_profile(resolved, engine_profile)
    return (f"{clone.name}:1", clone) if clone is not None else (f"{engine_profile}:1", None)


def plan_models(
    *,
    intent: Intent,
    requirements: tuple[Requirement, ...],
    modules: ModulePlan,
    snapshot: Snapshot,
    capacity: tuple[AcceleratorCapacity, ...],
    catalogs: Catalogs,
    settings: PlanSettings,
    now: datetime,
    memory: Mapping[str, HostMemory] = MappingProxyType({}),
    sharing: SharingPlan = SharingPlan(),
    choices: Mapping[str, LocalChoice] = MappingProxyType({}),
) -> ModelPlan:
    """Every ModelActivation's outcome and status, in name order. Pure.

    `choices`: the computeTarget and engine the program chose where an activation omits them
    (planning.models.choice); its status says what and why.

    `sharing`: the GPU sharing decisions (planning.hardware.sharing_plan). An activation whose
    vendor is in a sharing transition, or beyond its slot limit, keeps its runtime scaled to
    zero and waits; an admitted one records status.gpuSharing."""
    by_requester = {r.requester: r for r in requirements}
    published = published_models(snapshot, settings.system_namespace)
    deferral = clear_cache_pending(snapshot, settings.system_namespace)
    outcomes: list[ModelOutcome] = []
    statuses: list[StatusUpdate] = []
    profiles: set[str] = set()
    external_entries: list[dict[str, Any]] = []
    for parsed in intent.model_activations:
        observed = _observed_model(snapshot, parsed)
        requirement = by_requester.get(requester_of(parsed))
        if not parsed.enabled and parsed.error is None:
            statuses.append(
                status_update(
                    parsed,
                    phase=Phase.DISABLED,
                    reason=Reason.DISABLED,
                    message="ModelActivation is disabled.",
                    now=now,
                )
            )
            continue
        if requirement is None or requirement.problem is not None:
            reason = (
                requirement.problem
                if requirement is not None and requirement.problem is not None
                else Reason.INVALID_SPEC
            )
            message = requirement.problem_message if requirement is not None else str(parsed.error)
            statuses.append(status_update(parsed, phase=Phase.FAILED, reason=reason, message=message, now=now))
            outcome = _kept(parsed.name, observed, snapshot)
            outcome = replace(
                outcome, runtime=kept_direct(snapshot, _target_namespace(parsed), parsed.name, catalogs, settings)
            )
            external_entries += applied_external_entries(
                snapshot, namespace=settings.system_namespace, activation=parsed.name
            )
        elif parsed.valid_spec.type == "external":
            _, status, entry = _external(parsed, requirement, modules, published, now)
            statuses.append(status)
            external_entries.append(entry)
            continue
        else:
            outcome, status = _local_or_held(
                parsed=parsed,
                requirement=requirement,
                observed=observed,
                modules=modules,
                snapshot=snapshot,
                capacity=capacity,
                memory=memory,
                catalogs=catalogs,
                settings=settings,
                published=published,
                deferral=deferral,
                profiles=profiles,
                sharing=sharing,
                now=now,
            )
            status = _with_choice(status, choices.get(parsed.name))
            hold = model_hold(snapshot, parsed.valid_spec.target_namespace, parsed.obj.status)
            if hold is not None:
                outcome, status = _held(parsed, outcome, status, hold, now)
            statuses.append(status)
            external_entries += outcome.catalog_entries
        outcomes.append(outcome)
        profiles.update(p.name for p in (outcome.cpu_profile, outcome.offloading_profile) if p is not None)
    kubeai = modules.outcome("kubeai")
    return ModelPlan(
        outcomes=tuple(outcomes),
        statuses=tuple(statuses),
        external_models=_external_models(external_entries, settings) if external_entries else None,
        cache=(
            cache_objects(cache_node(snapshot.nodes), settings.field_manager)
            if kubeai is not None and kubeai.kustomization is not None
            else ()
        ),
    )


def _local_or_held(
    *,
    parsed: Parsed[Any],
    requirement: Requirement,
    observed: KubeAIModel | None,
    modules: ModulePlan,
    snapshot: Snapshot,
    capacity: tuple[AcceleratorCapacity, ...],
    memory: Mapping[str, HostMemory],
    catalogs: Catalogs,
    settings: PlanSettings,
    published: frozenset[str],
    deferral: str | None,
    profiles: set[str],
    sharing: SharingPlan,
    now: datetime,
) -> tuple[ModelOutcome, StatusUpdate]:
    """One local activation under GPU sharing: held while its vendor is in a transition or past
    its slots, refused for more GPUs than one shared slot, else planned and, when admitted to a
    shared GPU, with status.gpuSharing. Pure."""
    vendor = activation_vendor(parsed, catalogs)
    gate = sharing.of(vendor)
    too_many = shared_gpu_count_error(parsed, catalogs) if gate is not None and gate.applied.shared else None
    if gate is not None and not gate.admits(parsed.name):
        return _held_for_sharing(parsed, gate, observed, snapshot, catalogs, settings, now)
    if too_many is not None:
        outcome = _kept(parsed.name, observed, snapshot)
        outcome = replace(
            outcome, runtime=kept_direct(snapshot, parsed.valid_spec.target_namespace, parsed.name, catalogs, settings)
        )
        return outcome, status_update(
            parsed, phase=Phase.FAILED, reason=Reason.INVALID_SPEC, message=str(too_many), now=now
        )
    activation = _LocalActivation(
        parsed=parsed,
        requirement=requirement,
        modules=modules,
        snapshot=snapshot,
        observed=observed,
        capacity=capacity + sharing.shared_capacity(),
        host=pool_for_target(capacity=capacity, memory=memory, compute_target=parsed.valid_spec.local.compute_target),
        catalogs=catalogs,
        settings=settings,
        published=published,
        deferral=deferral,
        profiles=profiles,
        now=now,
    )
    outcome, status = _local(activation, claim=sharing.claim_binding(vendor))
    shared = sharing.model_fields(vendor, parsed.name)
    if shared is not None:
        status = replace(status, status=freeze(thaw(status.status) | {"gpuSharing": shared}))
    return outcome, status


HELD_FIELDS = frozenset(
    {
        "modelRef",
        "catalogId",
        "computeTarget",
        "engine",
        "requestedKvCacheType",
        "requestedKvCacheMemoryBytes",
        "resolvedResourceProfile",
        "memoryRequiredMi",
        "vramRequiredMi",
        "cpuResources",
        "preset",
        "artifact",
        "cpuOffloading",
        "runtime",
        "realtimeProfile",
        "gpuCount",
        "memoryStrategy",
        CHOICE_FIELD,
    }
)
"""What the status of an activation in an unreadable namespace keeps: what its spec resolves to."""


def _with_choice(status: StatusUpdate, choice: LocalChoice | None) -> StatusUpdate:
    """`status` saying what the program chose for the activation, and why. Pure."""
    if choice is None:
        return status
    body = thaw(status.status)
    note = choice.note()
    body["message"] = f"{body.get('message') or ''}{note}".strip()
    for condition in body.get("conditions") or ():
        if condition.get("type") == READY:
            condition["message"] = f"{condition.get('message') or ''}{note}".strip()
    return replace(status, status=freeze(body | choice.status_fields()))


def _held_for_sharing(
    parsed: Parsed[Any],
    gate: VendorSharing,
    observed: KubeAIModel | None,
    snapshot: Snapshot,
    catalogs: Catalogs,
    settings: PlanSettings,
    now: datetime,
) -> tuple[ModelOutcome, StatusUpdate]:
    """An activation its vendor's GPU sharing does not let run now: its KubeAI Model or direct
    runtime stays, scaled to zero (settings and downloaded data kept), and it waits. Pure."""
    transition = f"{gate.module}:{gate.desired.mode}" if gate.holds else f"{gate.module}:slot-limit"
    kept = _kept(parsed.name, observed, snapshot)
    if kept.model is not None and observed is not None:
        kept = replace(kept, model=drained_model(observed, transition))
    runtime = kept_direct(snapshot, parsed.valid_spec.target_namespace, parsed.name, catalogs, settings)
    if runtime is not None:
        objects = tuple(drained_deployment(o, transition) if o.kind == "Deployment" else o for o in runtime.objects)
        kept = replace(kept, runtime=replace(runtime, objects=objects))
    if gate.holds:
        return kept, status_update(
            parsed, phase=Phase.WAITING_FOR_GPU, reason=Reason.GPU_SHARING_TRANSITION, message=gate.message, now=now
        )
    message = (
        f"All {gate.slot_limit} GPU slots of node {gate.node} are taken ({listed(gate.admitted)}); "
        f"this model waits for a free slot (slot limit {gate.slot_limit})."
    )
    return kept, status_update(
        parsed, phase=Phase.WAITING_FOR_GPU, reason=Reason.WAITING_FOR_GPU_SLOT, message=message, now=now
    )


def _held(
    parsed: Parsed[Any], outcome: ModelOutcome, status: StatusUpdate, hold: Hold, now: datetime
) -> tuple[ModelOutcome, StatusUpdate]:
    """A local activation whose target namespace could not be read (planning/unreadable.py). Pure.

    Its KubeAI Model and CPU profile stay declared, from the spec, only when its last status shows
    them declared there; no Pod is deleted and no alias is set, since none was seen.
    """
    kept = (
        ModelOutcome(
            outcome.activation,
            model=outcome.model,
            cpu_profile=outcome.cpu_profile,
            offloading_profile=outcome.offloading_profile,
            runtime=outcome.runtime,
            catalog_entries=outcome.catalog_entries,
        )
        if hold.keeps_declared
        else ModelOutcome(outcome.activation)
    )
    fields = {key: value for key, value in status.status.items() if key in HELD_FIELDS}
    return kept, hold.status(parsed, now=now, extra=thaw(fields))


def _kept(activation: str, observed: KubeAIModel | None, snapshot: Snapshot) -> ModelOutcome:
    """The Model as it runs, with the CPU profile it runs on (invariant 6, deferrals, waits). Pure."""
    if observed is None:
        return ModelOutcome(activation)
    return ModelOutcome(
        activation,
        model=kept_model(observed),
        cpu_profile=applied_cpu_profile(observed, snapshot=snapshot),
        offloading_profile=applied_offloading_profile(observed, snapshot=snapshot),
    )


def applied_external_entries(snapshot: Snapshot, *, namespace: str, activation: str) -> list[dict[str, Any]]:
    """The entry of `activation` in the generated external-model list as the cluster holds it
    (at most one), so a rejected edit leaves the model routable (invariant 6). Pure."""
    listing = snapshot.config_map(namespace, EXTERNAL_MODELS_CONFIG_MAP)
    text = listing.data.get(EXTERNAL_MODELS_KEY) if listing is not None else None
    try:
        entries = json.loads(text) if isinstance(text, str) else []
    except json.JSONDecodeError:
        return []
    if not isinstance(entries, list):
        return []
    return [e for e in entries if isinstance(e, dict) and e.get("id") == activation][:1]


def _external(
    parsed: Parsed[Any], requirement: Requirement, modules: ModulePlan, published: frozenset[str], now: datetime
) -> tuple[None, StatusUpdate, dict[str, Any]]:
    spec = parsed.valid_spec.external
    extra = {"catalogId": parsed.name, "engine": "LiteLLM", "externalModel": spec.model}
    entry: dict[str, Any] = {"id": parsed.name, "model": spec.model, "modelType": spec.model_type}
    key = spec.api_key_secret_ref
    if key is not None:
        entry["apiKeySecretRef"] = {"name": key.name, "key": key.key, "namespace": parsed.valid_spec.target_namespace}
    if spec.api_base:
        entry["apiBase"] = spec.api_base
    waiting = waiting_on_modules(requirement.modules, modules)
    if waiting is not None:
        phase, reason, message = waiting
        return None, status_update(parsed, phase=phase, reason=reason, message=message, now=now, extra=extra), entry
    if parsed.name not in published:
        return (
            None,
            status_update(
                parsed,
                phase=Phase.STARTING,
                reason=Reason.WAITING_FOR_MODEL_CATALOG,
                message="Registered with LiteLLM; waiting for the model catalog to publish it.",
                now=now,
                extra=extra,
            ),
            entry,
        )
    return (
        None,
        status_update(
            parsed,
            phase=Phase.READY,
            reason=Reason.READY,
            message="Model is available in the generated model catalog.",
            now=now,
            extra=extra,
        ),
        entry,
    )


def _external_models(entries: list[dict[str, Any]], settings: PlanSettings) -> DesiredObject:
    """The generated external-model list the model catalog merges with the Git-owned ai-external-models.

    Entries name their API key by Secret reference only; no key value is ever written here.
    """
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": EXTERNAL_MODELS_CONFIG_MAP,
            "namespace": settings.system_namespace,
            "labels": {MANAGED_BY: MANAGED_BY_VALUE},
            "annotations": {FIELD_MANAGER_ANNOTATION: settings.field_manager},
        },
        "data": {
            EXTERNAL_MODELS_KEY: json.dumps(
                sorted(entries, key=lambda e: e["id"]), sort_keys=True, separators=(",", ":")
            )
        },
    }
    return DesiredObject.of(body)


@dataclass(frozen=True)
class _LocalActivation:
    """One local activation and what its planning reads of the run. `profiles` collects the CPU
    profiles admitted so far (activations come in name order, so the same ones keep theirs from
    run to run); one beyond the store's bound fails this activation instead of the run."""

    parsed: Parsed[Any]
    requirement: Requirement
    modules: ModulePlan
    snapshot: Snapshot
    observed: KubeAIModel | None
    capacity: tuple[AcceleratorCapacity, ...]
    host: HostMemory
    catalogs: Catalogs
    settings: PlanSettings
    published: frozenset[str]
    deferral: str | None
    profiles: set[str]
    now: datetime


def _local(a: _LocalActivation, *, claim: ClaimBinding | None = None) -> tuple[ModelOutcome, StatusUpdate]:
    """One local activation: a direct runtime, or a Model KubeAI serves. `claim`: the shared GPU
    claim a direct runtime binds (AMD dra-shared). Pure."""
    kind = direct_kind(a.parsed, a.catalogs)
    if kind is not None:
        running = (
            kept_direct(a.snapshot, a.parsed.valid_spec.target_namespace, a.parsed.name, a.catalogs, a.settings)
            is not None
        )
        direct = plan_direct(
            kind=kind,
            parsed=a.parsed,
            waiting=_waiting(a.requirement, a.modules, running=running, deferral=a.deferral),
            snapshot=a.snapshot,
            capacity=a.capacity,
            host=a.host,
            catalogs=a.catalogs,
            settings=a.settings,
            published=a.published,
            applied_entries=tuple(
                applied_external_entries(a.snapshot, namespace=a.settings.system_namespace, activation=a.parsed.name)
            ),
            now=a.now,
            claim=claim,
        )
        return ModelOutcome(
            a.parsed.name, runtime=direct.runtime, catalog_entries=direct.catalog_entries
        ), direct.status
    return _kubeai(a)


def _kubeai(a: _LocalActivation) -> tuple[ModelOutcome, StatusUpdate]:
    """One local activation KubeAI serves: resolved, waiting for its modules, admitted to a
    resource profile (CPU policy, offloading), then its Model and lifecycle. Pure."""
    kept = _kept(a.parsed.name, a.observed, a.snapshot)
    local = a.parsed.valid_spec.local
    try:
        resolved = resolve_admitted(local, a.catalogs, host=a.host)
    except SpecError as error:
        reason: StatusReason = error.reason if isinstance(error, MemoryRejected) else Reason.INVALID_SPEC
        return kept, status_update(a.parsed, phase=Phase.FAILED, reason=reason, message=str(error), now=a.now)
    namespace, name = a.parsed.valid_spec.target_namespace, model_name(a.parsed.name)
    waiting = _waiting(a.requirement, a.modules, running=a.observed is not None, deferral=a.deferral)
    if waiting is not None:
        phase, reason, message = waiting
        in_use = (
            a.observed.spec.get("resourceProfile")
            if a.observed is not None and reason is Reason.DEFERRED_BY_HOST_OPERATION
            else None
        )
        return kept, status_update(
            a.parsed,
            phase=phase,
            reason=reason,
            message=message,
            now=a.now,
            extra=_resolved_fields(resolved, namespace, name, in_use),
        )
    engine_profile = _engine_profile(resolved, a.capacity, a.catalogs)
    offloading = decide_offloading(local, resolved, engine_profile)
    profile, profile_entry = _resource_profile(resolved, engine_profile, offloading)
    fields = _resolved_fields(resolved, namespace, name, profile) | _offloading_fields(
        offloading, local.memory_required_mi
    )
    refused = _not_admitted(profile, profile_entry, a.profiles, a.requirement, resolved, a.catalogs)
    refused = refused or _offloading_not_admitted(offloading, a.profiles, a.snapshot)
    if refused is not None:
        phase, reason, message = refused
        held = (
            replace(kept, offloading_profile=offloading.profile)
            if reason is Reason.WAITING_FOR_OFFLOADING_PROFILE
            else kept
        )
        return held, status_update(
            a.parsed, phase=phase, reason=reason, message=message + offloading.note, now=a.now, extra=fields
        )
    assert profile is not None, "_not_admitted refuses a model that has no resource profile"
    outcome, phase, reason, message = _runtime(
        parsed=a.parsed,
        resolved=resolved,
        profile=profile,
        profile_entry=profile_entry,
        offloading=offloading,
        observed=a.observed,
        snapshot=a.snapshot,
        catalogs=a.catalogs,
        settings=a.settings,
        published=a.published,
        fields=fields,
        now=a.now,
    )
    note = offloading.note + ignored_fields_note(local)
    return outcome, status_update(a.parsed, phase=phase, reason=reason, message=message + note, now=a.now, extra=fields)


def _offloading_fields(offloading: Offloading, budget_mi: int | None) -> dict[str, Any]:
    """Status fields of the applied offloading intent: none when cpuOffloading is omitted. Pure."""
    if offloading.requested is None:
        return {}
    fields: dict[str, Any] = {"cpuOffloading": offloading.requested}
    if offloading.enabled:
        fields["memoryRequiredMi"] = budget_mi
    return fields


def _offloading_not_admitted(
    offloading: Offloading, profiles: set[str], snapshot: Snapshot
) -> tuple[Phase, Reason, str] | None:
    """Why an offloading activation gets no Model yet: the offloading store is full, or does not
    hold its profile yet (Helm must reconcile KubeAI with it first). Admits the profile into
    `profiles` otherwise. Pure but for `profiles`."""
    entry = offloading.profile
    if entry is None:
        return None
    if entry.name not in profiles:
        if sum(1 for name in profiles if name.startswith(OFFLOADING_PROFILE_PREFIX)) >= MAX_OFFLOADING_PROFILES:
            return (
                Phase.FAILED,
                Reason.OFFLOADING_PROFILE_STORE_FULL,
                (
                    f"The offloading store holds at most {MAX_OFFLOADING_PROFILES} profiles; "
                    "use the memory and CPU settings of an existing offloading model to share its profile."
                ),
            )
        profiles.add(entry.name)
    if entry.name not in observed_offloading_profiles(snapshot):
        return (
            Phase.PENDING,
            Reason.WAITING_FOR_OFFLOADING_PROFILE,
            (
                f"Offloading profile {entry.name} is being written to the offloading store; "
                "the KubeAI Model is created once Helm has reconciled KubeAI with it."
            ),
        )
    return None


def _waiting(
    requirement: Requirement, modules: ModulePlan, *, running: bool, deferral: str | None
) -> tuple[Phase, Reason, str] | None:
    """Why a resolved activation waits before its runtime is considered: its modules, or a
    clear-model-cache HostOperation (a new runtime waits, an existing one is left as it is). Pure."""
    waiting = waiting_on_modules(requirement.modules, modules)
    if waiting is not None:
        return waiting
    if deferral is None:
        return None
    if not running:
        return (
            Phase.PENDING,
            Reason.DEFERRED_BY_HOST_OPERATION,
            f"HostOperation/{deferral} clears the model cache; new local runtimes wait until it ends.",
        )
    return (
        Phase.STARTING,
        Reason.DEFERRED_BY_HOST_OPERATION,
        f"HostOperation/{deferral} clears the model cache; the runtime is left as it is until it ends.",
    )


def _not_admitted(
    profile: str | None,
    profile_entry: CpuProfile | None,
    profiles: set[str],
    requirement: Requirement,
    resolved: ResolvedLocalModel,
    catalogs: Catalogs,
) -> tuple[Phase, Reason, str] | None:
    """Why the activation gets no runtime yet: the profile store is full, or no GPU of its target
    is published (naming missing hardware when the requirement knows it). Admits a new CPU profile
    into `profiles` otherwise."""
    if profile_entry is not None and profile_entry.name not in profiles:
        if sum(1 for name in profiles if not name.startswith(OFFLOADING_PROFILE_PREFIX)) >= MAX_CPU_PROFILES:
            return (
                Phase.FAILED,
                Reason.RUNTIME_PROFILE_STORE_FULL,
                (
                    f"The runtime-profile store holds at most {MAX_CPU_PROFILES} CPU profiles; "
                    "use the memory and CPU settings of an existing model to share its profile."
                ),
            )
        profiles.add(profile_entry.name)
    if profile is None:
        resources = " or ".join(catalogs.compute_targets.require(resolved.compute_target).resource_names)
        return (
            Phase.WAITING_FOR_GPU,
            Reason.WAITING_FOR_GPU,
            requirement.missing_hardware_message or f"No node publishes an allocatable {resources} yet.",
        )
    return None


def _runtime(
    *,
    parsed: Parsed[Any],
    resolved: ResolvedLocalModel,
    profile: str,
    profile_entry: CpuProfile | None,
    offloading: Offloading,
    observed: KubeAIModel | None,
    snapshot: Snapshot,
    catalogs: Catalogs,
    settings: PlanSettings,
    published: frozenset[str],
    fields: dict[str, Any],
    now: datetime,
) -> tuple[ModelOutcome, Phase, StatusReason, str]:
    """The KubeAI Model of one admitted activation and where its lifecycle stands: the outcome,
    phase, reason and message; `fields` gains the lifecycle's status fields."""
    namespace = parsed.valid_spec.target_namespace
    name = model_name(parsed.name)
    cache = cache_use(
        engine=resolved.engine,
        url=resolved.url,
        cached_schemes=catalogs.engines.require(resolved.engine).cached_url_schemes,
        node=cache_node(snapshot.nodes),
        observed=observed,
    )
    fields["modelCache"] = cache.to_status()
    desired = kubeai_model(
        activation=parsed.name,
        system_namespace=settings.system_namespace,
        namespace=namespace,
        resolved=resolved,
        resource_profile=profile,
        catalogs=catalogs,
        observed=observed,
        field_manager=settings.field_manager,
        extra_args=offloading.args,
        cache_profile=cache.profile,
    )
    if observed is None:
        created = ModelOutcome(
            parsed.name, model=desired, cpu_profile=profile_entry, offloading_profile=offloading.profile
        )
        return (
            created,
            Phase.WAITING_FOR_POD,
            Reason.WAITING_FOR_POD,
            f"KubeAI Model {namespace}/{name} is being created ({resolved.engine}).",
        )
    pods = snapshot.pods_of(observed)
    ready_pods = tuple(p.meta.name for p in pods if p.ready and not p.terminating)
    alias, missing = _alias(resolved, namespace, name, ready_pods, snapshot)
    lifecycle = model_lifecycle(
        model=observed,
        pods=pods,
        activation_generation=parsed.obj.meta.generation,
        previous_status=parsed.obj.status,
        engine=resolved.engine,
        now=now,
        alias_missing_on=missing,
        ollama_unreachable=_unreachable(namespace, ready_pods, snapshot),
        published=name in published,
    )
    fields.update(_lifecycle_fields(lifecycle, resolved, namespace, ready_pods, snapshot, now, parsed.obj.status))
    deletion = None
    if lifecycle.recovery.delete is not None and lifecycle.recovery.attempt is not None:
        deletion = PodDeletion(namespace=namespace, pod=lifecycle.recovery.delete, attempt=lifecycle.recovery.attempt)
    outcome = ModelOutcome(
        parsed.name,
        model=desired,
        cpu_profile=profile_entry,
        offloading_profile=offloading.profile,
        pod_deletion=deletion,
        alias=alias if missing else None,
    )
    return outcome, lifecycle.phase, lifecycle.reason, lifecycle.message


def _alias(
    resolved: ResolvedLocalModel, namespace: str, name: str, ready_pods: tuple[str, ...], snapshot: Snapshot
) -> tuple[AliasRequest, tuple[str, ...]]:
    if resolved.engine != "OLlama":
        return AliasRequest(namespace, (), "", ""), ()
    source = ollama_model(resolved.url)
    alias = _ollama_tag(name)
    missing = []
    for pod in ready_pods:
        seen = snapshot.ollama_of(namespace, pod)
        if seen is None or alias not in seen.tags:
            missing.append(pod)
    return AliasRequest(namespace=namespace, pods=ready_pods, source=source, alias=alias), tuple(missing)


def _unreachable(namespace: str, ready_pods: tuple[str, ...], snapshot: Snapshot) -> tuple[OllamaObservation, ...]:
    """The Ready Pods whose Ollama did not answer this run's probe (providers/ollama.py). Pure."""
    seen = (snapshot.ollama_of(namespace, pod) for pod in ready_pods)
    return tuple(o for o in seen if o is not None and o.probe is OllamaProbe.UNREACHABLE)


def _ollama_tag(name: str) -> str:
    return name if ":" in name else f"{name}:latest"


def _lifecycle_fields(
    lifecycle: Lifecycle,
    resolved: ResolvedLocalModel,
    namespace: str,
    ready_pods: tuple[str, ...],
    snapshot: Snapshot,
    now: datetime,
    previous_status: Mapping[str, Any],
) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "replicas": {"ready": lifecycle.ready_replicas},
        "podCreation": lifecycle.pod_creation,
        "podRecovery": lifecycle.recovery.state.to_status() if lifecycle.recovery.state is not None else None,
    }
    if lifecycle.ready_replicas > 0:
        fields["effectiveKvCacheType"] = resolved.kv_cache_type
        if resolved.effective_kv_cache_memory_bytes is not None:
            fields["effectiveKvCacheMemoryBytes"] = resolved.effective_kv_cache_memory_bytes
    if resolved.engine == "OLlama":
        samples = [snapshot.ollama_of(namespace, pod) for pod in ready_pods]
        measured = [s for s in samples if s is not None and s.total_mi is not None]
        if measured:
            usage = {
                "ramMi": sum(s.ram_mi or 0 for s in measured),
                "vramMi": sum(s.vram_mi or 0 for s in measured),
                "totalMi": sum(s.total_mi or 0 for s in measured),
                "source": "ollama /api/ps",
                "replicas": len(measured),
            }
            previous = previous_status.get("memoryUsage") or {}
            unchanged = all(previous.get(key) == value for key, value in usage.items())
            usage["sampledAt"] = str(previous["sampledAt"]) if unchanged and previous.get("sampledAt") else rfc3339(now)
            fields["memoryUsage"] = usage
    return fields
