"""The model catalog's wire format: one ConfigMap, read by LiteLLM and read back by the program.

`ai-system/magicstick-model-catalog` (system namespace) holds two keys, both written by
`catalog_data` from the same routes, so they can never disagree:

- `models.json`: the sorted JSON list of the model ids LiteLLM routes. The program reads it
  back (`published_ids`) to decide Ready: a model is Ready once the catalog lists it.
- `values.json`: Helm values of the LiteLLM release (magic-cluster/apps/ai/litellm), read by
  its HelmRelease through `valuesFrom`. `proxy_config.model_list` is LiteLLM's own config
  format (the chart renders it as the proxy's `config.yaml`, and its `checksum/config` Pod
  annotation rolls the proxy when it changes); `extraEnvVars` maps every API key the list
  names to a `secretKeyRef`. A key reaches LiteLLM only as `os.environ/<NAME>`: no key value
  is ever written here (invariant 9).

Both are compact, key-sorted JSON with no timestamp, so a converged run writes the same bytes
(invariant 4). PURE.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

MODEL_CATALOG_CONFIG_MAP: Final = "magicstick-model-catalog"
MODEL_CATALOG_KEY: Final = "models.json"
"""The published model ids (a sorted JSON list of strings)."""
LITELLM_VALUES_KEY: Final = "values.json"
"""The LiteLLM Helm values: `{"proxy_config": {"model_list": [...]}, "extraEnvVars": [...]}`."""
FLUX_WATCH_LABEL: Final = "reconcile.fluxcd.io/watch"
"""With value `Enabled` on a ConfigMap a HelmRelease reads, Flux reconciles that release at once
when the ConfigMap changes (rather than at the next interval)."""
FLUX_WATCH_VALUE: Final = "Enabled"
LITELLM_NAMESPACE: Final = "ai"
"""Where the LiteLLM proxy runs (the HelmRelease's targetNamespace): every API key Secret must
live there, since a Pod reads Secrets of its own namespace only."""
KEYLESS_API_KEY: Final = "none"
"""LiteLLM's OpenAI client wants some key; a keyless in-cluster endpoint gets this placeholder."""
KEY_ENV_PREFIX: Final = "MAGICSTICK_KEY_"
LITELLM_MODES: Final[Mapping[str, str]] = {
    "chat": "chat",
    "completion": "completion",
    "embedding": "embedding",
    "rerank": "rerank",
    "transcription": "audio_transcription",
    "image_generation": "image_generation",
    "audio_speech": "audio_speech",
}
"""ModelActivation modelType -> LiteLLM `model_info.mode` (what its health checks call)."""


@dataclass(frozen=True)
class SecretKey:
    """A key inside a Secret: where LiteLLM reads one API key from."""

    name: str
    key: str
    namespace: str

    @property
    def env_name(self) -> str:
        """The LiteLLM container's environment variable holding the key: readable, and unique
        per Secret and key by a hash suffix (`-` and `.` map to `_`). Pure."""
        readable = re.sub(r"[^A-Z0-9]", "_", f"{self.name}_{self.key}".upper())[:60]
        digest = hashlib.sha256(f"{self.namespace}/{self.name}/{self.key}".encode()).hexdigest()[:8].upper()
        return f"{KEY_ENV_PREFIX}{readable}_{digest}"


@dataclass(frozen=True)
class Route:
    """One model LiteLLM routes: requests for `id` go to `model` at `api_base`."""

    id: str
    model: str
    """LiteLLM's provider/model string, e.g. `openai/gpt-4o-mini`."""
    model_type: str = "chat"
    api_base: str | None = None
    api_key: SecretKey | None = None

    def litellm_entry(self) -> dict[str, Any]:
        """This route as one entry of LiteLLM's `model_list`. Pure."""
        params: dict[str, Any] = {"model": self.model}
        if self.api_base:
            params["api_base"] = self.api_base
        params["api_key"] = f"os.environ/{self.api_key.env_name}" if self.api_key is not None else KEYLESS_API_KEY
        return {
            "model_name": self.id,
            "litellm_params": params,
            "model_info": {"id": self.id, "mode": LITELLM_MODES.get(self.model_type, "chat")},
        }


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def catalog_data(routes: Iterable[Route]) -> dict[str, str]:
    """The ConfigMap's data for `routes` (ids unique), in id order. Pure."""
    ordered = sorted(routes, key=lambda r: r.id)
    keys = {r.api_key.env_name: r.api_key for r in ordered if r.api_key is not None}
    env = [
        {"name": name, "valueFrom": {"secretKeyRef": {"name": key.name, "key": key.key, "optional": True}}}
        for name, key in sorted(keys.items())
    ]
    values = {"proxy_config": {"model_list": [r.litellm_entry() for r in ordered]}, "extraEnvVars": env}
    return {MODEL_CATALOG_KEY: _dumps([r.id for r in ordered]), LITELLM_VALUES_KEY: _dumps(values)}


EMPTY_CATALOG_DATA: Final = catalog_data(())
"""A valid catalog with no model: what Flux bootstraps before the program's first run."""


def listed_ids(data: Mapping[str, Any]) -> frozenset[str]:
    """The ids `models.json` lists; none when it is absent or not a JSON list. Pure."""
    try:
        listed = json.loads(data.get(MODEL_CATALOG_KEY) or "[]")
    except (json.JSONDecodeError, TypeError):
        return frozenset()
    return frozenset(str(item) for item in listed) if isinstance(listed, list) else frozenset()


def listed_routes(data: Mapping[str, Any]) -> dict[str, Route]:
    """The routes `values.json` holds, by id, read back from LiteLLM's format (entries of
    another shape are left out). Pure."""
    try:
        values = json.loads(data.get(LITELLM_VALUES_KEY) or "{}")
    except (json.JSONDecodeError, TypeError):
        return {}
    if not isinstance(values, dict):
        return {}
    keys = _env_keys(values.get("extraEnvVars"))
    modes = {mode: model_type for model_type, mode in LITELLM_MODES.items()}
    found: dict[str, Route] = {}
    proxy = values.get("proxy_config")
    model_list = proxy.get("model_list") if isinstance(proxy, dict) else None
    for entry in model_list if isinstance(model_list, list) else ():
        params = entry.get("litellm_params") if isinstance(entry, dict) else None
        if (
            not isinstance(params, dict)
            or not isinstance(entry.get("model_name"), str)
            or not isinstance(params.get("model"), str)
        ):
            continue
        key = str(params.get("api_key") or "")
        info = entry.get("model_info") if isinstance(entry.get("model_info"), dict) else {}
        found[entry["model_name"]] = Route(
            id=entry["model_name"],
            model=params["model"],
            model_type=modes.get(str(info.get("mode")), "chat"),
            api_base=params.get("api_base") if isinstance(params.get("api_base"), str) else None,
            api_key=keys.get(key.removeprefix("os.environ/")) if key.startswith("os.environ/") else None,
        )
    return found


def _env_keys(env: Any) -> dict[str, SecretKey]:
    found = {}
    for item in env if isinstance(env, list) else ():
        ref = ((item.get("valueFrom") or {}).get("secretKeyRef") or {}) if isinstance(item, dict) else {}
        if isinstance(ref, dict) and isinstance(item.get("name"), str) and ref.get("name") and ref.get("key"):
            found[item["name"]] = SecretKey(name=str(ref["name"]), key=str(ref["key"]), namespace=LITELLM_NAMESPACE)
    return found
