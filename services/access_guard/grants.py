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

A malformed grant fails closed, and loudly:

- Every request of its instance is denied (403 malformed-grant) until the file is fixed; the
  last good grant is not kept. The file is the program's statement of who may reach the
  instance, and a file the guard cannot read is no statement at all: a hand edit, a bug in
  the writer or tampering. Keeping the previous grant would keep access the edit may have
  been withdrawing (a narrowed sharing, a raised role), and the guard cannot tell a widening
  edit from a narrowing one. Nor is a malformed file a passing state worth riding out: the
  kubelet swaps a ConfigMap's files atomically, so a half-written file is never seen. The
  program rewrites the file on its next run, which is what fixes it.
- It is made visible at once: a WARNING line names the file and the problem, once per change
  of the file (and an INFO line when it is usable again), and `GrantStore.problems` lists every
  unusable grant file for `/healthz`, which stays 200: a restart would not fix the file, and a
  failing probe would take the guard, and so every other instance, down with it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias, cast

from services.oidc.claims import ROLES

MAX_GRANT_BYTES = 64 * 1024
LOGGER = logging.getLogger("services.access_guard.grants")

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
        minimum_role=minimum_role,
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
    return (
        "selected",
        _strings(sharing.get("users"), "sharing.users"),
        _strings(sharing.get("groups"), "sharing.groups"),
    )


def _claims(value: object) -> ClaimNames:
    claims = _object(value, "claims")
    if set(claims) != _CLAIM_KEYS:
        raise MalformedGrant(f"claims must name exactly {sorted(_CLAIM_KEYS)}")
    names = {key: claims[key] for key in _CLAIM_KEYS}
    if not all(isinstance(name, str) and name for name in names.values()):
        raise MalformedGrant("claim names must be non-empty strings")
    return ClaimNames(
        subject=cast(str, names["subject"]), roles=cast(str, names["roles"]), groups=cast(str, names["groups"])
    )


_Identity: TypeAlias = tuple[int, int, int, int, int]


def _identity(status: os.stat_result) -> _Identity:
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


def grant_location(file_name: str) -> tuple[str, str] | None:
    """(`namespace`, `instance`) of a grant file name, or None when it names no grant. Pure."""
    stem = file_name.removesuffix(".json")
    namespace, separator, instance = stem.partition(".")
    if stem == file_name or not separator or not NAMESPACE.fullmatch(namespace) or not INSTANCE.fullmatch(instance):
        return None
    return namespace, instance


@dataclass(frozen=True)
class GrantProblem:
    """A grant file the guard cannot use, for `/healthz`."""

    file: str
    problem: str


@dataclass(frozen=True)
class _Entry:
    identity: _Identity | None
    """None when the file could not be stat'ed or opened: it is looked at again on every use."""
    grant: Grant | None = None
    problem: str | None = None
    """Why the file cannot be used (without its name); set exactly when `grant` is None."""


class GrantStore:
    """The grants directory, parsed lazily and cached per file identity. Thread-safe."""

    def __init__(self, directory: Path) -> None:
        self._directory = os.fspath(directory)
        """A string: joining strings costs a fraction of building a Path on every lookup."""
        self._lock = threading.Lock()
        self._cache: dict[str, _Entry] = {}
        """File name -> what its current identity holds."""

    def lookup(self, namespace: str, instance: str) -> Grant:
        """The current grant of `namespace/instance`.

        Raises UnknownInstance when no file exists, MalformedGrant when it cannot be used.
        """
        if not NAMESPACE.fullmatch(namespace) or not INSTANCE.fullmatch(instance):
            raise UnknownInstance(f"{namespace}/{instance} is not a namespace and instance name")
        name = grant_file_name(namespace, instance)
        entry = self._current(name, f"{namespace}/{instance}")
        if entry is None:
            raise UnknownInstance(f"no grant file {name}")
        if entry.grant is None:
            raise MalformedGrant(f"{name}: {entry.problem}")
        return entry.grant

    def problems(self) -> tuple[GrantProblem, ...]:
        """Every `*.json` file of the directory that is no usable grant, by name; reads only files that changed."""
        try:
            names = sorted(
                name for name in os.listdir(self._directory) if name.endswith(".json") and not name.startswith(".")
            )
        except OSError as error:
            return (GrantProblem(self._directory, f"cannot list the directory: {error.strerror}"),)
        found = []
        for name in names:
            location = grant_location(name)
            if location is None:
                found.append(GrantProblem(name, "not named <namespace>.<instance>.json"))
                continue
            entry = self._current(name, "/".join(location))
            if entry is not None and entry.problem is not None:
                found.append(GrantProblem(name, entry.problem))
        return tuple(found)

    def _current(self, name: str, instance: str) -> _Entry | None:
        """What the file `name` holds now (None: there is no such file), from the cache while its identity holds."""
        path = os.path.join(self._directory, name)
        try:
            identity = _identity(os.stat(path))
        except FileNotFoundError:
            self._forget(name)
            return None
        except OSError as error:
            return self._record(name, _Entry(None, problem=f"cannot stat: {error.strerror}"))
        with self._lock:
            cached = self._cache.get(name)
        if cached is not None and cached.identity == identity:
            return cached
        loaded = self._load(path, instance)
        if loaded is None:
            self._forget(name)
            return None
        return self._record(name, loaded)

    def _record(self, name: str, entry: _Entry) -> _Entry:
        """Cache `entry`, saying so in the log when the file became unusable or usable again."""
        with self._lock:
            previous = self._cache.get(name)
            self._cache[name] = entry
        if entry.problem is not None and (
            previous is None or (previous.identity, previous.problem) != (entry.identity, entry.problem)
        ):
            LOGGER.warning(
                "grant file %s is unusable, every request of its instance is denied until it is fixed: %s",
                name,
                entry.problem,
            )
        elif entry.problem is None and previous is not None and previous.problem is not None:
            LOGGER.info("grant file %s is usable again", name)
        return entry

    def _forget(self, name: str) -> None:
        with self._lock:
            self._cache.pop(name, None)

    def _load(self, path: str, instance: str) -> _Entry | None:
        """Read and parse the file (None: it is gone); the identity comes from the open file, so it matches the text."""
        try:
            descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return None
        except OSError as error:
            return _Entry(None, problem=f"cannot open: {error.strerror}")
        try:
            status = os.fstat(descriptor)
            if not stat.S_ISREG(status.st_mode):
                return _Entry(_identity(status), problem="not a regular file")
            if status.st_size > MAX_GRANT_BYTES:
                return _Entry(_identity(status), problem=f"larger than {MAX_GRANT_BYTES} bytes")
            data = os.read(descriptor, MAX_GRANT_BYTES + 1)
        except OSError as error:
            return _Entry(None, problem=f"cannot read: {error.strerror}")
        finally:
            os.close(descriptor)
        return _parsed(data, _identity(status), instance)


def _parsed(data: bytes, identity: _Identity, instance: str) -> _Entry:
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        return _Entry(identity, problem=f"not UTF-8 JSON: {error}")
    try:
        return _Entry(identity, grant=parse_grant(document, instance=instance))
    except MalformedGrant as error:
        return _Entry(identity, problem=str(error))
