"""Access settings (single sign-on, the shared Gateway, the access guard) from a plain mapping. Pure.

`ACCESS_KEYS` is the one table of the `magicstick:` config keys that make an AccessSettings:
each key, the field it sets and the rule its value follows. The program reads the mapping from
Pulumi config (program.settings); `magicstick render` from a settings file and flags
(cli.settings_file, cli.main). Both get the same AccessSettings and the same errors.

Values arrive as Pulumi passes them: strings. A list is a JSON array (Pulumi's structured
config, what `config.get_object` parses) or a comma-separated string; a YAML settings file may
give it as a list. An absent or empty value means AccessSettings' default.

An invalid value raises RunSettingsError with one line naming the key and the rule, for example
`magicstick:oidcIssuer: 'http://x' must be an https URL`.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from api.models import DNS_LABEL_PATTERN
from catalogs.types import _IMAGE as IMAGE_PATTERN  # the catalogs' rule for a pinned image, shared on purpose
from planning.access_settings import AccessSettings
from program.errors import RunSettingsError

__all__ = ["ACCESS_KEYS", "AccessKey", "access_settings", "config_name"]

CONFIG_NAMESPACE = "magicstick"

_DNS_LABEL = re.compile(DNS_LABEL_PATTERN)
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_PRINTABLE = re.compile(r"[\x21-\x7e]+")
_SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
"""RFC 6749 scope-token: printable ASCII except space, '"' and '\\'."""
_CLAIM_NAME = re.compile(r"[^\s\x00-\x1f\x7f]+")


class _Broken(ValueError):
    """A value breaks its rule; the message is the rule, to follow the quoted value."""


def config_name(key: str) -> str:
    """How an error names `key` when it comes from Pulumi config: `magicstick:<key>`."""
    return f"{CONFIG_NAMESPACE}:{key}"


def _https_url(value: str, *, query: bool) -> None:
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError when the port is not a number in range
    except ValueError as error:
        raise _Broken("must be an https URL") from error
    if parts.scheme != "https" or not parts.hostname or _has_space(value):
        raise _Broken("must be an https URL")
    if parts.username is not None or parts.password is not None:
        raise _Broken("must be an https URL without a user or password")
    if "#" in value:
        raise _Broken(
            "must be an https URL without a fragment" if query else "must be an https URL without a query or fragment"
        )
    if not query and "?" in value:
        raise _Broken("must be an https URL without a query or fragment")


def _issuer(value: str) -> None:
    _https_url(value, query=False)


def _key_set(value: str) -> None:
    _https_url(value, query=True)


def _has_space(value: str) -> bool:
    return any(character.isspace() for character in value)


def _client_id(value: str) -> None:
    if not _PRINTABLE.fullmatch(value):
        raise _Broken("must be printable ASCII without spaces")


def _dns_label(value: str) -> None:
    if len(value) > 63 or not _DNS_LABEL.fullmatch(value):
        raise _Broken("must be a DNS label (lower-case letters, digits and '-', at most 63 characters)")


def _dns_subdomain(value: str) -> None:
    if len(value) > 253 or not _DNS_SUBDOMAIN.fullmatch(value):
        raise _Broken("must be a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', at most 253 characters)")


def _claim(value: str) -> None:
    if not _CLAIM_NAME.fullmatch(value):
        raise _Broken("must be a claim name without spaces")


def _scope(value: str) -> None:
    if not _SCOPE_TOKEN.fullmatch(value):
        raise _Broken("must be a scope (printable ASCII without spaces, '\"' or '\\')")


def _hostname(value: str) -> None:
    if "://" in value:
        raise _Broken("must be a host name, without a scheme")
    if "*" in value:
        raise _Broken("must be a host name, not a wildcard")
    if "/" in value or ":" in value:
        raise _Broken("must be a host name, without a port or path")
    try:
        ipaddress.ip_address(value)
    except ValueError:
        pass
    else:
        raise _Broken("must be a host name, not an IP address")
    if (
        len(value) > 253
        or not all(len(label) <= 63 for label in value.split("."))
        or not _DNS_SUBDOMAIN.fullmatch(value)
    ):
        raise _Broken("must be a DNS host name (lower-case letters, digits, '-' and '.')")


def _image(value: str) -> None:
    if not IMAGE_PATTERN.fullmatch(value):
        raise _Broken("must be registry/repository:tag or registry/repository@sha256:<64 hex digits>")


@dataclass(frozen=True)
class AccessKey:
    """One `magicstick:` config key of the access settings."""

    key: str
    """The key without its namespace, as Pulumi.yaml and a settings file spell it."""
    field: str
    """The AccessSettings field it sets."""
    rule: Callable[[str], None]
    """Checks one value (each item of a list); raises _Broken with the rule."""
    metavar: str
    summary: str
    """What the value is, in a few words (the flag's help)."""
    is_list: bool = False
    required_item: str | None = None
    """A list must hold this item."""

    @property
    def flag(self) -> str:
        """The `magicstick render` flag: the key in kebab case (`oidcClientId` -> `--oidc-client-id`)."""
        return "--" + re.sub(r"(?<!^)([A-Z])", r"-\1", self.key).lower()


ACCESS_KEYS: tuple[AccessKey, ...] = (
    AccessKey("oidcIssuer", "oidc_issuer", _issuer, "URL", "the OpenID Connect issuer, an https URL"),
    AccessKey(
        "oidcClientId", "oidc_client_id", _client_id, "ID", "the OIDC client ID, also the audience of the ID token"
    ),
    AccessKey(
        "oidcClientSecretName",
        "oidc_client_secret",
        _dns_subdomain,
        "NAME",
        "the Secret in the gateway namespace whose key client-secret holds the client secret",
    ),
    AccessKey(
        "oidcScopes",
        "oidc_scopes",
        _scope,
        "SCOPES",
        "the scopes to request, comma-separated; must include openid",
        is_list=True,
        required_item="openid",
    ),
    AccessKey(
        "oidcJwksUri",
        "oidc_jwks_uri",
        _key_set,
        "URL",
        "the issuer's key set (unset: <issuer>/protocol/openid-connect/certs)",
    ),
    AccessKey(
        "oidcAuthorizationEndpoint",
        "oidc_authorization_endpoint",
        _key_set,
        "URL",
        "the issuer's authorization endpoint (unset: <issuer>/protocol/openid-connect/auth)",
    ),
    AccessKey(
        "oidcTokenEndpoint",
        "oidc_token_endpoint",
        _key_set,
        "URL",
        "the issuer's token endpoint (unset: <issuer>/protocol/openid-connect/token)",
    ),
    AccessKey(
        "oidcEndSessionEndpoint",
        "oidc_end_session_endpoint",
        _key_set,
        "URL",
        "the issuer's end session (logout) endpoint (unset: <issuer>/protocol/openid-connect/logout)",
    ),
    AccessKey("rolesClaim", "roles_claim", _claim, "CLAIM", "the ID token claim that holds the user's roles"),
    AccessKey("groupsClaim", "groups_claim", _claim, "CLAIM", "the ID token claim that holds the user's groups"),
    AccessKey("subjectClaim", "subject_claim", _claim, "CLAIM", "the ID token claim that identifies the user"),
    AccessKey("gatewayName", "gateway_name", _dns_label, "NAME", "the shared Gateway the routes attach to"),
    AccessKey(
        "gatewayNamespace",
        "gateway_namespace",
        _dns_label,
        "NS",
        "the shared Gateway's namespace, where the routes live",
    ),
    AccessKey(
        "gatewayListener",
        "gateway_listener",
        _dns_label,
        "LISTENER",
        "the Gateway listener (sectionName) to attach to (unset: every listener)",
    ),
    AccessKey(
        "dashboardHosts",
        "dashboard_hosts",
        _hostname,
        "HOSTS",
        "the dashboard hosts of the login callback routes, comma-separated (unset: dashboard.<local domain>, dashboard.<domain>)",
        is_list=True,
    ),
    AccessKey(
        "guardImage",
        "guard_image",
        _image,
        "IMAGE",
        "the access guard image, registry/repository:tag or @sha256 digest",
    ),
)


def access_settings(values: Mapping[str, Any], *, name: Callable[[str], str] = config_name) -> AccessSettings:
    """The AccessSettings that `values` (keys of ACCESS_KEYS) give; an absent or empty value: the default. Pure.

    Other keys are ignored. `name` says how an error names a key (default: `magicstick:<key>`).
    Raises RunSettingsError, one line naming the key and the rule.
    """
    fields: dict[str, Any] = {}
    for entry in ACCESS_KEYS:
        value = (
            _list(entry, values.get(entry.key), name) if entry.is_list else _text(entry, values.get(entry.key), name)
        )
        if value is not None:
            fields[entry.field] = value
    return AccessSettings(**fields)


def _text(entry: AccessKey, value: Any, name: Callable[[str], str]) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise RunSettingsError(f"{name(entry.key)}: {_not_text(value)}")
    _check(entry, value, name)
    return value


def _list(entry: AccessKey, value: Any, name: Callable[[str], str]) -> tuple[str, ...] | None:
    items = _items(entry, value, name)
    if not items:
        return None
    for item in items:
        _check(entry, item, name)
    for index, item in enumerate(items):
        if item in items[:index]:
            raise RunSettingsError(f"{name(entry.key)}: {_quoted(item)} is listed twice")
    if entry.required_item is not None and entry.required_item not in items:
        raise RunSettingsError(f"{name(entry.key)}: {_quoted(','.join(items))} must include {entry.required_item}")
    return tuple(items)


def _items(entry: AccessKey, value: Any, name: Callable[[str], str]) -> list[str]:
    """The items of a list value: a list, a JSON array or a comma-separated string."""
    shape = "must be a list of strings, a JSON array of strings or a comma-separated string"
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as error:
                raise RunSettingsError(
                    f"{name(entry.key)}: {_quoted(value)} is not a JSON array ({error.msg})"
                ) from error
        else:
            items = [item.strip() for item in text.split(",")] if text else []
            if "" in items:
                raise RunSettingsError(f"{name(entry.key)}: {_quoted(value)} has an empty entry")
            return items
    if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
        raise RunSettingsError(f"{name(entry.key)}: {shape}")
    return list(value)


def _check(entry: AccessKey, value: str, name: Callable[[str], str]) -> None:
    try:
        entry.rule(value)
    except _Broken as broken:
        raise RunSettingsError(f"{name(entry.key)}: {_quoted(value)} {broken}") from broken


def _quoted(value: str) -> str:
    """The value as an error quotes it: on one line, shortened when long."""
    shown = value if len(value) <= 100 else value[:97] + "..."
    return "'" + shown.replace("\n", "\\n").replace("\r", "\\r") + "'"


def _not_text(value: object) -> str:
    if isinstance(value, Mapping) and "secure" in value:
        return "is an encrypted value; the access settings are not secrets, set it in plain text"
    if isinstance(value, Mapping):
        return "must be a string, not a mapping"
    if isinstance(value, list):
        return "must be a string, not a list"
    return f"must be a string, not {type(value).__name__} {value!r} (quote it in YAML)"
