"""Models: from ModelActivations to KubeAI Models, runtime profiles and status (seed 001).

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
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from api.hostoperations import TERMINAL_PHASES as HOST_TERMINAL_PHASES
from api.validation import SpecError
from catalogs import Catalogs
from planning.conditions import READY, rfc3339, status_update
from planning.hardware.capacity import AcceleratorCapacity, published_resource
from planning.intent import Intent, Parsed
from planning.labels import FIELD_MANAGER_ANNOTATION, MANAGED_BY, MANAGED_BY_VALUE
from planning.models.kubeai import ACTIVATION_LABEL, MAX_CPU_PROFILES, CpuProfile, cpu_profile, kept_model, kubeai_model, model_name
from planning.models.lifecycle import Lifecycle, model_lifecycle
from planning.models.recovery import TerminalPod
from planning.models.resolve import ResolvedLocalModel, resolve_local
from planning.modules import ModulePlan, waiting_on_modules
from planning.names import LABEL_VALUE_LIMIT, fit
from planning.objects import DesiredObject, StatusUpdate
from planning.reasons import Reason
from planning.requirements import Requirement
from planning.settings import PlanSettings
from planning.snapshot import KubeAIModel, Snapshot

MODEL_CATALOG_CONFIG_MAP = "magicstick-model-catalog"
MODEL_CATALOG_KEY = "models.json"
EXTERNAL_MODELS_CONFIG_MAP = "magicstick-external-models"
EXTERNAL_MODELS_KEY = "models.json"
CLEAR_MODEL_CACHE = "clear-model-cache"


@dataclass(frozen=True)
class PodDeletion:
    namespace: str
    pod: TerminalPod
    attempt: int


@dataclass(frozen=True)
class AliasRequest:
    namespace: str
    pods: tuple[str, ...]
    source: str
    alias: str


@dataclass(frozen=True)
class ModelOutcome:
    activation: str
    model: DesiredObject | None = None
    cpu_profile: CpuProfile | None = None
    pod_deletion: PodDeletion | None = None
    alias: AliasRequest | None = None


@dataclass(frozen=True)
class ModelPlan:
    outcomes: tuple[ModelOutcome, ...]
    statuses: tuple[StatusUpdate, ...]
    external_models: DesiredObject | None

    @property
    def cpu_profiles(self) -> tuple[CpuProfile, ...]:
        found = {o.cpu_profile.name: o.cpu_profile for o in self.outcomes if o.cpu_profile is not None}
        return tuple(found[name] for name in sorted(found))

    @property
    def models(self) -> tuple[DesiredObject, ...]:
        return tuple(o.model for o in self.outcomes if o.model is not None)


def published_models(snapshot: Snapshot, namespace: str) -> frozenset[str]:
    """Model ids the model catalog publishes (ConfigMap magicstick-model-catalog, models.json)."""
    catalog = snapshot.config_map(namespace, MODEL_CATALOG_CONFIG_MAP)
    if catalog is None:
        return frozenset()
    try:
        listed = json.loads(catalog.data.get(MODEL_CATALOG_KEY) or "[]")
    except json.JSONDecodeError:
        return frozenset()
    return frozenset(str(item) for item in listed) if isinstance(listed, list) else frozenset()


def clear_cache_pending(snapshot: Snapshot, namespace: str) -> str | None:
    """The pending or active clear-model-cache HostOperation, if any."""
    for operation in snapshot.of_kind("HostOperation", namespace):
        if operation.spec.get("action") != CLEAR_MODEL_CACHE:
            continue
        if (operation.status.get("phase") or "Pending") not in HOST_TERMINAL_PHASES:
            return operation.meta.name
    return None


def _target_namespace(parsed: Parsed[Any]) -> str:
    if parsed.spec is not None:
        return parsed.spec.target_namespace
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
    fields: dict[str, Any] = {
        "modelRef": f"{namespace}/{name}",
        "catalogId": name,
        "computeTarget": resolved.compute_target,
        "engine": resolved.engine,
        "requestedKvCacheType": resolved.kv_cache_type,
        "resolvedResourceProfile": profile,
        "memoryRequiredMi": resolved.memory_required_mi,
        "vramRequiredMi": resolved.vram_mi,
        "cpuResources": {"requestMillicores": resolved.cpu_request_millicores, "limitMillicores": resolved.cpu_limit_millicores},
    }
    if resolved.preset is not None:
        fields["preset"] = resolved.preset
        fields["artifact"] = resolved.artifact
    return fields


def _resource_profile(resolved: ResolvedLocalModel, capacity: tuple[AcceleratorCapacity, ...], catalogs: Catalogs) -> tuple[str | None, CpuProfile | None]:
    """The `<profile>:<count>` the Model asks for, or (None, None) while no GPU resource is published."""
    if resolved.on_cpu:
        profile = cpu_profile(resolved)
        return f"{profile.name}:1", profile
    resource = published_resource(capacity, resolved.compute_target, catalogs)
    if resource is None:
        return None, None
    target = catalogs.compute_targets.get(resolved.compute_target)
    name = target.resource_profile(engine=resolved.engine, resource=resource)
    return (f"{name}:1", None) if name else (None, None)


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
) -> ModelPlan:
    by_requester = {r.requester: r for r in requirements}
    published = published_models(snapshot, settings.system_namespace)
    deferral = clear_cache_pending(snapshot, settings.system_namespace)
    outcomes: list[ModelOutcome] = []
    statuses: list[StatusUpdate] = []
    profiles: set[str] = set()
    external_entries: list[dict[str, Any]] = []
    for parsed in intent.model_activations:
        observed = _observed_model(snapshot, parsed)
        kept = kept_model(observed) if observed is not None else None
        if parsed.error is not None:
            statuses.append(status_update(parsed, phase="Failed", reason=Reason.INVALID_SPEC, message=str(parsed.error), now=now))
            outcomes.append(ModelOutcome(activation=parsed.name, model=kept))
            continue
        if not parsed.enabled:
            statuses.append(status_update(parsed, phase="Disabled", reason=Reason.DISABLED, message="ModelActivation is disabled.", now=now))
            continue
        requirement = by_requester[f"ModelActivation/{parsed.name}"]
        if requirement.problem is not None:
            statuses.append(status_update(parsed, phase="Failed", reason=requirement.problem, message=requirement.problem_message, now=now))
            outcomes.append(ModelOutcome(activation=parsed.name, model=kept))
            continue
        spec = parsed.spec
        if spec.type == "external":
            outcome, status, entry = _external(parsed, requirement, modules, published, now)
            statuses.append(status)
            if entry is not None:
                external_entries.append(entry)
            continue
        outcome, status = _local(
            parsed=parsed,
            requirement=requirement,
            modules=modules,
            snapshot=snapshot,
            observed=observed,
            capacity=capacity,
            catalogs=catalogs,
            settings=settings,
            published=published,
            deferral=deferral,
            profiles=profiles,
            now=now,
        )
        outcomes.append(outcome)
        statuses.append(status)
    return ModelPlan(
        outcomes=tuple(outcomes),
        statuses=tuple(statuses),
        external_models=_external_models(external_entries, settings) if external_entries else None,
    )


def _external(parsed: Parsed[Any], requirement: Requirement, modules: ModulePlan, published: frozenset[str], now: datetime):
    spec = parsed.spec.external
    extra = {"catalogId": parsed.name, "engine": "LiteLLM", "externalModel": spec.model}
    entry = {
        "id": parsed.name,
        "model": spec.model,
        "modelType": spec.model_type,
        "apiKeySecretRef": {"name": spec.api_key_secret_ref.name, "key": spec.api_key_secret_ref.key, "namespace": parsed.spec.target_namespace},
    }
    if spec.api_base:
        entry["apiBase"] = spec.api_base
    waiting = waiting_on_modules(requirement.modules, modules)
    if waiting is not None:
        phase, reason, message = waiting
        return None, status_update(parsed, phase=phase, reason=reason, message=message, now=now, extra=extra), entry
    if parsed.name not in published:
        return None, status_update(parsed, phase="Starting", reason="WaitingForModelCatalog", message="Registered with LiteLLM; waiting for the model catalog to publish it.", now=now, extra=extra), entry
    return None, status_update(parsed, phase=READY, reason="Ready", message="Model is available in the generated model catalog.", now=now, extra=extra), entry


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
        "data": {EXTERNAL_MODELS_KEY: json.dumps(sorted(entries, key=lambda e: e["id"]), sort_keys=True, separators=(",", ":"))},
    }
    return DesiredObject.of(body)


def _local(
    *,
    parsed: Parsed[Any],
    requirement: Requirement,
    modules: ModulePlan,
    snapshot: Snapshot,
    observed: KubeAIModel | None,
    capacity: tuple[AcceleratorCapacity, ...],
    catalogs: Catalogs,
    settings: PlanSettings,
    published: frozenset[str],
    deferral: str | None,
    profiles: set[str],
    now: datetime,
) -> tuple[ModelOutcome, StatusUpdate]:
    """One local activation. `profiles` collects the CPU profiles admitted so far (activations
    come in name order, so the same ones keep theirs from run to run); one beyond the store's
    bound fails this activation instead of the run."""
    kept = kept_model(observed) if observed is not None else None
    local = parsed.spec.local
    namespace = parsed.spec.target_namespace
    name = model_name(parsed.name)
    try:
        resolved = resolve_local(local, catalogs)
    except SpecError as error:
        return ModelOutcome(parsed.name, model=kept), status_update(parsed, phase="Failed", reason=Reason.INVALID_SPEC, message=str(error), now=now)
    engine = catalogs.engines.get(resolved.engine)
    if not engine.uses_kubeai or local.realtime is not None:
        runtime = "realtime vLLM-Omni" if local.realtime is not None else resolved.engine
        return ModelOutcome(parsed.name), status_update(
            parsed, phase="Pending", reason="RuntimeNotManaged", message=f"The {runtime} runtime is not reconciled by this version.", now=now
        )
    waiting = waiting_on_modules(requirement.modules, modules)
    if waiting is not None:
        phase, reason, message = waiting
        return ModelOutcome(parsed.name, model=kept), status_update(parsed, phase=phase, reason=reason, message=message, now=now, extra=_resolved_fields(resolved, namespace, name, None))
    if deferral is not None and observed is None:
        return ModelOutcome(parsed.name), status_update(
            parsed,
            phase="Pending",
            reason="DeferredByHostOperation",
            message=f"HostOperation/{deferral} clears the model cache; new local runtimes wait until it ends.",
            now=now,
            extra=_resolved_fields(resolved, namespace, name, None),
        )
    if deferral is not None:
        return ModelOutcome(parsed.name, model=kept), status_update(
            parsed,
            phase="Starting",
            reason="DeferredByHostOperation",
            message=f"HostOperation/{deferral} clears the model cache; the runtime is left as it is until it ends.",
            now=now,
            extra=_resolved_fields(resolved, namespace, name, observed.spec.get("resourceProfile")),
        )
    profile, profile_entry = _resource_profile(resolved, capacity, catalogs)
    fields = _resolved_fields(resolved, namespace, name, profile)
    if profile_entry is not None and profile_entry.name not in profiles:
        if len(profiles) >= MAX_CPU_PROFILES:
            return ModelOutcome(parsed.name, model=kept), status_update(
                parsed,
                phase="Failed",
                reason="RuntimeProfileStoreFull",
                message=f"The runtime-profile store holds at most {MAX_CPU_PROFILES} CPU profiles; use the memory and CPU settings of an existing model to share its profile.",
                now=now,
                extra=fields,
            )
        profiles.add(profile_entry.name)
    if profile is None:
        resources = " or ".join(catalogs.compute_targets.get(resolved.compute_target).resource_names)
        return ModelOutcome(parsed.name, model=kept), status_update(
            parsed, phase="WaitingForGPU", reason="WaitingForGPU", message=f"No node publishes an allocatable {resources} yet.", now=now, extra=fields
        )
    desired = kubeai_model(
        activation=parsed.name,
        system_namespace=settings.system_namespace,
        namespace=namespace,
        resolved=resolved,
        resource_profile=profile,
        catalogs=catalogs,
        observed=observed,
        field_manager=settings.field_manager,
    )
    if observed is None:
        return ModelOutcome(parsed.name, model=desired, cpu_profile=profile_entry), status_update(
            parsed, phase="WaitingForPod", reason="WaitingForPod", message=f"KubeAI Model {namespace}/{name} is being created ({resolved.engine}).", now=now, extra=fields
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
        published=name in published,
    )
    fields.update(_lifecycle_fields(lifecycle, resolved, namespace, ready_pods, snapshot, now, parsed.obj.status))
    deletion = None
    if lifecycle.recovery.delete is not None and lifecycle.recovery.attempt is not None:
        deletion = PodDeletion(namespace=namespace, pod=lifecycle.recovery.delete, attempt=lifecycle.recovery.attempt)
    outcome = ModelOutcome(parsed.name, model=desired, cpu_profile=profile_entry, pod_deletion=deletion, alias=alias if missing else None)
    return outcome, status_update(parsed, phase=lifecycle.phase, reason=lifecycle.reason, message=lifecycle.message, now=now, extra=fields)


def _alias(resolved: ResolvedLocalModel, namespace: str, name: str, ready_pods: tuple[str, ...], snapshot: Snapshot) -> tuple[AliasRequest, tuple[str, ...]]:
    if resolved.engine != "OLlama":
        return AliasRequest(namespace, (), "", ""), ()
    source = _ollama_tag(resolved.url.removeprefix("ollama://"))
    alias = _ollama_tag(name)
    missing = []
    for pod in ready_pods:
        seen = snapshot.ollama_of(namespace, pod)
        if seen is None or alias not in seen.tags:
            missing.append(pod)
    return AliasRequest(namespace=namespace, pods=ready_pods, source=source, alias=alias), tuple(missing)


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
