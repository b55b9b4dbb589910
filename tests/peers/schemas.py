"""Whether every object a peer renders or builds is one its kind accepts, judged by whoever
defines the kind.

- Custom kinds: the vendored upstream CRDs (tests/support/crd_schema.py) and the program's own
  CRDs (api/crds). A custom kind neither defines is an error naming it: an object nobody can
  check is one the cluster may refuse.
- Built-in kinds: the test kube-apiserver itself (Kubernetes 1.35, the minor the `helm` binary
  renders for), by a server-side dry-run apply as the admin. It runs the API server's own
  validation (schema, names, field rules), which no re-implementation here would match: RBAC
  names, for one, may hold `:`, which a DNS-1123 check refuses. The object's namespace is
  created first when it does not exist.

A namespaced object without a namespace is checked as installed into the namespace given, as
Helm and Flux install it.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any, Final

from providers.kube import KubeAccess, KubeClient, KubeError, ResourceKind, open_client
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo
from tests.live.world import ensure_namespace
from tests.peers.scene import OWN_CRDS
from tests.support.crd_schema import CrdSchemaRegistry, UnknownKindError, upstream_registry

FIELD_MANAGER: Final = "peers-schema-check"


def _is_builtin(group: str) -> bool:
    """A group of Kubernetes itself: the core group, a name without dots, or *.k8s.io."""
    return "." not in group or group.endswith(".k8s.io")


def _installed(obj: Mapping[str, Any], namespace: str | None) -> Mapping[str, Any]:
    """`obj` with `namespace` when it has none and its kind is namespaced (`namespace` given)."""
    if namespace is None or obj["metadata"].get("namespace"):
        return obj
    return {**obj, "metadata": {**obj["metadata"], "namespace": namespace}}


def _crd_registry(api_version: str, kind: str) -> tuple[CrdSchemaRegistry, bool] | None:
    for registry in (upstream_registry(), OWN_CRDS):
        try:
            definition = registry.definition_for(api_version, kind)
        except UnknownKindError:
            continue
        return registry, definition.namespaced
    return None


class Schemas:
    """Every object's verdict: a vendored or own CRD schema, or the API server's dry run."""

    def __init__(self, cluster: ClusterInfo) -> None:
        self._cluster = cluster
        self._discovered: dict[str, dict[str, ResourceKind]] = {}
        self._namespaces: set[str] = set()

    def errors(self, obj: Mapping[str, Any], *, namespace: str) -> list[str]:
        """Why `obj`, installed into `namespace`, is not accepted for its kind; empty when it is."""
        api_version, kind = obj["apiVersion"], obj["kind"]
        found = _crd_registry(api_version, kind)
        if found is not None:
            crds, namespaced = found
            return crds.errors(_installed(obj, namespace if namespaced else None))
        if not _is_builtin(api_version.rpartition("/")[0]):
            return [f"{kind} {api_version}: no vendored or own CustomResourceDefinition defines it"]
        resource = self._served(api_version).get(kind)
        if resource is None:
            return [f"{kind} {api_version}: the API server does not serve it"]
        installed = _installed(obj, namespace if resource.namespaced else None)
        with self._admin() as admin:
            if resource.namespaced:
                self._ensure_namespace(admin, installed["metadata"]["namespace"])
            try:
                admin.apply(resource, installed, field_manager=FIELD_MANAGER, dry_run=True)
            except KubeError as error:
                return [f"the API server refuses it: {error}"]
        return []

    def _admin(self) -> AbstractContextManager[KubeClient]:
        return open_client(KubeAccess(kubeconfig=str(self._cluster.kubeconfig_path(ADMIN_USER))))

    def _ensure_namespace(self, admin: KubeClient, name: str) -> None:
        if name not in self._namespaces:
            ensure_namespace(admin, name)
            self._namespaces.add(name)

    def _served(self, api_version: str) -> dict[str, ResourceKind]:
        """The kinds the API server serves at `api_version`, from its discovery document."""
        if api_version not in self._discovered:
            path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
            with self._cluster.client() as http:
                answer = http.get(path)
            assert answer.status_code == 200, f"GET {path}: {answer.status_code}"
            group, _, version = api_version.rpartition("/")
            self._discovered[api_version] = {
                r["kind"]: ResourceKind(
                    group=group, version=version, kind=r["kind"], plural=r["name"], namespaced=r["namespaced"]
                )
                for r in answer.json()["resources"]
                if "/" not in r["name"]
            }
        return self._discovered[api_version]
