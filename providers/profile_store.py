"""The runtime-profile store: KubeAI resource profiles that the program keeps in a shared ConfigMap.

The KubeAI Helm release reads extra resource profiles from one key of one ConfigMap
(`flux-system/magicstick-runtime-profiles`, key `values.json`), a Helm values document
`{"resourceProfiles": {<name>: <profile>, ...}}`. Flux bootstraps it with an empty map; other
tools may add entries of their own. This module changes single entries of that document.

Rules:
- the program owns only entries named `magicstick-...` that it created or adopted; every
  other entry, and every other key of the document and of the ConfigMap, is left as it is;
- every change is compare-and-swap: read the ConfigMap, compute the new document, write it
  back carrying the resourceVersion that was read; a 409 means someone else wrote in
  between, so read again and retry, a bounded number of times;
- a missing ConfigMap is created holding only our entry (absence is repaired, nothing is
  reset); a missing key or an empty document reads as no profiles;
- a document that is not valid JSON is never overwritten: the write stops with an error
  naming the ConfigMap and key, because rewriting it would erase what others stored there;
- the number of owned entries is bounded; a new entry beyond the bound is refused;
- nothing is written when the entry already holds the desired profile;
- a full, malformed or contended store, and a refused or unanswered request, concern this one
  entry: `create` and `update` return them as the `problem` output (providers/outcomes.py)
  instead of raising, the status of every ModelActivation that names the profile shows them in
  the same run, and `diff` asks for the write again on the next run. `delete` finds nothing to
  remove in a malformed store; it raises only when the entry may still be there (contended,
  refused, unanswered), so the state keeps the entry and the next run removes it.

> **Why** — Flux, the program and other tools share this one document. A blind write
> (apply or update without a resourceVersion) would silently drop an entry another writer
> added between our read and our write.

The inputs name the entry and its profile, nothing else: each method builds its own client
from the cluster access the stack's configuration names (providers/cluster_access.py).

The same discipline serves every such store: a StoreSettings names a store's default location,
field manager, bound and the metadata it is created with. RUNTIME_STORE is the runtime-profile
store; providers/offloading_store.py configures the offloading store. A store the program
creates never starts from anything but absence (`bootstrap_store` creates an empty map and
leaves an existing ConfigMap alone).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Final, Self

from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, UpdateResult

from api.vocabulary import ProblemReason
from planning.frozen import thaw
from planning.models.kubeai import (
    MAX_CPU_PROFILES,
    PROFILE_STORE_CONFIG_MAP,
    PROFILE_STORE_KEY,
    PROFILE_STORE_NAMESPACE,
)
from planning.models.profile_entry import ProfileEntry, ProfileStoreRef
from planning.provider_wire import PROBLEM_OUTPUT
from providers.cluster_access import ClusterResourceProvider, without_legacy_access
from providers.kinds import CONFIG_MAP
from providers.kube import Conflict, KubeClient, KubeError, NotFound, open_client
from providers.kube.client import MERGE_PATCH
from providers.outcomes import Problem, kube_problem, retry_requested, with_problem
from providers.pulumi_values import is_unknown, restore_integers

DEFAULT_NAMESPACE: Final = PROFILE_STORE_NAMESPACE
DEFAULT_CONFIG_MAP: Final = PROFILE_STORE_CONFIG_MAP
DEFAULT_KEY: Final = PROFILE_STORE_KEY
OWNED_PREFIX: Final = "magicstick-"
PROFILES_FIELD: Final = "resourceProfiles"
STORE_FIELD_MANAGER: Final = "magicstick-runtime-profiles"
DEFAULT_MAX_OWNED: Final = MAX_CPU_PROFILES
DEFAULT_ATTEMPTS: Final = 10
PROFILE_NAME_LIMIT: Final = 63

STORE_PROPERTIES: Final = ("namespace", "configMap", "key", "profileName")
"""Inputs that name the entry; a change to any of them is a different entry (replace)."""

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_CONFIG_MAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


class ProfileStoreError(Exception):
    """The profile store cannot be read or changed as asked."""


class MalformedProfileStore(ProfileStoreError):
    """The stored document is not a JSON object with a `resourceProfiles` object; it is left untouched."""


class ProfileStoreFull(ProfileStoreError):
    """Adding the entry would exceed the bound on owned entries."""


class ProfileStoreContended(ProfileStoreError):
    """Every attempt lost the compare-and-swap to another writer."""


@dataclass(frozen=True)
class StoreSettings:
    """One compare-and-swap store of KubeAI resource profiles."""

    ref: ProfileStoreRef
    """Where it lives unless the inputs say otherwise."""
    field_manager: str
    max_owned: int
    """At most this many `magicstick-` entries."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Labels of a ConfigMap the program creates."""
    annotations: Mapping[str, str] = field(default_factory=dict)
    """Annotations of a ConfigMap the program creates."""


