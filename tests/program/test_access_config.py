"""The access settings as `magicstick:` config: one rule per key, lists in every form, the defaults."""

from __future__ import annotations

from dataclasses import asdict, fields
from pathlib import Path

import pytest
import yaml

from cli.offline import run_offline
from planning.access_settings import AccessSettings
from program import main as program
from program.access_config import ACCESS_KEYS, access_settings
from program.settings import CONFIG_KEYS, RunSettingsError, Settings
from tests.program import every_access_key

REPOSITORY = Path(__file__).resolve().parents[2]
DEMO = REPOSITORY / "examples" / "demo" / "snapshot.yaml"
NOW = "2026-01-01T12:00:00Z"
KEYS = {entry.key: entry for entry in ACCESS_KEYS}
DIGEST = "a" * 64

VALID = [
    ("oidcIssuer", "https://auth.example.com/realms/magicstick", "https://auth.example.com/realms/magicstick"),
    ("oidcIssuer", "https://auth.example.com:8443/", "https://auth.example.com:8443/"),
    ("oidcClientId", "dashboard-client", "dashboard-client"),
    ("oidcClientId", "urn:example:client_1", "urn:example:client_1"),
    ("oidcClientSecretName", "sso-client", "sso-client"),
    ("oidcClientSecretName", "sso.client-1", "sso.client-1"),
    ("oidcScopes", "openid", ("openid",)),
    ("oidcScopes", "openid,profile,groups", ("openid", "profile", "groups")),
    ("oidcScopes", " openid , email ", ("openid", "email")),
    ("oidcScopes", '["openid", "offline_access"]', ("openid", "offline_access")),
    ("oidcScopes", ["email", "openid"], ("email", "openid")),
    ("oidcJwksUri", "https://auth.example.com/keys", "https://auth.example.com/keys"),
    ("oidcJwksUri", "https://auth.example.com/keys?version=2", "https://auth.example.com/keys?version=2"),
    ("oidcAuthorizationEndpoint", "https://auth.example.com/authorize", "https://auth.example.com/authorize"),
    (
        "oidcAuthorizationEndpoint",
        "https://auth.example.com/authorize?tenant=2",
        "https://auth.example.com/authorize?tenant=2",
    ),
    ("oidcTokenEndpoint", "https://auth.example.com/token", "https://auth.example.com/token"),
    ("oidcTokenEndpoint", "https://auth.example.com/token?tenant=2", "https://auth.example.com/token?tenant=2"),
    ("oidcEndSessionEndpoint", "https://auth.example.com/logout", "https://auth.example.com/logout"),
    ("oidcEndSessionEndpoint", "https://auth.example.com/logout?tenant=2", "https://auth.example.com/logout?tenant=2"),
    ("rolesClaim", "realm_access.roles", "realm_access.roles"),
    ("groupsClaim", "https://example.com/groups", "https://example.com/groups"),
    ("subjectClaim", "preferred_username", "preferred_username"),
    ("gatewayName", "edge", "edge"),
    ("gatewayNamespace", "gateway-system", "gateway-system"),
    ("gatewayListener", "https", "https"),
    ("gatewayListener", "https-443", "https-443"),
    ("dashboardHosts", "dashboard.example.local", ("dashboard.example.local",)),
    (
        "dashboardHosts",
        "dashboard.example.local,dashboard.example.com",
        ("dashboard.example.local", "dashboard.example.com"),
    ),
    ("dashboardHosts", '["dashboard.example.com"]', ("dashboard.example.com",)),
    ("dashboardHosts", ["dashboard"], ("dashboard",)),
    (
        "guardImage",
        "registry.example.com/magicstick/access-guard:1.0.0",
        "registry.example.com/magicstick/access-guard:1.0.0",
    ),
    ("guardImage", "registry.example.com:5000/guard:v1", "registry.example.com:5000/guard:v1"),
    (
        "guardImage",
        f"registry.example.com/magicstick/access-guard@sha256:{DIGEST}",
        f"registry.example.com/magicstick/access-guard@sha256:{DIGEST}",
    ),
]

