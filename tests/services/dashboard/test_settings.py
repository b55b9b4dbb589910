"""The dashboard's flags: required ones, defaults, environment fallbacks, one-line errors."""

from __future__ import annotations

import pytest

from services.dashboard.settings import parse_settings
from services.flags import ServiceFlagError

REQUIRED = [
    "--issuer",
    "https://auth.example.com/realms/magicstick",
    "--audience",
    "magicstick-apps",
    "--jwks-uri",
    "https://auth.example.com/certs",
]


def test_the_defaults_are_the_deployed_ones() -> None:
    settings = parse_settings(REQUIRED, {})
    assert (settings.token_header, str(settings.listen), settings.system_namespace, settings.user_prefix) == (
        "X-Magicstick-Id-Token",
        "0.0.0.0:8080",
        "ai-system",
        "oidc:",
    )
    assert settings.kubeconfig is None
    assert settings.stack_name == "magicstick"


def test_a_flag_wins_over_its_environment_variable() -> None:
    settings = parse_settings(
        [*REQUIRED, "--system-namespace", "appliance"], {"MAGICSTICK_DASHBOARD_SYSTEM_NAMESPACE": "other"}
    )
    assert settings.system_namespace == "appliance"
    assert (
        parse_settings(REQUIRED, {"MAGICSTICK_DASHBOARD_ROLES_CLAIM": "realm_access.roles"}).claims.roles
        == "realm_access.roles"
    )


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (REQUIRED[2:], "--issuer"),
        ([*REQUIRED, "--system-namespace", "Not_A_Label"], "--system-namespace"),
        ([*REQUIRED, "--token-header", "bad header"], "--token-header"),
        ([*REQUIRED, "--jwks-timeout-seconds", "0"], "--jwks-timeout-seconds"),
    ],
)
def test_an_invalid_value_names_its_flag(arguments: list[str], named: str) -> None:
    with pytest.raises(ServiceFlagError, match=named):
        parse_settings(arguments, {})
