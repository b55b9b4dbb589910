"""Which platform modules are enabled, and the Flux Kustomization of each.

One fixed order, every run:

1. classify ModuleActivations: valid winners, disabled ones, and rejected ones (invalid spec,
   parameters the module's catalog entry does not declare or whose value does not fit,
   unknown module, a second activation of the same module);
2. seed a ModuleActivation for every enabled Appliance.spec.modules entry and every GPU
   vendor operator that hardware detection requests, when none exists; existing
   activations, disabled ones included, always take precedence;
3. the requested set is the enabled activations (seeded ones included), the modules enabled
   instances and models require (reported as autoEnabled), and the dependencies of both;
   a disabled module is never added, and a module whose activation was rejected is frozen;
4. decide each requested module in dependency order. Readiness criteria of a dependency:
   its Kustomization is Ready for its current generation (planning.readiness.flux_readiness:
   a Ready of an older generation is still in progress) and every CRD it must serve is
   served; for a frozen dependency, the Kustomization observed. A module whose dependency is
   disabled waits without a Kustomization (a stale one is removed so Flux sees no dependsOn
   on a missing object); a module whose dependency is requested (or frozen) but not Ready
   waits too, and its existing Kustomization is suspended, not deleted, so workloads and data
   survive a dependency's rollout. A module one of whose HelmReleases (those its
   Kustomization applied) has failed, on a chart source that cannot be reached or an install
   that failed, is Degraded, Ready Kustomization or not (a Kustomization that does not wait is
   Ready once applied), and its message names each such release with Flux's reason: the cause
   reaches Appliance/local, and the module's dependents wait;
5. a module neither requested nor frozen has no Kustomization: a generated one is removed.

Invariant 6: a module whose activation's spec is now rejected is frozen: its generated
Kustomization is declared exactly as observed, and modules that depend on it read its
readiness from that observed Kustomization, so an invalid edit never tears down what runs,
nor what depends on it. Which module an activation stood for is what its status last
recorded (status.module), else its spec.module, else the activation label of a generated
Kustomization. Requesters (instances, models) whose spec is rejected keep requesting what
they requested (planning.requirements).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from api.appliance import SourceRef as ApiSourceRef
from api.meta import API_VERSION
from api.vocabulary import Phase
from catalogs import Catalogs, ModuleEntry
from planning.frozen import thaw
from planning.intent import Intent, Parsed
from planning.kustomizations import SourceRef, module_kustomization
from planning.labels import (
    ACTIVATION,
    FIELD_MANAGER_ANNOTATION,
    MANAGED_BY,
    MANAGED_BY_VALUE,
    MODULE,
    SEEDED,
    SEEDED_FROM,
    is_generated,
)
from planning.module_parameters import components, parameter_problems, substitutions
from planning.objects import DesiredObject
from planning.readiness import Verdict, Waiting, flux_readiness
from planning.reasons import Reason, listed
from planning.requirements import Requirement
from planning.settings import APPLIANCE_NAME, FLUX_NAMESPACE, PlanSettings
from planning.snapshot import FluxKustomization, GenericObject, Snapshot

READY = Phase.READY
KUSTOMIZATION_CRD = "kustomizations.kustomize.toolkit.fluxcd.io"
"""Flux's Kustomization kind; generated Kustomizations are declared only while it is served."""
HARDWARE_SOURCE = "hardware-detection"


@dataclass(frozen=True)
class ModuleOutcome:
    """The decision for one module: its phase, why, and the Kustomization to declare."""

    name: str
    phase: Phase
    reason: Reason
    message: str
    kustomization_name: str | None = None
    kustomization: DesiredObject | None = None
    auto_enabled: bool = False
    requested_by: tuple[str, ...] = ()
    activation: str | None = None
    kept_ready: bool = False
    """Frozen (its activation is rejected): the Kustomization kept as last applied is Ready."""

    @property
    def serving(self) -> bool:
        """What runs of this module is Ready: the planned Kustomization, or the one kept as applied."""
        return self.phase == READY or self.kept_ready


@dataclass(frozen=True)
class _Frozen:
    """A module whose activation is rejected for its spec, and why."""

    module: str
    activation: Parsed[Any]
    reason: Reason
    message: str


@dataclass(frozen=True)
class ActivationOutcome:
    """The status-relevant decision for one ModuleActivation object."""

    activation: Parsed[Any]
    phase: Phase
    reason: Reason
    message: str
    module: str | None = None
    kustomization_name: str | None = None


