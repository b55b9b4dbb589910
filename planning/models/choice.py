"""Where a local model runs when its activation leaves computeTarget or engine to the program.

An explicit value always wins. For an omitted computeTarget the candidates are the targets the
activation can run on: its preset's variants (of its engine, when the engine is given) in the
preset's order; without a preset, the targets of the engines that load its url; with realtime
settings, the profile's target. The first rule that gives a candidate decides:

1. kept: the target an earlier run chose by rule 2 or 3 (status.computeTarget and
   status.computeTargetChoice, recorded for the same preset), while a variant there remains. A
   model on a GPU does not move when the GPU's resource or label disappears for a while;
2. ``PresetDefault``: the preset's defaultComputeTarget, when available here (cpu always is);
3. ``OfferedAccelerator``: a GPU target the hardware offers: first one a node publishes as
   allocatable, then one whose vendor NFD detects on a node that passes the preflight (its
   operator is on its way);
4. ``CpuVariant``: cpu;
5. ``PresetDefaultNotOffered``: the preset's default although nothing offers it: the model
   waits for that GPU;
6. ``ImpliedTarget``: the one target a given engine or realtime profile leaves (FreeToken runs
   on NVIDIA only); the model waits for that GPU.

Nothing left: InvalidSpec on spec.local.computeTarget, naming what the preset offers. A choice
by rule 4 or 5 is made again each run, so such a model moves to a GPU once one is offered. An
omitted engine is VLLM when it runs on the chosen target, else the first of the preset's variants
there (for a url model, the first engine that loads its scheme).

The kept choice repeats the reason first given, so a converged run writes no status.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from api.models import DEFAULT_ENGINE, LocalModelSpec
from api.validation import SpecError
from api.vocabulary import ChoiceReason
from catalogs import Catalogs, EngineEntry, PresetEntry
from planning.hardware.operators import Hardware
from planning.intent import Intent, Parsed

TARGET = "computeTarget"
ENGINE = "engine"
CPU = "cpu"
CHOICE_FIELD = "computeTargetChoice"


KEPT_REASONS = frozenset({ChoiceReason.PRESET_DEFAULT, ChoiceReason.OFFERED_ACCELERATOR})
"""Choices a later run keeps: the model may be running there."""

_WHY = {
    ChoiceReason.PRESET_DEFAULT: "the preset's default",
    ChoiceReason.OFFERED_ACCELERATOR: "a GPU this cluster offers",
    ChoiceReason.CPU_VARIANT: "no GPU it runs on is offered here",
    ChoiceReason.PRESET_DEFAULT_NOT_OFFERED: "the preset's default; it waits until a node offers that GPU",
    ChoiceReason.IMPLIED_TARGET: "the only one it runs on; it waits until a node offers that GPU",
}


@dataclass(frozen=True)
class LocalChoice:
    """What the program chose for one activation: the target (with its reason) and the engine,
    each None when the activation gives it."""

    compute_target: str | None = None
    reason: ChoiceReason | None = None
    engine: str | None = None

    def status_fields(self) -> dict[str, Any]:
        return {CHOICE_FIELD: str(self.reason)} if self.reason is not None else {}

    def note(self) -> str:
        """The sentence the status message ends with. Pure."""
        parts = []
        if self.compute_target is not None and self.reason is not None:
            parts.append(f"computeTarget {self.compute_target} chosen: {_WHY[self.reason]}")
        if self.engine is not None:
            parts.append(f"engine {self.engine} chosen")
        return f" {'; '.join(parts)}." if parts else ""


@dataclass(frozen=True)
class Offered:
    """The GPU targets the hardware offers: published as allocatable, or only detected."""

    published: frozenset[str]
    detected: frozenset[str]

    def __contains__(self, target: str) -> bool:
        return target == CPU or target in self.published or target in self.detected


@dataclass(frozen=True)
class SettledIntent:
    intent: Intent
    choices: Mapping[str, LocalChoice]
    """Activation name -> what was chosen, for each activation that left something to choose."""


def offered_targets(hardware: Hardware, catalogs: Catalogs) -> Offered:
    """The accelerated targets with allocatable resources, and those whose vendor is detected on
    a node that passes the preflight. Pure."""
    vendors = {vendor for node in hardware.nodes if node.compatible for vendor in node.vendors}
    detected = set()
    for target in catalogs.compute_targets.entries:
        module = catalogs.modules.get(target.module) if target.module else None
        if module is not None and module.pci_vendor in vendors:
            detected.add(target.name)
    return Offered(published=frozenset(c.compute_target for c in hardware.capacity), detected=frozenset(detected))


def settle_choices(intent: Intent, hardware: Hardware, catalogs: Catalogs) -> SettledIntent:
    """`intent` with every omitted computeTarget and engine of a local activation chosen; an
    activation nothing fits becomes an invalid spec. Pure."""
    offered = offered_targets(hardware, catalogs)
    settled: list[Parsed[Any]] = []
    choices: dict[str, LocalChoice] = {}
    for parsed in intent.model_activations:
        local = parsed.spec.local if parsed.spec is not None and parsed.spec.type == "local" else None
        if local is None or not local.chosen_fields():
            settled.append(parsed)
            continue
        try:
            choice = choose(local, catalogs, offered, parsed.obj.status)
        except SpecError as error:
            settled.append(Parsed(obj=parsed.obj, spec=None, error=error))
            continue
        update = {
            "compute_target": choice.compute_target or local.compute_target,
            "engine": choice.engine or local.engine,
        }
        spec = parsed.valid_spec.model_copy(update={"local": local.model_copy(update=update)})
        settled.append(replace(parsed, spec=spec))
        choices[parsed.name] = choice
    return SettledIntent(intent=replace(intent, model_activations=tuple(settled)), choices=MappingProxyType(choices))


def choose(local: LocalModelSpec, catalogs: Catalogs, offered: Offered, previous: Mapping[str, Any]) -> LocalChoice:
    """The target and engine for `local`, whose omitted fields are in local.chosen_fields(). Pure."""
    omitted = local.chosen_fields()
    preset = catalogs.presets.get(local.preset) if local.preset else None
    engine = None if ENGINE in omitted else local.engine
    if TARGET not in omitted:
        return LocalChoice(engine=_engine(local, preset, local.compute_target, catalogs))
    candidates = _candidates(local, preset, engine, catalogs)
    if not candidates and preset is not None:
        offered_variants = ", ".join(f"{v.engine} on {v.compute_target}" for v in preset.variants)
        raise SpecError(
            f"spec.local.{ENGINE}",
            f"preset {preset.name} has no variant for engine {engine} (it offers {offered_variants})",
        )
    if not candidates:
        return LocalChoice()
    implied = engine is not None or local.realtime is not None
    target, reason = _kept(local, preset, engine, candidates, previous) or _target(
        preset, candidates, offered, implied=implied
    )
    return LocalChoice(
        compute_target=target, reason=reason, engine=None if engine else _engine(local, preset, target, catalogs)
    )


def _candidates(
    local: LocalModelSpec, preset: PresetEntry | None, engine: str | None, catalogs: Catalogs
) -> tuple[str, ...]:
    """The targets the activation could run on, in order of preference; empty when the preset or
    profile is unknown (resolution then names that field). Pure."""
    if local.realtime is not None:
        profile = catalogs.runtimes.realtime.get(local.realtime.profile)
        return (profile.compute_target,) if profile is not None else ()
    if local.preset is not None:
        if preset is None:
            return ()
        return tuple(dict.fromkeys(v.compute_target for v in preset.variants if engine is None or v.engine == engine))
    return tuple(dict.fromkeys(t for e in _url_engines(local, catalogs, engine) for t in e.compute_targets))


def _url_engines(local: LocalModelSpec, catalogs: Catalogs, engine: str | None) -> list[EngineEntry]:
    scheme = (local.url or "").partition("://")[0]
    found = [
        e
        for e in catalogs.engines.entries
        if (engine is None or e.name == engine) and (engine is not None or scheme in e.url_schemes)
    ]
    return sorted(found, key=lambda e: e.name != DEFAULT_ENGINE)


def _kept(
    local: LocalModelSpec,
    preset: PresetEntry | None,
    engine: str | None,
    candidates: tuple[str, ...],
    previous: Mapping[str, Any],
) -> tuple[str, ChoiceReason] | None:
    target, reason = previous.get(TARGET), previous.get(CHOICE_FIELD)
    if not isinstance(target, str) or reason not in {str(r) for r in KEPT_REASONS}:
        return None
    if previous.get("preset") != local.preset or target not in candidates:
        return None
    if engine is not None and preset is not None and preset.variant(engine, target) is None:
        return None
    return target, ChoiceReason(reason)


def _target(
    preset: PresetEntry | None, candidates: tuple[str, ...], offered: Offered, *, implied: bool
) -> tuple[str, ChoiceReason]:
    """Rules 2 to 6 of the module's docstring. `implied`: the engine or realtime profile is given. Pure."""
    default = preset.default_compute_target if preset is not None else None
    if default in candidates and default in offered:
        return default, ChoiceReason.PRESET_DEFAULT
    gpus = [t for t in candidates if t != CPU]
    for group in (offered.published, offered.detected):
        found = next((t for t in gpus if t in group), None)
        if found is not None:
            return found, ChoiceReason.OFFERED_ACCELERATOR
    if CPU in candidates:
        return CPU, ChoiceReason.CPU_VARIANT
    if default in candidates:
        return default, ChoiceReason.PRESET_DEFAULT_NOT_OFFERED
    if implied and len(candidates) == 1:
        return candidates[0], ChoiceReason.IMPLIED_TARGET
    what = f"preset {preset.name} offers" if preset is not None else "the activation runs on"
    raise SpecError(
        f"spec.local.{TARGET}",
        f"omitted, and nothing fits: {what} {_offer(preset, candidates)}, no node offers one of those GPUs and there is "
        "no cpu variant; set computeTarget",
    )


def _offer(preset: PresetEntry | None, candidates: tuple[str, ...]) -> str:
    if preset is None:
        return ", ".join(candidates)
    return ", ".join(f"{v.engine} on {v.compute_target}" for v in preset.variants if v.compute_target in candidates)


def _engine(local: LocalModelSpec, preset: PresetEntry | None, target: str, catalogs: Catalogs) -> str | None:
    """The engine for an omitted one (None when given): VLLM where it fits, else the first fit."""
    if ENGINE not in local.chosen_fields():
        return None
    if local.realtime is not None:
        return DEFAULT_ENGINE
    if preset is not None:
        engines = [v.engine for v in preset.variants if v.compute_target == target]
    else:
        engines = [e.name for e in _url_engines(local, catalogs, None) if e.supports(target)]
    if not engines:
        return DEFAULT_ENGINE
    return DEFAULT_ENGINE if DEFAULT_ENGINE in engines else engines[0]
