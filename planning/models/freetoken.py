"""FreeToken: a local model served by the FreeToken runtime in its own Deployment (its
deployment fields, placement and flags).

Rules, pure:
- FreeToken runs on whole NVIDIA devices only: `gpuCount` (default 1) of the NVIDIA resource,
  on the node `gpuDevice` names when set (an entry of the device inventory is a node's NVIDIA
  GPUs), else wherever the scheduler finds them; with no node publishing that many, the
  model waits (WaitingForGPU, GpuDeviceNotFound);
- `systemMemoryMi` (default: the engine's defaultMemoryMi) is the Pod's RAM request and limit;
  `gpuMemoryMi` is a planning budget, reported as vramRequiredMi, never a flag;
- every flag comes from the runtime catalog (catalogs/runtimes.yaml): the model, port, context
  window, concurrency, the `memoryStrategy` (a bounded choice, default `auto`) and the
  `advanced` keys the catalog names; any other key is refused naming it;
- `restartNonce` is a Pod template annotation: changing it restarts the runtime;
- the CPU policy (engine defaults and cpuResources) is the container's CPU request and limit;
- one replica; the NVIDIA RuntimeClass; no service-account token in the Pod;
- a catalog image that is still a placeholder (catalogs.images) fails the activation
  (RuntimeImageNotSet) rather than deploying an image that cannot exist; the message is the
  sentence render and the run log warn with (planning.unset_images).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from api.models import FreeTokenSettings, LocalModelSpec
from api.validation import SpecError
from catalogs import Catalogs, FreeTokenRuntime
from planning.hardware.capacity import AcceleratorCapacity
from planning.models.direct import (
    RESTART_NONCE_ANNOTATION,
    DirectRuntime,
    DirectRuntimeKind,
    container_resources,
    deployment_object,
    model_id,
    node_affinity,
    service_object,
)
from planning.models.resolve import ResolvedLocalModel
from planning.reasons import Reason
from planning.unset_images import freetoken_image

KIND = DirectRuntimeKind.FREETOKEN
NVIDIA_TARGET = "nvidia-gpu"
NVIDIA_RUNTIME_CLASS = "nvidia"
CACHE_PATH = "/cache"


class FreeTokenImageNotSet(SpecError):
    """The runtime catalog's FreeToken image is still the shipped placeholder."""


@dataclass(frozen=True)
class FreeTokenPlan:
    runtime: DirectRuntime
    gpu_count: int
    system_memory_mi: int
    memory_strategy: str
    vram_budget_mi: int | None


@dataclass(frozen=True)
class Unplaceable:
    """No node can take the runtime now; the activation waits with this reason."""

    reason: Reason
    message: str


def plan_freetoken(
    *,
    activation: str,
    namespace: str,
    local: LocalModelSpec,
    resolved: ResolvedLocalModel,
    capacity: tuple[AcceleratorCapacity, ...],
    catalogs: Catalogs,
    field_manager: str,
) -> FreeTokenPlan | Unplaceable:
    """The FreeToken runtime of one activation, or why no node can take it. Raises SpecError
    naming the field when the spec asks for what the catalog does not offer. Pure."""
    runtime = catalogs.runtimes.freetoken
    settings = local.freetoken or FreeTokenSettings()
    _check_runtime(runtime, settings, local)
    advanced = _advanced_args(settings.advanced, runtime)
    gpu_count = settings.gpu_count or 1
    placement = _placement(settings.gpu_device, gpu_count, capacity, catalogs)
    if isinstance(placement, Unplaceable):
        return placement
    resource, node = placement
    strategy = settings.memory_strategy
    memory = settings.system_memory_mi or catalogs.engines.require(resolved.engine).default_memory_mi
    container = {
        "name": "freetoken",
        "image": runtime.image,
        "command": list(runtime.command),
        "args": _server_args(runtime, resolved, strategy=strategy, advanced=advanced),
        "env": [{"name": "HF_HOME", "value": f"{CACHE_PATH}/huggingface"}],
        "ports": [{"name": "http", "containerPort": runtime.port, "protocol": "TCP"}],
        "resources": container_resources(
            cpu_request_millicores=resolved.cpu_request_millicores,
            cpu_limit_millicores=resolved.cpu_limit_millicores,
            memory_mi=memory,
            gpus={resource: gpu_count},
        ),
        "readinessProbe": {
            "httpGet": {"path": runtime.readiness_path, "port": "http"},
            "periodSeconds": 10,
            "failureThreshold": 3,
        },
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "cache", "mountPath": CACHE_PATH}],
    }
    pod_spec: dict[str, Any] = {
        "automountServiceAccountToken": False,
        "runtimeClassName": NVIDIA_RUNTIME_CLASS,
        "affinity": node_affinity(node),
        "containers": [container],
        "volumes": [{"name": "cache", "emptyDir": {}}],
    }
    pod_annotations = {RESTART_NONCE_ANNOTATION: settings.restart_nonce} if settings.restart_nonce else {}
    objects = (
        service_object(KIND, activation, namespace, port=runtime.port, field_manager=field_manager),
        deployment_object(
            KIND,
            activation,
            namespace,
            pod_spec=pod_spec,
            pod_annotations=pod_annotations,
            field_manager=field_manager,
            recreate=True,
        ),
    )
    return FreeTokenPlan(
        runtime=DirectRuntime(kind=KIND, activation=activation, namespace=namespace, objects=objects),
        gpu_count=gpu_count,
        system_memory_mi=memory,
        memory_strategy=strategy,
        vram_budget_mi=settings.gpu_memory_mi or resolved.vram_mi,
    )