INVALID = [
    ("oidcIssuer", "http://x", "'http://x' must be an https URL"),
    ("oidcIssuer", "auth.example.com", "must be an https URL"),
    ("oidcIssuer", "https://", "must be an https URL"),
    ("oidcIssuer", "https://auth.example.com/realms/a b", "must be an https URL"),
    ("oidcIssuer", "https://auth.example.com:99999/", "must be an https URL"),
    ("oidcIssuer", "https://auth.example.com/?realm=x", "must be an https URL without a query or fragment"),
    ("oidcIssuer", "https://auth.example.com/#x", "must be an https URL without a query or fragment"),
    ("oidcIssuer", "https://user:CHANGEME@auth.example.com/", "must be an https URL without a user or password"),
    ("oidcClientId", "my client", "must be printable ASCII without spaces"),
    ("oidcClientId", "clïent", "must be printable ASCII without spaces"),
    ("oidcClientSecretName", "Sso_Client", "must be a DNS-1123 subdomain"),
    ("oidcClientSecretName", "a" * 254, "must be a DNS-1123 subdomain"),
    ("oidcScopes", "profile,email", "'profile,email' must include openid"),
    ("oidcScopes", "openid,,email", "'openid,,email' has an empty entry"),
    ("oidcScopes", "openid,openid", "'openid' is listed twice"),
    ("oidcScopes", "openid,my scope", "'my scope' must be a scope"),
    ("oidcScopes", '["openid", 3]', "must be a list of strings"),
    ("oidcScopes", '["openid"', "is not a JSON array"),
    ("oidcScopes", {"openid": True}, "must be a list of strings"),
    ("oidcJwksUri", "http://auth.example.com/keys", "must be an https URL"),
    ("oidcJwksUri", "https://auth.example.com/keys#k1", "must be an https URL without a fragment"),
    ("oidcAuthorizationEndpoint", "http://auth.example.com/authorize", "must be an https URL"),
    ("oidcAuthorizationEndpoint", "https://auth.example.com/authorize#a", "must be an https URL without a fragment"),
    ("oidcTokenEndpoint", "http://auth.example.com/token", "must be an https URL"),
    ("oidcTokenEndpoint", "https://auth.example.com/token#t", "must be an https URL without a fragment"),
    ("oidcEndSessionEndpoint", "http://auth.example.com/logout", "must be an https URL"),
    ("oidcEndSessionEndpoint", "https://auth.example.com/logout#l", "must be an https URL without a fragment"),
    ("rolesClaim", "realm roles", "must be a claim name without spaces"),
    ("groupsClaim", "groups\t", "must be a claim name without spaces"),
    ("subjectClaim", 7, "must be a string, not int"),
    ("gatewayName", "Edge", "must be a DNS label"),
    ("gatewayName", "edge.gateway", "must be a DNS label"),
    ("gatewayNamespace", "g" * 64, "must be a DNS label"),
    ("gatewayListener", "-https", "must be a DNS label"),
    ("gatewayName", "edge\n", "'edge\\n' must be a DNS label"),
    ("gatewayListener", ["https"], "must be a string, not a list"),
    ("dashboardHosts", "https://dashboard.example.com", "must be a host name, without a scheme"),
    ("dashboardHosts", "*.example.com", "must be a host name, not a wildcard"),
    ("dashboardHosts", "dashboard.example.com:8443", "must be a host name, without a port or path"),
    ("dashboardHosts", "192.0.2.10", "must be a host name, not an IP address"),
    ("dashboardHosts", "Dashboard.example.com", "must be a DNS host name"),
    ("dashboardHosts", f"{'d' * 64}.example.com", "must be a DNS host name"),
    ("dashboardHosts", "dashboard.example.com,dashboard.example.com", "is listed twice"),
    ("guardImage", "access-guard", "must be registry/repository:tag or registry/repository@sha256:<64 hex digits>"),
    ("guardImage", "registry.example.com/magicstick/access-guard", "must be registry/repository:tag"),
    ("guardImage", "registry.example.com/magicstick/access-guard@sha256:abc", "must be registry/repository:tag"),
    ("guardImage", "registry.example.com/magicstick/access-guard:1.0\n", "must be registry/repository:tag"),
    ("guardImage", {"secure": "v1:CHANGEME"}, "is an encrypted value; the access settings are not secrets"),
]


