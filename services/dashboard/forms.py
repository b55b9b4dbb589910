"""The bodies the dashboard's API accepts: one model per operation, wire names in camelCase.

They check types and the dashboard's own rules (choices it offers, an acknowledgement that
must be given); the rules of the runtime kinds themselves stay with their CRDs, which the API
server enforces on every write, so a client meets one set of messages. Derived values
(`kvCacheMemoryBytes`, `cpuOffloadMi`) are not accepted: the server computes them
(estimates.py).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from api.instances import Exposure, Role, SharingMode
from api.models import MIN_MEMORY_REQUIRED_MI, ComputeTarget, ExternalModelType, KvCacheType
from api.modules import MAX_SHARING_SLOTS, MIN_SHARING_SLOTS

NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
"""A DNS-1123 label, which every runtime request's name must be."""
Name = Annotated[str, Field(min_length=1, max_length=63, pattern=NAME)]
NODE_NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
"""A DNS-1123 subdomain, which every Node's name is. The dashboard reads the Node by this name,
so nothing else (a `/`, a `..`) may reach the API server's path."""
NodeName = Annotated[str, Field(min_length=1, max_length=253, pattern=NODE_NAME)]
ResourceVersion = Annotated[
    str, Field(min_length=1, max_length=64, description="The metadata.resourceVersion the client last saw.")
]
MAX_CONTEXT_WINDOW = 16_777_216
"""Tokens (2^24): above the longest context any model offers today (10M). With MAX_NUM_SEQS it
keeps what the estimator derives (estimates.py: tokens x sequences x bytes per token) within
the int64 the API server stores; unbounded, a number of a few hundred digits overflowed its
floats (a 500)."""
MAX_NUM_SEQS = 4096
MAX_MEMORY_MI = 1_073_741_824
"""1 PiB in MiB, far above any host's memory."""
ContextWindow = Annotated[int, Field(ge=1, le=MAX_CONTEXT_WINDOW)]
MaxNumSeqs = Annotated[int, Field(ge=1, le=MAX_NUM_SEQS)]
MemoryRequiredMi = Annotated[int, Field(ge=MIN_MEMORY_REQUIRED_MI, le=MAX_MEMORY_MI)]
VramMi = Annotated[int, Field(ge=1, le=MAX_MEMORY_MI)]
SharingSlots = Annotated[int, Field(ge=MIN_SHARING_SLOTS, le=MAX_SHARING_SLOTS)]


class Form(BaseModel):
    """Strict: a value of another JSON type than the field's is refused (422), never converted
    (`0` is not `false`, `"8"` not `8`), so the bodies accepted are those the OpenAPI document
    describes."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True, strict=True)


class ModuleChange(Form):
    """Enable or disable a catalogued module, or change its parameters."""

    resource_version: ResourceVersion | None = Field(default=None, description="Absent: create the ModuleActivation.")
    enabled: bool
    parameters: dict[str, object] | None = Field(
        default=None,
        description="The module's parameters as the catalog declares them; absent: left as they are. gpuSharing is never changed here.",
    )


class GpuSharingChange(Form):
    """The one way to change gpuSharing: exclusive or shared, on one node, with 2 to 16 slots when shared."""

    resource_version: ResourceVersion
    mode: Literal["exclusive", "shared"]
    node_name: NodeName
    slots: SharingSlots | None = Field(default=None, description="Required when shared.")


class LocalModelFields(Form):
    """The local-model inputs a user chooses; the memory estimate is computed from them."""

    preset: Annotated[str, Field(min_length=1, max_length=253)]
    engine: Literal["VLLM", "OLlama"] = "VLLM"
    compute_target: ComputeTarget = "cpu"
    artifact: Annotated[str, Field(min_length=1, max_length=63)] | None = None
    context_window: ContextWindow | None = None
    max_num_seqs: MaxNumSeqs | None = None
    kv_cache_type: KvCacheType | None = None
    memory_required_mi: MemoryRequiredMi | None = None
    vram_mi: VramMi | None = None
    cpu_offloading: bool | None = None


class LocalModelCreate(LocalModelFields):
    name: Name
    enabled: bool = True
    allow_memory_risk: bool = Field(
        default=False, description="Set by the warning-styled Add button: accept an insufficient or unknown estimate."
    )


class SecretKeyReference(Form):
    name: Annotated[str, Field(min_length=1, max_length=253)]
    key: Annotated[str, Field(min_length=1, max_length=253)]


class ExternalModelCreate(Form):
    name: Name
    enabled: bool = True
    model: Annotated[
        str, Field(min_length=1, max_length=253, description="The provider's model, e.g. openai/gpt-4o-mini.")
    ]
    api_base: Annotated[str, Field(max_length=2048)] | None = None
    model_type: ExternalModelType = "chat"
    api_key_secret_ref: SecretKeyReference | None = Field(
        default=None,
        description="The Secret and key holding the API key; the key itself never passes through the dashboard.",
    )


class LocalModelEdit(Form):
    """An edit of a local model: the same fields as Add; source and profile (preset, engine,
    computeTarget, artifact) must equal the current ones."""

    resource_version: ResourceVersion
    enabled: bool = True
    preset: str | None = None
    engine: str | None = None
    compute_target: str | None = None
    artifact: str | None = None
    context_window: ContextWindow | None = None
    max_num_seqs: MaxNumSeqs | None = None
    kv_cache_type: KvCacheType | None = None
    memory_required_mi: MemoryRequiredMi | None = None
    vram_mi: VramMi | None = None
    cpu_offloading: bool | None = None
    allow_memory_risk: bool = False


class ModelRestart(Form):
    """Restart a FreeToken or realtime model's runtime: a new restartNonce."""

    resource_version: ResourceVersion


class Sharing(Form):
    mode: SharingMode
    users: list[Annotated[str, Field(min_length=1, max_length=253)]] = Field(default_factory=list, max_length=100)
    groups: list[Annotated[str, Field(min_length=1, max_length=253)]] = Field(default_factory=list, max_length=100)


class InstanceAccess(Form):
    role: Role = "user"
    exposure: Exposure = "localAndPublic"
    sharing: Sharing | None = Field(default=None, description="Absent: the existing restriction is kept.")


class InstanceCreate(Form):
    name: Name
    application: Annotated[str, Field(min_length=1, max_length=63)]
    enabled: bool = True
    access: InstanceAccess = Field(default_factory=InstanceAccess)


class InstanceEdit(Form):
    resource_version: ResourceVersion
    enabled: bool = True
    access: InstanceAccess = Field(default_factory=InstanceAccess)


class HostOperationCreate(Form):
    action: Literal["clear-model-cache", "reboot", "poweroff"]
    node_name: NodeName
    acknowledge_disruption: bool = Field(description="Must be true: the operation disrupts what runs on the node.")
    plan_id: Annotated[str, Field(min_length=1, max_length=128)] | None = Field(
        default=None,
        description="clear-model-cache: the node's cache plan; default: the one its host agent publishes now.",
    )
