"""ModelActivation: a request for one local or external model.

Invariants the types enforce (the CRD enforces the same ones it can express in CEL):

- exactly the section matching ``type`` is present: ``local`` for local, ``external`` for
  external;
- ``local.kvCacheType`` fits the engine and target: VLLM takes ``auto`` everywhere and ``fp8``
  only on ``nvidia-gpu`` or ``amd-gpu``; OLlama takes ``f16``, ``q8_0`` or ``q4_0``; FreeToken
  takes none (nor any other vLLM/Ollama offloading or KV-cache control);
- OLlama does not run on ``intel-gpu``;
- engine-specific sections appear only with their engine: ``vllm`` and ``realtime`` with VLLM,
  ``freetoken`` with FreeToken;
- ``cpuOffloading: true`` means one NVIDIA-backed VLLM or OLlama replica with an explicit RAM
  budget (and, for VLLM, an explicit weight-offload budget);
- an explicit positive ``cpuResources.limitMillicores`` is never below an explicit
  ``requestMillicores``. The inherited request lives in the engine catalog, so the complete rule
  is :func:`api.validation.validate_cpu_resources`, called with the catalog default;
- an external model carries its API key only as a Secret reference;
- ``local.computeTarget`` and ``local.engine`` have no CRD default: omitted, they stay omitted
  in the stored object and the program chooses them (planning.models.choice); the rules above
  read them as ``cpu`` and ``VLLM`` meanwhile.

Field order matters: a rule that depends on another field is checked on the later field, so
each error points at the field that breaks the rule.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic.alias_generators import to_camel
from pydantic.config import JsonDict

from api.meta import ApiModel

ComputeTarget = Literal["cpu", "nvidia-gpu", "amd-gpu", "intel-gpu"]
Engine = Literal["VLLM", "OLlama", "FreeToken"]
KvCacheType = Literal["auto", "fp8", "f16", "q8_0", "q4_0"]
VisionAttention = Literal["auto", "aotriton", "triton", "flash-attn-triton"]
ExternalModelType = Literal[
    "chat",
    "completion",
    "embedding",
    "rerank",
    "image_generation",
    "audio_transcription",
    "audio_speech",
]

DEFAULT_COMPUTE_TARGET: ComputeTarget = "cpu"
DEFAULT_ENGINE: Engine = "VLLM"
DEFAULT_VISION_ATTENTION: VisionAttention = "triton"
MIN_MEMORY_REQUIRED_MI = 16

KV_CACHE_TYPES: dict[str, tuple[str, ...]] = {
    "VLLM": ("auto", "fp8"),
    "OLlama": ("f16", "q8_0", "q4_0"),
    "FreeToken": (),
}
"""The kvCacheType values each engine accepts on at least one target."""

DEFAULT_KV_CACHE_TYPE: dict[str, str | None] = {"VLLM": "auto", "OLlama": "f16", "FreeToken": None}
"""The cache precision an engine uses when kvCacheType is omitted."""

FP8_KV_CACHE_TARGETS: tuple[str, ...] = ("nvidia-gpu", "amd-gpu")
CPU_OFFLOADING_ENGINES: tuple[str, ...] = ("VLLM", "OLlama")
CPU_OFFLOADING_TARGET = "nvidia-gpu"

DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
QUANTITY_PATTERN = r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$"
HTTPS_URL_PATTERN = r"^https://[^\s/?#]+([/?#]\S*)?$"
HTTP_OR_HTTPS_URL_PATTERN = r"^https?://[^\s/?#]+([/?#]\S*)?$"

_ENGINE = f"(has(self.engine) ? self.engine : '{DEFAULT_ENGINE}')"
_TARGET = f"(has(self.computeTarget) ? self.computeTarget : '{DEFAULT_COMPUTE_TARGET}')"


def _cel_list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{value}'" for value in values) + "]"


def _cel(rule: str, message: str) -> JsonDict:
    return {"rule": rule, "message": message}


def _earlier(info: ValidationInfo, field: str, default: Any = None) -> Any:
    """The validated value of an earlier field, or ``default`` when it failed or is absent."""
    return info.data.get(field, default)


def _omitted(info: ValidationInfo, field: str) -> bool:
    """True when an earlier field validated and holds no value (a failed field is not omitted)."""
    return field in info.data and info.data[field] is None


def _chosen_by_the_program(schema: dict[str, Any]) -> None:
    """No CRD default: an omitted field stays omitted in the stored object, so the program can
    tell it from an explicit value (LocalModelSpec.chosen_fields) and choose it."""
    schema.pop("default", None)


def _wire(info: ValidationInfo) -> str:
    """The wire name of the field a validator is checking."""
    return to_camel(info.field_name or "")


class CpuResources(ApiModel):
    """Per-replica CPU overrides. Omitted values inherit the engine/target defaults.

    ``limitMillicores: 0`` means no CPU quota. A positive limit is at least the effective
    request; this type rejects only an explicitly conflicting pair.
    """

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                _cel(
                    "!has(self.requestMillicores) || !has(self.limitMillicores) || "
                    "self.limitMillicores == 0 || self.limitMillicores >= self.requestMillicores",
                    "a positive limitMillicores must be at least requestMillicores",
                )
            ]
        }
    )

    request_millicores: int | None = Field(default=None, ge=1, description="CPU request in millicores.")
    limit_millicores: int | None = Field(
        default=None, ge=0, description="CPU limit in millicores; 0 means no CPU quota."
    )

    @field_validator("limit_millicores")
    @classmethod
    def _limit_covers_explicit_request(cls, limit: int | None, info: ValidationInfo) -> int | None:
        request = _earlier(info, "request_millicores")
        if limit and request is not None and limit < request:
            raise ValueError(
                f"limitMillicores {limit} is below requestMillicores {request}; "
                "a positive limit must be at least the request (0 means no quota)"
            )
        return limit


class VllmSettings(ApiModel):
    """vLLM-only deployment settings. Present without a value, visionAttention is ``triton``.

    Omitting the whole object leaves existing runtime arguments as they are; ``auto`` removes
    the managed vision-attention overrides and lets vLLM choose.
    """

    vision_attention: VisionAttention = Field(
        default=DEFAULT_VISION_ATTENTION, description="Vision encoder attention backend."
    )


class FreeTokenSettings(ApiModel):
    """Settings of the dedicated FreeToken runtime; only valid with ``engine: FreeToken``."""

    gpu_device: str | None = Field(default=None, min_length=1, description="Node GPU inventory entry.")
    gpu_count: int | None = Field(default=None, ge=1, description="Whole NVIDIA devices requested.")
    gpu_memory_mi: int | None = Field(default=None, ge=1, description="Aggregate planned VRAM budget.")
    system_memory_mi: int | None = Field(
        default=None, ge=MIN_MEMORY_REQUIRED_MI, description="Pod RAM request and limit."
    )
    memory_strategy: str = Field(
        default="auto", pattern=DNS_LABEL_PATTERN, max_length=63, description="Catalog memory strategy."
    )
    advanced: dict[str, Any] = Field(default_factory=dict, description="Advanced runtime values.")
    restart_nonce: str | None = Field(default=None, max_length=128, description="Changing it restarts the runtime.")


class RealtimeSettings(ApiModel):
    """A catalog vLLM-Omni profile run as a direct Deployment; only valid with ``engine: VLLM``."""

    profile: str = Field(min_length=1, max_length=253, description="Catalog realtime profile ID.")
    gpu_node: str = Field(min_length=1, max_length=253, description="Node the runtime is placed on.")
    gpu_count: int | None = Field(default=None, ge=0, description="GPUs requested; 0 on CPU.")
    system_memory_mi: int | None = Field(default=None, ge=MIN_MEMORY_REQUIRED_MI)
    gpu_memory_fraction: float | None = Field(default=None, gt=0, le=1)
    thinker_cpu_offload_gib: float | None = Field(default=None, ge=0, alias="thinkerCpuOffloadGiB")
    runtime_image: str | None = Field(
        default=None, max_length=512, description="Container image override; empty uses the catalog."
    )
    restart_nonce: str | None = Field(default=None, max_length=128)


class LocalModelSpec(ApiModel):
    """A model served inside the cluster by vLLM, Ollama or FreeToken."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                _cel(
                    f"!has(self.kvCacheType) || {_ENGINE} != 'VLLM' || self.kvCacheType == 'auto' || "
                    f"(self.kvCacheType == 'fp8' && {_TARGET} in {_cel_list(FP8_KV_CACHE_TARGETS)})",
                    "engine VLLM accepts kvCacheType auto, or fp8 on nvidia-gpu or amd-gpu",
                ),
                _cel(
                    f"!has(self.kvCacheType) || {_ENGINE} != 'OLlama' || "
                    f"self.kvCacheType in {_cel_list(KV_CACHE_TYPES['OLlama'])}",
                    "engine OLlama accepts kvCacheType f16, q8_0 or q4_0",
                ),
                _cel(
                    f"{_ENGINE} != 'FreeToken' || (!has(self.kvCacheType) && "
                    "!has(self.kvCacheMemoryBytes) && !has(self.cpuOffloading) && "
                    "!has(self.cpuOffloadMi) && !has(self.ollamaGpuLayers))",
                    "engine FreeToken takes no vLLM/Ollama offloading or KV-cache fields",
                ),
                _cel(
                    f"!({_ENGINE} == 'OLlama' && {_TARGET} == 'intel-gpu')",
                    "engine OLlama does not support computeTarget intel-gpu",
                ),
                _cel(
                    f"!has(self.vllm) || {_ENGINE} == 'VLLM'",
                    "vllm settings require engine VLLM",
                ),
                _cel(
                    f"!has(self.realtime) || {_ENGINE} == 'VLLM'",
                    "realtime settings require engine VLLM",
                ),
                _cel(
                    f"!has(self.freetoken) || {_ENGINE} == 'FreeToken'",
                    "freetoken settings require engine FreeToken",
                ),
                _cel(
                    "!has(self.cpuOffloading) || !self.cpuOffloading || "
                    f"({_TARGET} == '{CPU_OFFLOADING_TARGET}' && "
                    f"{_ENGINE} in {_cel_list(CPU_OFFLOADING_ENGINES)})",
                    "cpuOffloading true requires computeTarget nvidia-gpu and engine VLLM or OLlama",
                ),
            ]
        }
    )

    preset: str | None = Field(default=None, min_length=1, max_length=253, description="Catalog preset ID.")
    artifact: str | None = Field(
        default=None, min_length=1, max_length=63, description="Artifact ID of the selected preset variant."
    )
    url: str | None = Field(default=None, min_length=1, max_length=512, description="Model repository reference.")
    compute_target: ComputeTarget = Field(
        default=DEFAULT_COMPUTE_TARGET,
        description="Where the model runs; omitted: chosen from the preset and the hardware (status.computeTarget).",
        json_schema_extra=_chosen_by_the_program,
    )
    engine: Engine = Field(
        default=DEFAULT_ENGINE,
        description="KubeAI engine; Ollama is spelled OLlama. Omitted: the preset's variant on the target, VLLM first.",
        json_schema_extra=_chosen_by_the_program,
    )
    kv_cache_type: KvCacheType | None = Field(
        default=None, description="KV-cache precision; omitted means auto (VLLM) or f16 (OLlama)."
    )
    memory_required_mi: int | None = Field(
        default=None, ge=MIN_MEMORY_REQUIRED_MI, description="RAM reserved for the model pod, in MiB."
    )
    kv_cache_memory_bytes: int | None = Field(
        default=None,
        ge=1,
        description=(
            "KV-cache size for vLLM on CPU, in bytes; omitted means 512 MiB. The CPU backend holds whole GiB, so "
            "this is rounded up to a GiB (status.effectiveKvCacheMemoryBytes)."
        ),
    )
    vram: str | None = Field(
        default=None, pattern=QUANTITY_PATTERN, max_length=32, description="GPU memory budget (quantity)."
    )
    vram_mi: int | None = Field(default=None, ge=1, description="GPU memory budget in MiB.")
    replicas: int | None = Field(default=None, ge=1)
    context_window: int | None = Field(default=None, ge=1)
    max_num_seqs: int | None = Field(default=None, ge=1)
    cpu_resources: CpuResources | None = None
    cpu_offload_mi: int | None = Field(
        default=None, ge=0, description="vLLM weight-offload budget in MiB; 0 for Ollama."
    )
    ollama_gpu_layers: int | None = Field(default=None, ge=0, description="Deprecated; ignored.")
    cpu_offloading: bool | None = Field(
        default=None, description="NVIDIA CPU weight offloading; omitted keeps legacy behaviour."
    )
    allow_memory_risk: bool | None = None
    """Accept insufficient or unknown memory estimates: skips only the host-coverage check
    (planning.models.memory); no request, limit or cache setting changes."""
    vllm: VllmSettings | None = None
    freetoken: FreeTokenSettings | None = None
    realtime: RealtimeSettings | None = None

    @field_validator("engine")
    @classmethod
    def _engine_supports_target(cls, engine: str, info: ValidationInfo) -> str:
        if engine == "OLlama" and _earlier(info, "compute_target") == "intel-gpu":
            raise ValueError("engine OLlama does not support computeTarget intel-gpu; use VLLM")
        return engine

    @field_validator("kv_cache_type")
    @classmethod
    def _kv_cache_type_fits_engine_and_target(cls, kv: str | None, info: ValidationInfo) -> str | None:
        if kv is None:
            return kv
        engine = _earlier(info, "engine")
        target = _earlier(info, "compute_target")
        if engine is None:
            return kv
        accepted = KV_CACHE_TYPES[engine]
        if not accepted:
            raise ValueError(f"kvCacheType is not accepted with engine {engine}")
        if kv not in accepted:
            raise ValueError(f"kvCacheType {kv} is not accepted with engine {engine}; use one of {', '.join(accepted)}")
        if kv == "fp8" and target is not None and target not in FP8_KV_CACHE_TARGETS:
            raise ValueError(f"kvCacheType fp8 requires computeTarget nvidia-gpu or amd-gpu, not {target}; use auto")
        return kv

    @field_validator("kv_cache_memory_bytes", "cpu_offload_mi", "ollama_gpu_layers")
    @classmethod
    def _not_with_freetoken(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is not None and _earlier(info, "engine") == "FreeToken":
            raise ValueError(f"{_wire(info)} is not accepted with engine FreeToken")
        return value

    @field_validator("cpu_offloading")
    @classmethod
    def _cpu_offloading_supported(cls, offloading: bool | None, info: ValidationInfo) -> bool | None:
        engine = _earlier(info, "engine")
        if offloading is not None and engine == "FreeToken":
            raise ValueError("cpuOffloading is not accepted with engine FreeToken")
        if not offloading:
            return offloading
        target = _earlier(info, "compute_target")
        if target is not None and target != CPU_OFFLOADING_TARGET:
            raise ValueError(f"cpuOffloading true requires computeTarget nvidia-gpu, not {target}")
        if engine is not None and engine not in CPU_OFFLOADING_ENGINES:
            raise ValueError(f"cpuOffloading true requires engine VLLM or OLlama, not {engine}")
        replicas = _earlier(info, "replicas")
        if replicas is not None and replicas > 1:
            raise ValueError(f"cpuOffloading true supports one replica, not {replicas}")
        if _omitted(info, "memory_required_mi"):
            raise ValueError("cpuOffloading true requires memoryRequiredMi, the total host RAM budget")
        cpu_offload_mi = _earlier(info, "cpu_offload_mi")
        if engine == "VLLM" and _omitted(info, "cpu_offload_mi"):
            raise ValueError("cpuOffloading true with engine VLLM requires cpuOffloadMi, the weight-offload budget")
        if engine == "OLlama" and cpu_offload_mi:
            raise ValueError("cpuOffloading true with engine OLlama requires cpuOffloadMi 0 or omitted")
        return offloading

    @field_validator("vllm", "realtime")
    @classmethod
    def _vllm_only(cls, value: ApiModel | None, info: ValidationInfo) -> ApiModel | None:
        engine = _earlier(info, "engine")
        if value is not None and engine is not None and engine != "VLLM":
            raise ValueError(f"{_wire(info)} settings require engine VLLM, not {engine}")
        return value

    @field_validator("freetoken")
    @classmethod
    def _freetoken_only(cls, value: FreeTokenSettings | None, info: ValidationInfo) -> FreeTokenSettings | None:
        engine = _earlier(info, "engine")
        if value is not None and engine is not None and engine != "FreeToken":
            raise ValueError(f"freetoken settings require engine FreeToken, not {engine}")
        return value

    def chosen_fields(self) -> frozenset[str]:
        """The wire names of computeTarget and engine when the object omits them: the program
        chooses those (planning.models.choice); the defaults of this type are placeholders."""
        return frozenset(to_camel(f) for f in ("compute_target", "engine") if f not in self.model_fields_set)

    def requested_kv_cache_type(self) -> str | None:
        """kvCacheType as given, or the engine default when omitted (None for FreeToken)."""
        return self.kv_cache_type if self.kv_cache_type is not None else DEFAULT_KV_CACHE_TYPE[self.engine]


KEY_OVER_PLAIN_HTTP = "apiBase must use https:// when apiKeySecretRef is set: an API key is never sent in clear text"


class SecretKeyRef(ApiModel):
    """A key inside a Secret in the activation's target namespace."""

    name: str = Field(min_length=1, max_length=253)
    key: str = Field(min_length=1, max_length=253)


class ExternalModelSpec(ApiModel):
    """A model served by an external provider through LiteLLM. Keys live in Secrets only.

    The key is optional: a local OpenAI-compatible endpoint needs none, and may then be reached
    over plain http://. With a key, apiBase must be https://: a key never travels in clear text.
    """

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                _cel(
                    "!has(self.apiBase) || !self.apiBase.startsWith('http://') || !has(self.apiKeySecretRef)",
                    KEY_OVER_PLAIN_HTTP,
                )
            ]
        }
    )

    model: str = Field(min_length=1, max_length=253, description="Provider model, e.g. openai/gpt-4o-mini.")
    api_base: str | None = Field(default=None, pattern=HTTP_OR_HTTPS_URL_PATTERN, max_length=2048)
    model_type: ExternalModelType = "chat"
    api_key_secret_ref: SecretKeyRef | None = None

    @model_validator(mode="after")
    def _no_key_over_plain_http(self) -> ExternalModelSpec:
        if self.api_key_secret_ref is not None and self.api_base is not None and self.api_base.startswith("http://"):
            raise ValueError(KEY_OVER_PLAIN_HTTP)
        return self

    @model_validator(mode="before")
    @classmethod
    def _no_plain_api_key(cls, data: Any) -> Any:
        if isinstance(data, dict) and ("apiKey" in data or "api_key" in data):
            raise ValueError("a plain apiKey is not accepted; reference a Secret with apiKeySecretRef")
        return data


class ModelActivationSpec(ApiModel):
    """Intent for one model: ``local`` when type is local, ``external`` when type is external."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                _cel(
                    "self.type == 'local' ? (has(self.local) && !has(self.external)) "
                    ": (has(self.external) && !has(self.local))",
                    "exactly the section matching type is required: local for local, external for external",
                )
            ]
        }
    )

    type: Literal["local", "external"]
    enabled: bool = True
    target_namespace: str = Field(default="ai", pattern=DNS_LABEL_PATTERN, max_length=63)
    local: LocalModelSpec | None = Field(default=None, validate_default=True)
    external: ExternalModelSpec | None = Field(default=None, validate_default=True)

    @field_validator("local", "external")
    @classmethod
    def _section_matches_type(cls, section: ApiModel | None, info: ValidationInfo) -> ApiModel | None:
        kind = _earlier(info, "type")
        name = info.field_name
        if kind is None:
            return section
        if kind == name and section is None:
            raise ValueError(f"{name} is required when type is {kind}")
        if kind != name and section is not None:
            raise ValueError(f"{name} must be omitted when type is {kind}")
        return section
