"""Names that fit Kubernetes limits, once for the program and the services. Pure.

Invariant: a name that fits is returned unchanged; a name that does not is cut and given a
stable hash suffix of the whole original, so two different long names never collide by
truncation and the same input always gives the same output. The program labels what it
generates with such values (planning/names.py re-exports them); the reconcile trigger selects
a direct runtime's objects by the same values (api/model_runtimes.py).
"""

from __future__ import annotations

import hashlib

LABEL_VALUE_LIMIT = 63
DNS_LABEL_LIMIT = 63
KUBEAI_MODEL_NAME_LIMIT = 40
_HASH_LENGTH = 8


def fit(name: str, limit: int = DNS_LABEL_LIMIT) -> str:
    """Return `name`, or a `limit`-long prefix of it joined to an 8-hex-digit hash of it."""
    if limit <= _HASH_LENGTH + 1:
        raise ValueError(f"limit {limit} leaves no room for a hash suffix")
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:_HASH_LENGTH]
    prefix = name[: limit - _HASH_LENGTH - 1].rstrip("-.")
    return f"{prefix}-{digest}"
