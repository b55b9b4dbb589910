"""The model catalog: which models LiteLLM routes, published by the program itself (a model
is routed only while its module and its runtime are ready).

The catalog is ConfigMap `<system>/magicstick-model-catalog` (format: catalog_format.py),
declared by the program while the model-catalog module is requested. Its routes, every run:

1. each KubeAI model whose runtime is ready now: the lifecycle (lifecycle.py) passed every
   check but the catalog itself (a ready replica, the Ollama checks), i.e. its status is Ready
   or Starting / WaitingForModelCatalog. Routed to KubeAI's OpenAI endpoint in its namespace;
2. the generated external-model list of this run (plan.py `_external_models`): external
   activations, and direct runtimes only while they serve (direct.py `runtime_state`);
3. the valid entries of the Git-owned `ai-external-models` (catalog_git.py).

A model whose runtime stops being ready is withdrawn in the same run. Invariant 6: a KubeAI
activation whose runtime the lifecycle did not judge this run (its new spec is rejected, it is
deferred, or its namespace is unreadable) keeps the route the catalog lists, as long as its
Model still shows a ready replica (or cannot be seen). On a repeated id, the first source
above wins and the other entry is reported; so is a key Secret outside LiteLLM's namespace.
Problems become Appliance/local CatalogInvalid; a bad entry never fails the run (invariant 5).

**Why in the program and not a controller.** Every input (activations, the lifecycle's
verdicts, the snapshot of Models, Pods and ConfigMaps) and every readiness rule are already
here; a controller would re-implement them and could disagree with the status the program
writes. The latency is the reconcile trigger's (services/reconcile_trigger): KubeAI Pods,
direct-runtime Pods and Deployments and the system namespace's ConfigMaps are watched, so a
replica that stops being ready, or an edit of ai-external-models, starts a run within its
debounce, and that run withdraws or publishes. The catalog's own write is such a ConfigMap
change: the next run sees the model listed and reports it Ready. PURE.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from planning.conditions import READY
from planning.labels import FIELD_MANAGER_ANNOTATION, MANAGED_BY, MANAGED_BY_VALUE
from planning.models.catalog_format import (
    FLUX_WATCH_LABEL,
    FLUX_WATCH_VALUE,
    LITELLM_NAMESPACE,
    MODEL_CATALOG_CONFIG_MAP,
    Route,
    SecretKey,
    catalog_data,
    listed_ids,
    listed_routes,
)
from planning.models.catalog_git import (
    GIT_EXTERNAL_MODELS_CONFIG_MAP,
    ExternalModelProblem,
    GitRoute,
    git_routes,
    route_problem,
)
from planning.models.plan import EXTERNAL_MODELS_KEY, ModelOutcome, ModelPlan
from planning.modules import ModulePlan
from planning.objects import DesiredObject, StatusUpdate
from planning.reasons import Reason
from planning.settings import PlanSettings
from planning.snapshot import KubeAIModel, Snapshot
from planning.unreadable import NAMESPACE_UNREADABLE

MODULE: Final = "model-catalog"
KUBEAI_SERVICE: Final = "kubeai"
"""KubeAI's Service (port 80) in the namespace of its Models; `/openai/v1` is its OpenAI API."""
FEATURE_MODES: Final[Mapping[str, str]] = {
    "TextEmbedding": "embedding",
    "SpeechToText": "transcription",
    "TextGeneration": "chat",
}
"""KubeAI Model spec.features -> modelType (the first match in this order)."""


@dataclass(frozen=True)
class ModelCatalog:
    routes: tuple[Route, ...]
    """What LiteLLM routes, in id order."""
    problems: tuple[ExternalModelProblem, ...]
    """Entries left out (invalid, a repeated id, a Secret LiteLLM cannot read)."""
    config_map: DesiredObject | None
    """The catalog to declare; None while the model-catalog module is not requested."""


def plan_catalog(*, models: ModelPlan, modules: ModulePlan, snapshot: Snapshot, settings: PlanSettings) -> ModelCatalog:
    """The model catalog for this run's model plan. Pure."""
    namespace = settings.system_namespace
    observed = snapshot.config_map(namespace, MODEL_CATALOG_CONFIG_MAP)
    listed = listed_routes(observed.data) if observed is not None else {}
    published = listed_ids(observed.data) if observed is not None else frozenset()
    statuses = {s.name: s for s in models.statuses if s.kind == "ModelActivation"}
    kubeai = [
        route
        for outcome in models.outcomes
        if (route := _kubeai_route(outcome, statuses.get(outcome.activation), snapshot, listed, published)) is not None
    ]
    git = git_routes(snapshot, namespace=namespace)
    routes, problems = _merged(
        namespace, [*sorted(kubeai, key=lambda r: r.id), *_generated(models.external_models)], git.routes
    )
    module = modules.outcome(MODULE)
    requested = module is not None and module.phase != "Disabled"
    if not requested:
        return ModelCatalog(routes=(), problems=(), config_map=None)
    return ModelCatalog(routes=routes, problems=(*git.problems, *problems), config_map=_config_map(routes, settings))


