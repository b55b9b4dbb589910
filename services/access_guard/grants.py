"""Grants: what the program allows for each instance, read from a mounted ConfigMap.

The program writes one file per instance into the ConfigMap `magicstick-access-grants`,
named `<system namespace>.<instance>.json` (the namespace is a DNS label, so the first dot
ends it; the instance name may hold dots):

    {"instance": "ai-system/openclaw-a", "authentication": "sso",
     "minimumRole": "user", "sharing": {"mode": "selected", "users": ["..."], "groups": ["..."]},
     "claims": {"subject": "sub", "roles": "roles", "groups": "groups"}}

Rules:

- A grant the guard does not fully understand is not honoured: an unknown key, a wrong type,
  an unknown role or mode, or an `instance` other than the file's own makes it malformed,
  and a malformed grant denies.
- `authentication: none` needs only `instance` and `authentication` (its other keys are not
  read, but a selected sharing contradicts it); `sso` needs every key (`users` and `groups`
  of a selection may be left out: they default to none).
- The kubelet updates a mounted ConfigMap by writing a new directory and swapping the `..data`
  symlink; a file is therefore replaced, never rewritten in place. The store stats the file
  on every lookup (one syscall, following the symlinks) and parses it again when its identity
  (device, inode, size, modification and change times) differs from the cached one. A grant
  whose file is gone is unknown from the next lookup on.
"""

from __future__ import annotations

import json
import os
import re
import stat
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias, cast

ROLES = ("admin", "operator", "user", "viewer")
"""Dashboard roles, highest first: each role holds the access of every role after it."""
MAX_GRANT_BYTES = 64 * 1024

NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
"""A DNS label: the system namespace, which holds no dot."""
INSTANCE = re.compile(r"(?=.{1,253}\Z)[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
"""A DNS subdomain: an AppInstance name."""

Authentication: TypeAlias = Literal["sso", "none"]
SharingMode: TypeAlias = Literal["all", "selected"]

_KEYS = frozenset({"instance", "authentication", "minimumRole", "sharing", "claims"})
_SHARING_KEYS = frozenset({"mode", "users", "groups"})
_CLAIM_KEYS = frozenset({"subject", "roles", "groups"})


class GrantError(Exception):
    """The base of every reason a grant cannot be used."""


class UnknownInstance(GrantError):
    """No grant file for the instance."""


class MalformedGrant(GrantError):
    """The grant file exists but cannot be read or is not a grant the guard understands."""


@dataclass(frozen=True)
class ClaimNames:
    """Where the identity lives in an ID token; a dotted name reaches into nested objects."""

    subject: str
    roles: str
    groups: str


@dataclass(frozen=True)
class Grant:
    instance: str
    """`<system namespace>/<instance>`."""
    authentication: Authentication
    minimum_role: str | None = None
    sharing_mode: SharingMode | None = None
    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    claims: ClaimNames | None = None


def grant_file_name(namespace: str, instance: str) -> str:
    return f"{namespace}.{instance}.json"


def parse_grant(document: object, *, instance: str) -> Grant:
    """The grant in a decoded JSON document, for `instance` (`<namespace>/<name>`). Pure.

    Raises MalformedGrant naming the first problem.
    """
    body = _object(document, "the grant")
    unknown = sorted(set(body) - _KEYS)
    if unknown:
        raise MalformedGrant(f"unknown keys {unknown}")
    if body.get("instance") != instance:
        raise MalformedGrant(f"instance {body.get('instance')!r} is not {instance!r}")
    authentication = body.get("authentication")
    if authentication == "none":
        sharing = body.get("sharing")
        if isinstance(sharing, dict) and sharing.get("mode") == "selected":
            raise MalformedGrant("sharing mode selected requires authentication sso")
        return Grant(instance=instance, authentication="none")
    if authentication != "sso":
        raise MalformedGrant(f"authentication {authentication!r} is neither 'sso' nor 'none'")
    minimum_role = body.get("minimumRole")
    if minimum_role not in ROLES:
        raise MalformedGrant(f"minimumRole {minimum_role!r} is not one of {list(ROLES)}")
    mode, users, groups = _sharing(body.get("sharing"))
    return Grant(
        instance=instance,
        authentication="sso",
        minimum_role=cast(str, minimum_role),
        sharing_mode=mode,
        users=users,
        groups=groups,
        claims=_claims(body.get("claims")),
    )


def _object(value: object, what: str) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise MalformedGrant(f"{what} is not a JSON object")
    return cast(Mapping[str, object], value)


def _strings(value: object, what: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise MalformedGrant(f"{what} is not a list of non-empty strings")
    return frozenset(value)


def _sharing(value: object) -> tuple[SharingMode, frozenset[str], frozenset[str]]:
    sharing = _object(value, "sharing")
    unknown = sorted(set(sharing) - _SHARING_KEYS)
    if unknown:
        raise MalformedGrant(f"unknown sharing keys {unknown}")
    mode = sharing.get("mode")
    if mode == "all":
        if sharing.get("users") or sharing.get("groups"):
            raise MalformedGrant("sharing mode all takes no users or groups")
        return "all", frozenset(), frozenset()
    if mode != "selected":
        raise MalformedGrant(f"sharing mode {mode!r} is neither 'all' nor 'selected'")
    return "selected", _strings(sharing.get("users"), "sharing.users"), _strings(sharing.get("groups"), "sharing.groups")


def _claims(value: object) -> ClaimNames:
    claims = _object(value, "claims")
    if set(claims) != _CLAIM_KEYS:
        raise MalformedGrant(f"claims must name exactly {sorted(_CLAIM_KEYS)}")
    names = {key: claims[key] for key in _CLAIM_KEYS}
    if not all(isinstance(name, str) and name for name in names.values()):
        raise MalformedGrant("claim names must be non-empty strings")
    return ClaimNames(subject=cast(str, names["subject"]), roles=cast(str, names["roles"]), groups=cast(str, names["groups"]))


_Identity: TypeAlias = tuple[int, int, int, int, int]


def _identity(status: os.stat_result) -> _Identity:
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


class GrantStore:
    """The grants directory, parsed lazily and cached per file identity.

    Thread-safe: lookups run on the server's request threads.
    """

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[_Identity, Grant | str]] = {}
        """File name -> (identity, the grant or why it is malformed)."""

    def lookup(self, namespace: str, instance: str) -> Grant:
        """The current grant of `namespace/instance`.

        Raises UnknownInstance when no file exists, MalformedGrant when it cannot be used.
        """
        if not NAMESPACE.fullmatch(namespace) or not INSTANCE.fullmatch(instance):
            raise UnknownInstance(f"{namespace}/{instance} is not a namespace and instance name")
        name = grant_file_name(namespace, instance)
        path = self._directory / name
        try:
            identity = _identity(os.stat(path))
        except FileNotFoundError:
            self._forget(name)
            raise UnknownInstance(f"no grant file {name}") from None
        except OSError as error:
            raise MalformedGrant(f"cannot stat {name}: {error.strerror}") from error
        with self._lock:
            cached = self._cache.get(name)
        if cached is None or cached[0] != identity:
            cached = self._load(path, name, f"{namespace}/{instance}")
            with self._lock:
                self._cache[name] = cached
        result = cached[1]
        if isinstance(result, str):
            raise MalformedGrant(result)
        return result

    def _forget(self, name: str) -> None:
        with self._lock:
            self._cache.pop(name, None)

    def _load(self, path: Path, name: str, instance: str) -> tuple[_Identity, Grant | str]:
        """Read and parse the file; the identity comes from the open file, so it matches the text."""
        try:
            descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            raise UnknownInstance(f"no grant file {name}") from None
        except OSError as error:
            raise MalformedGrant(f"cannot open {name}: {error.strerror}") from error
        try:
            status = os.fstat(descriptor)
            if not stat.S_ISREG(status.st_mode):
                return _identity(status), f"{name} is not a regular file"
            if status.st_size > MAX_GRANT_BYTES:
                return _identity(status), f"{name} is larger than {MAX_GRANT_BYTES} bytes"
            data = os.read(descriptor, MAX_GRANT_BYTES + 1)
        except OSError as error:
            raise MalformedGrant(f"cannot read {name}: {error.strerror}") from error
        finally:
            os.close(descriptor)
        return _identity(status), _parsed(data, name, instance)


def _parsed(data: bytes, name: str, instance: str) -> Grant | str:
    """The grant, or why it is malformed."""
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        return f"{name} is not UTF-8 JSON: {error}"
    try:
        return parse_grant(document, instance=instance)
    except MalformedGrant as error:
        return f"{name}: {error}"