FLUX_SSA_ANNOTATION: Final = "kustomize.toolkit.fluxcd.io/ssa"
IF_NOT_PRESENT: Final = "IfNotPresent"
FLUX_PRUNE_ANNOTATION: Final = "kustomize.toolkit.fluxcd.io/prune"
FLUX_WATCH_LABEL: Final = "reconcile.fluxcd.io/watch"
STORE_LABELS: Final = MappingProxyType({FLUX_WATCH_LABEL: "Enabled"})
"""A change of a store reconciles the KubeAI HelmRelease that reads it at once."""
STORE_ANNOTATIONS: Final = MappingProxyType({FLUX_SSA_ANNOTATION: IF_NOT_PRESENT, FLUX_PRUNE_ANNOTATION: "disabled"})
"""The same metadata as the GitOps bootstrap (magic-cluster/apps/ai/kubeai/stores.yaml): Flux
never resets the store's content, nor removes it with the module."""

RUNTIME_STORE: Final = StoreSettings(
    ref=ProfileStoreRef(),
    field_manager=STORE_FIELD_MANAGER,
    max_owned=DEFAULT_MAX_OWNED,
    labels=STORE_LABELS,
    annotations=STORE_ANNOTATIONS,
)


def profile_name_problem(name: Any) -> str | None:
    """Why `name` cannot be an owned profile name, or None when it can. Pure."""
    if not isinstance(name, str) or not name:
        return "profileName must be a non-empty string"
    if not name.startswith(OWNED_PREFIX):
        return f"profile {name!r} is not owned by the program: owned profile names start with {OWNED_PREFIX!r}"
    if len(name) > PROFILE_NAME_LIMIT:
        return f"profile name {name!r} is {len(name)} characters long; the limit is {PROFILE_NAME_LIMIT}"
    if not _DNS_LABEL.match(name):
        return f"profile name {name!r} must be lowercase letters, digits and '-', starting and ending with a letter or digit"
    return None


def store_ref_problems(ref: ProfileStoreRef) -> dict[str, str]:
    """Input property -> why it does not name a ConfigMap key. Pure."""
    problems: dict[str, str] = {}
    if len(ref.namespace) > 63 or not _DNS_LABEL.match(ref.namespace):
        problems["namespace"] = f"namespace {ref.namespace!r} is not a DNS-1123 label"
    if len(ref.name) > 253 or not _DNS_SUBDOMAIN.match(ref.name):
        problems["configMap"] = f"ConfigMap name {ref.name!r} is not a DNS-1123 subdomain"
    if len(ref.key) > 253 or not _CONFIG_MAP_KEY.match(ref.key):
        problems["key"] = f"ConfigMap key {ref.key!r} must be letters, digits, '-', '_' or '.'"
    return problems


