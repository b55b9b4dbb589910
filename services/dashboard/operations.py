"""Every operation of the dashboard, once: the JSON API (api.py) and the pages (pages.py) both
call these. Each reads and writes as the signed-in user (cluster.RuntimeRequests) and raises
refusals.Refusal for anything it cannot do; nothing is half-written (one write per operation).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from api.validation import SpecError
from catalogs import Catalogs
from providers.kinds import APP_INSTANCE, APPLIANCE, HOST_OPERATION, MODEL_ACTIVATION, MODULE_ACTIVATION, STACK
from providers.kube import Conflict, Forbidden, KubeError, NotFound, ResourceKind
from services.dashboard import writes
from services.dashboard.cluster import RuntimeRequests
from services.dashboard.estimates import (
    LocalModelEstimate,
    LocalModelRequest,
    estimate_local_model,
    host_memory_for_target,
)
from services.dashboard.forms import (
    ExternalModelCreate,
    GpuSharingChange,
    HostOperationCreate,
    InstanceCreate,
    InstanceEdit,
    LocalModelCreate,
    LocalModelEdit,
    LocalModelFields,
    ModelRestart,
    ModuleChange,
)
from services.dashboard.offers import LocalModelOffers, available_compute_targets, local_model_offers
from services.dashboard.refusals import FieldProblem, Refusal, invalid, refusal_of

APPLIANCE_NAME = "local"
EVENTS_SHOWN = 20
OVERVIEW_READS = 7
"""The overview's reads, made at once (overview)."""
T = TypeVar("T")


@dataclass(frozen=True)
class Overview:
    appliance: dict[str, Any] | None
    stack: dict[str, Any] | None
    """The program's PKO Stack (its last update), when it exists and the user may read it."""
    modules: list[dict[str, Any]]
    models: list[dict[str, Any]]
    instances: list[dict[str, Any]]
    host_operations: list[dict[str, Any]]
    events: list[dict[str, Any]]

    def to_wire(self) -> dict[str, Any]:
        return {
            "appliance": self.appliance,
            "stack": self.stack,
            "modules": self.modules,
            "models": self.models,
            "instances": self.instances,
            "hostOperations": self.host_operations,
            "events": self.events,
        }


def answered(call: Callable[[], T], *, current: Callable[[], dict[str, Any] | None] | None = None) -> T:
    """`call()`, its API failure as a Refusal; a 409 carries `current()` (the object now)."""
    try:
        return call()
    except Conflict as error:
        now = None
        if current is not None:
            try:
                now = current()
            except KubeError:
                now = None
        raise refusal_of(error, current=now) from error
    except KubeError as error:
        raise refusal_of(error) from error


