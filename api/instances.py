"""AppInstance: one concrete use of an application (an OpenClaw, Hermes, ... instance).

Access is deny-by-default: omitted values mean shared SSO, minimum role ``user`` and both the
local and the public derived hostname. ``authentication: none`` creates an unauthenticated
route and is honoured only when written explicitly; no default ever produces it.

Optional sharing narrows access to allow-lists: mode ``all`` carries no lists; mode
``selected`` requires SSO, and an empty selection denies everyone. Each list holds at most 100
unique, stable identity-provider IDs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StringConstraints, ValidationInfo, field_validator
from pydantic.config import JsonDict

from api.meta import ApiModel
from api.models import DNS_LABEL_PATTERN

APPLICATIONS: tuple[str, ...] = ("openclaw", "hermes", "paperclip", "kubeopencode", "odysseus")
"""The applications an AppInstance can name."""

MAX_SHARING_IDS = 100

Authentication = Literal["sso", "none"]
Role = Literal["user", "viewer", "operator", "admin"]
Exposure = Literal["localAndPublic", "local"]
SharingMode = Literal["all", "selected"]
IdentityId = Annotated[str, StringConstraints(min_length=1, max_length=255)]


def _cel(rule: str, message: str) -> JsonDict:
    return {"rule": rule, "message": message}


def _id_list(description: str) -> Any:
    return Field(
        default_factory=list,
        max_length=MAX_SHARING_IDS,
        description=description,
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )


class SharingSpec(ApiModel):
    """Instance allow-lists. Omitting the whole object keeps role-based access."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                _cel(
                    "self.mode != 'all' || ((!has(self.users) || size(self.users) == 0) && "
                    "(!has(self.groups) || size(self.groups) == 0))",
                    "sharing mode all requires empty users and groups",
                )
            ]
        }
    )

    mode: SharingMode
    users: list[IdentityId] = _id_list("Allowed user IDs, unique, at most 100.")
    groups: list[IdentityId] = _id_list("Allowed group IDs, unique, at most 100.")

    @field_validator("users", "groups")
    @classmethod
    def _unique_and_empty_for_all(cls, ids: list[str], info: ValidationInfo) -> list[str]:
        seen: set[str] = set()
        for identity in ids:
            if identity in seen:
                raise ValueError(f"{info.field_name} lists {identity!r} more than once; IDs must be unique")
            seen.add(identity)
        if ids and info.data.get("mode") == "all":
            raise ValueError(f"{info.field_name} must be empty when sharing mode is all")
        return ids


class AccessSpec(ApiModel):
    """How an instance is reached: authentication, minimum role, hostnames and allow-lists."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                _cel(
                    "!has(self.sharing) || self.sharing.mode != 'selected' || "
                    "!has(self.authentication) || self.authentication == 'sso'",
                    "sharing mode selected requires authentication sso",
                )
            ]
        }
    )

    authentication: Authentication = Field(default="sso", description="none creates an unauthenticated route.")
    role: Role = Field(default="user", description="Minimum role; higher roles inherit lower access.")
    exposure: Exposure = Field(default="localAndPublic", description="local omits the public hostname.")
    sharing: SharingSpec | None = None

    @field_validator("sharing")
    @classmethod
    def _selected_requires_sso(cls, sharing: SharingSpec | None, info: ValidationInfo) -> SharingSpec | None:
        authentication = info.data.get("authentication")
        if sharing is not None and sharing.mode == "selected" and authentication not in (None, "sso"):
            raise ValueError(f"sharing mode selected requires authentication sso, not {authentication}")
        return sharing


class AppInstanceSpec(ApiModel):
    """Intent for one application instance; the operator enables the modules it requires."""

    application: str = Field(description="One of: " + ", ".join(APPLICATIONS) + ".")
    enabled: bool = True
    target_namespace: str = Field(default="ai", pattern=DNS_LABEL_PATTERN, max_length=63)
    access: AccessSpec = Field(default_factory=AccessSpec)
    values: dict[str, Any] = Field(default_factory=dict, description="Chart values of the instance.")

    @field_validator("application")
    @classmethod
    def _known_application(cls, application: str) -> str:
        if application not in APPLICATIONS:
            raise ValueError(f"application {application!r} is not one of {', '.join(APPLICATIONS)}")
        return application


def authentication_is_explicit(raw_spec: Mapping[str, Any] | None) -> bool:
    """True when the raw wire spec writes ``access.authentication`` itself.

    Pure. Status uses it to say that an unauthenticated route was an explicit request; an
    omitted value is the SSO default and never ``none``.
    """
    if not isinstance(raw_spec, Mapping):
        return False
    access = raw_spec.get("access")
    return isinstance(access, Mapping) and access.get("authentication") is not None