@pytest.mark.parametrize(("key", "value", "expected"), VALID, ids=[f"{key}={value}" for key, value, _ in VALID])
def test_a_valid_value_sets_its_field(key, value, expected):
    settings = access_settings({key: value})

    assert getattr(settings, KEYS[key].field) == expected


@pytest.mark.parametrize(("key", "value", "rule"), INVALID, ids=[f"{key}={value}" for key, value, _ in INVALID])
def test_an_invalid_value_is_one_line_naming_the_key_and_the_rule(key, value, rule):
    with pytest.raises(RunSettingsError) as raised:
        access_settings({key: value})

    message = str(raised.value)
    assert message.startswith(f"magicstick:{key}: ")
    assert rule in message
    assert "\n" not in message


def test_the_issuer_error_reads_as_documented():
    with pytest.raises(RunSettingsError, match=r"^magicstick:oidcIssuer: 'http://x' must be an https URL$"):
        access_settings({"oidcIssuer": "http://x"})


def test_an_error_names_the_key_as_the_caller_spells_it():
    with pytest.raises(RunSettingsError, match=r"^--gateway-name: 'Edge' must be a DNS label"):
        access_settings({"gatewayName": "Edge"}, name=lambda key: KEYS[key].flag)


def test_every_valid_and_invalid_table_covers_every_key():
    assert {key for key, _, _ in VALID} == set(KEYS)
    assert {key for key, _, _ in INVALID} == set(KEYS)


def test_no_value_gives_the_defaults_of_access_settings():
    assert asdict(access_settings({})) == {
        "gateway_name": "magicstick",
        "gateway_namespace": "ai-system",
        "gateway_listener": None,
        "dashboard_hosts": (),
        "dashboard_host_prefix": "dashboard",
        "oidc_issuer": "https://auth.magicstick.example.com/realms/magicstick",
        "oidc_client_id": "magicstick-apps",
        "oidc_client_secret": "magicstick-oidc-client",
        "oidc_scopes": ("openid", "profile", "email"),
        "oidc_jwks_uri": None,
        "oidc_authorization_endpoint": None,
        "oidc_token_endpoint": None,
        "oidc_end_session_endpoint": None,
        "roles_claim": "roles",
        "groups_claim": "groups",
        "subject_claim": "sub",
        "guard_image": "registry.example.com/magicstick/access-guard:CHANGEME",
        "guard_service": "magicstick-access-guard",
        "guard_port": 8080,
        "callback_timeout": "15s",
    }


@pytest.mark.parametrize("empty", [None, "", "  ", "[]", []], ids=repr)
def test_an_empty_list_means_the_default(empty):
    settings = access_settings({"oidcScopes": empty, "dashboardHosts": empty})

    assert settings.oidc_scopes == AccessSettings().oidc_scopes
    assert settings.dashboard_hosts == ()


def test_an_empty_string_means_the_default():
    settings = access_settings({entry.key: "" for entry in ACCESS_KEYS})

    assert settings == AccessSettings()


@pytest.mark.parametrize(
    "value",
    ['["openid","profile","email"]', "openid,profile,email", "openid, profile, email", ["openid", "profile", "email"]],
    ids=["json", "comma", "comma-and-spaces", "yaml-list"],
)
def test_a_list_in_any_form_gives_the_same_tuple(value):
    assert access_settings({"oidcScopes": value}).oidc_scopes == ("openid", "profile", "email")


def test_keys_that_are_not_access_keys_are_left_to_their_readers():
    assert access_settings({"domain": "Not A Domain", "oidcClientId": "c"}) == AccessSettings(oidc_client_id="c")