def _kubeai_route(
    outcome: ModelOutcome,
    status: StatusUpdate | None,
    snapshot: Snapshot,
    listed: Mapping[str, Route],
    published: frozenset[str],
) -> Route | None:
    """The route of one KubeAI activation's Model, if it is routable now. Pure."""
    if outcome.model is None or status is None:
        return None
    namespace, name = outcome.model.namespace or "", outcome.model.name
    model = next((m for m in snapshot.models if m.meta.namespace == namespace and m.meta.name == name), None)
    if "replicas" in status.status:
        # The lifecycle judged the runtime this run.
        ready = status.status.get("phase") == READY or status.status.get("reason") == Reason.WAITING_FOR_MODEL_CATALOG
        return kubeai_route(name=name, namespace=namespace, model=model) if ready else None
    if name not in published or name not in listed:
        return None
    unseen = status.status.get("reason") == NAMESPACE_UNREADABLE
    return listed[name] if unseen or (model is not None and model.replicas_ready > 0) else None


def kubeai_route(*, name: str, namespace: str, model: KubeAIModel | None) -> Route:
    """How LiteLLM reaches a KubeAI Model: KubeAI's OpenAI endpoint, keyless, by its name. Pure."""
    features = model.spec.get("features") if model is not None else None
    present = set(features) if isinstance(features, (list, tuple)) else set()
    model_type = next((mode for feature, mode in FEATURE_MODES.items() if feature in present), "chat")
    base = f"http://{KUBEAI_SERVICE}.{namespace}.svc.cluster.local/openai/v1"
    return Route(id=name, model=f"openai/{name}", model_type=model_type, api_base=base)


def _generated(listing: DesiredObject | None) -> list[Route]:
    """The routes of this run's generated external-model list. Pure."""
    if listing is None:
        return []
    entries = json.loads(listing.body["data"][EXTERNAL_MODELS_KEY])
    return [_generated_route(entry) for entry in entries]


def _generated_route(entry: Mapping[str, Any]) -> Route:
    ref = entry.get("apiKeySecretRef")
    key = SecretKey(name=ref["name"], key=ref["key"], namespace=ref["namespace"]) if ref else None
    return Route(
        id=entry["id"],
        model=entry["model"],
        model_type=entry.get("modelType", "chat"),
        api_base=entry.get("apiBase"),
        api_key=key,
    )


def _merged(
    namespace: str, activations: Iterable[Route], git: Iterable[GitRoute]
) -> tuple[tuple[Route, ...], tuple[ExternalModelProblem, ...]]:
    """Routes with unique ids, first come first kept, and a problem for each one left out. Pure."""
    kept: dict[str, tuple[str, Route]] = {}
    problems: list[ExternalModelProblem] = []
    sources = [*((None, r) for r in activations), *((g.key, g.route) for g in git)]
    for key, route in sources:
        origin = (
            f"ModelActivation {namespace}/{route.id}"
            if key is None
            else f"key {key} of {GIT_EXTERNAL_MODELS_CONFIG_MAP}"
        )

        def left_out(
            field: str, message: str, key: str | None = key, origin: str = origin, entry: str = route.id
        ) -> ExternalModelProblem:
            return route_problem(namespace=namespace, key=key, origin=origin, entry=entry, field=field, message=message)

        if route.id in kept:
            problems.append(left_out("id", f"the id is already published, from {kept[route.id][0]}"))
        elif route.api_key is not None and route.api_key.namespace != LITELLM_NAMESPACE:
            problems.append(
                left_out(
                    "apiKeySecretRef",
                    f"Secret {route.api_key.namespace}/{route.api_key.name} is outside LiteLLM's namespace "
                    f"{LITELLM_NAMESPACE}, the only one the proxy reads keys from",
                )
            )
        else:
            kept[route.id] = (origin, route)
    return tuple(kept[i][1] for i in sorted(kept)), tuple(problems)


def _config_map(routes: tuple[Route, ...], settings: PlanSettings) -> DesiredObject:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": MODEL_CATALOG_CONFIG_MAP,
            "namespace": settings.system_namespace,
            "labels": {MANAGED_BY: MANAGED_BY_VALUE, FLUX_WATCH_LABEL: FLUX_WATCH_VALUE},
            "annotations": {FIELD_MANAGER_ANNOTATION: settings.field_manager},
        },
        "data": catalog_data(routes),
    }
    return DesiredObject.of(body)