def _sorted(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(items, key=lambda item: str((item.get("metadata") or {}).get("name")))


def _stack(requests: RuntimeRequests, name: str) -> dict[str, Any] | None:
    """The Stack, or None where there is none to show: no such object, no Stack CRD (both 404)
    or no permission to read it (a cluster without PKO's role for the dashboard's users)."""
    try:
        return requests.get_or_none(STACK, name)
    except Forbidden:
        return None


def overview(requests: RuntimeRequests, *, stack_name: str) -> Overview:
    """Appliance/local and every runtime request, with the most recent Events.

    The seven reads are independent, so they go to the API server at once, each on a thread of
    its own (the client blocks): the page waits for the slowest read, not for their sum. All six
    have ended when this returns; a failed one is raised as a Refusal."""

    def read() -> Overview:
        with ThreadPoolExecutor(max_workers=OVERVIEW_READS, thread_name_prefix="overview-read") as pool:
            events_read = pool.submit(requests.events)
            appliance = pool.submit(requests.get_or_none, APPLIANCE, APPLIANCE_NAME)
            stack = pool.submit(_stack, requests, stack_name)
            modules, models, instances, host_operations = (
                pool.submit(requests.list, kind)
                for kind in (MODULE_ACTIVATION, MODEL_ACTIVATION, APP_INSTANCE, HOST_OPERATION)
            )
            events = events_read.result().items
            events.sort(key=lambda event: str(event.get("lastTimestamp") or event.get("eventTime") or ""), reverse=True)
            return Overview(
                appliance=appliance.result(),
                stack=stack.result(),
                modules=_sorted(modules.result().items),
                models=_sorted(models.result().items),
                instances=_sorted(instances.result().items),
                host_operations=_sorted(host_operations.result().items),
                events=events[:EVENTS_SHOWN],
            )

    return answered(read)


def listed(requests: RuntimeRequests, kind: ResourceKind) -> list[dict[str, Any]]:
    return answered(lambda: _sorted(requests.list(kind).items))


def one(requests: RuntimeRequests, kind: ResourceKind, name: str) -> dict[str, Any]:
    return answered(lambda: requests.get(kind, name))


def module_activation(requests: RuntimeRequests, module: str) -> dict[str, Any] | None:
    """The ModuleActivation of `module` (by spec.module; the one named after it first)."""
    items = listed(requests, MODULE_ACTIVATION)
    matching = [item for item in items if (item.get("spec") or {}).get("module") == module]
    matching.sort(key=lambda item: (item["metadata"]["name"] != module, item["metadata"]["name"]))
    return matching[0] if matching else None


def change_module(requests: RuntimeRequests, catalogs: Catalogs, module: str, change: ModuleChange) -> dict[str, Any]:
    """Create the module's ModuleActivation (no resourceVersion) or change it (with one)."""
    if catalogs.modules.get(module) is None:
        raise invalid("spec.module", f"{module!r} is not a catalogued module")
    current = module_activation(requests, module)
    if change.resource_version is None:
        if current is not None:
            name = current["metadata"]["name"]
            raise Refusal(
                409, "AlreadyExists", f"module {module} already has its ModuleActivation {name}", current=current
            )
        body = writes.module_body(module, module, change, current=None)
        return answered(lambda: requests.create(MODULE_ACTIVATION, body))
    if current is None:
        raise Refusal(404, "NotFound", f"module {module} has no ModuleActivation to change")
    name = current["metadata"]["name"]
    body = writes.module_body(name, module, change, current=current)
    return answered(
        lambda: requests.apply(MODULE_ACTIVATION, body), current=lambda: requests.get_or_none(MODULE_ACTIVATION, name)
    )


def change_gpu_sharing(requests: RuntimeRequests, module: str, change: GpuSharingChange) -> dict[str, Any]:
    """The dedicated, revision-checked change of a GPU module's gpuSharing."""
    current = module_activation(requests, module)
    if current is None:
        raise Refusal(404, "NotFound", f"module {module} has no ModuleActivation; enable it first")
    node = answered(lambda: requests.node(change.node_name))
    node_uid = str((node.get("metadata") or {}).get("uid") or "")
    body = writes.gpu_sharing_body(current, change, node_uid=node_uid)
    name = current["metadata"]["name"]
    return answered(
        lambda: requests.apply(MODULE_ACTIVATION, body), current=lambda: requests.get_or_none(MODULE_ACTIVATION, name)
    )


def offers(requests: RuntimeRequests, catalogs: Catalogs) -> LocalModelOffers:
    appliance = answered(lambda: requests.get_or_none(APPLIANCE, APPLIANCE_NAME))
    return local_model_offers(catalogs, available_compute_targets(_status(appliance), catalogs))


def estimate(requests: RuntimeRequests, catalogs: Catalogs, fields: LocalModelFields) -> LocalModelEstimate:
    """The memory estimate of a local model, against the hardware Appliance/local reports."""
    appliance = answered(lambda: requests.get_or_none(APPLIANCE, APPLIANCE_NAME))
    status = _status(appliance)
    if fields.compute_target not in available_compute_targets(status, catalogs):
        raise invalid(
            "spec.local.computeTarget", f"{fields.compute_target} is not available: no node reports that hardware"
        )
    request = LocalModelRequest(
        preset=fields.preset,
        engine=fields.engine,
        compute_target=fields.compute_target,
        artifact=fields.artifact,
        context_window=fields.context_window,
        max_num_seqs=fields.max_num_seqs,
        kv_cache_type=fields.kv_cache_type,
        memory_required_mi=fields.memory_required_mi,
        vram_mi=fields.vram_mi,
        cpu_offloading=bool(fields.cpu_offloading),
    )
    try:
        return estimate_local_model(
            request, catalogs, host=host_memory_for_target(status, fields.compute_target, catalogs)
        )
    except SpecError as error:
        raise invalid(error.field, error.rule) from error


def add_local_model(requests: RuntimeRequests, catalogs: Catalogs, form: LocalModelCreate) -> dict[str, Any]:
    """Create a local ModelActivation. A risky estimate needs allowMemoryRisk (the warning button)."""
    figures = estimate(requests, catalogs, form)
    _refuse_unaccepted_risk(figures, accepted=form.allow_memory_risk, verb="add")
    body = writes.local_model_body(
        form.model_copy(update={"allow_memory_risk": figures.risk is not None and form.allow_memory_risk}),
        kv_cache_memory_bytes=figures.kv_cache_memory_bytes,
        cpu_offload_mi=figures.cpu_offload_mi,
    )
    return answered(
        lambda: requests.create(MODEL_ACTIVATION, body),
        current=lambda: requests.get_or_none(MODEL_ACTIVATION, form.name),
    )


def edit_local_model(requests: RuntimeRequests, catalogs: Catalogs, name: str, form: LocalModelEdit) -> dict[str, Any]:
    current = one(requests, MODEL_ACTIVATION, name)
    local = (current.get("spec") or {}).get("local") or {}
    if local.get("engine", "VLLM") not in ("VLLM", "OLlama") or local.get("realtime") is not None:
        raise invalid(
            "spec.local.engine",
            "the dashboard edits vLLM and Ollama models; change FreeToken and realtime models in their CR",
        )
    writes.check_local_edit(current, form)
    if not local.get("preset"):
        raise invalid(
            "spec.local.preset",
            "the dashboard edits models added from a catalog preset; change a model given by url in its CR",
        )
    fields = LocalModelFields(
        preset=str(local.get("preset") or ""),
        engine=local.get("engine") or "VLLM",
        compute_target=local.get("computeTarget") or "cpu",
        artifact=local.get("artifact"),
        context_window=form.context_window,
        max_num_seqs=form.max_num_seqs,
        kv_cache_type=form.kv_cache_type,
        memory_required_mi=form.memory_required_mi,
        vram_mi=form.vram_mi,
        cpu_offloading=form.cpu_offloading,
    )
    figures = estimate(requests, catalogs, fields)
    _refuse_unaccepted_risk(figures, accepted=form.allow_memory_risk, verb="save")
    body = writes.local_model_edit_body(
        current,
        form.model_copy(update={"allow_memory_risk": figures.risk is not None and form.allow_memory_risk}),
        kv_cache_memory_bytes=figures.kv_cache_memory_bytes,
        cpu_offload_mi=figures.cpu_offload_mi,
    )
    return answered(
        lambda: requests.apply(MODEL_ACTIVATION, body), current=lambda: requests.get_or_none(MODEL_ACTIVATION, name)
    )


def restart_model(requests: RuntimeRequests, name: str, form: ModelRestart) -> dict[str, Any]:
    """Restart a FreeToken or realtime model's runtime (a new restartNonce), revision-checked."""
    current = one(requests, MODEL_ACTIVATION, name)
    body = writes.restart_body(current, form, nonce=str(uuid.uuid4()))
    return answered(
        lambda: requests.apply(MODEL_ACTIVATION, body), current=lambda: requests.get_or_none(MODEL_ACTIVATION, name)
    )


def add_external_model(requests: RuntimeRequests, form: ExternalModelCreate) -> dict[str, Any]:
    body = writes.external_model_body(form)
    return answered(
        lambda: requests.create(MODEL_ACTIVATION, body),
        current=lambda: requests.get_or_none(MODEL_ACTIVATION, form.name),
    )


def create_instance(requests: RuntimeRequests, catalogs: Catalogs, form: InstanceCreate) -> dict[str, Any]:
    if catalogs.applications.get(form.application) is None:
        raise invalid("spec.application", f"{form.application!r} is not a catalogued application")
    body = writes.instance_body(form)
    return answered(
        lambda: requests.create(APP_INSTANCE, body), current=lambda: requests.get_or_none(APP_INSTANCE, form.name)
    )


def edit_instance(requests: RuntimeRequests, name: str, form: InstanceEdit) -> dict[str, Any]:
    current = one(requests, APP_INSTANCE, name)
    body = writes.instance_edit_body(current, form)
    return answered(
        lambda: requests.apply(APP_INSTANCE, body), current=lambda: requests.get_or_none(APP_INSTANCE, name)
    )


def request_host_operation(requests: RuntimeRequests, form: HostOperationCreate) -> dict[str, Any]:
    """Create a HostOperation bound to the node as it is now; the host agent executes it."""
    if not form.acknowledge_disruption:
        raise invalid(
            "acknowledgeDisruption", f"must be true: {form.action} disrupts what runs on node {form.node_name}"
        )
    try:
        node = requests.node(form.node_name)
    except NotFound as error:
        raise invalid("nodeName", f"there is no node {form.node_name}") from error
    except KubeError as error:
        raise refusal_of(error) from error
    body = writes.host_operation_body(form, node=node, request_id=str(uuid.uuid4()))
    return answered(lambda: requests.create(HOST_OPERATION, body))


def _refuse_unaccepted_risk(figures: LocalModelEstimate, *, accepted: bool, verb: str) -> None:
    """An insufficient or unknown estimate needs allowMemoryRisk, as the program's admission does."""
    if figures.risk is not None and not accepted:
        risk = figures.risk
        raise Refusal(
            422,
            "MemoryRisk",
            f"{risk.message}; {verb} it with allowMemoryRisk: true to accept the risk",
            (FieldProblem(risk.field, risk.message),),
        )


def _status(appliance: dict[str, Any] | None) -> dict[str, Any] | None:
    if appliance is None:
        return None
    status = appliance.get("status")
    return status if isinstance(status, dict) else None
