"""The schema of any object a peer builds, judged by whoever defines its kind.

- A custom resource: the vendored upstream CRDs or the program's own CRDs (`schema_problems`;
  a kind neither defines is a problem: an object nobody can check is not let through).
- A built-in kind: the test API server itself, by a server-side dry run (`server_problems`),
  since only a few of Kubernetes' OpenAPI documents are vendored.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from api.crdgen import CRD_DIRECTORY
from tests.support.crd_schema import CrdSchemaRegistry, UnknownKindError, upstream_registry

KUBECTL: Final = shutil.which("kubectl")
BUILT_IN_GROUPS: Final = frozenset(
    {
        "", "apps", "batch", "policy", "autoscaling", "rbac.authorization.k8s.io", "networking.k8s.io",
        "admissionregistration.k8s.io", "apiextensions.k8s.io", "scheduling.k8s.io", "storage.k8s.io",
        "node.k8s.io", "resource.k8s.io", "coordination.k8s.io", "discovery.k8s.io", "certificates.k8s.io",
    }
)
"""The API groups Kubernetes serves itself."""
FIELD_MANAGER: Final = "peers-schema-check"


@functools.cache
def _own_registry() -> CrdSchemaRegistry:
    return CrdSchemaRegistry(CRD_DIRECTORY)


def is_built_in(obj: Mapping[str, Any]) -> bool:
    group, _, _ = str(obj["apiVersion"]).rpartition("/")
    return group in BUILT_IN_GROUPS


def schema_problems(obj: Mapping[str, Any]) -> list[str]:
    """Every way the custom resource `obj` breaks the CRD schema of its kind; empty when it conforms."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    for registry in (upstream_registry(), _own_registry()):
        try:
            registry.definition_for(api_version, kind)
        except UnknownKindError:
            continue
        return registry.errors(obj)
    return [f"no vendored or own CRD defines {kind} in {api_version}"]


def server_problems(objects: Iterable[Mapping[str, Any]], *, kubeconfig: Path) -> str:
    """What the API server refuses of the built-in `objects` in a server-side dry run (`kubectl
    apply --server-side --dry-run=server`); empty when it accepts them all. Their namespaces
    must exist."""
    assert KUBECTL is not None, "kubectl is needed; see README, Tests"
    documents = [dict(obj) for obj in objects]
    if not documents:
        return ""
    answer = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), "apply", "--server-side", "--dry-run=server", "--field-manager", FIELD_MANAGER, "-f", "-"],
        input=yaml.safe_dump_all(documents, sort_keys=False),
        capture_output=True,
        text=True,
        check=False,
    )
    return "" if answer.returncode == 0 else answer.stderr