@dataclass(frozen=True)
class ModulePlan:
    modules: tuple[ModuleOutcome, ...]
    activations: tuple[ActivationOutcome, ...]
    seeded_activations: tuple[DesiredObject, ...]
    kustomizations: tuple[DesiredObject, ...]

    def outcome(self, name: str) -> ModuleOutcome | None:
        return next((m for m in self.modules if m.name == name), None)


@dataclass
class _Classified:
    winners: dict[str, Parsed[Any]] = field(default_factory=dict)
    rejected: list[tuple[Parsed[Any], Reason, str, str | None]] = field(default_factory=list)
    claimed_names: set[str] = field(default_factory=set)


def appliance_source(intent: Intent, snapshot: Snapshot | None = None) -> SourceRef:
    """Appliance.spec.source, or the flux-system GitRepository when none is set. Pure.

    When the Appliance spec is rejected for another field, its source is still honoured if the
    source alone is valid, so an unrelated typo does not repoint every Kustomization. When the
    source itself is rejected, the source the generated Kustomizations read stays (invariant 6).
    """
    appliance = intent.appliance
    if appliance is None:
        return SourceRef()
    if appliance.spec is not None:
        return _source_ref(appliance.spec.source)
    raw = appliance.obj.spec.get("source")
    if raw is None:
        return SourceRef()
    try:
        return _source_ref(ApiSourceRef.model_validate(thaw(raw)))
    except ValidationError:
        return applied_source(snapshot) if snapshot is not None else SourceRef()


def _source_ref(source: ApiSourceRef | None) -> SourceRef:
    if source is None:
        return SourceRef()
    return SourceRef(kind=source.kind, name=source.name, namespace=source.namespace or FLUX_NAMESPACE)


def applied_source(snapshot: Snapshot) -> SourceRef:
    """The source the first generated Kustomization (by name) reads; the default without one. Pure."""
    for observed in _generated_kustomizations(snapshot):
        ref = observed.spec.get("sourceRef")
        if isinstance(ref, Mapping) and isinstance(ref.get("kind"), str) and isinstance(ref.get("name"), str):
            namespace = ref.get("namespace")
            return SourceRef(
                kind=ref["kind"],
                name=ref["name"],
                namespace=namespace if isinstance(namespace, str) else FLUX_NAMESPACE,
            )
    return SourceRef()


def _generated_kustomizations(snapshot: Snapshot) -> tuple[FluxKustomization, ...]:
    """Kustomizations of the Flux namespace the program generated, sorted by name."""
    found = (k for k in snapshot.kustomizations if k.meta.namespace == FLUX_NAMESPACE and is_generated(k.meta.labels))
    return tuple(sorted(found, key=lambda k: k.meta.name))


def plan_modules(
    *,
    intent: Intent,
    requirements: Iterable[Requirement],
    snapshot: Snapshot,
    catalogs: Catalogs,
    settings: PlanSettings,
    hardware_requests: frozenset[str] = frozenset(),
) -> ModulePlan:
    """Decide every module. Pure and deterministic."""
    classified = _classify(intent.module_activations, catalogs)
    seeded, seeded_modules, unknown_keys = _seed(intent, classified, snapshot, catalogs, settings, hardware_requests)
    frozen = _frozen(classified, snapshot, catalogs)
    enabled = {m for m, a in classified.winners.items() if a.valid_spec.enabled} | seeded_modules
    disabled = {m for m, a in classified.winners.items() if not a.valid_spec.enabled}
    requested_by: dict[str, set[str]] = defaultdict(set)
    for requirement in requirements:
        for module in requirement.modules:
            requested_by[module].add(requirement.requester)

    wanted = _closure(
        enabled | (set(requested_by) - disabled - set(frozen)), disabled | set(frozen), catalogs, requested_by
    )
    outcomes = {name: _frozen_outcome(f, snapshot, catalogs, requested_by) for name, f in frozen.items()}
    source = appliance_source(intent, snapshot)
    for name in _dependency_order(wanted, catalogs):
        activation = classified.winners.get(name)
        given = activation.valid_spec.parameters if activation else {}
        outcomes[name] = _decide(
            entry=catalogs.modules.require(name),
            catalogs=catalogs,
            decided=outcomes,
            blocked=disabled,
            observed=snapshot.kustomization(FLUX_NAMESPACE, catalogs.modules.require(name).kustomization),
            releases=snapshot.released_by(FLUX_NAMESPACE, catalogs.modules.require(name).kustomization),
            served_crds=snapshot.served_crds,
            source=source,
            activation=activation.name if activation else (name if name in seeded_modules else None),
            parameters=substitutions(catalogs.modules.require(name), given),
            components=components(catalogs.modules.require(name), given),
            auto_enabled=name not in enabled,
            requested_by=tuple(sorted(requested_by.get(name, ()))),
            settings=settings,
        )
    for name in sorted(disabled):
        outcomes[name] = _disabled_outcome(name, classified.winners[name], requested_by)
    for key, message in unknown_keys:
        outcomes.setdefault(
            key, ModuleOutcome(name=key, phase=Phase.FAILED, reason=Reason.UNKNOWN_MODULE, message=message)
        )

    declared = tuple(o.kustomization for o in outcomes.values() if o.kustomization is not None)
    kept = _keep_as_applied(frozen, snapshot, catalogs)
    return ModulePlan(
        modules=tuple(outcomes[name] for name in sorted(outcomes)),
        activations=_activation_outcomes(classified, outcomes),
        seeded_activations=seeded,
        kustomizations=tuple(sorted(declared + kept, key=lambda d: d.logical_name)),
    )


