"""ModuleActivation: runtime intent to enable or disable one module.

The API accepts any parameters for most modules; what a module accepts is declared in the
module catalog (``parameters`` in catalogs/modules.yaml), and the planner refuses anything else
(planning.module_parameters). Two modules take bounded parameters that only administrators may
set, and those are validated here as well:

- ``amd-gpu`` accepts exactly ``compatibilityProfile``, ``allowExperimental`` (the string
  ``"true"`` or ``"false"``), ``validationRequest`` and ``gpuSharing``; nothing else (no test
  image, script or node selector);
- ``gpu`` (NVIDIA) may carry ``gpuSharing`` beside its other parameters.

``gpuSharing`` is a JSON object, given as a JSON string or an object, that selects one node by
name and UID, namespace ``ai``, and a mode: ``exclusive``, or the vendor's shared mode
(``dra-shared`` for AMD, ``time-slicing`` for NVIDIA) with 2 to 16 slots.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from api.meta import ApiModel

AMD_GPU_MODULE = "amd-gpu"
NVIDIA_GPU_MODULE = "gpu"
MIN_SHARING_SLOTS = 2
MAX_SHARING_SLOTS = 16
MAX_GPU_SHARING_JSON_CHARS = 4096

_PROFILE_ID_PATTERN = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$"
_REQUEST_ID_PATTERN = r"^([A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?)?$"


class GpuSharing(ApiModel):
    """One node's GPU sharing configuration; the vendor subclasses fix the accepted modes.

    Every mode other than ``exclusive`` splits a GPU into ``slots`` (2-16), which are then
    required.
    """

    mode: str
    node_name: str = Field(min_length=1, max_length=253)
    node_uid: str = Field(min_length=1, max_length=64, alias="nodeUID")
    namespace: Literal["ai"] = "ai"
    slots: int | None = Field(default=None, ge=MIN_SHARING_SLOTS, le=MAX_SHARING_SLOTS, validate_default=True)

    @field_validator("slots")
    @classmethod
    def _shared_modes_need_slots(cls, slots: int | None, info: ValidationInfo) -> int | None:
        mode = info.data.get("mode")
        if slots is None and mode is not None and mode != "exclusive":
            raise ValueError(f"slots ({MIN_SHARING_SLOTS}-{MAX_SHARING_SLOTS}) are required for mode {mode}")
        return slots

    @property
    def shared(self) -> bool:
        """True for every mode that splits one GPU into slots."""
        return self.mode != "exclusive"


class AmdGpuSharing(GpuSharing):
    """AMD sharing: exclusive devices or one shared DRA claim."""

    mode: Literal["exclusive", "dra-shared"]


class NvidiaGpuSharing(GpuSharing):
    """NVIDIA sharing: exclusive devices or device-plugin time-slicing."""

    mode: Literal["exclusive", "time-slicing"]


def _decode_json_object(raw: object) -> object:
    """A JSON string becomes the object it encodes; anything else passes through unchanged."""
    if not isinstance(raw, str):
        return raw
    if len(raw) > MAX_GPU_SHARING_JSON_CHARS:
        raise ValueError(f"gpuSharing must be at most {MAX_GPU_SHARING_JSON_CHARS} characters of JSON")
    try:
        decoded = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ValueError(f"gpuSharing is not valid JSON ({error.msg})") from error
    if not isinstance(decoded, dict):
        raise ValueError("gpuSharing must be a JSON object")
    return decoded


class AmdGpuParameters(ApiModel):
    """The bounded parameters of ModuleActivation/amd-gpu; unknown keys are rejected."""

    compatibility_profile: str = Field(default="", pattern=_PROFILE_ID_PATTERN, max_length=63)
    allow_experimental: Literal["true", "false"] = "false"
    validation_request: str = Field(default="", pattern=_REQUEST_ID_PATTERN, max_length=128)
    gpu_sharing: AmdGpuSharing | None = None

    @field_validator("gpu_sharing", mode="before")
    @classmethod
    def _decode(cls, raw: object) -> object:
        return _decode_json_object(raw)


class NvidiaGpuParameters(ApiModel):
    """The parameters of ModuleActivation/gpu: a bounded gpuSharing; others pass the API and meet
    the module catalog's declaration in the planner."""

    model_config = ApiModel.model_config | {"extra": "allow"}

    gpu_sharing: NvidiaGpuSharing | None = None

    @field_validator("gpu_sharing", mode="before")
    @classmethod
    def _decode(cls, raw: object) -> object:
        return _decode_json_object(raw)


GPU_MODULE_PARAMETERS: dict[str, type[AmdGpuParameters] | type[NvidiaGpuParameters]] = {
    AMD_GPU_MODULE: AmdGpuParameters,
    NVIDIA_GPU_MODULE: NvidiaGpuParameters,
}
"""Modules whose parameters are bounded, and the type that bounds them."""


def parse_gpu_parameters(module: str, parameters: dict[str, Any]) -> AmdGpuParameters | NvidiaGpuParameters | None:
    """The typed parameters of a GPU module (None for other modules).

    Raises pydantic's ValidationError with locations relative to ``parameters``.
    """
    parameters_type = GPU_MODULE_PARAMETERS.get(module)
    if parameters_type is None:
        return None
    return parameters_type.model_validate(parameters, strict=True, by_alias=True, by_name=False)


class ModuleActivationSpec(ApiModel):
    """Runtime intent for one module; it takes precedence over Appliance.spec.modules."""

    module: str = Field(min_length=1, max_length=63, description="Canonical or user-facing module name.")
    enabled: bool = True
    parameters: dict[str, Any] = Field(default_factory=dict, description="Module parameters.")

    @field_validator("parameters")
    @classmethod
    def _bounded_gpu_parameters(cls, parameters: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        module = info.data.get("module")
        if module is not None:
            parse_gpu_parameters(module, parameters)
        return parameters

    def gpu_sharing(self) -> GpuSharing | None:
        """The validated gpuSharing of a GPU module, or None when absent or another module."""
        typed = parse_gpu_parameters(self.module, self.parameters)
        return typed.gpu_sharing if typed is not None else None
