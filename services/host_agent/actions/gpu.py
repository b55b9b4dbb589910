"""prepare-gpu and configure-gpu-memory: the AMD host side of GPU enablement.

prepare-gpu verifies the host (an AMD GPU on PCI, the amdgpu driver live with /dev/kfd, an
architecture in the KFD topology; `modprobe amdgpu` once when the driver is not loaded),
publishes fresh evidence, and then reports Registering until the program has judged that
evidence: the Node carries the eligibility label and an allocatable amd.com/gpu. It neither
requests nor waits for engine validation. Its planId is the evidence fingerprint it was made
against; the preparation this agent offers is the experimental compatibility path, so it
requires experimentConsent: true.

configure-gpu-memory executes only what the host's gpuMemory plan advertises (plans.py): a
carve-out choice by index and a dynamic limit in whole steps that leaves the OS its RAM
allowance. The dynamic limit is written as TTM's page limit (and amdgpu's GTT size) in
/etc/modprobe.d/magicstick-gpu-memory.conf and takes effect at the next boot; the firmware
carve-out is changed in the firmware's setup only, so the one choice offered is the current one.
"""

from __future__ import annotations

import json
from pathlib import Path

from api.host_evidence import AMD_GPU_ELIGIBLE_LABEL, HOST_EVIDENCE_ANNOTATION
from api.hostoperations import MIXED_SYSTEM_EXPERIMENT, HostOperationReason, HostPhase
from services.host_agent.actions.base import Action, ActionContext, Step, uncertain
from services.host_agent.actions.text import one_line
from services.host_agent.evidence import read_host
from services.host_agent.journal import Entry, Outcome, durable_write
from services.host_agent.requests import HostOperation, failed

MODPROBE_FILE = "etc/modprobe.d/magicstick-gpu-memory.conf"
PAGES_PER_MI = 256
"""4 KiB pages per MiB."""
AMD_GPU_RESOURCE = "amd.com/gpu"


def _registering(context: ActionContext) -> Outcome:
    return Outcome(
        phase=HostPhase.REGISTERING,
        reason=HostOperationReason.WAITING_FOR_REGISTRATION.value,
        message=f"the host is verified ({context.host.facts.architecture}); waiting until node {context.cluster.node_name} "
        f"is eligible with an allocatable {AMD_GPU_RESOURCE}",
    )


class PrepareGpu(Action):
    action = "prepare-gpu"

    def check(self, operation: HostOperation, context: ActionContext) -> Outcome | None:
        assert operation.spec is not None
        if not context.host.facts.amd_gpus:
            return failed(
                HostOperationReason.NOT_SUPPORTED,
                "spec.action: prepare-gpu needs an AMD GPU; this host has none on PCI",
            )
        if operation.spec.experiment_consent is not True:
            return failed(
                HostOperationReason.REJECTED,
                "spec.experimentConsent: must be true: this GPU preparation is experimental",
            )
        return None

    def announce(self, operation: HostOperation) -> Outcome:
        return Outcome(
            phase=HostPhase.RUNNING,
            reason=HostOperationReason.IN_PROGRESS.value,
            message="verifying the host's GPU and driver",
        )

    def _verified(self, context: ActionContext) -> Outcome | None:
        """Registering once the host is verified now (evidence published), else None."""
        view = read_host(context.settings, context.host.node_uid, context.now)
        if not (view.facts.driver_ready and view.facts.architecture):
            return None
        context.cluster.annotate_node(view.annotations())
        return _registering(context)

    def execute(self, operation: HostOperation, context: ActionContext, entry: Entry) -> Step:
        if not context.host.facts.driver_ready:
            loaded = context.runner.run(["modprobe", "amdgpu"])
            if not loaded.ok:
                return Step(failed(HostOperationReason.HOST_DRIVER_NOT_READY, loaded.failure()))
        verified = self._verified(context)
        if verified is None:
            return Step(
                failed(
                    HostOperationReason.HOST_DRIVER_NOT_READY,
                    "the amdgpu driver is not live, /dev/kfd is missing or the KFD topology names no GPU architecture",
                )
            )
        return Step(verified)

    def recover(self, operation: HostOperation, context: ActionContext, entry: Entry, *, cause: str = "") -> Outcome:
        return self._verified(context) or uncertain(entry, "The driver is not ready now.", cause=cause)

    def follow(self, operation: HostOperation, context: ActionContext, entry: Entry) -> Step | None:
        node = context.cluster.node()
        labels = (node.get("metadata") or {}).get("labels") or {}
        annotations = (node.get("metadata") or {}).get("annotations") or {}
        allocatable = str(((node.get("status") or {}).get("allocatable") or {}).get(AMD_GPU_RESOURCE) or "0")
        try:
            evidence_boot = json.loads(annotations.get(HOST_EVIDENCE_ANNOTATION) or "{}").get("bootID")
        except ValueError:
            evidence_boot = None
        fresh = evidence_boot == context.host.facts.boot_id
        if labels.get(AMD_GPU_ELIGIBLE_LABEL) == "true" and allocatable.isdigit() and int(allocatable) > 0 and fresh:
            return Step(
                Outcome(
                    phase=HostPhase.SUCCEEDED,
                    reason=HostOperationReason.REGISTERED.value,
                    message=f"node {context.cluster.node_name} is eligible with {allocatable} allocatable {AMD_GPU_RESOURCE}",
                )
            )
        return None


