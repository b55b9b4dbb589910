"""Which modules the app instances and models request, and so enable on demand.

- every enabled instance: its application's modules, plus litellm and model-catalog;
- an enabled external model: litellm and model-catalog;
- an enabled local model: litellm and model-catalog, kubeai when its engine runs through
  KubeAI (not FreeToken, not the realtime runtime), and the vendor module of its compute
  target (gpu, amd-gpu or intel-gpu; none for cpu) where that module is available: the
  hardware preflight found the vendor's GPU, or a ModuleActivation names the module. Where it
  is not, the model requests no operator and waits for the GPU (`missing_hardware` says why);
  an operator is never installed on a machine without its hardware because a model asked.

Invariant 6: an instance or model whose spec is rejected (invalid, or naming an application
or engine no catalog knows) keeps requesting what it requested when it was last accepted, so
its modules and their dependents stay as they run. What it requested is read from its own
status (`status.requiredModules`, written every run for every requester), else, for a status
written before that field existed, from the requesters Appliance/local.status.modules lists.
An object that was never accepted requests nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from api.models import CpuResources
from api.validation import SpecError, validate_cpu_resources
from catalogs import Catalogs, EngineEntry
from planning.intent import Intent, Parsed
from planning.reasons import Reason

REQUIRED_MODULES_FIELD = "requiredModules"
"""Status field of a ModelActivation or AppInstance: the modules it requests (invariant 6's record)."""


@dataclass(frozen=True)
class Requirement:
    """What one instance or model requests, or why it cannot say."""

    requester: str
    modules: tuple[str, ...]
    problem: Reason | None = None
    problem_message: str = ""
    """With a `problem`, `modules` are those the requester requested when last accepted."""
    missing_hardware: str | None = None
    """The vendor module a local model would need but may not request: its hardware is absent."""
    missing_hardware_message: str = ""


def requester_of(parsed: Parsed[Any]) -> str:
    """`<Kind>/<name>`, as Appliance.status.modules.*.requestedBy names a requester. Pure."""
    return f"{parsed.obj.kind}/{parsed.name}"


def instance_requirement(instance: Parsed[Any], catalogs: Catalogs) -> Requirement:
    spec = instance.valid_spec
    requester = requester_of(instance)
    application = catalogs.applications.get(spec.application)
    if application is None:
        known = ", ".join(entry.name for entry in catalogs.applications.entries)
        return Requirement(
            requester=requester,
            modules=(),
            problem=Reason.UNKNOWN_APPLICATION,
            problem_message=f"spec.application: '{spec.application}' is not in the application catalog ({known})",
        )
    modules = set(application.required_modules) | set(catalogs.applications.common_modules)
    return Requirement(requester=requester, modules=tuple(sorted(modules)))


def model_requirement(
    model: Parsed[Any], catalogs: Catalogs, *, unavailable_vendors: Mapping[str, str] | None = None
) -> Requirement:
    """What one valid, enabled model requests. `unavailable_vendors`: vendor module -> why a
    model may not request it (planning.hardware.operators.unavailable_vendors). Pure."""
    spec = model.valid_spec
    requester = requester_of(model)
    modules = set(catalogs.applications.common_modules)
    local = spec.local
    if spec.type != "local" or local is None:
        return Requirement(requester=requester, modules=tuple(sorted(modules)))
    engine = catalogs.engines.get(local.engine)
    if engine is None:
        return _problem(requester, f"spec.local.engine: '{local.engine}' is not in the engine catalog")
    target = catalogs.compute_targets.get(local.compute_target)
    if target is None:
        return _problem(
            requester, f"spec.local.computeTarget: '{local.compute_target}' is not in the compute-target catalog"
        )
    try:
        check_cpu_resources(local.cpu_resources, engine)
    except SpecError as error:
        return _problem(requester, str(error))
    if engine.uses_kubeai and local.realtime is None:
        modules.add("kubeai")
    missing = (unavailable_vendors or {}).get(target.module) if target.module else None
    if target.module and missing is None:
        modules.add(target.module)
    return Requirement(
        requester=requester,
        modules=tuple(sorted(modules)),
        missing_hardware=target.module if missing is not None else None,
        missing_hardware_message=missing or "",
    )


def _problem(requester: str, message: str) -> Requirement:
    return Requirement(requester=requester, modules=(), problem=Reason.INVALID_SPEC, problem_message=message)


def check_cpu_resources(cpu: CpuResources | None, engine: EngineEntry) -> None:
    """A positive effective limit must cover the effective request, inherited values included."""
    validate_cpu_resources(cpu, engine.cpu_defaults.request_millicores)
    if cpu is None or cpu.request_millicores is None or cpu.limit_millicores is not None:
        return
    inherited_limit = engine.cpu_defaults.limit_millicores
    if 0 < inherited_limit < cpu.request_millicores:
        raise SpecError(
            "spec.local.cpuResources.requestMillicores",
            f"requestMillicores {cpu.request_millicores} exceeds the inherited {engine.name} limit of "
            f"{inherited_limit} millicores; set limitMillicores too (0 means no quota)",
        )


def requirements(
    intent: Intent, catalogs: Catalogs, *, unavailable_vendors: Mapping[str, str] | None = None
) -> tuple[Requirement, ...]:
    """Requirements of every enabled instance and model, in a stable order. Pure.

    A rejected requester (invalid spec, unknown application or engine) is included with the
    modules it last requested (invariant 6); a disabled one requests nothing.
    """
    previous = _previous_requests(intent)
    found: list[Requirement] = []
    for instance in intent.app_instances:
        if instance.error is not None:
            found.append(_rejected(instance, Reason.INVALID_SPEC, str(instance.error), previous, catalogs))
        elif instance.enabled:
            found.append(_kept_when_rejected(instance_requirement(instance, catalogs), instance, previous, catalogs))
    for model in intent.model_activations:
        if model.error is not None:
            found.append(_rejected(model, Reason.INVALID_SPEC, str(model.error), previous, catalogs))
        elif model.enabled:
            requirement = model_requirement(model, catalogs, unavailable_vendors=unavailable_vendors)
            found.append(_kept_when_rejected(requirement, model, previous, catalogs))
    return tuple(found)


def _kept_when_rejected(
    requirement: Requirement, parsed: Parsed[Any], previous: Mapping[str, frozenset[str]], catalogs: Catalogs
) -> Requirement:
    if requirement.problem is None:
        return requirement
    return replace(requirement, modules=last_requested(parsed, previous=previous, catalogs=catalogs))


def _rejected(
    parsed: Parsed[Any], reason: Reason, message: str, previous: Mapping[str, frozenset[str]], catalogs: Catalogs
) -> Requirement:
    return Requirement(
        requester=requester_of(parsed),
        modules=last_requested(parsed, previous=previous, catalogs=catalogs),
        problem=reason,
        problem_message=message,
    )


def last_requested(
    parsed: Parsed[Any], *, previous: Mapping[str, frozenset[str]], catalogs: Catalogs
) -> tuple[str, ...]:
    """The catalogued modules `parsed` requested when it was last accepted, sorted. Pure.

    Its own status.requiredModules when present (whatever its shape, only catalogued module
    names count), else the modules whose Appliance status lists it as a requester.
    """
    recorded = parsed.obj.status.get(REQUIRED_MODULES_FIELD)
    if isinstance(recorded, (list, tuple)):
        names: Iterable[Any] = recorded
    else:
        names = previous.get(requester_of(parsed), frozenset())
    return tuple(sorted({name for name in names if isinstance(name, str) and catalogs.modules.get(name) is not None}))


def _previous_requests(intent: Intent) -> dict[str, frozenset[str]]:
    """Requester -> the modules Appliance/local.status.modules names it a requester of. Pure;
    a status of the wrong shape reads as no requests."""
    appliance = intent.appliance
    modules = appliance.obj.status.get("modules") if appliance is not None else None
    found: dict[str, set[str]] = {}
    if not isinstance(modules, Mapping):
        return {}
    for module, entry in modules.items():
        requested_by = entry.get("requestedBy") if isinstance(entry, Mapping) else None
        if not isinstance(requested_by, (list, tuple)):
            continue
        for requester in requested_by:
            if isinstance(requester, str):
                found.setdefault(requester, set()).add(module)
    return {requester: frozenset(names) for requester, names in found.items()}
