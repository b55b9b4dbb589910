"""The HTML pages: server-rendered with Jinja2, plain forms that work without JavaScript, and
live status through the server-sent events of /api/v1/stream (static/live.js).

Each form posts to a page route that calls the same operation as the JSON API
(operations.py). A refusal re-renders the page with the reason, and a 409 shows the object as it
is now, with the form filled with what the user entered and the current resourceVersion, so
submitting again applies the user's change over the current object knowingly.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool

from catalogs import Catalogs
from providers.kinds import APP_INSTANCE, HOST_OPERATION, MODEL_ACTIVATION, MODULE_ACTIVATION
from services.dashboard import operations
from services.dashboard.cluster import READABLE_KINDS, RuntimeRequests
from services.dashboard.form_fields import FormFields, bounds, object_name
from services.dashboard.forms import (
    ContextWindow,
    ExternalModelCreate,
    GpuSharingChange,
    HostOperationCreate,
    InstanceCreate,
    InstanceEdit,
    LocalModelCreate,
    LocalModelEdit,
    MaxNumSeqs,
    MemoryRequiredMi,
    ModelRestart,
    ModuleChange,
    SharingSlots,
    VramMi,
)
from services.dashboard.identity import Identity
from services.dashboard.refusals import FieldProblem, Refusal
from services.dashboard.requesting import catalogs_of, runtime_requests, stack_name_of
from services.dashboard.summaries import summary_of

TEMPLATES = Jinja2Templates(directory=Path(__file__).parent / "templates")
GPU_MODULES = ("gpu", "amd-gpu", "intel-gpu")
"""Modules whose parameters only administrators see and change."""
SHARING_MODULES = ("gpu", "amd-gpu")
CONTEXT_WINDOW_BOUNDS = bounds(ContextWindow)
NUM_SEQS_BOUNDS = bounds(MaxNumSeqs)
MEMORY_REQUIRED_BOUNDS = bounds(MemoryRequiredMi)
VRAM_BOUNDS = bounds(VramMi)
SLOTS_BOUNDS = bounds(SharingSlots)
SHARING_LIST_TEXT = 100 * (253 + 2)
"""Characters of a comma-separated list of user or group IDs: as many as Sharing takes."""
router = APIRouter(include_in_schema=False)
F = TypeVar("F", bound=BaseModel)
T = TypeVar("T")


def _page(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    identity = getattr(request.state, "identity", None)
    return TEMPLATES.TemplateResponse(
        request, template, {"identity": identity, "summary_of": summary_of, **context}, status_code=status_code
    )


def refusal_page(request: Request, refusal: Refusal) -> HTMLResponse:
    return _page(request, "refusal.html", status_code=refusal.status, refusal=refusal, title=_refusal_title(refusal))


def _refusal_title(refusal: Refusal) -> str:
    return {
        401: "Sign-in needed",
        403: "Not allowed",
        404: "Not found",
        409: "Changed by someone else",
        422: "Not accepted",
        503: "API server unavailable",
    }.get(refusal.status, "Refused")


def _form_model(model: type[F], values: Mapping[str, Any]) -> F:
    """`values` as `model`, or a 422 Refusal naming each field."""
    try:
        return model.model_validate(values)
    except ValidationError as error:
        problems = tuple(
            FieldProblem(".".join(str(part) for part in item["loc"]), str(item["msg"])) for item in error.errors()
        )
        raise Refusal(422, "Invalid", "; ".join(f"{p.field}: {p.message}" for p in problems), problems) from error


async def _run(call: Callable[[], T]) -> T:
    return await run_in_threadpool(call)


Requests = Depends(runtime_requests)
CatalogsDep = Depends(catalogs_of)


@router.get("/", response_class=HTMLResponse)
async def overview(
    request: Request, requests: RuntimeRequests = Requests, stack_name: str = Depends(stack_name_of)
) -> Response:
    view = await _run(lambda: operations.overview(requests, stack_name=stack_name))
    return _page(request, "overview.html", title="Overview", view=view)


@router.get("/objects/{plural}/{name}", response_class=HTMLResponse)
async def object_page(request: Request, plural: str, name: str, requests: RuntimeRequests = Requests) -> Response:
    kind = READABLE_KINDS.get(plural)
    if kind is None:
        raise Refusal(404, "NotFound", f"the dashboard shows no kind {plural!r}")
    name = object_name(plural, name)
    obj = await _run(lambda: operations.one(requests, kind, name))
    return _page(request, "object.html", title=f"{kind.kind} {name}", obj=obj, plural=plural, json=json)


# Modules -------------------------------------------------------------------------------------


@router.get("/modules", response_class=HTMLResponse)
async def modules_page(
    request: Request, requests: RuntimeRequests = Requests, catalogs: Catalogs = CatalogsDep
) -> Response:
    return await _modules(request, requests, catalogs)


async def _modules(
    request: Request,
    requests: RuntimeRequests,
    catalogs: Catalogs,
    *,
    refusal: Refusal | None = None,
    status_code: int = 200,
) -> Response:
    activations = await _run(lambda: operations.listed(requests, MODULE_ACTIVATION))
    by_module: dict[str, dict[str, Any]] = {}
    for item in activations:
        by_module.setdefault(str((item.get("spec") or {}).get("module")), item)
    identity: Identity = request.state.identity
    return _page(
        request,
        "modules.html",
        status_code=status_code,
        title="Modules",
        catalog=catalogs.modules,
        activations=by_module,
        gpu_modules=GPU_MODULES,
        sharing_modules=SHARING_MODULES,
        admin=identity.is_admin,
        refusal=refusal,
    )


@router.post("/modules/{module}", response_class=HTMLResponse)
async def change_module(
    request: Request, module: str, requests: RuntimeRequests = Requests, catalogs: Catalogs = CatalogsDep
) -> Response:
    fields = FormFields(await request.form())
    values = _module_values(fields, catalogs, module)
    try:
        fields.check()
        change = _form_model(ModuleChange, values)
        await _run(lambda: operations.change_module(requests, catalogs, module, change))
    except Refusal as refusal:
        return await _modules(request, requests, catalogs, refusal=refusal, status_code=refusal.status)
    return RedirectResponse("/modules", status_code=303)


def _module_values(fields: FormFields, catalogs: Catalogs, module: str) -> dict[str, Any]:
    return {
        "resourceVersion": fields.text("resourceVersion"),
        "enabled": fields.checked("enabled"),
        "parameters": _module_parameters(fields, catalogs, module) if fields.checked("hasParameters") else None,
    }


BOOLEAN_TEXTS = {"true": True, "false": False}
"""How a boolean parameter's field (its select) writes each value."""


