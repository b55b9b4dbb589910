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
from services.dashboard.forms import (
    ExternalModelCreate,
    GpuSharingChange,
    HostOperationCreate,
    InstanceCreate,
    InstanceEdit,
    LocalModelCreate,
    LocalModelEdit,
    ModelRestart,
    ModuleChange,
)
from services.dashboard.identity import Identity
from services.dashboard.refusals import FieldProblem, Refusal
from services.dashboard.requesting import catalogs_of, runtime_requests, stack_name_of
from services.dashboard.summaries import summary_of

TEMPLATES = Jinja2Templates(directory=Path(__file__).parent / "templates")
GPU_MODULES = ("gpu", "amd-gpu", "intel-gpu")
"""Modules whose parameters only administrators see and change."""
SHARING_MODULES = ("gpu", "amd-gpu")
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
        problems = tuple(FieldProblem(".".join(str(part) for part in item["loc"]), str(item["msg"])) for item in error.errors())
        raise Refusal(422, "Invalid", "; ".join(f"{p.field}: {p.message}" for p in problems), problems) from error


def _optional_int(value: object) -> int | str | None:
    """A form field meant as a whole number: the number, None when empty, else the text as
    entered (the form model then names the field and the rule)."""
    text = str(value or "").strip()
    if not text:
        return None
    return int(text) if text.isdigit() else text


def _checked(form: Mapping[str, Any], name: str) -> bool:
    return str(form.get(name, "")).lower() in ("true", "on", "1", "yes")


async def _run(call: Callable[[], T]) -> T:
    return await run_in_threadpool(call)


Requests = Depends(runtime_requests)
CatalogsDep = Depends(catalogs_of)


@router.get("/", response_class=HTMLResponse)
async def overview(request: Request, requests: RuntimeRequests = Requests, stack_name: str = Depends(stack_name_of)) -> Response:
    view = await _run(lambda: operations.overview(requests, stack_name=stack_name))
    return _page(request, "overview.html", title="Overview", view=view)


@router.get("/objects/{plural}/{name}", response_class=HTMLResponse)
async def object_page(request: Request, plural: str, name: str, requests: RuntimeRequests = Requests) -> Response:
    kind = READABLE_KINDS.get(plural)
    if kind is None:
        raise Refusal(404, "NotFound", f"the dashboard shows no kind {plural!r}")
    obj = await _run(lambda: operations.one(requests, kind, name))
    return _page(request, "object.html", title=f"{kind.kind} {name}", obj=obj, plural=plural, json=json)


# Modules -------------------------------------------------------------------------------------


@router.get("/modules", response_class=HTMLResponse)
async def modules_page(request: Request, requests: RuntimeRequests = Requests, catalogs: Catalogs = CatalogsDep) -> Response:
    return await _modules(request, requests, catalogs)


async def _modules(request: Request, requests: RuntimeRequests, catalogs: Catalogs, *, refusal: Refusal | None = None, status_code: int = 200) -> Response:
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
async def change_module(request: Request, module: str, requests: RuntimeRequests = Requests, catalogs: Catalogs = CatalogsDep) -> Response:
    form = await request.form()
    parameters = {key.removeprefix("param."): str(value) for key, value in form.items() if key.startswith("param.") and str(value) != ""}
    values = {
        "resourceVersion": form.get("resourceVersion") or None,
        "enabled": _checked(form, "enabled"),
        "parameters": parameters if form.get("hasParameters") else None,
    }
    try:
        change = _form_model(ModuleChange, values)
        await _run(lambda: operations.change_module(requests, catalogs, module, change))
    except Refusal as refusal:
        return await _modules(request, requests, catalogs, refusal=refusal, status_code=refusal.status)
    return RedirectResponse("/modules", status_code=303)


@router.post("/modules/{module}/gpu-sharing", response_class=HTMLResponse)
async def change_gpu_sharing(request: Request, module: str, requests: RuntimeRequests = Requests, catalogs: Catalogs = CatalogsDep) -> Response:
    form = await request.form()
    values = {
        "resourceVersion": form.get("resourceVersion"),
        "mode": form.get("mode"),
        "nodeName": form.get("node"),
        "slots": _optional_int(form.get("slots")),
    }
    try:
        change = _form_model(GpuSharingChange, values)
        await _run(lambda: operations.change_gpu_sharing(requests, module, change))
    except Refusal as refusal:
        return await _modules(request, requests, catalogs, refusal=refusal, status_code=refusal.status)
    return RedirectResponse("/modules", status_code=303)


# Models --------------------------------------------------------------------------------------