def _check_runtime(runtime: FreeTokenRuntime, settings: FreeTokenSettings, local: LocalModelSpec) -> None:
    """What the catalog and the runtime refuse, each naming its field. Raises SpecError. Pure."""
    unset = freetoken_image(runtime)
    if unset is not None:
        raise FreeTokenImageNotSet(unset.field, unset.rule)
    if settings.memory_strategy not in runtime.memory_strategies:
        raise SpecError(
            "spec.local.freetoken.memoryStrategy",
            f"'{settings.memory_strategy}' is not a FreeToken memory strategy (choices: {', '.join(sorted(runtime.memory_strategies))})",
        )
    if (local.replicas or 1) != 1:
        raise SpecError("spec.local.replicas", "the FreeToken runtime runs one replica")


def _server_args(
    runtime: FreeTokenRuntime, resolved: ResolvedLocalModel, *, strategy: str, advanced: list[str]
) -> list[str]:
    """Every flag of the server, each from the catalog. Pure."""
    return [
        *runtime.args,
        runtime.model_arg,
        model_id(resolved.url),
        runtime.port_arg,
        str(runtime.port),
        *_optional(runtime.context_window_arg, resolved.context_window),
        *_optional(runtime.max_num_seqs_arg, resolved.max_num_seqs),
        *runtime.memory_strategies[strategy],
        *advanced,
    ]


def _optional(flag: str, value: int | None) -> list[str]:
    return [flag, str(value)] if value is not None else []


def _advanced_args(advanced: dict[str, Any], runtime: FreeTokenRuntime) -> list[str]:
    """The flags of `freetoken.advanced`, in key order; only keys the catalog names, scalar values. Pure."""
    args: list[str] = []
    for key in sorted(advanced):
        flag = runtime.advanced_flags.get(key)
        if flag is None:
            known = ", ".join(sorted(runtime.advanced_flags)) or "none"
            raise SpecError(
                f"spec.local.freetoken.advanced.{key}",
                f"is not a FreeToken setting this catalog offers (known: {known})",
            )
        value = advanced[key]
        if isinstance(value, bool) or not isinstance(value, (int, float, str)) or value == "":
            raise SpecError(f"spec.local.freetoken.advanced.{key}", "must be a number or a non-empty string")
        args += [flag, str(value)]
    return args


def _placement(
    device: str | None, gpu_count: int, capacity: tuple[AcceleratorCapacity, ...], catalogs: Catalogs
) -> tuple[str, str | None] | Unplaceable:
    """The NVIDIA resource to request and the node to pin (None: any), or why none fits. Pure."""
    resources = catalogs.compute_targets.require(NVIDIA_TARGET).resource_names
    nvidia = [c for c in capacity if c.compute_target == NVIDIA_TARGET]
    if device is not None:
        on_node = [c for c in nvidia if c.node == device]
        if not on_node:
            return Unplaceable(
                Reason.GPU_DEVICE_NOT_FOUND,
                f"spec.local.freetoken.gpuDevice: no node named {device} publishes an NVIDIA GPU.",
            )
        best = max(on_node, key=lambda c: c.allocatable)
        if best.allocatable < gpu_count:
            return Unplaceable(
                Reason.WAITING_FOR_GPU,
                f"Node {device} publishes {best.allocatable} {best.resource_name}; gpuCount asks for {gpu_count}.",
            )
        return best.resource_name, device
    fitting = [c for c in nvidia if c.allocatable >= gpu_count]
    if not fitting:
        most = max((c.allocatable for c in nvidia), default=0)
        return Unplaceable(
            Reason.WAITING_FOR_GPU, f"No node publishes {gpu_count} whole NVIDIA GPU(s) (at most {most})."
        )
    return next(r for r in resources if any(c.resource_name == r for c in fitting)), None
