"""Model URLs as KubeAI v0.22.1 reads them, and the Ollama model a URL names. Pure.

KubeAI splits a URL into scheme, reference and query (`^([a-z0-9]+)://([^?]+)(\\?.*)?$`), the
reference into a name and a path at its first `/`, and reads `model`, `pull` and `insecure` from
the query (internal/modelcontroller/model_source.go). For Ollama:
- `ollama://NAME[?pull=false][&insecure=true]`: KubeAI's startup probe pulls NAME (unless
  `pull=false`: the model is already in the server's models folder), then copies it to the
  Model's name;
- `pvc://CLAIM[/FOLDER]?model=NAME`: the PersistentVolumeClaim CLAIM is mounted at /model
  (FOLDER of it, when given) and is Ollama's models folder (`OLLAMA_MODELS=/model`); nothing is
  downloaded, and the startup probe copies NAME to the Model's name. This is how an offline
  appliance names a model it keeps in its model cache.
In both, NAME is the Ollama model the Pod serves before KubeAI's copy: the program's alias
source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final
from urllib.parse import parse_qs

KUBEAI_URL: Final = re.compile(r"^([a-z0-9]+)://([^?]+)(\?.*)?$")
OLLAMA_SCHEME: Final = "ollama"
CLAIM_SCHEME: Final = "pvc"
CLAIM_URL_FORM: Final = "pvc://CLAIM[/FOLDER]?model=NAME"


class ModelUrlError(ValueError):
    """A URL KubeAI would refuse, or an Ollama URL that names no model; the message says why."""


@dataclass(frozen=True)
class ModelUrl:
    scheme: str
    reference: str
    """Everything between `://` and the query."""
    query: dict[str, str]
    """The first value of each query parameter."""

    @property
    def name(self) -> str:
        """The reference up to its first `/`: a repository owner, a bucket, a claim."""
        return self.reference.split("/", 1)[0]


def parse_model_url(url: str) -> ModelUrl:
    """`url` as KubeAI splits it; ModelUrlError when KubeAI's own pattern refuses it."""
    matched = KUBEAI_URL.match(url)
    if matched is None:
        raise ModelUrlError(f"'{url}' is not a model URL KubeAI reads (SCHEME://REFERENCE[?QUERY])")
    query = {key: values[0] for key, values in parse_qs((matched.group(3) or "").removeprefix("?")).items()}
    return ModelUrl(scheme=matched.group(1), reference=matched.group(2), query=query)


def ollama_model(url: str) -> str:
    """The Ollama model an `ollama://` or `pvc://` URL names, with Ollama's `:latest` default."""
    parsed = parse_model_url(url)
    if parsed.scheme == OLLAMA_SCHEME:
        name = parsed.reference
    elif parsed.scheme == CLAIM_SCHEME:
        name = parsed.query.get("model", "")
        if not name:
            raise ModelUrlError(f"'{url}' names no model: an Ollama model in a volume is {CLAIM_URL_FORM}")
    else:
        raise ModelUrlError(f"Ollama loads ollama:// or pvc:// models, not '{url}'")
    last = name.rsplit("/", 1)[-1]
    return name if ":" in last else f"{name}:latest"


def ollama_claim(url: str) -> str | None:
    """The PersistentVolumeClaim a `pvc://` URL mounts; None for any other URL or a URL KubeAI
    would refuse. Pure."""
    try:
        parsed = parse_model_url(url)
    except ModelUrlError:
        return None
    return parsed.name if parsed.scheme == CLAIM_SCHEME else None