def _module_parameters(fields: FormFields, catalogs: Catalogs, module: str) -> dict[str, object]:
    """The non-empty `param.<name>` fields; each must name a parameter the catalog declares for
    the module (an uncatalogued module is refused by its operation). A boolean parameter's text
    is sent as the boolean the program accepts; other parameters as their text."""
    entry = catalogs.modules.get(module)
    declared = {parameter.name: parameter.type for parameter in entry.parameters} if entry is not None else None
    parameters: dict[str, object] = {}
    for key in fields.names("param."):
        value = fields.text(key)
        parameter = key.removeprefix("param.")
        if declared is not None and parameter not in declared:
            fields.refuse(key, "is not a parameter the catalog declares for this module")
        elif value is None:
            continue
        elif declared is not None and declared[parameter] == "boolean":
            if value in BOOLEAN_TEXTS:
                parameters[parameter] = BOOLEAN_TEXTS[value]
            else:
                fields.refuse(key, "must be true or false")
        else:
            parameters[parameter] = value
    return parameters


@router.post("/modules/{module}/gpu-sharing", response_class=HTMLResponse)
async def change_gpu_sharing(
    request: Request, module: str, requests: RuntimeRequests = Requests, catalogs: Catalogs = CatalogsDep
) -> Response:
    fields = FormFields(await request.form())
    values = _gpu_sharing_values(fields)
    try:
        fields.check()
        change = _form_model(GpuSharingChange, values)
        await _run(lambda: operations.change_gpu_sharing(requests, module, change))
    except Refusal as refusal:
        return await _modules(request, requests, catalogs, refusal=refusal, status_code=refusal.status)
    return RedirectResponse("/modules", status_code=303)


