"""Names that fit Kubernetes limits: `api/names.py`, where the services find them too.

Invariant: a name that fits is returned unchanged; a name that does not is cut and given a
stable hash suffix of the whole original, so two different long names never collide by
truncation and the same input always gives the same output.
"""

from __future__ import annotations

from api.names import DNS_LABEL_LIMIT, KUBEAI_MODEL_NAME_LIMIT, LABEL_VALUE_LIMIT, fit

__all__ = ["DNS_LABEL_LIMIT", "KUBEAI_MODEL_NAME_LIMIT", "LABEL_VALUE_LIMIT", "fit"]