def _disabled_outcome(name: str, activation: Parsed[Any], requested_by: Mapping[str, set[str]]) -> ModuleOutcome:
    waiting = tuple(sorted(requested_by.get(name, ())))
    message = f"Module {name} is disabled by ModuleActivation/{activation.name}."
    if waiting:
        message += f" Waiting on it: {listed(waiting)}."
    return ModuleOutcome(
        name=name,
        phase=Phase.DISABLED,
        reason=Reason.DISABLED,
        message=message,
        requested_by=waiting,
        activation=activation.name,
    )


def _classify(activations: Iterable[Parsed[Any]], catalogs: Catalogs) -> _Classified:
    """Pick one valid activation per module: the one named like the module, else the first by name."""
    result = _Classified()
    candidates: dict[str, list[Parsed[Any]]] = defaultdict(list)
    for activation in activations:
        result.claimed_names.add(activation.name)
        raw_module = activation.obj.spec.get("module")
        module = catalogs.modules.canonical(raw_module) if isinstance(raw_module, str) else None
        if activation.error is not None:
            last = _recorded_module(activation, catalogs) or module
            result.rejected.append((activation, Reason.INVALID_SPEC, str(activation.error), last))
        elif module is None:
            known = ", ".join(e.name for e in catalogs.modules.entries)
            result.rejected.append(
                (
                    activation,
                    Reason.UNKNOWN_MODULE,
                    f"spec.module: '{raw_module}' is not a catalogued module ({known})",
                    None,
                )
            )
        elif problems := parameter_problems(catalogs.modules.require(module), activation.valid_spec.parameters):
            result.rejected.append((activation, Reason.INVALID_SPEC, "; ".join(problems), module))
        else:
            candidates[module].append(activation)
    for module, group in sorted(candidates.items()):
        group.sort(key=lambda a: (a.name != module, a.name))
        result.winners[module] = group[0]
        for loser in group[1:]:
            result.rejected.append(
                (
                    loser,
                    Reason.DUPLICATE_ACTIVATION,
                    f"spec.module: module {module} is already activated by ModuleActivation/{group[0].name}",
                    module,
                )
            )
    return result


def _recorded_module(activation: Parsed[Any], catalogs: Catalogs) -> str | None:
    """The module an activation's status last named (status.module), if catalogued."""
    recorded = activation.obj.status.get("module")
    return catalogs.modules.canonical(recorded) if isinstance(recorded, str) else None