@router.get("/models", response_class=HTMLResponse)
async def models_page(request: Request, requests: RuntimeRequests = Requests) -> Response:
    models = await _run(lambda: operations.listed(requests, MODEL_ACTIVATION))
    return _page(request, "models.html", title="Models", models=models)


def _local_values(form: Mapping[str, Any]) -> dict[str, Any]:
    preset, engine, target, artifact = (str(form.get("variant") or "|||").split("|") + ["", "", "", ""])[:4]
    return {
        "name": str(form.get("name") or ""),
        "preset": preset,
        "engine": engine or "VLLM",
        "computeTarget": target or "cpu",
        "artifact": artifact or None,
        "contextWindow": _optional_int(form.get("contextWindow")),
        "maxNumSeqs": _optional_int(form.get("maxNumSeqs")),
        "kvCacheType": form.get("kvCacheType") or None,
        "memoryRequiredMi": _optional_int(form.get("memoryRequiredMi")),
        "vramMi": _optional_int(form.get("vramMi")),
        "cpuOffloading": True if _checked(form, "cpuOffloading") else None,
        "allowMemoryRisk": _checked(form, "allowMemoryRisk"),
    }


async def _new_model(
    request: Request, requests: RuntimeRequests, catalogs: Catalogs, *, entered: Mapping[str, Any], refusal: Refusal | None = None, status_code: int = 200
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
async def new_model_page(request: Request, requests: RuntimeRequests = Requests, catalogs: Catalogs = CatalogsDep) -> Response:
    entered = _local_values(request.query_params) if request.query_params.get("variant") else {}
    return await _new_model(request, requests, catalogs, entered=entered)


@router.post("/models/new", response_class=HTMLResponse)
async def add_model(request: Request, requests: RuntimeRequests = Requests, catalogs: Catalogs = CatalogsDep) -> Response:
    form = await request.form()
    entered = _local_values(form)
    if form.get("step") == "estimate":
        return await _new_model(request, requests, catalogs, entered=entered)
    try:
        create = _form_model(LocalModelCreate, entered)
        created = await _run(lambda: operations.add_local_model(requests, catalogs, create))
    except Refusal as refusal:
        return await _new_model(request, requests, catalogs, entered=entered, refusal=refusal, status_code=refusal.status)
    return RedirectResponse(f"/objects/modelactivations/{created['metadata']['name']}", status_code=303)


@router.get("/models/external/new", response_class=HTMLResponse)
async def new_external_model_page(request: Request, requests: RuntimeRequests = Requests) -> Response:
    return _page(request, "model_external_new.html", title="Add an external model", entered={}, refusal=None)


@router.post("/models/external/new", response_class=HTMLResponse)
async def add_external_model(request: Request, requests: RuntimeRequests = Requests) -> Response:
    form = await request.form()
    secret_name, secret_key = str(form.get("secretName") or ""), str(form.get("secretKey") or "")
    entered = {
        "name": str(form.get("name") or ""),
        "model": str(form.get("model") or ""),
        "apiBase": str(form.get("apiBase") or "") or None,
        "modelType": str(form.get("modelType") or "chat"),
        "apiKeySecretRef": {"name": secret_name, "key": secret_key} if secret_name or secret_key else None,
    }
    try:
        create = _form_model(ExternalModelCreate, entered)
        created = await _run(lambda: operations.add_external_model(requests, create))
    except Refusal as refusal:
        return _page(request, "model_external_new.html", status_code=refusal.status, title="Add an external model", entered=entered, refusal=refusal)
    return RedirectResponse(f"/objects/modelactivations/{created['metadata']['name']}", status_code=303)


@router.post("/models/{name}/edit", response_class=HTMLResponse)
async def edit_model(request: Request, name: str, requests: RuntimeRequests = Requests, catalogs: Catalogs = CatalogsDep) -> Response:
    form = await request.form()
    values = {key: value for key, value in _local_values(form).items() if key not in ("name", "preset", "engine", "computeTarget", "artifact")}
    values.update({"resourceVersion": form.get("resourceVersion"), "enabled": _checked(form, "enabled")})
    try:
        edit = _form_model(LocalModelEdit, values)
        await _run(lambda: operations.edit_local_model(requests, catalogs, name, edit))
    except Refusal as refusal:
        return await _edit_again(request, requests, MODEL_ACTIVATION, "modelactivations", name, refusal, _changed_by_user(form, values))
    return RedirectResponse(f"/objects/modelactivations/{name}", status_code=303)


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
    form = await request.form()
    try:
        restart = _form_model(ModelRestart, {"resourceVersion": form.get("resourceVersion")})
        await _run(lambda: operations.restart_model(requests, name, restart))
    except Refusal as refusal:
        return await _edit_again(request, requests, MODEL_ACTIVATION, "modelactivations", name, refusal, {})
    return RedirectResponse(f"/objects/modelactivations/{name}", status_code=303)


async def _edit_again(
    request: Request, requests: RuntimeRequests, kind: Any, plural: str, name: str, refusal: Refusal, entered: Mapping[str, Any]
) -> Response:
    obj = refusal.current if refusal.current is not None else await _run(lambda: operations.one(requests, kind, name))
    return _page(request, "object.html", status_code=refusal.status, title=f"{kind.kind} {name}", obj=obj, plural=plural, json=json, refusal=refusal, entered=entered)


# Instances -----------------------------------------------------------------------------------


@router.get("/instances", response_class=HTMLResponse)
async def instances_page(request: Request, requests: RuntimeRequests = Requests, catalogs: Catalogs = CatalogsDep) -> Response:
    instances = await _run(lambda: operations.listed(requests, APP_INSTANCE))
    return _page(request, "instances.html", title="Instances", instances=instances, applications=catalogs.applications, entered={}, refusal=None)


def _access_values(form: Mapping[str, Any]) -> dict[str, Any]:
    access: dict[str, Any] = {"role": form.get("role") or "user", "exposure": form.get("exposure") or "localAndPublic"}
    mode = str(form.get("sharingMode") or "")
    if mode:
        access["sharing"] = {
            "mode": mode,
            "users": [item.strip() for item in str(form.get("sharingUsers") or "").split(",") if item.strip()],
            "groups": [item.strip() for item in str(form.get("sharingGroups") or "").split(",") if item.strip()],
        }
    return access


@router.post("/instances", response_class=HTMLResponse)
async def create_instance(request: Request, requests: RuntimeRequests = Requests, catalogs: Catalogs = CatalogsDep) -> Response:
    form = await request.form()
    entered = {"name": str(form.get("name") or ""), "application": str(form.get("application") or ""), "enabled": True, "access": _access_values(form)}
    try:
        create = _form_model(InstanceCreate, entered)
        created = await _run(lambda: operations.create_instance(requests, catalogs, create))
    except Refusal as refusal:
        instances = await _run(lambda: operations.listed(requests, APP_INSTANCE))
        return _page(request, "instances.html", status_code=refusal.status, title="Instances", instances=instances, applications=catalogs.applications, entered=entered, refusal=refusal)
    return RedirectResponse(f"/objects/appinstances/{created['metadata']['name']}", status_code=303)


@router.post("/instances/{name}/edit", response_class=HTMLResponse)
async def edit_instance(request: Request, name: str, requests: RuntimeRequests = Requests) -> Response:
    form = await request.form()
    values = {"resourceVersion": form.get("resourceVersion"), "enabled": _checked(form, "enabled"), "access": _access_values(form)}
    try:
        edit = _form_model(InstanceEdit, values)
        await _run(lambda: operations.edit_instance(requests, name, edit))
    except Refusal as refusal:
        return await _edit_again(request, requests, APP_INSTANCE, "appinstances", name, refusal, values)
    return RedirectResponse(f"/objects/appinstances/{name}", status_code=303)


# Host operations -----------------------------------------------------------------------------


@router.get("/host-operations", response_class=HTMLResponse)
async def host_operations_page(request: Request, requests: RuntimeRequests = Requests) -> Response:
    return await _host_operations(request, requests)


async def _host_operations(request: Request, requests: RuntimeRequests, *, refusal: Refusal | None = None, status_code: int = 200) -> Response:
    operations_listed = await _run(lambda: operations.listed(requests, HOST_OPERATION))
    return _page(request, "host_operations.html", status_code=status_code, title="Host operations", operations=operations_listed, refusal=refusal)


@router.post("/host-operations", response_class=HTMLResponse)
async def request_host_operation(request: Request, requests: RuntimeRequests = Requests) -> Response:
    form = await request.form()
    values = {
        "action": form.get("operation"),
        "nodeName": form.get("node"),
        "acknowledgeDisruption": _checked(form, "acknowledgeDisruption"),
        "planId": form.get("planId") or None,
    }
    try:
        create = _form_model(HostOperationCreate, values)
        created = await _run(lambda: operations.request_host_operation(requests, create))
    except Refusal as refusal:
        return await _host_operations(request, requests, refusal=refusal, status_code=refusal.status)
    return RedirectResponse(f"/objects/hostoperations/{created['metadata']['name']}", status_code=303)
