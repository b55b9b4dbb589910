"""Appliance: the Git-owned aggregate of the local installation (usually Appliance/local).

The spec holds defaults only: a profile hint, the Flux source for generated objects and the
module defaults from which missing ModuleActivations are seeded once. Runtime intent lives in
ModuleActivation, ModelActivation and AppInstance, which take precedence.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from api.meta import ApiModel

Profile = Literal["minimal", "ai-workstation", "full"]
DEFAULT_PROFILE: Profile = "ai-workstation"


class SourceRef(ApiModel):
    """The Flux GitRepository that generated Kustomizations and HelmReleases read from."""

    kind: Literal["GitRepository"] = "GitRepository"
    name: str = Field(min_length=1, max_length=253)
    namespace: str | None = Field(default=None, min_length=1, max_length=63)


class ModuleDefault(ApiModel):
    """A Git-owned module default; only enabled entries seed a ModuleActivation."""

    enabled: bool = True


class ApplianceSpec(ApiModel):
    """Defaults of the installation; runtime CRs override them."""

    profile: Profile = Field(default=DEFAULT_PROFILE, description="Public profile hint.")
    source: SourceRef | None = None
    modules: dict[str, ModuleDefault] = Field(default_factory=dict, description="Module defaults by name.")
    instances: list[Any] | dict[str, Any] | None = Field(
        default=None, description="Deprecated and ignored; use AppInstance resources."
    )
