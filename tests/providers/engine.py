"""The engine's side of a dynamic provider's life, played as the pulumi SDK plays it.

The engine hands a dynamic provider the whole stack configuration: every key keeps its
namespace (`magicstick:kubeconfig`) and every value is a string, secure ones marked secret
(pulumi/pulumi pkg/resource/deploy/target.go, GetPackageConfig). The SDK's provider process
(pulumi/dynamic/__main__.py) deserializes that request, unwraps the secrets, and calls
`configure` once on the provider it unpickled, before any check, diff or CRUD call. Its
project name comes from PULUMI_PROJECT, which the engine does not always set: "project" then.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TypeVar

# protobuf ships no type information and its stubs (types-protobuf) are not installed.
from google.protobuf import struct_pb2  # type: ignore[import-untyped]
from pulumi.dynamic import Config, ConfigureRequest, ResourceProvider
from pulumi.runtime import rpc

P = TypeVar("P", bound=ResourceProvider)

SDK_DEFAULT_PROJECT = "project"


def configure_request(
    config: Mapping[str, str], *, secret: Collection[str] = (), project: str = SDK_DEFAULT_PROJECT
) -> ConfigureRequest:
    """The request `configure` receives for stack config `config` (keys with their namespace)."""
    wire = struct_pb2.Struct()
    wire.update({key: rpc.wrap_rpc_secret(value) if key in secret else value for key, value in config.items()})
    received = rpc.deserialize_properties(wire)
    unwrapped = {key: rpc.unwrap_rpc_secret(value) for key, value in received.items()}
    return ConfigureRequest(config=Config(raw_config=unwrapped, project_name=project))


def configured(provider: P, config: Mapping[str, str], *, secret: Collection[str] = ()) -> P:
    """`provider` after the engine configured it with stack config `config`."""
    provider.configure(configure_request(config, secret=secret))
    return provider


def kubeconfig_config(kubeconfig: str, *, context: str | None = None) -> dict[str, str]:
    """A stack config that names the cluster, beside other keys of the project as a real stack has them."""
    config = {"magicstick:kubeconfig": kubeconfig, "magicstick:systemNamespace": "ai-system"}
    if context is not None:
        config["magicstick:context"] = context
    return config


LEGACY_ACCESS = {"kubeconfig": "/nonexistent/workstation/.kube/config", "context": "workstation"}
"""What a resource written by an earlier version carries in its state: the access of the run
that wrote it, here a workstation path that does not exist where the test runs."""
