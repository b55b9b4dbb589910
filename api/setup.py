"""ApplianceSetup: the first-run lifecycle record of an installation (ApplianceSetup/local).

Host automation creates it explicitly; an absent resource never means first run. Neither spec
nor status has a field for claims, session values, passwords or recovery codes, and the CRD
prunes any such field a client sends.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from api.meta import ApiModel

ApplianceSetupPhase = Literal["Pending", "Claimed", "Applying", "Completed", "Failed", "CompletedLegacy"]

UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"


class ApplianceSetupSpec(ApiModel):
    """Which setup flow version runs for which installation."""

    setup_version: str = Field(pattern=r"^v[0-9]+$", max_length=16, description="Setup flow version, e.g. v1.")
    installation_id: str = Field(pattern=UUID_PATTERN, description="Installation UUID.")


class ApplianceSetupStatus(ApiModel):
    """Progress of the first-run setup; lastErrorCode is a non-sensitive code, not a message."""

    phase: ApplianceSetupPhase
    claimed_at: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    completed_at: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    last_error_code: str | None = Field(default=None, pattern=r"^[A-Za-z0-9._-]+$", max_length=63)
    observed_generation: int | None = None
