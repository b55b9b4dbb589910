"""How the objects that run a ModelActivation's model are marked, once for the program and the
reconcile trigger. Pure.

The program labels what runs a model (planning/models/kubeai.py, planning/models/direct.py):
every KubeAI Model and every object of a direct runtime carries MODEL_ACTIVATION_LABEL, the
activation's name fitted to a label value; a direct runtime's objects (Deployment, Service and,
for the realtime runtime, the stage ConfigMap) also carry RUNTIME_LABEL, and the activation's
status names the runtime in RUNTIME_STATUS_FIELD. The reconcile trigger finds a deleted
activation's direct runtime by the same labels (`runtime_selector`) and holds the activation
with RUNTIME_CLEANUP_FINALIZER until it has deleted them (services/reconcile_trigger/cleanup.py).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from api.names import LABEL_VALUE_LIMIT, fit

MODEL_ACTIVATION_LABEL: Final = "appliance.magicstick.dev/model-activation"
"""On every KubeAI Model and direct-runtime object: the activation's name (`activation_label_value`)."""
RUNTIME_LABEL: Final = "appliance.magicstick.dev/runtime"
"""On every object of a direct runtime (and on its Pods): which runtime, a DirectRuntimeKind label."""
RUNTIME_STATUS_FIELD: Final = "runtime"
"""The field of a ModelActivation's status that names its direct runtime (a DirectRuntimeKind label)."""
RUNTIME_CLEANUP_FINALIZER: Final = "appliance.magicstick.dev/runtime-cleanup"
"""Held on a ModelActivation with a direct runtime by the reconcile trigger, which added it and
alone removes it, once the runtime's objects are deleted."""


class DirectRuntimeKind(StrEnum):
    """A runtime the program deploys itself; the value is also the prefix of its reasons."""

    REALTIME = "Realtime"
    FREETOKEN = "FreeToken"

    @property
    def label(self) -> str:
        """The value of RUNTIME_LABEL and of the status' RUNTIME_STATUS_FIELD."""
        return self.value.lower()


DIRECT_RUNTIME_LABELS: Final = frozenset(kind.label for kind in DirectRuntimeKind)


def activation_label_value(activation: str) -> str:
    """The value of MODEL_ACTIVATION_LABEL for the activation named `activation`. Pure."""
    return fit(activation, LABEL_VALUE_LIMIT)


def runtime_selector(activation: str) -> str:
    """The label selector of every object of `activation`'s direct runtime, whichever runtime. Pure."""
    return f"{MODEL_ACTIVATION_LABEL}={activation_label_value(activation)},{RUNTIME_LABEL}"