def _gpu_sharing_values(fields: FormFields) -> dict[str, Any]:
    return {
        "resourceVersion": fields.text("resourceVersion"),
        "mode": fields.text("mode"),
        "nodeName": fields.text("node"),
        "slots": fields.whole_number("slots", SLOTS_BOUNDS),
    }


# Models --------------------------------------------------------------------------------------


@router.get("/models", response_class=HTMLResponse)
async def models_page(request: Request, requests: RuntimeRequests = Requests) -> Response:
    models = await _run(lambda: operations.listed(requests, MODEL_ACTIVATION))
    return _page(request, "models.html", title="Models", models=models)


def _local_values(fields: FormFields) -> dict[str, Any]:
    """The add-a-model form's (or query's) values; a field that breaks its rule is None, and
    the rule is in `fields`."""
    preset, engine, target, artifact = ((fields.text("variant") or "|||").split("|") + ["", "", "", ""])[:4]
    return {
        "name": fields.text("name") or "",
        "preset": preset,
        "engine": engine or "VLLM",
        "computeTarget": target or "cpu",
        "artifact": artifact or None,
        **_local_figures(fields),
    }


def _local_figures(fields: FormFields) -> dict[str, Any]:
    """The fields a local model's Add and Edit forms share."""
    return {
        "contextWindow": fields.whole_number("contextWindow", CONTEXT_WINDOW_BOUNDS),
        "maxNumSeqs": fields.whole_number("maxNumSeqs", NUM_SEQS_BOUNDS),
        "kvCacheType": fields.text("kvCacheType"),
        "memoryRequiredMi": fields.whole_number("memoryRequiredMi", MEMORY_REQUIRED_BOUNDS),
        "vramMi": fields.whole_number("vramMi", VRAM_BOUNDS),
        "cpuOffloading": True if fields.checked("cpuOffloading") else None,
        "allowMemoryRisk": fields.checked("allowMemoryRisk"),
    }


async def _new_model(
    request: Request,
    requests: RuntimeRequests,
    catalogs: Catalogs,
    *,
    entered: Mapping[str, Any],
    refusal: Refusal | None = None,
    status_code: int = 200,
) -> Response:
    offers = await _run(lambda: operations.offers(requests, catalogs))
    figures = None
    estimate_refusal = None
    if entered.get("preset"):
        try:
            fields = _form_model(LocalModelCreate, {**entered, "name": entered.get("name") or "estimate"})
            figures = await _run(lambda: operations.estimate(requests, catalogs, fields))
        except Refusal as problem:
            estimate_refusal = problem
    return _page(
        request,
        "model_new.html",
        status_code=status_code,
        title="Add a local model",
        offers=offers,
        entered=entered,
        figures=figures,
        refusal=refusal or estimate_refusal,
    )


@router.get("/models/new", response_class=HTMLResponse)
async def new_model_page(
    request: Request, requests: RuntimeRequests = Requests, catalogs: Catalogs = CatalogsDep
) -> Response:
    query = FormFields(request.query_params)
    entered = _local_values(query) if request.query_params else {}
    try:
        query.check()
    except Refusal as refusal:
        return await _new_model(
            request, requests, catalogs, entered=entered, refusal=refusal, status_code=refusal.status
        )
    return await _new_model(request, requests, catalogs, entered=entered)


@router.post("/models/new", response_class=HTMLResponse)
async def add_model(
    request: Request, requests: RuntimeRequests = Requests, catalogs: Catalogs = CatalogsDep
) -> Response:
    fields = FormFields(await request.form())
    entered = _local_values(fields)
    step = fields.text("step")
    try:
        fields.check()
        if step != "estimate":
            create = _form_model(LocalModelCreate, entered)
            created = await _run(lambda: operations.add_local_model(requests, catalogs, create))
            return RedirectResponse(f"/objects/modelactivations/{created['metadata']['name']}", status_code=303)
    except Refusal as refusal:
        return await _new_model(
            request, requests, catalogs, entered=entered, refusal=refusal, status_code=refusal.status
        )
    return await _new_model(request, requests, catalogs, entered=entered)


@router.get("/models/external/new", response_class=HTMLResponse)
async def new_external_model_page(request: Request, requests: RuntimeRequests = Requests) -> Response:
    return _page(request, "model_external_new.html", title="Add an external model", entered={}, refusal=None)


