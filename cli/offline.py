"""Run the real Pulumi program with no engine and no cluster, recording what it declares.

Pulumi's mock monitor stands in for the engine. A recording monitor keeps, for every
registration, the type, the logical name, the parent and the inputs (integers restored, as
the providers restore them), plus the options that decide a resource's lifecycle. Tests and
`render` both use it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from providers.pulumi_values import restore_integers

PROJECT = "magicstick"
STACK = "offline"
T = TypeVar("T")

ENGINE_LOG = logging.getLogger("magicstick.engine")
"""What the program logs through Pulumi's log API lands here (the engine's diagnostics in a real
run). Silent unless a handler is attached: `render` prints its own summary instead."""
ENGINE_LOG.addHandler(logging.NullHandler())


@dataclass(frozen=True)
class Registration:
    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    inputs: Mapping[str, Any]
    ignore_changes: tuple[str, ...] = ()
    retain_on_delete: bool = False
    dependencies: tuple[str, ...] = ()
    alias_urns: tuple[str, ...] = ()
    """The URNs this resource had in earlier versions (components/urns.py writes them out)."""
    alias_names: tuple[str, ...] = ()
    """Earlier names given as alias specs (a resource whose parent records no qualified type)."""

    @property
    def aliases(self) -> tuple[str, ...]:
        """Earlier logical names of this resource, each once, in the order given."""
        named = (*self.alias_names, *(alias.rsplit("::", 1)[-1] for alias in self.alias_urns))
        return tuple(dict.fromkeys(name for name in named if name != self.name))

    @property
    def former_parent_types(self) -> tuple[str, ...]:
        """The qualified types of the components its alias URNs place it under, each once."""
        return tuple(dict.fromkeys(alias.split("::")[2].rpartition("$")[0] for alias in self.alias_urns))

    @property
    def parent_name(self) -> str:
        return self.parent.rsplit("::", 1)[-1] if self.parent else ""

    @property
    def source(self) -> str:
        """What the resource stands for: its object (kind namespace/name) and its parent component."""
        raw_metadata = self.inputs.get("metadata")
        metadata: Mapping[str, Any] = raw_metadata if isinstance(raw_metadata, Mapping) else {}
        kind = self.inputs.get("kind") or self.type.rsplit(":", 1)[-1]
        scope = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
        what = f"{kind} {scope}{metadata['name']}" if metadata.get("name") else f"{kind} {self.name}"
        parent_type = self.parent.split("::")[-2].rsplit("$", 1)[-1] if self.parent.count("::") >= 3 else ""
        if not parent_type or parent_type == "pulumi:pulumi:Stack":
            return what
        return f"{what} (in {parent_type} {self.parent_name})"


class _EchoMocks(pulumi.runtime.Mocks):
    """Every resource's outputs are its inputs; no function calls are expected."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        raise NotImplementedError(f"the program calls no Pulumi function, but called {args.token}")


class DuplicateUrnError(Exception):
    """Two registrations gave one URN; the engine refuses the second and applies nothing."""

    def __init__(self, urn: str, first: Registration, second: Registration) -> None:
        sources = sorted((first.source, second.source))
        super().__init__(f"duplicate resource URN {urn}: declared for {sources[0]} and for {sources[1]}")
        self.urn = urn
        self.first = first
        self.second = second


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """The mock monitor, plus a record of every registration and the engine's URN uniqueness."""

    def __init__(self) -> None:
        super().__init__(_EchoMocks())
        self.registrations: list[Registration] = []
        self.duplicate: DuplicateUrnError | None = None
        self._by_urn: dict[str, Registration] = {}

    def RegisterResource(  # noqa: N802 - the gRPC method name
        self, request: resource_pb2.RegisterResourceRequest
    ) -> resource_pb2.RegisterResourceResponse:
        # Pulumi's MockMonitor leaves its gRPC methods unannotated.
        response: resource_pb2.RegisterResourceResponse = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        if request.type != "pulumi:pulumi:Stack":
            registration = _registration(request, response.urn)
            first = self._by_urn.setdefault(response.urn, registration)
            if first is not registration:
                # Recorded, not raised here: run_offline raises it once the program has ended, as
                # the engine fails the run; raising inside the SDK's RPC leaves futures unretrieved.
                self.duplicate = self.duplicate or DuplicateUrnError(response.urn, first, registration)
                return response
            self.registrations.append(registration)
        return response


def _registration(request: resource_pb2.RegisterResourceRequest, urn: str) -> Registration:
    return Registration(
        urn=urn,
        type=request.type,
        name=request.name,
        parent=request.parent,
        custom=bool(request.custom),
        inputs=restore_integers(pulumi.runtime.rpc.deserialize_properties(request.object)),
        ignore_changes=tuple(request.ignoreChanges),
        retain_on_delete=bool(request.retainOnDelete),
        dependencies=tuple(request.dependencies),
        alias_urns=tuple(alias.urn for alias in request.aliases if alias.urn),
        alias_names=tuple(alias.spec.name for alias in request.aliases if alias.HasField("spec") and alias.spec.name),
    )


@dataclass
class OfflineRun:
    registrations: list[Registration] = field(default_factory=list)

    def of_type(self, type_token: str) -> list[Registration]:
        return [r for r in self.registrations if r.type == type_token]

    def named(self, name: str) -> Registration:
        matches = [r for r in self.registrations if r.name == name]
        if len(matches) != 1:
            raise KeyError(f"{len(matches)} registrations named {name}")
        return matches[0]


@contextmanager
def _config(values: Mapping[str, str]) -> Iterator[None]:
    token = pulumi.runtime.config.CONFIG.set({f"{PROJECT}:{key}": value for key, value in values.items()})
    try:
        yield
    finally:
        pulumi.runtime.config.CONFIG.reset(token)


def _ensure_event_loop() -> None:
    """Give this thread an open event loop when it has none: Pulumi's SDK asks asyncio for the
    current one, and a caller that ran `asyncio.run` (or closed its loop) before leaves none."""
    try:
        current = asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:
        current = None
    if current is None or current.is_closed():
        asyncio.set_event_loop(asyncio.new_event_loop())


def run_offline(
    program: Callable[[], T],
    config: Mapping[str, str],
    *,
    monitor: RecordingMonitor | None = None,
) -> tuple[T, OfflineRun]:
    """Run `program` under a recording monitor (a fresh one unless given) and `magicstick:` config.

    Returns the program's result and every registration, once all of them completed. When the
    program raises, the exception propagates; a monitor passed in still shows what was registered.
    Two registrations with one URN raise DuplicateUrnError once the program has ended, as the
    engine refuses the second and fails the run.
    """
    monitor = monitor or RecordingMonitor()
    _ensure_event_loop()
    pulumi.runtime.set_mocks(
        _EchoMocks(), project=PROJECT, stack=STACK, preview=False, monitor=monitor, logger=ENGINE_LOG
    )
    result: list[T] = []
    with _config(config):
        _sync_await(run_pulumi_func(lambda: result.append(program())))
    if monitor.duplicate is not None:
        raise monitor.duplicate
    return result[0], OfflineRun(registrations=list(monitor.registrations))