def test_the_flag_of_a_key_is_the_key_in_kebab_case():
    assert [entry.flag for entry in ACCESS_KEYS[:4]] == [
        "--oidc-issuer",
        "--oidc-client-id",
        "--oidc-client-secret-name",
        "--oidc-scopes",
    ]


def test_every_key_sets_a_field_of_access_settings_once():
    names = {f.name for f in fields(AccessSettings)}

    assert all(entry.field in names for entry in ACCESS_KEYS)
    assert len({entry.field for entry in ACCESS_KEYS}) == len(ACCESS_KEYS)


@pytest.fixture(scope="module")
def declared() -> dict:
    return yaml.safe_load((REPOSITORY / "Pulumi.yaml").read_text())["config"]


class TestPulumiYaml:
    def test_it_declares_exactly_the_keys_the_program_reads(self, declared):
        assert set(declared) == {f"magicstick:{key}" for key in CONFIG_KEYS}

    def test_every_access_key_has_a_description(self, declared):
        for entry in ACCESS_KEYS:
            assert declared[f"magicstick:{entry.key}"]["description"].strip(), entry.key

    def test_its_defaults_are_the_defaults_of_access_settings(self, declared):
        defaults = AccessSettings()
        for entry in ACCESS_KEYS:
            default = getattr(defaults, entry.field)
            declaration = declared[f"magicstick:{entry.key}"]
            if default in (None, ()):
                # Declared empty: the Pulumi CLI requires every key declared without a default.
                assert declaration["default"] in ("", []), entry.key
                assert access_settings({entry.key: declaration["default"]}) == defaults, entry.key
            else:
                assert access_settings({entry.key: declaration["default"]}) == defaults, entry.key
                assert getattr(access_settings({entry.key: declaration["default"]}), entry.field) == default

    def test_a_list_key_declares_no_type_so_that_both_forms_pass_pulumi(self, declared):
        for entry in ACCESS_KEYS:
            declaration = declared[f"magicstick:{entry.key}"]
            assert ("type" not in declaration) if entry.is_list else (declaration["type"] == "string"), entry.key

    def test_its_defaults_stay_on_the_public_boundary(self, declared):
        for entry in ACCESS_KEYS:
            default = str(declared[f"magicstick:{entry.key}"].get("default", ""))
            assert ".example.com" in default or "." not in default, entry.key


class TestFromPulumiConfig:
    def test_unset_keys_give_the_defaults(self):
        settings, _ = run_offline(Settings.from_config, {})

        assert settings.plan.access == AccessSettings()

    def test_every_key_reaches_the_plan_settings(self):
        settings, _ = run_offline(Settings.from_config, every_access_key.CONFIG)

        assert set(every_access_key.CONFIG) == set(KEYS)
        assert settings.plan.access == every_access_key.SETTINGS

    def test_an_invalid_value_stops_the_run_before_anything_is_declared(self):
        config = {"snapshotFile": str(DEMO), "now": NOW, "oidcIssuer": "http://auth.example.com"}

        with pytest.raises(
            RunSettingsError, match=r"^magicstick:oidcIssuer: 'http://auth.example.com' must be an https URL$"
        ):
            run_offline(program.run, config)

    def test_the_security_policy_carries_the_configured_issuer_and_client(self):
        config = {
            "snapshotFile": str(DEMO),
            "now": NOW,
            "oidcIssuer": "https://sso.example.com/realms/x",
            "oidcClientId": "stick",
        }

        _, run = run_offline(program.run, config)

        (policy,) = [r.inputs for r in run.registrations if r.inputs.get("kind") == "SecurityPolicy"]
        assert policy["spec"]["oidc"]["provider"]["issuer"] == "https://sso.example.com/realms/x"
        assert policy["spec"]["oidc"]["clientID"] == "stick"


def test_every_key_of_pulumi_yaml_has_a_default_so_that_the_cli_requires_none(declared):
    """`pulumi up` refuses a stack that lacks a value for a declared key without a default."""
    assert [key for key, declaration in declared.items() if "default" not in declaration] == []
