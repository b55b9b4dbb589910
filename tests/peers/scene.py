"""The demo appliance with one AppInstance per application and access mode, rendered until it
settles, for the peers to judge.

The demo's own instances stay, and every application of the catalog gets one instance per
access mode of `ACCESS_MODES`. The
program renders the scene with its own `render`; between renders the scene plays the
controllers the program waits on, as they would answer: every module's operator has installed
its CRDs, Flux marks every Kustomization and HelmRelease the program declared Ready for its
generation, the program's Deployments are available, and its ModuleActivations are stored as
declared. SecurityPolicies are not played: their statuses come from Envoy
Gateway's own translator (the `judge` of `settle`), with the routes', so a route gets its
backend only once the real translator accepted its policy.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from api.crdgen import CRD_DIRECTORY
from api.instances import APPLICATIONS
from catalogs import load_catalogs
from cli.render import render
from tests.planning.builders import flux_status
from tests.support.crd_defaults import with_defaults
from tests.support.crd_schema import CrdSchemaRegistry

REPOSITORY: Final = Path(__file__).resolve().parents[2]
DEMO: Final = REPOSITORY / "examples" / "demo" / "snapshot.yaml"
NOW: Final = "2026-01-01T12:00:00Z"
SYSTEM_NAMESPACE: Final = "ai-system"
OWN_CRDS: Final = CrdSchemaRegistry(CRD_DIRECTORY)
FLUX_KINDS: Final = frozenset({"Kustomization", "HelmRelease"})
ACCESS: Final = {"guardImage": "registry.example.com/magicstick/access-guard:1.0.0"}
"""Access settings of a real installation: a built guard image (the default is a placeholder
that keeps every route without backend)."""

JsonObject = dict[str, Any]

ACCESS_MODES: Final[Mapping[str, JsonObject]] = {
    "sso": {"authentication": "sso", "role": "user", "exposure": "localAndPublic"},
    "admin": {"authentication": "sso", "role": "admin"},
    "local": {"authentication": "sso", "role": "operator", "exposure": "local"},
    "shared": {"authentication": "sso", "role": "viewer", "sharing": {"mode": "all"}},
    "selected": {"sharing": {"mode": "selected", "users": ["user-0001"], "groups": ["group-research"]}},
    "nobody": {"sharing": {"mode": "selected"}},
    "open": {"authentication": "none", "exposure": "local"},
}
"""Every access an AppInstance can ask for: SSO with each kind of role, local exposure,
sharing with all, with a selection, with an empty selection (which admits nobody), and no
authentication."""


def identity(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    metadata = obj["metadata"]
    return obj["kind"], metadata.get("namespace", ""), metadata["name"]


def instance_name(application: str, mode: str) -> str:
    return f"{application}-{mode}"


def _uid(obj: Mapping[str, Any]) -> str:
    return f"00000000-0000-4000-8000-5ce7{zlib.crc32(repr(identity(obj)).encode()):08x}"


def stored(obj: Mapping[str, Any], *, defaults: bool = False) -> JsonObject:
    """`obj` as the API server keeps it: generation 1, a uid, our CRDs' defaults when asked."""
    found = with_defaults(dict(obj), registry=OWN_CRDS) if defaults else dict(obj)
    found["metadata"] = {**found["metadata"], "generation": 1, "resourceVersion": "1000", "uid": _uid(obj)}
    return found


def established_crd(name: str) -> JsonObject:
    """A served CustomResourceDefinition, as the snapshot reads one."""
    condition = {
        "type": "Established",
        "status": "True",
        "reason": "InitialNamesAccepted",
        "message": "the initial names have been accepted",
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "status": {"conditions": [condition]},
    }


