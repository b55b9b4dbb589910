"""Builders of raw wire specs and a helper that returns the error a spec is rejected with."""

from __future__ import annotations

from typing import Any

import pytest

from api.validation import SpecError, parse_spec


def rejection(kind: str, spec: dict[str, Any]) -> SpecError:
    """The SpecError ``parse_spec`` raises for ``spec``; fails the test when it is accepted."""
    with pytest.raises(SpecError) as caught:
        parse_spec(kind, spec)
    return caught.value


def local_model(**local: Any) -> dict[str, Any]:
    """A ModelActivation spec of type local with the given ``local`` fields (wire names)."""
    return {"type": "local", "local": local}


def host_operation(action: str, **fields: Any) -> dict[str, Any]:
    """A HostOperation spec bound to a node, boot and request, with the given extra fields."""
    return {
        "action": action,
        "nodeName": "worker-1",
        "nodeUID": "0f6e2d1c-0000-4000-8000-000000000001",
        "bootID": "6b1f2c3d-0000-4000-8000-000000000002",
        "requestID": "request-1",
        "acknowledgeDisruption": True,
        **fields,
    }


def instance(**access: Any) -> dict[str, Any]:
    """An openclaw AppInstance spec with the given ``access`` fields."""
    return {"application": "openclaw", "access": access}


def gpu_sharing(mode: str, **fields: Any) -> dict[str, Any]:
    """A gpuSharing object selecting one node."""
    return {"mode": mode, "nodeName": "worker-1", "nodeUID": "0f6e2d1c-0000-4000-8000-000000000001", **fields}


GPU_MEMORY = {"carveoutIndex": 2, "dynamicLimitMi": 98304}
NETWORK_REF = {"name": "wifi-credentials", "uid": "3c1d0000-0000-4000-8000-000000000003"}

VALID_HOST_OPERATIONS = {
    "prepare-gpu": host_operation("prepare-gpu", planId="plan-1", experimentConsent=True, experimentMode="single-gpu"),
    "configure-gpu-memory": host_operation(
        "configure-gpu-memory", planId="plan-1", experimentConsent=True, gpuMemory=GPU_MEMORY
    ),
    "configure-network": host_operation("configure-network", planId="plan-1", networkRef=NETWORK_REF),
    "scan-wifi": host_operation("scan-wifi"),
    "reboot": host_operation("reboot"),
    "poweroff": host_operation("poweroff"),
    "clear-model-cache": host_operation("clear-model-cache", planId="cache-plan-1"),
}
"""One valid HostOperation spec per action."""
