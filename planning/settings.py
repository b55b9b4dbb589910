"""Run settings the plan depends on (a pure value; the program reads them from Pulumi config)."""

from __future__ import annotations

from dataclasses import dataclass, field

from planning.access_settings import AccessSettings

DEFAULT_SYSTEM_NAMESPACE = "ai-system"
FLUX_NAMESPACE = "flux-system"
FIELD_MANAGER = "magicstick"
APPLIANCE_NAME = "local"
DEFAULT_STACK_NAME = "magicstick"
"""The Pulumi Kubernetes Operator Stack (pulumi.com/v1) the program runs under, in the system namespace."""


@dataclass(frozen=True)
class PlanSettings:
    system_namespace: str = DEFAULT_SYSTEM_NAMESPACE
    domain: str = "magicstick.example.com"
    local_domain: str = "magicstick.local"
    field_manager: str = FIELD_MANAGER
    access: AccessSettings = field(default_factory=AccessSettings)
    """Single sign-on, the shared Gateway and the access guard (planning.instances.access)."""
    stack_name: str = DEFAULT_STACK_NAME
    """The PKO Stack whose last update and Stalled condition Appliance/local.status shows (planning.operator)."""