def app_instance(application: str, mode: str) -> JsonObject:
    return {
        "apiVersion": "appliance.magicstick.dev/v1alpha1",
        "kind": "AppInstance",
        "metadata": {"name": instance_name(application, mode), "namespace": SYSTEM_NAMESPACE},
        "spec": {
            "application": application,
            "enabled": True,
            "targetNamespace": "ai",
            "access": dict(ACCESS_MODES[mode]),
            "values": {"name": mode},
        },
    }


def _flux_ready(obj: Mapping[str, Any]) -> JsonObject:
    found = stored(obj)
    found["status"] = flux_status(
        "True",
        reason="ReconciliationSucceeded",
        message="Applied revision: main@sha1:0123456789abcdef0123456789abcdef01234567",
        observed_generation=1,
    )
    return found


def _deployment_available(obj: Mapping[str, Any]) -> JsonObject:
    found = stored(obj)
    replicas = int(obj["spec"].get("replicas", 1))
    available = {
        "type": "Available",
        "status": "True",
        "reason": "MinimumReplicasAvailable",
        "message": "Deployment has minimum availability.",
    }
    found["status"] = {
        "observedGeneration": 1,
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": replicas,
        "availableReplicas": replicas,
        "conditions": [available],
    }
    return found


@dataclass(frozen=True)
class Rendered:
    """One render of the scene: every declared resource, by kind, and every status written."""

    resources: tuple[JsonObject, ...]
    statuses: tuple[JsonObject, ...] = ()

    @classmethod
    def read(cls, out: Path) -> Rendered:
        def documents(folder: str) -> tuple[JsonObject, ...]:
            return tuple(yaml.safe_load(path.read_text()) for path in sorted((out / folder).glob("*.yaml")))

        return cls(documents("resources"), documents("status"))

    def of_kind(self, *kinds: str) -> list[JsonObject]:
        return [obj for obj in self.resources if obj["kind"] in kinds]


PolicyJudge = Callable[[Rendered], Iterable[JsonObject]]
"""Given a render, the SecurityPolicies and HTTPRoutes as the judge left them, status included."""


@dataclass
class Scene:
    """A snapshot the program renders from, refined between renders as controllers would."""

    directory: Path
    objects: dict[tuple[str, str, str], JsonObject]
    renders: int = 0

    @classmethod
    def every_application_and_access_mode(cls, directory: Path) -> Scene:
        demo = [d for d in yaml.safe_load_all(DEMO.read_text()) if d]
        objects = {identity(obj): obj for obj in demo}
        for module in load_catalogs().modules.entries:
            for crd_name in module.required_crds:
                crd = established_crd(crd_name)
                objects.setdefault(identity(crd), crd)
        for application in APPLICATIONS:
            for mode in ACCESS_MODES:
                instance = stored(app_instance(application, mode), defaults=True)
                objects[identity(instance)] = instance
        return cls(directory, objects)

    def render(self) -> Rendered:
        self.renders += 1
        snapshot = self.directory / f"snapshot-{self.renders}.yaml"
        snapshot.write_text(yaml.safe_dump_all(list(self.objects.values()), sort_keys=False))
        out = self.directory / f"render-{self.renders}"
        render(snapshot=snapshot, out=out, now=NOW, access=ACCESS)
        return Rendered.read(out)

    def store(self, objects: Iterable[JsonObject]) -> None:
        for obj in objects:
            self.objects[identity(obj)] = obj

    def settle(self, judge: PolicyJudge, *, limit: int = 6) -> Rendered:
        """Render until a render declares nothing new: Flux objects Ready, policies judged."""
        rendered = self.render()
        for _ in range(limit):
            before = dict(self.objects)
            self.store(_flux_ready(obj) for obj in rendered.of_kind(*FLUX_KINDS))
            self.store(stored(obj) for obj in rendered.of_kind("ModuleActivation"))
            self.store(_deployment_available(obj) for obj in rendered.of_kind("Deployment"))
            self.store(judge(rendered))
            if self.objects == before:
                return rendered
            rendered = self.render()
        raise AssertionError(f"the scene did not settle in {limit} renders")