def _seed(
    intent: Intent,
    classified: _Classified,
    snapshot: Snapshot,
    catalogs: Catalogs,
    settings: PlanSettings,
    hardware_requests: frozenset[str],
) -> tuple[tuple[DesiredObject, ...], set[str], list[tuple[str, str]]]:
    """ModuleActivations seeded for enabled Appliance.spec.modules entries and detected GPUs.

    A missing activation is declared with the default spec. Every seeded activation that
    exists is declared again with its observed spec (changes ignored), so dashboard edits win
    and a converged run changes nothing; it is retained on delete, so no source going away
    (an entry removed, a GPU's labels vanishing for a run) ever deletes it.
    """
    wanted: dict[str, str] = {}
    unknown: list[tuple[str, str]] = []
    appliance = intent.appliance
    if appliance is not None and appliance.spec is not None:
        for key, default in sorted(appliance.spec.modules.items()):
            module = catalogs.modules.canonical(key)
            if module is None:
                unknown.append((key, f"Appliance.spec.modules.{key}: not a catalogued module key"))
            elif default.enabled:
                wanted.setdefault(module, f"Appliance/{APPLIANCE_NAME}")
    for module in sorted(hardware_requests):
        wanted.setdefault(module, HARDWARE_SOURCE)
    claimed_modules = set(classified.winners) | {m for _, _, _, m in classified.rejected if m}
    seeded: list[DesiredObject] = []
    for existing in snapshot.of_kind("ModuleActivation", settings.system_namespace):
        if existing.meta.labels.get(SEEDED) == "true":
            source = existing.meta.annotations.get(SEEDED_FROM, f"Appliance/{APPLIANCE_NAME}")
            seeded.append(_seeded_activation(existing.meta.name, thaw(existing.spec), source, settings))
    seeded_modules: set[str] = set()
    for module, source in sorted(wanted.items()):
        if module in claimed_modules or module in classified.claimed_names:
            continue
        seeded.append(_seeded_activation(module, {"module": module, "enabled": True}, source, settings))
        seeded_modules.add(module)
    return tuple(sorted(seeded, key=lambda d: d.name)), seeded_modules, unknown


def _seeded_activation(module: str, spec: dict[str, Any], source: str, settings: PlanSettings) -> DesiredObject:
    body = {
        "apiVersion": API_VERSION,
        "kind": "ModuleActivation",
        "metadata": {
            "name": module,
            "namespace": settings.system_namespace,
            "labels": {MANAGED_BY: MANAGED_BY_VALUE, SEEDED: "true"},
            "annotations": {
                SEEDED_FROM: source,
                FIELD_MANAGER_ANNOTATION: settings.field_manager,
            },
        },
        "spec": spec,
    }
    return DesiredObject.of(body, ignore_spec_changes=True, retain_on_delete=True)


def _frozen(classified: _Classified, snapshot: Snapshot, catalogs: Catalogs) -> dict[str, _Frozen]:
    """Module -> the rejected activation that stood for it, for every module frozen by an
    activation whose spec is rejected (invariant 6). A module that another, valid activation
    owns is not frozen. Pure."""
    invalid = {
        parsed.name: (parsed, reason, message)
        for parsed, reason, message, _ in classified.rejected
        if reason is Reason.INVALID_SPEC
    }
    found: dict[str, _Frozen] = {}
    for parsed, reason, message, module in classified.rejected:
        if reason is Reason.INVALID_SPEC and module is not None:
            found.setdefault(module, _Frozen(module, parsed, reason, message))
    for observed in _generated_kustomizations(snapshot):
        owner = invalid.get(observed.meta.annotations.get(ACTIVATION) or observed.meta.labels.get(ACTIVATION, ""))
        module = observed.meta.labels.get(MODULE, "")
        if owner is not None and catalogs.modules.get(module) is not None:
            found.setdefault(module, _Frozen(module, *owner))
    return {module: f for module, f in sorted(found.items()) if module not in classified.winners}


def _frozen_outcome(
    frozen: _Frozen, snapshot: Snapshot, catalogs: Catalogs, requested_by: Mapping[str, set[str]]
) -> ModuleOutcome:
    """A frozen module: Failed for its activation's reason; ready as its kept Kustomization is. Pure."""
    entry = catalogs.modules.require(frozen.module)
    observed = snapshot.kustomization(FLUX_NAMESPACE, entry.kustomization)
    kept = observed is not None and is_generated(observed.meta.labels)
    ready = kept and flux_readiness(observed).ready and set(entry.required_crds) <= snapshot.served_crds
    note = f"; Kustomization {entry.kustomization} is kept as last applied" if kept else ""
    return ModuleOutcome(
        name=frozen.module,
        phase=Phase.FAILED,
        reason=frozen.reason,
        message=f"{frozen.message}{note}",
        kustomization_name=entry.kustomization,
        requested_by=tuple(sorted(requested_by.get(frozen.module, ()))),
        activation=frozen.activation.name,
        kept_ready=ready,
    )


def _keep_as_applied(
    frozen: Mapping[str, _Frozen], snapshot: Snapshot, catalogs: Catalogs
) -> tuple[DesiredObject, ...]:
    """The generated Kustomizations of frozen modules, exactly as observed. Pure."""
    names = {catalogs.modules.require(module).kustomization for module in frozen}
    return tuple(
        _as_observed(observed)
        for observed in _generated_kustomizations(snapshot)
        if observed.meta.labels.get(MODULE) in frozen or observed.meta.name in names
    )


