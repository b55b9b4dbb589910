"""Raw Kubernetes objects for planning tests, as `kubectl get -o yaml` would print them."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from api.meta import API_VERSION
from catalogs import load_catalogs
from planning.frozen import thaw
from planning.plan import Plan, plan
from planning.snapshot import Snapshot

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
LATER = datetime(2026, 1, 2, tzinfo=timezone.utc)
NS = "ai-system"
CATALOGS = load_catalogs()


def appliance(modules: dict[str, bool] | None = None, *, generation: int = 1, source: dict | None = None, status: dict | None = None) -> dict:
    spec: dict[str, Any] = {"profile": "ai-workstation"}
    if source is not None:
        spec["source"] = source
    if modules is not None:
        spec["modules"] = {name: {"enabled": enabled} for name, enabled in modules.items()}
    obj = {
        "apiVersion": API_VERSION,
        "kind": "Appliance",
        "metadata": {"name": "local", "namespace": NS, "generation": generation, "uid": "uid-appliance"},
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


def runtime(kind: str, name: str, spec: dict, *, generation: int = 1, labels: dict | None = None, status: dict | None = None) -> dict:
    metadata: dict[str, Any] = {"name": name, "namespace": NS, "generation": generation, "uid": f"uid-{name}"}
    if labels:
        metadata["labels"] = labels
    obj = {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}
    if status is not None:
        obj["status"] = status
    return obj


def activation(name: str, module: str | None = None, *, enabled: bool = True, **kwargs: Any) -> dict:
    return runtime("ModuleActivation", name, {"module": module or name, "enabled": enabled}, **kwargs)


def instance(name: str, application: str, *, enabled: bool = True, **kwargs: Any) -> dict:
    return runtime("AppInstance", name, {"application": application, "enabled": enabled, "values": {"name": name}}, **kwargs)


def cpu_model(name: str, *, engine: str = "VLLM", enabled: bool = True) -> dict:
    return runtime(
        "ModelActivation",
        name,
        {"type": "local", "enabled": enabled, "local": {"preset": "qwen2505bcpu", "computeTarget": "cpu", "engine": engine}},
    )


def gpu_model(name: str, target: str = "nvidia-gpu") -> dict:
    return runtime(
        "ModelActivation",
        name,
        {"type": "local", "enabled": True, "local": {"preset": "qwen2505bcpu", "computeTarget": target, "engine": "VLLM"}},
    )


def external_model(name: str) -> dict:
    return runtime(
        "ModelActivation",
        name,
        {
            "type": "external",
            "enabled": True,
            "external": {
                "model": "openai/gpt-4o-mini",
                "apiBase": "https://api.example.com/v1",
                "modelType": "chat",
                "apiKeySecretRef": {"name": "external-api-key", "key": "api-key"},
            },
        },
    )


def kustomization_for(module: str, ready: str | None = "True", *, reason: str = "ReconciliationSucceeded", message: str = "Applied revision: main@sha1:0123", suspend: bool = False, labels: dict | None = None, spec: dict | None = None) -> dict:
    entry = CATALOGS.modules.get(module)
    obj: dict[str, Any] = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {
            "name": entry.kustomization,
            "namespace": "flux-system",
            "generation": 1,
            "labels": labels if labels is not None else {"app.kubernetes.io/managed-by": "magicstick", "appliance.magicstick.dev/module": module},
        },
        "spec": spec if spec is not None else {"interval": "10m0s", "path": entry.path, "prune": True, "suspend": suspend, "sourceRef": {"kind": "GitRepository", "name": "flux-system"}},
    }
    if ready is not None:
        obj["status"] = {
            "observedGeneration": 1,
            "conditions": [{"type": "Ready", "status": ready, "reason": reason, "message": message, "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        }
    return obj


def crd(name: str) -> dict:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": name}}


def ready_modules(*modules: str) -> list[dict]:
    """Ready Kustomizations and served CRDs for `modules`."""
    objects: list[dict] = []
    for module in modules:
        objects.append(kustomization_for(module))
        objects += [crd(name) for name in CATALOGS.modules.get(module).required_crds]
    return objects


FLUX_CRD = "kustomizations.kustomize.toolkit.fluxcd.io"


def with_flux(objects) -> list[dict]:
    """`objects` in a cluster where Flux is installed (its Kustomization CRD served), as in every
    appliance; a test of the opposite passes `flux=False` to plan_of."""
    objects = list(objects)
    served = any(o.get("kind") == "CustomResourceDefinition" and o["metadata"]["name"] == FLUX_CRD for o in objects)
    return objects if served else [*objects, crd(FLUX_CRD)]


def plan_of(*objects: dict, now: datetime = NOW, flux: bool = True) -> Plan:
    return plan(snapshot=Snapshot.from_objects(with_flux(objects) if flux else objects), catalogs=CATALOGS, now=now)


def status_of(result: Plan, kind: str, name: str) -> dict:
    for update in result.statuses:
        if update.kind == kind and update.name == name:
            return thaw(update.status)
    raise KeyError(f"no status for {kind}/{name}")


def kustomization_names(result: Plan) -> set[str]:
    return {k.name for k in result.modules.kustomizations}


def kustomization_of(result: Plan, module: str) -> Any:
    name = CATALOGS.modules.get(module).kustomization
    matches = [k for k in result.modules.kustomizations if k.name == name]
    return matches[0] if matches else None