def modprobe_options(limit_mi: int, operation: HostOperation) -> str:
    pages = limit_mi * PAGES_PER_MI
    # modprobe.d reads a line as a command (`install` runs a shell): nothing from the request may end the comment.
    return (
        f"# Written by the Magic Stick host agent for HostOperation {one_line(operation.key)} (request {one_line(operation.request_id)}).\n"
        f"# The dynamic GPU memory limit: {limit_mi} MiB, in effect from the next boot.\n"
        f"options ttm pages_limit={pages} page_pool_size={pages}\n"
        f"options amdgpu gttsize={limit_mi}\n"
    )


class ConfigureGpuMemory(Action):
    action = "configure-gpu-memory"

    def check(self, operation: HostOperation, context: ActionContext) -> Outcome | None:
        spec = operation.spec
        assert spec is not None
        plan = context.host.plans.gpu_memory
        if plan is None:
            return failed(
                HostOperationReason.NOT_SUPPORTED,
                "spec.action: this host publishes no GPU memory plan (no AMD GPU whose driver reports its memory)",
            )
        if spec.experiment_consent is not True:
            return failed(HostOperationReason.REJECTED, "spec.experimentConsent: must be true for configure-gpu-memory")
        if spec.experiment_mode == MIXED_SYSTEM_EXPERIMENT:
            return failed(
                HostOperationReason.REJECTED,
                "spec.experimentMode: mixed-system is not accepted for configure-gpu-memory",
            )
        assert spec.gpu_memory is not None
        choices = sorted(choice.index for choice in plan.carveout_choices)
        if spec.gpu_memory.carveout_index not in choices:
            return failed(
                HostOperationReason.REJECTED,
                f"spec.gpuMemory.carveoutIndex: {spec.gpu_memory.carveout_index} is not an advertised choice ({', '.join(map(str, choices))}); "
                "the firmware carve-out changes in the firmware setup only",
            )
        limit, step, maximum = (
            spec.gpu_memory.dynamic_limit_mi,
            plan.dynamic_limit_step_mi,
            plan.dynamic_limit_maximum_mi,
        )
        if limit % step or not step <= limit <= maximum:
            return failed(
                HostOperationReason.REJECTED,
                f"spec.gpuMemory.dynamicLimitMi: {limit} must be a multiple of {step} from {step} to {maximum} "
                f"(the OS keeps {plan.os_ram_allowance_mi} MiB of {plan.memory_total_mi} MiB)",
            )
        return None

    def _path(self, context: ActionContext) -> Path:
        return context.settings.root / MODPROBE_FILE

    def journal(self, operation: HostOperation, context: ActionContext) -> dict[str, object]:
        path = self._path(context)
        return {"previous": path.read_text() if path.exists() else None}

    def _done(self, operation: HostOperation) -> Outcome:
        assert operation.spec is not None and operation.spec.gpu_memory is not None
        return Outcome(
            phase=HostPhase.SUCCEEDED,
            reason=HostOperationReason.REBOOT_REQUIRED.value,
            message=f"the dynamic GPU memory limit is set to {operation.spec.gpu_memory.dynamic_limit_mi} MiB; it takes effect at the next boot",
        )

    def execute(self, operation: HostOperation, context: ActionContext, entry: Entry) -> Step:
        assert operation.spec is not None and operation.spec.gpu_memory is not None
        path = self._path(context)
        path.parent.mkdir(parents=True, exist_ok=True)
        durable_write(path, modprobe_options(operation.spec.gpu_memory.dynamic_limit_mi, operation), mode=0o644)
        return Step(self._done(operation))

    def recover(self, operation: HostOperation, context: ActionContext, entry: Entry, *, cause: str = "") -> Outcome:
        assert operation.spec is not None and operation.spec.gpu_memory is not None
        path = self._path(context)
        if path.exists() and path.read_text() == modprobe_options(
            operation.spec.gpu_memory.dynamic_limit_mi, operation
        ):
            return self._done(operation)
        return uncertain(entry, f"{MODPROBE_FILE} does not hold the requested limit.", cause=cause)


PREPARE_GPU = PrepareGpu()
CONFIGURE_GPU_MEMORY = ConfigureGpuMemory()