def _as_observed(observed: FluxKustomization) -> DesiredObject:
    metadata: dict[str, Any] = {
        "name": observed.meta.name,
        "namespace": observed.meta.namespace,
        "labels": thaw(observed.meta.labels),
    }
    if observed.meta.annotations:
        metadata["annotations"] = thaw(observed.meta.annotations)
    body = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": metadata,
        "spec": thaw(observed.spec),
    }
    return DesiredObject.of(body)


def _closure(
    seeds: set[str],
    blocked: set[str],
    catalogs: Catalogs,
    requested_by: dict[str, set[str]],
) -> set[str]:
    """`seeds` plus every dependency they pull in, except blocked (disabled or frozen) modules."""
    wanted: set[str] = set()
    pending = sorted(seeds)
    while pending:
        name = pending.pop()
        if name in wanted:
            continue
        wanted.add(name)
        for dependency in catalogs.modules.require(name).depends_on:
            if dependency in blocked:
                continue
            requested_by[dependency].add(f"Module/{name}")
            pending.append(dependency)
    return wanted


def _dependency_order(modules: set[str], catalogs: Catalogs) -> list[str]:
    """Dependencies first, ties by name. The catalog loader guarantees there is no cycle."""
    ordered: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in ordered or name in visiting:
            return
        visiting.add(name)
        for dependency in sorted(catalogs.modules.require(name).depends_on):
            if dependency in modules:
                visit(dependency)
        ordered.append(name)

    for name in sorted(modules):
        visit(name)
    return ordered


def _decide(
    *,
    entry: ModuleEntry,
    catalogs: Catalogs,
    decided: dict[str, ModuleOutcome],
    blocked: set[str],
    observed: FluxKustomization | None,
    releases: tuple[GenericObject, ...],
    served_crds: frozenset[str],
    source: SourceRef,
    activation: str | None,
    auto_enabled: bool,
    requested_by: tuple[str, ...],
    settings: PlanSettings,
    parameters: Mapping[str, str],
    components: tuple[str, ...],
) -> ModuleOutcome:
    """The outcome of one requested module, dependencies decided first. Pure."""

    def outcome(
        *, phase: Phase, reason: Reason, message: str, kustomization: DesiredObject | None = None
    ) -> ModuleOutcome:
        return ModuleOutcome(
            name=entry.name,
            phase=phase,
            reason=reason,
            message=message,
            kustomization_name=entry.kustomization,
            kustomization=kustomization,
            auto_enabled=auto_enabled,
            requested_by=requested_by,
            activation=activation,
        )

    if KUSTOMIZATION_CRD not in served_crds:
        return outcome(
            phase=Phase.WAITING_FOR_CRD,
            reason=Reason.WAITING_FOR_CRD,
            message=f"Waiting for CRD {KUSTOMIZATION_CRD} (Flux) to be served; no Kustomization until then.",
        )
    disabled_dependencies = sorted(d for d in entry.depends_on if d in blocked)
    if disabled_dependencies:
        return outcome(
            phase=Phase.WAITING_FOR_MODULES,
            reason=Reason.MODULE_DISABLED,
            message=f"Requires {', '.join(disabled_dependencies)}, which is disabled; no Kustomization until it is enabled.",
        )

    def kustomization(suspend: bool) -> DesiredObject:
        return module_kustomization(
            entry=entry,
            dependencies=tuple(catalogs.modules.require(d) for d in entry.depends_on),
            source=source,
            suspend=suspend,
            activation=activation,
            field_manager=settings.field_manager,
            parameters=parameters,
            components=components,
        )

    unready = sorted(d for d in entry.depends_on if not decided[d].serving)
    if unready:
        waiting = f"Waiting for {', '.join(unready)} to become ready"
        if observed is None:
            return outcome(phase=Phase.WAITING_FOR_MODULES, reason=Reason.WAITING_FOR_MODULES, message=f"{waiting}.")
        return outcome(
            phase=Phase.WAITING_FOR_MODULES,
            reason=Reason.DEPENDENCY_NOT_READY,
            message=f"{waiting}; Kustomization {entry.kustomization} is suspended meanwhile.",
            kustomization=kustomization(suspend=True),
        )
    phase, reason, message = _observed_phase(entry, flux_readiness(observed), served_crds, releases)
    return outcome(phase=phase, reason=reason, message=message, kustomization=kustomization(suspend=False))


