"""How the dynamic providers reach the cluster: from the stack's configuration, at each run.

Rules:
- a dynamic resource's inputs and outputs name the object it manages, nothing of how the
  cluster is reached. The provider reaches the cluster as the stack's configuration says now:
  `magicstick:kubeconfig` (a path, or the kubeconfig document) and `magicstick:context`.
  Without them the ambient access applies (KUBECONFIG, then ~/.kube/config, then the in-cluster
  service account), as for the observer and the Kubernetes provider of the same run;
- `kubeconfig` and `context` found in the state of resources written by earlier versions are
  legacy keys: `check` drops them, `diff` ignores them, the outputs of `create`, `update` and
  `read` leave them out, and no operation uses them;
- access that cannot be used at all (an unreadable kubeconfig, an unknown context, no service
  account: KubeConfigError) is a precondition of the run, not a failure of one object: it
  raises, as it does for the observer of the same run. Everything after it, a request refused
  or unanswered, is the object's `problem` (providers/outcomes.py).

> **Why** — the state outlives the place it was written from. A stack first updated from a
> workstation and then run in-cluster by the Pulumi Kubernetes Operator would otherwise
> refresh and delete through a kubeconfig path that exists only on the workstation; and
> kubeconfig contents kept in inputs would put credentials into the state.

How the configuration gets here: the engine sends the dynamic provider process the whole stack
configuration (keys with their namespace, secure values decrypted), and the SDK calls
`configure` once on each provider it unpickles, before any check, diff or CRUD call of the run
(pulumi/dynamic/__main__.py). Only that process ever configures a provider: the instance the
program pickles into `__provider` never was, so no access enters the state that way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pulumi.dynamic import Config, ConfigureRequest, ResourceProvider

from providers.kube import KubeAccess

KUBECONFIG_KEY: Final = "magicstick:kubeconfig"
CONTEXT_KEY: Final = "magicstick:context"
LEGACY_ACCESS_PROPERTIES: Final = ("kubeconfig", "context")
"""Inputs and outputs of earlier versions that held the access of the run that wrote them."""


def access_from_config(config: Config) -> KubeAccess:
    """The access stack config `config` names; the ambient access for what it leaves unset. Pure.

    Keys are read with their namespace: the SDK's idea of the project name in the provider
    process is not always `magicstick`.
    """
    return KubeAccess(kubeconfig=_set(config.get(KUBECONFIG_KEY)), context=_set(config.get(CONTEXT_KEY)))


def without_legacy_access(props: Mapping[str, Any]) -> dict[str, Any]:
    """`props` without the access keys that earlier versions kept in inputs and outputs. Pure."""
    return {key: value for key, value in props.items() if key not in LEGACY_ACCESS_PROPERTIES}


def _set(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


class ClusterResourceProvider(ResourceProvider):
    """A dynamic provider that reaches the cluster as the stack's configuration says."""

    _configured_access: KubeAccess | None = None
    """Set on the instance by `configure`; this class-level None means "never configured"."""

    def configure(self, req: ConfigureRequest) -> None:
        # Configuration values, not a client, are kept on the instance: `configure` is Pulumi's
        # documented place to "initialize the provider and store configuration", and it is the
        # only way the values reach the later calls of the same provider process. Every method
        # still builds its own client from them (docs/architecture.md, "Dynamic providers").
        self._configured_access = access_from_config(req.config)

    def cluster_access(self) -> KubeAccess:
        """The configured access; the ambient one when `configure` never ran (under mocks, in tests)."""
        return KubeAccess() if self._configured_access is None else self._configured_access