def serialise(document: Mapping[str, Any]) -> str:
    """The stored text of `document`: sorted keys, compact separators. Pure and deterministic."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def read_document(config_map: Mapping[str, Any], *, key: str = DEFAULT_KEY) -> dict[str, Any]:
    """The whole values document under `key`; `{}` when data or key is missing or blank. Pure.

    Raises MalformedProfileStore when the text is not JSON, not an object, or its
    `resourceProfiles` is neither absent, null nor an object.
    """
    text = (config_map.get("data") or {}).get(key)
    if text is None or not text.strip():
        return {}
    where = _where(config_map, key)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise MalformedProfileStore(
            f"{where} is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg}); it is left untouched"
        ) from error
    if not isinstance(document, dict):
        raise MalformedProfileStore(
            f"{where} holds a JSON {type(document).__name__}, not an object; it is left untouched"
        )
    profiles = document.get(PROFILES_FIELD)
    if profiles is not None and not isinstance(profiles, dict):
        raise MalformedProfileStore(
            f"{where}: {PROFILES_FIELD} is a JSON {type(profiles).__name__}, not an object; it is left untouched"
        )
    return document


def read_profiles(config_map: Mapping[str, Any], *, key: str = DEFAULT_KEY) -> dict[str, Any]:
    """The `resourceProfiles` map stored under `key`; empty when data, key or map is missing. Pure."""
    return dict(read_document(config_map, key=key).get(PROFILES_FIELD) or {})


def with_profile(
    profiles: Mapping[str, Any], name: str, body: Mapping[str, Any], *, max_owned: int, where: str = "the store"
) -> dict[str, Any] | None:
    """`profiles` with entry `name` set to `body`; None when it already is (nothing to write). Pure.

    Raises ProfileStoreError for a name the program does not own, and ProfileStoreFull when a
    new entry would make more than `max_owned` owned entries. Other entries are kept as they are.
    """
    problem = profile_name_problem(name)
    if problem is not None:
        raise ProfileStoreError(problem)
    if profiles.get(name) == body:
        return None
    if name not in profiles:
        owned = sum(1 for existing in profiles if existing.startswith(OWNED_PREFIX))
        if owned >= max_owned:
            raise ProfileStoreFull(
                f"cannot add resource profile {name!r}: {where} already holds {owned} {OWNED_PREFIX}* profiles "
                f"and the limit is {max_owned}"
            )
    return {**profiles, name: body}


def without_profile(profiles: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    """`profiles` without entry `name`; None when it is not there (nothing to write). Pure.

    Raises ProfileStoreError for a name the program does not own.
    """
    problem = profile_name_problem(name)
    if problem is not None:
        raise ProfileStoreError(problem)
    if name not in profiles:
        return None
    return {existing: body for existing, body in profiles.items() if existing != name}


def put_profile(
    client: KubeClient,
    ref: ProfileStoreRef,
    name: str,
    body: Mapping[str, Any],
    *,
    max_owned: int | None = None,
    attempts: int = DEFAULT_ATTEMPTS,
    store: StoreSettings = RUNTIME_STORE,
) -> bool:
    """Make entry `name` hold `body`, by compare-and-swap. True when something was written.

    A missing ConfigMap is created holding only this entry, with the store's labels and
    annotations. Each lost attempt means another writer's write landed in between, so
    `attempts` larger than the number of concurrent writes always suffices. `max_owned`
    defaults to the store's bound.
    """
    bound = store.max_owned if max_owned is None else max_owned
    return _compare_and_swap(
        client,
        ref,
        lambda profiles: with_profile(profiles, name, body, max_owned=bound, where=str(ref)),
        attempts=attempts,
        create=True,
        store=store,
    )


def remove_profile(
    client: KubeClient,
    ref: ProfileStoreRef,
    name: str,
    attempts: int = DEFAULT_ATTEMPTS,
    *,
    store: StoreSettings = RUNTIME_STORE,
) -> bool:
    """Remove entry `name`, by compare-and-swap. True when something was written; absence is success."""
    return _compare_and_swap(
        client, ref, lambda profiles: without_profile(profiles, name), attempts=attempts, create=False, store=store
    )


def bootstrap_store(client: KubeClient, ref: ProfileStoreRef, *, store: StoreSettings = RUNTIME_STORE) -> bool:
    """Create the store holding an empty `resourceProfiles` map when it is absent. True when it
    was created; an existing ConfigMap, whatever it holds, is left exactly as it is."""
    if client.get_or_none(CONFIG_MAP, ref.name, ref.namespace) is not None:
        return False
    try:
        _create(client, ref, serialise({PROFILES_FIELD: {}}), store)
    except Conflict:
        return False
    return True


def read_profile(client: KubeClient, ref: ProfileStoreRef, name: str) -> dict[str, Any] | None:
    """The stored entry `name`, or None when it or the ConfigMap is absent."""
    current = client.get_or_none(CONFIG_MAP, ref.name, ref.namespace)
    if current is None:
        return None
    return read_profiles(current, key=ref.key).get(name)


def _compare_and_swap(
    client: KubeClient,
    ref: ProfileStoreRef,
    change: Callable[[Mapping[str, Any]], dict[str, Any] | None],
    *,
    attempts: int,
    create: bool,
    store: StoreSettings,
) -> bool:
    if attempts < 1:
        raise ValueError(f"attempts must be at least 1, not {attempts}")
    lost: Conflict | NotFound | None = None
    for _ in range(attempts):
        current = client.get_or_none(CONFIG_MAP, ref.name, ref.namespace)
        document = {} if current is None else read_document(current, key=ref.key)
        profiles = change(dict(document.get(PROFILES_FIELD) or {}))
        if profiles is None or (current is None and not create):
            return False
        text = serialise({**document, PROFILES_FIELD: profiles})
        try:
            if current is None:
                _create(client, ref, text, store)
            else:
                _swap(client, ref, text, current["metadata"]["resourceVersion"], store)
        except Conflict as error:
            lost = error
            continue
        except NotFound as error:
            if current is None:
                raise
            lost = error
            continue
        return True
    raise ProfileStoreContended(f"{ref}: another writer changed it before each of {attempts} attempts") from lost


def _create(client: KubeClient, ref: ProfileStoreRef, text: str, store: StoreSettings) -> None:
    metadata: dict[str, Any] = {"name": ref.name, "namespace": ref.namespace}
    if store.labels:
        metadata["labels"] = dict(store.labels)
    if store.annotations:
        metadata["annotations"] = dict(store.annotations)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {ref.key: text}}
    client.request(
        "POST",
        CONFIG_MAP.collection_path(ref.namespace),
        params={"fieldManager": store.field_manager},
        body=body,
        content_type="application/json",
    )


def _swap(client: KubeClient, ref: ProfileStoreRef, text: str, resource_version: str, store: StoreSettings) -> None:
    client.request(
        "PATCH",
        CONFIG_MAP.object_path(ref.name, ref.namespace),
        params={"fieldManager": store.field_manager},
        body={"metadata": {"resourceVersion": resource_version}, "data": {ref.key: text}},
        content_type=MERGE_PATCH,
    )


def _where(config_map: Mapping[str, Any], key: str) -> str:
    metadata = config_map.get("metadata") or {}
    return f"ConfigMap {metadata.get('namespace', '?')}/{metadata.get('name', '?')} key {key}"


@dataclass(frozen=True)
class RuntimeProfileEntry(ProfileEntry):
    """The inputs of one RuntimeProfile resource (ProfileEntry.to_inputs), with Pulumi's floats
    turned back into integers."""

    @classmethod
    def from_inputs(cls, inputs: Mapping[str, Any]) -> Self:
        """Inputs `check` has normalised (every store property present)."""
        return super().from_inputs({**inputs, "profile": restore_integers(inputs["profile"])})

    @property
    def body(self) -> dict[str, Any]:
        """The profile as the store holds it."""
        return {key: thaw(value) for key, value in self.profile.items()}

    @property
    def id(self) -> str:
        return f"{self.ref.namespace}/{self.ref.name}/{self.ref.key}/{self.profile_name}"


def _known(value: Any) -> bool:
    """False for the placeholder Pulumi passes for a value not yet known during preview."""
    return not is_unknown(value)


class RuntimeProfileProvider(ClusterResourceProvider):
    """Keeps one owned KubeAI resource profile in the shared runtime-profile store.

    Subclasses keep entries of another store by setting STORE (providers/offloading_store.py).
    """

    STORE: ClassVar[StoreSettings] = RUNTIME_STORE

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        defaults = self.STORE.ref
        inputs = {
            **without_legacy_access(news),
            "namespace": news.get("namespace") or defaults.namespace,
            "configMap": news.get("configMap") or defaults.name,
            "key": news.get("key") or defaults.key,
        }
        failures: list[CheckFailure] = []
        ref_values = (inputs["namespace"], inputs["configMap"], inputs["key"])
        if all(isinstance(value, str) and _known(value) for value in ref_values):
            problems = store_ref_problems(ProfileStoreRef(*ref_values))
            failures += [CheckFailure(prop, reason) for prop, reason in problems.items()]
        if _known(inputs.get("profileName")):
            problem = profile_name_problem(inputs.get("profileName"))
            if problem is not None:
                failures.append(CheckFailure("profileName", problem))
        if _known(inputs.get("profile")) and not isinstance(inputs.get("profile"), dict):
            failures.append(CheckFailure("profile", "profile must be a mapping (a KubeAI resource profile)"))
        return CheckResult(inputs, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = [p for p in STORE_PROPERTIES if olds.get(p) != news.get(p)]
        changed = replaces + (["profile"] if olds.get("profile") != news.get("profile") else [])
        # State written before the `problem` output existed is updated once (the write is a
        # no-op when the entry is as planned): a missing output reads as unknown in every
        # preview, and the status writes that take it would never look converged.
        retry = retry_requested(olds) or PROBLEM_OUTPUT not in olds
        return DiffResult(changes=bool(changed) or retry, replaces=replaces, delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        entry = RuntimeProfileEntry.from_inputs(props)
        return CreateResult(id_=entry.id, outs=with_problem(without_legacy_access(props), self._put(entry)))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        entry = RuntimeProfileEntry.from_inputs(news)
        return UpdateResult(outs=with_problem(without_legacy_access(news), self._put(entry)))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        entry = RuntimeProfileEntry.from_inputs(props)
        try:
            with open_client(self.cluster_access()) as client:
                current = read_profile(client, entry.ref, entry.profile_name)
        except (MalformedProfileStore, KubeError) as error:
            return ReadResult(id_=id_, outs=with_problem(without_legacy_access(props), store_problem(error)))
        if current is None:
            return ReadResult(id_="", outs={})
        return ReadResult(id_=id_, outs={**without_legacy_access(props), "profile": current})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        entry = RuntimeProfileEntry.from_inputs(props)
        try:
            with open_client(self.cluster_access()) as client:
                remove_profile(client, entry.ref, entry.profile_name, store=self.STORE)
        except MalformedProfileStore:
            return

    def _put(self, entry: RuntimeProfileEntry) -> Problem | None:
        """Write the entry; the problem that kept it from the store, or None."""
        try:
            with open_client(self.cluster_access()) as client:
                put_profile(client, entry.ref, entry.profile_name, entry.body, store=self.STORE)
        except (ProfileStoreFull, MalformedProfileStore, ProfileStoreContended, KubeError) as error:
            return store_problem(error)
        return None


_STORE_REASONS: Final = {
    ProfileStoreFull: ProblemReason.PROFILE_STORE_FULL,
    MalformedProfileStore: ProblemReason.PROFILE_STORE_MALFORMED,
    ProfileStoreContended: ProblemReason.PROFILE_STORE_CONTENDED,
}


def store_problem(error: ProfileStoreFull | MalformedProfileStore | ProfileStoreContended | KubeError) -> Problem:
    """The problem a failed read or change of the store is reported as. Pure.

    Full, malformed and contended are Temporary: others can free, repair or stop writing the
    store without any change of ours. A Kubernetes error keeps the server's Status.
    """
    if isinstance(error, KubeError):
        return kube_problem(error, refused=ProblemReason.PROFILE_STORE_REFUSED)
    return Problem(_STORE_REASONS[type(error)], str(error))
