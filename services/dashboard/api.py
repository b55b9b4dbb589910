"""The JSON API under /api/v1: every operation of the dashboard (operations.py), as the user.

Writes are revision-checked (cluster.py): a change carries the `resourceVersion` the client
saw, and a stale one is answered 409 with the object as it is now. Errors have one shape,
`Problem`, whatever refused (refusals.py). The OpenAPI document is at /api/v1/openapi.json.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path
from fastapi.responses import Response
from pydantic import BaseModel

from catalogs import Catalogs
from providers.kinds import APP_INSTANCE, APPLIANCE, HOST_OPERATION, MODEL_ACTIVATION, MODULE_ACTIVATION
from services.dashboard import operations
from services.dashboard.cluster import RuntimeRequests
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
from services.dashboard.hub import StreamHub, StreamsRefused
from services.dashboard.identity import Identity
from services.dashboard.live import LiveResponse
from services.dashboard.requesting import catalogs_of, current_identity, runtime_requests, stack_name_of, stream_hub_of

NamePath = Annotated[str, Path(min_length=1, max_length=253, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")]
Requests = Annotated[RuntimeRequests, Depends(runtime_requests)]
CatalogsDep = Annotated[Catalogs, Depends(catalogs_of)]


class FieldProblemBody(BaseModel):
    field: str
    message: str


class Problem(BaseModel):
    """Every refusal: what refused, why, the fields at fault, and for a 409 the object now."""

    error: str
    message: str
    fields: list[FieldProblemBody] | None = None
    current: dict[str, Any] | None = None


PROBLEMS: dict[int | str, dict[str, Any]] = {
    status: {"model": Problem, "description": description}
    for status, description in (
        (401, "No valid sign-in"),
        (
            403,
            "The API server refused the user this action (RBAC or an admission policy), or a browser sent it from another site",
        ),
        (404, "No such object"),
        (409, "The object changed since the client read it, or exists already: `current` holds it now"),
        (422, "A field broke a rule: each is named"),
        (415, "A write whose body is not declared application/json"),
        (503, "The API server is unavailable; nothing was written"),
    )
}

router = APIRouter(prefix="/api/v1", responses=PROBLEMS)


@router.get("/me", summary="The signed-in user, their role and the Kubernetes identity the dashboard acts as")
async def me(identity: Annotated[Identity, Depends(current_identity)]) -> dict[str, Any]:
    return {
        "subject": identity.subject,
        "role": identity.role,
        "groups": list(identity.groups),
        "kubernetesUser": identity.kubernetes_user,
        "kubernetesGroups": list(identity.kubernetes_groups),
    }


@router.get("/overview", summary="Appliance/local, every runtime request and the recent Events")
def overview(requests: Requests, stack_name: Annotated[str, Depends(stack_name_of)]) -> dict[str, Any]:
    return operations.overview(requests, stack_name=stack_name).to_wire()


@router.get("/appliance", summary="Appliance/local")
def appliance(requests: Requests) -> dict[str, Any]:
    return operations.one(requests, APPLIANCE, operations.APPLIANCE_NAME)


@router.get("/modules", summary="Every ModuleActivation")
def modules(requests: Requests) -> list[dict[str, Any]]:
    return operations.listed(requests, MODULE_ACTIVATION)


@router.put("/modules/{module}", summary="Enable, disable or change the parameters of a catalogued module")
def change_module(module: NamePath, change: ModuleChange, requests: Requests, catalogs: CatalogsDep) -> dict[str, Any]:
    return operations.change_module(requests, catalogs, module, change)


@router.put("/modules/{module}/gpu-sharing", summary="Change gpuSharing of the gpu or amd-gpu module (administrators)")
def change_gpu_sharing(module: NamePath, change: GpuSharingChange, requests: Requests) -> dict[str, Any]:
    return operations.change_gpu_sharing(requests, module, change)


@router.get("/models", summary="Every ModelActivation")
def models(requests: Requests) -> list[dict[str, Any]]:
    return operations.listed(requests, MODEL_ACTIVATION)


@router.get("/models/offers", summary="The presets, engines, compute targets and artifacts that can be added now")
def model_offers(requests: Requests, catalogs: CatalogsDep) -> dict[str, Any]:
    offers = operations.offers(requests, catalogs)
    return {
        "availableTargets": sorted(offers.available_targets),
        "presets": [
            {
                "name": preset.name,
                "displayName": preset.display_name,
                "variants": [
                    {
                        "engine": variant.engine,
                        "computeTarget": variant.compute_target,
                        "artifacts": [
                            {"id": artifact.id, "default": artifact.is_default} for artifact in variant.artifacts
                        ],
                        "kvCacheTypes": list(variant.kv_cache_types),
                    }
                    for variant in preset.variants
                ],
            }
            for preset in offers.presets
        ],
    }


@router.post("/models/estimate", summary="The memory estimate of a local model, computed by the program's estimator")
def estimate(fields: LocalModelFields, requests: Requests, catalogs: CatalogsDep) -> dict[str, Any]:
    return operations.estimate(requests, catalogs, fields).to_wire()


@router.post(
    "/models/local", status_code=201, summary="Add a local model; kvCacheMemoryBytes and cpuOffloadMi are derived here"
)
def add_local_model(form: LocalModelCreate, requests: Requests, catalogs: CatalogsDep) -> dict[str, Any]:
    return operations.add_local_model(requests, catalogs, form)


@router.post("/models/external", status_code=201, summary="Add an external model; its key stays in the Secret it names")
def add_external_model(form: ExternalModelCreate, requests: Requests) -> dict[str, Any]:
    return operations.add_external_model(requests, form)


@router.get("/models/{name}", summary="One ModelActivation")
def model(name: NamePath, requests: Requests) -> dict[str, Any]:
    return operations.one(requests, MODEL_ACTIVATION, name)


@router.put("/models/{name}", summary="Edit a local model; source and profile are immutable")
def edit_local_model(name: NamePath, form: LocalModelEdit, requests: Requests, catalogs: CatalogsDep) -> dict[str, Any]:
    return operations.edit_local_model(requests, catalogs, name, form)


@router.put("/models/{name}/restart", summary="Restart a FreeToken or realtime model's runtime (a new restartNonce)")
def restart_model(name: NamePath, form: ModelRestart, requests: Requests) -> dict[str, Any]:
    return operations.restart_model(requests, name, form)


@router.get("/instances", summary="Every AppInstance")
def instances(requests: Requests) -> list[dict[str, Any]]:
    return operations.listed(requests, APP_INSTANCE)


@router.post("/instances", status_code=201, summary="Create an AppInstance of a catalogued application")
def create_instance(form: InstanceCreate, requests: Requests, catalogs: CatalogsDep) -> dict[str, Any]:
    return operations.create_instance(requests, catalogs, form)


@router.get("/instances/{name}", summary="One AppInstance")
def instance(name: NamePath, requests: Requests) -> dict[str, Any]:
    return operations.one(requests, APP_INSTANCE, name)


@router.put(
    "/instances/{name}", summary="Change an AppInstance's access; an omitted sharing keeps the current restriction"
)
def edit_instance(name: NamePath, form: InstanceEdit, requests: Requests) -> dict[str, Any]:
    return operations.edit_instance(requests, name, form)


@router.get("/host-operations", summary="Every HostOperation")
def host_operations(requests: Requests) -> list[dict[str, Any]]:
    return operations.listed(requests, HOST_OPERATION)


@router.post(
    "/host-operations",
    status_code=201,
    summary="Request clear-model-cache, reboot or poweroff of a node (administrators)",
)
def request_host_operation(form: HostOperationCreate, requests: Requests) -> dict[str, Any]:
    return operations.request_host_operation(requests, form)


STREAM_REFUSALS: dict[int | str, dict[str, Any]] = {
    status: {
        "model": Problem,
        "description": description,
        "headers": {
            "Retry-After": {
                "description": "Seconds after which a stream may be accepted",
                "schema": {"type": "integer"},
            }
        },
    }
    for status, description in (
        (429, "The user has the most live status streams open that one user may (hub.STREAMS_PER_USER)"),
        (
            503,
            "The dashboard has the most live status streams open that it serves (hub.STREAMS_TOTAL), or cannot verify the sign-in now",
        ),
    )
}


@router.get(
    "/stream",
    summary="Server-sent events: the status of every runtime request, then each change",
    response_model=None,
    responses=STREAM_REFUSALS,
)
async def stream(
    identity: Annotated[Identity, Depends(current_identity)], hub: Annotated[StreamHub, Depends(stream_hub_of)]
) -> Response:
    try:
        subscription = hub.subscribe(identity)
    except StreamsRefused as refused:
        raise refused.refusal from refused
    return LiveResponse(subscription)