@router.post("/models/external/new", response_class=HTMLResponse)
async def add_external_model(request: Request, requests: RuntimeRequests = Requests) -> Response:
    fields = FormFields(await request.form())
    entered = _external_model_values(fields)
    try:
        fields.check()
        create = _form_model(ExternalModelCreate, entered)
        created = await _run(lambda: operations.add_external_model(requests, create))
    except Refusal as refusal:
        return _page(
            request,
            "model_external_new.html",
            status_code=refusal.status,
            title="Add an external model",
            entered=entered,
            refusal=refusal,
        )
    return RedirectResponse(f"/objects/modelactivations/{created['metadata']['name']}", status_code=303)


def _external_model_values(fields: FormFields) -> dict[str, Any]:
    secret_name, secret_key = fields.text("secretName") or "", fields.text("secretKey") or ""
    return {
        "name": fields.text("name") or "",
        "model": fields.text("model") or "",
        "apiBase": fields.text("apiBase"),
        "modelType": fields.text("modelType") or "chat",
        "apiKeySecretRef": {"name": secret_name, "key": secret_key} if secret_name or secret_key else None,
    }


@router.post("/models/{name}/edit", response_class=HTMLResponse)
async def edit_model(
    request: Request, name: str, requests: RuntimeRequests = Requests, catalogs: Catalogs = CatalogsDep
) -> Response:
    name = object_name("modelactivations", name)
    form = await request.form()
    fields = FormFields(form)
    values = _local_edit_values(fields)
    try:
        fields.check()
        edit = _form_model(LocalModelEdit, values)
        await _run(lambda: operations.edit_local_model(requests, catalogs, name, edit))
    except Refusal as refusal:
        return await _edit_again(
            request, requests, MODEL_ACTIVATION, "modelactivations", name, refusal, _changed_by_user(form, values)
        )
    return RedirectResponse(f"/objects/modelactivations/{name}", status_code=303)


def _local_edit_values(fields: FormFields) -> dict[str, Any]:
    return {
        **_local_figures(fields),
        "resourceVersion": fields.text("resourceVersion"),
        "enabled": fields.checked("enabled"),
    }


