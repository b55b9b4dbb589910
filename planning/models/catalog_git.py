"""The Git-owned external models: ConfigMap `ai-external-models` in the system namespace.

Seed data kept in Git (an overlay's ConfigMap), merged into the model catalog beside the
ModelActivations. Every data key holds a YAML (or JSON) list of entries:

    - id: example-chat                  # the name LiteLLM routes (a DNS label)
      model: openai/gpt-4o-mini         # LiteLLM's provider/model
      apiBase: https://api.example.com/v1
      modelType: chat                   # as ModelActivation spec.external.modelType
      apiKeySecretRef: {name: example-api-key, key: api-key}

The fields and their rules are those of ModelActivation `spec.external` (api.models
ExternalModelSpec: no plain `apiKey`, a key only over https) plus `id`. The Secret is read in
LiteLLM's namespace (catalog_format.LITELLM_NAMESPACE).

Invariant 5: an invalid key or entry never fails the run. It is skipped, every valid entry
still reaches the catalog, and an `ExternalModelProblem` names the ConfigMap, the key, the
entry and the field; Appliance/local is then Degraded with reason CatalogInvalid, as for the
catalog ConfigMaps (planning.catalog_overrides). PURE.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import yaml
from pydantic import Field, ValidationError

from api.models import DNS_LABEL_PATTERN, ExternalModelSpec
from catalogs.errors import DOCUMENT
from planning.catalog_overrides import CatalogConfigMap, CatalogProblem
from planning.models.catalog_format import LITELLM_NAMESPACE, Route, SecretKey
from planning.snapshot import Snapshot

GIT_EXTERNAL_MODELS_CONFIG_MAP: Final = "ai-external-models"


class GitExternalModel(ExternalModelSpec):
    """One entry of ai-external-models: an external model spec with the id it is routed as."""

    id: str = Field(min_length=1, max_length=63, pattern=DNS_LABEL_PATTERN)


@dataclass(frozen=True)
class ExternalModelProblem(CatalogProblem):
    """An entry of ai-external-models, or a route, that the catalog leaves out, and why."""

    origin: str = ""
    """What the route came from when it is not ai-external-models (`ModelActivation ai-system/x`)."""

    def describe(self) -> str:
        """One line naming the source, the key, the entry and the field. Pure."""
        entry = "the document" if self.entry == DOCUMENT else f"entry '{self.entry}'"
        return f"{self.origin or self.source} {entry}, field {self.field}: {self.message}; it is not published."


def _problem(namespace: str, key: str, entry: str, field: str, message: str, origin: str = "") -> ExternalModelProblem:
    where = CatalogConfigMap(catalog="external-models", name=GIT_EXTERNAL_MODELS_CONFIG_MAP, key=key)
    return ExternalModelProblem(
        namespace=namespace, config_map=where, file=key, entry=entry, field=field, message=message, origin=origin
    )


def route_problem(
    *, namespace: str, key: str | None, origin: str, entry: str, field: str, message: str
) -> ExternalModelProblem:
    """A route left out: an entry of ai-external-models under `key`, or else one from `origin`
    (`ModelActivation ai-system/x`). Pure."""
    return (
        _problem(namespace, key, entry, field, message)
        if key is not None
        else _problem(namespace, "", entry, field, message, origin)
    )


@dataclass(frozen=True)
class GitRoute:
    key: str
    """The data key of ai-external-models that holds the entry."""
    route: Route


@dataclass(frozen=True)
class GitRoutes:
    routes: tuple[GitRoute, ...]
    """Valid entries, in key order then list order."""
    problems: tuple[ExternalModelProblem, ...]


def git_routes(snapshot: Snapshot, *, namespace: str) -> GitRoutes:
    """The valid entries of `namespace`/ai-external-models and a problem per invalid one. Pure."""
    found = snapshot.config_map(namespace, GIT_EXTERNAL_MODELS_CONFIG_MAP)
    if found is None:
        return GitRoutes((), ())
    routes: list[GitRoute] = []
    problems: list[ExternalModelProblem] = []
    for key in sorted(found.data):
        parsed, trouble = _entries(namespace, key, found.data[key])
        routes += (GitRoute(key, route) for route in parsed)
        problems += trouble
    return GitRoutes(tuple(routes), tuple(problems))


def _entries(namespace: str, key: str, text: Any) -> tuple[list[Route], list[ExternalModelProblem]]:
    def problem(entry: str, field: str, message: str) -> ExternalModelProblem:
        return _problem(namespace, key, entry, field, message)

    try:
        items = yaml.safe_load(text) if isinstance(text, str) else None
    except yaml.YAMLError as error:
        return [], [problem(DOCUMENT, "(yaml)", f"not YAML: {str(error).splitlines()[0]}")]
    if items is None:
        return [], []
    if not isinstance(items, list):
        return [], [problem(DOCUMENT, "(document)", f"expected a list of entries, found {type(items).__name__}")]
    routes, problems = [], []
    for index, item in enumerate(items):
        label = str(item.get("id")) if isinstance(item, dict) and isinstance(item.get("id"), str) else f"#{index}"
        try:
            spec = GitExternalModel.model_validate(item)
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "(entry)"
            problems.append(problem(label, field, first["msg"]))
            continue
        routes.append(_route(spec))
    return routes, problems


def _route(spec: GitExternalModel) -> Route:
    ref = spec.api_key_secret_ref
    key = SecretKey(name=ref.name, key=ref.key, namespace=LITELLM_NAMESPACE) if ref is not None else None
    return Route(id=spec.id, model=spec.model, model_type=spec.model_type, api_base=spec.api_base, api_key=key)


def entry_fields(route: Route) -> Mapping[str, Any]:
    """`route` in the ai-external-models entry shape (examples and tests write it so). Pure."""
    entry: dict[str, Any] = {"id": route.id, "model": route.model, "modelType": route.model_type}
    if route.api_base:
        entry["apiBase"] = route.api_base
    if route.api_key is not None:
        entry["apiKeySecretRef"] = {"name": route.api_key.name, "key": route.api_key.key}
    return entry
