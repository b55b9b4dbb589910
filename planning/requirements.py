"""Which modules the enabled app instances and models need (seed 000, Defaulting).

- every enabled instance: its application's modules, plus litellm and model-catalog;
- an enabled external model: litellm and model-catalog;
- an enabled local model: litellm and model-catalog, kubeai when its engine runs through
  KubeAI (not FreeToken, not the realtime runtime), and the vendor module of its compute
  target (gpu, amd-gpu or intel-gpu; none for cpu).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from api.models import CpuResources
from api.validation import SpecError, validate_cpu_resources
from catalogs import Catalogs, EngineEntry
from planning.intent import Intent, Parsed
from planning.reasons import Reason


@dataclass(frozen=True)
class Requirement:
    """What one enabled instance or model needs, or why it cannot say."""

    requester: str
    modules: tuple[str, ...]
    problem: Reason | None = None
    problem_message: str = ""


def instance_requirement(instance: Parsed[Any], catalogs: Catalogs) -> Requirement:
    spec = instance.spec
    requester = f"AppInstance/{instance.name}"
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


def model_requirement(model: Parsed[Any], catalogs: Catalogs) -> Requirement:
    spec = model.spec
    requester = f"ModelActivation/{model.name}"
    modules = set(catalogs.applications.common_modules)
    local = spec.local
    if spec.type == "local" and local is not None:
        engine = catalogs.engines.get(local.engine)
        if engine is None:
            return Requirement(
                requester=requester,
                modules=(),
                problem=Reason.INVALID_SPEC,
                problem_message=f"spec.local.engine: '{local.engine}' is not in the engine catalog",
            )
        target = catalogs.compute_targets.get(local.compute_target)
        if target is None:
            return Requirement(
                requester=requester,
                modules=(),
                problem=Reason.INVALID_SPEC,
                problem_message=f"spec.local.computeTarget: '{local.compute_target}' is not in the compute-target catalog",
            )
        try:
            check_cpu_resources(local.cpu_resources, engine)
        except SpecError as error:
            return Requirement(requester=requester, modules=(), problem=Reason.INVALID_SPEC, problem_message=str(error))
        if engine.uses_kubeai and local.realtime is None:
            modules.add("kubeai")
        if target.module:
            modules.add(target.module)
    return Requirement(requester=requester, modules=tuple(sorted(modules)))


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


def requirements(intent: Intent, catalogs: Catalogs) -> tuple[Requirement, ...]:
    """Requirements of every enabled, valid instance and model, in a stable order."""
    found = [instance_requirement(i, catalogs) for i in intent.app_instances if i.enabled]
    found += [model_requirement(m, catalogs) for m in intent.model_activations if m.enabled]
    return tuple(found)