def _changed_by_user(form: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """The fields the user changed: those whose entered value differs from the one the form was
    rendered with (its `seen.<field>`). A re-rendered form shows these over the current object,
    and the current object's values everywhere else: the user's change, merged with the other
    writer's, never one silently dropping the other."""
    changed = {}
    for key, value in values.items():
        seen = form.get(f"seen.{key}")
        if seen is None or str(value if value is not None else "") != str(seen):
            changed[key] = value
    return changed


@router.post("/models/{name}/restart", response_class=HTMLResponse)
async def restart_model(request: Request, name: str, requests: RuntimeRequests = Requests) -> Response:
    name = object_name("modelactivations", name)
    fields = FormFields(await request.form())
    values = {"resourceVersion": fields.text("resourceVersion")}
    try:
        fields.check()
        restart = _form_model(ModelRestart, values)
        await _run(lambda: operations.restart_model(requests, name, restart))
    except Refusal as refusal:
        return await _edit_again(request, requests, MODEL_ACTIVATION, "modelactivations", name, refusal, {})
    return RedirectResponse(f"/objects/modelactivations/{name}", status_code=303)


async def _edit_again(
    request: Request,
    requests: RuntimeRequests,
    kind: Any,
    plural: str,
    name: str,
    refusal: Refusal,
    entered: Mapping[str, Any],
) -> Response:
    obj = refusal.current if refusal.current is not None else await _run(lambda: operations.one(requests, kind, name))
    return _page(
        request,
        "object.html",
        status_code=refusal.status,
        title=f"{kind.kind} {name}",
        obj=obj,
        plural=plural,
        json=json,
        refusal=refusal,
        entered=entered,
    )


# Instances -----------------------------------------------------------------------------------


@router.get("/instances", response_class=HTMLResponse)
async def instances_page(
    request: Request, requests: RuntimeRequests = Requests, catalogs: Catalogs = CatalogsDep
) -> Response:
    instances = await _run(lambda: operations.listed(requests, APP_INSTANCE))
    return _page(
        request,
        "instances.html",
        title="Instances",
        instances=instances,
        applications=catalogs.applications,
        entered={},
        refusal=None,
    )


def _access_values(fields: FormFields) -> dict[str, Any]:
    access: dict[str, Any] = {
        "role": fields.text("role") or "user",
        "exposure": fields.text("exposure") or "localAndPublic",
    }
    mode = fields.text("sharingMode")
    users, groups = (
        fields.text(name, max_length=SHARING_LIST_TEXT) or "" for name in ("sharingUsers", "sharingGroups")
    )
    if mode:
        access["sharing"] = {
            "mode": mode,
            "users": [item.strip() for item in users.split(",") if item.strip()],
            "groups": [item.strip() for item in groups.split(",") if item.strip()],
        }
    return access


def _instance_values(fields: FormFields) -> dict[str, Any]:
    return {
        "name": fields.text("name") or "",
        "application": fields.text("application") or "",
        "enabled": True,
        "access": _access_values(fields),
    }


def _instance_edit_values(fields: FormFields) -> dict[str, Any]:
    return {
        "resourceVersion": fields.text("resourceVersion"),
        "enabled": fields.checked("enabled"),
        "access": _access_values(fields),
    }


@router.post("/instances", response_class=HTMLResponse)
async def create_instance(
    request: Request, requests: RuntimeRequests = Requests, catalogs: Catalogs = CatalogsDep
) -> Response:
    fields = FormFields(await request.form())
    entered = _instance_values(fields)
    try:
        fields.check()
        create = _form_model(InstanceCreate, entered)
        created = await _run(lambda: operations.create_instance(requests, catalogs, create))
    except Refusal as refusal:
        instances = await _run(lambda: operations.listed(requests, APP_INSTANCE))
        return _page(
            request,
            "instances.html",
            status_code=refusal.status,
            title="Instances",
            instances=instances,
            applications=catalogs.applications,
            entered=entered,
            refusal=refusal,
        )
    return RedirectResponse(f"/objects/appinstances/{created['metadata']['name']}", status_code=303)


@router.post("/instances/{name}/edit", response_class=HTMLResponse)
async def edit_instance(request: Request, name: str, requests: RuntimeRequests = Requests) -> Response:
    name = object_name("appinstances", name)
    fields = FormFields(await request.form())
    values = _instance_edit_values(fields)
    try:
        fields.check()
        edit = _form_model(InstanceEdit, values)
        await _run(lambda: operations.edit_instance(requests, name, edit))
    except Refusal as refusal:
        return await _edit_again(request, requests, APP_INSTANCE, "appinstances", name, refusal, values)
    return RedirectResponse(f"/objects/appinstances/{name}", status_code=303)


# Host operations -----------------------------------------------------------------------------


@router.get("/host-operations", response_class=HTMLResponse)
async def host_operations_page(request: Request, requests: RuntimeRequests = Requests) -> Response:
    return await _host_operations(request, requests)


async def _host_operations(
    request: Request, requests: RuntimeRequests, *, refusal: Refusal | None = None, status_code: int = 200
) -> Response:
    operations_listed = await _run(lambda: operations.listed(requests, HOST_OPERATION))
    return _page(
        request,
        "host_operations.html",
        status_code=status_code,
        title="Host operations",
        operations=operations_listed,
        refusal=refusal,
    )


def _host_operation_values(fields: FormFields) -> dict[str, Any]:
    return {
        "action": fields.text("operation"),
        "nodeName": fields.text("node"),
        "acknowledgeDisruption": fields.checked("acknowledgeDisruption"),
        "planId": fields.text("planId"),
    }


@router.post("/host-operations", response_class=HTMLResponse)
async def request_host_operation(request: Request, requests: RuntimeRequests = Requests) -> Response:
    fields = FormFields(await request.form())
    values = _host_operation_values(fields)
    try:
        fields.check()
        create = _form_model(HostOperationCreate, values)
        created = await _run(lambda: operations.request_host_operation(requests, create))
    except Refusal as refusal:
        return await _host_operations(request, requests, refusal=refusal, status_code=refusal.status)
    return RedirectResponse(f"/objects/hostoperations/{created['metadata']['name']}", status_code=303)