def _observed_phase(
    entry: ModuleEntry, readiness: Verdict, served_crds: frozenset[str], releases: tuple[GenericObject, ...]
) -> tuple[Phase, Reason, str]:
    """A module's phase from its Kustomization's readiness (planning.readiness), its CRDs and the
    HelmReleases that Kustomization applied. Pure."""
    name = entry.kustomization
    failed_releases = _failed_releases(releases)
    if readiness.failed:
        message = f"Kustomization {name} is not ready ({readiness.reason}): {readiness.message}".rstrip(": ")
        return Phase.DEGRADED, Reason.KUSTOMIZATION_FAILED, "; ".join((message, *failed_releases))
    if failed_releases:
        state = "is applied" if readiness.ready else "is not ready"
        return (
            Phase.DEGRADED,
            Reason.HELM_RELEASE_FAILED,
            f"Kustomization {name} {state}, but " + "; ".join(failed_releases),
        )
    if readiness.ready:
        missing = sorted(set(entry.required_crds) - served_crds)
        if missing:
            return Phase.WAITING_FOR_CRD, Reason.WAITING_FOR_CRD, f"Waiting for CRD {', '.join(missing)} to be served."
        return READY, Reason.READY, f"Kustomization {name} is ready."
    messages: dict[str, str] = {
        Waiting.NOT_FOUND: f"Kustomization {name} is being created.",
        Waiting.SUSPENDED: f"Kustomization {name} is being resumed.",
        Waiting.STALE_GENERATION: f"Kustomization {name} changed; {readiness.message}.",
    }
    return (
        Phase.RECONCILING,
        Reason.RECONCILING,
        messages.get(readiness.reason, f"Flux is reconciling Kustomization {name}."),
    )


def _failed_releases(releases: tuple[GenericObject, ...]) -> tuple[str, ...]:
    """`HelmRelease <namespace>/<name> failed (<reason>): <message>` for each failed release,
    by namespace and name. Pure."""
    failed = []
    for release in sorted(releases, key=lambda r: (r.meta.namespace or "", r.meta.name)):
        verdict = flux_readiness(release)
        if verdict.failed:
            failed.append(
                f"HelmRelease {release.meta.namespace}/{release.meta.name} failed ({verdict.reason}): {verdict.message}".rstrip(
                    ": "
                )
            )
    return tuple(failed)


def _activation_outcomes(classified: _Classified, outcomes: dict[str, ModuleOutcome]) -> tuple[ActivationOutcome, ...]:
    results: list[ActivationOutcome] = []
    for module, parsed in classified.winners.items():
        outcome = outcomes[module]
        results.append(
            ActivationOutcome(
                activation=parsed,
                phase=outcome.phase,
                reason=outcome.reason,
                message=outcome.message,
                module=module,
                kustomization_name=outcome.kustomization_name
                if outcome.kustomization or outcome.phase == READY
                else None,
            )
        )
    for parsed, reason, message, rejected_module in classified.rejected:
        frozen = outcomes.get(rejected_module) if rejected_module is not None else None
        if frozen is not None and frozen.activation == parsed.name and frozen.phase == Phase.FAILED:
            message = frozen.message
        results.append(
            ActivationOutcome(
                activation=parsed, phase=Phase.FAILED, reason=reason, message=message, module=rejected_module
            )
        )
    return tuple(sorted(results, key=lambda r: r.activation.name))


def waiting_on_modules(required: Iterable[str], modules: ModulePlan) -> tuple[Phase, Reason, str] | None:
    """Why a requester cannot proceed yet, or None when every required module serves.

    A frozen module (its activation rejected) serves while its kept Kustomization is Ready.
    """
    outcomes = {name: modules.outcome(name) for name in required}
    blocked = sorted(
        name
        for name, o in outcomes.items()
        if o is not None and not o.serving and o.phase in (Phase.DISABLED, Phase.FAILED)
    )
    if blocked:
        return (
            Phase.WAITING_FOR_MODULES,
            Reason.MODULE_DISABLED,
            f"Requires module {', '.join(blocked)}, which is disabled or rejected.",
        )
    unready = sorted(name for name, o in outcomes.items() if o is None or not o.serving)
    if unready:
        return (
            Phase.WAITING_FOR_MODULES,
            Reason.WAITING_FOR_MODULES,
            f"Waiting for module {', '.join(unready)} to become ready.",
        )
    return None
