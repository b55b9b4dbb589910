"""Large generated clusters: thousands of ModelActivations and hundreds of AppInstances.

Shared by the status-bound tests (tests/planning/test_status_bounds.py) and the status-size
benchmark (benchmarks/status_size.py).
"""

from __future__ import annotations

from planning.instances.plan import GATEWAY_CRDS, HELM_RELEASE_CRD
from tests.planning.builders import CATALOGS, JsonObject, activation, crd, runtime, with_flux
from tests.planning.models.world import platform

NAME_LIMIT = 253
"""The longest name Kubernetes accepts for a custom resource."""
APPLICATIONS = ("openclaw", "hermes", "paperclip", "kubeopencode", "odysseus")


def _name(prefix: str, index: int, long_names: bool) -> str:
    name = f"{prefix}-{index:05d}"
    return (name + "-" + "x" * NAME_LIMIT)[:NAME_LIMIT] if long_names else name


def model_activation(index: int, *, long_names: bool = False) -> JsonObject:
    """Every fourth an external model, then CPU vLLM, CPU Ollama and an NVIDIA model in turn."""
    name = _name("model", index, long_names)
    kind = index % 4
    if kind == 3:
        external = {
            "model": "openai/gpt-4o-mini",
            "apiBase": "https://api.example.com/v1",
            "modelType": "chat",
            "apiKeySecretRef": {"name": "external-api-key", "key": "api-key"},
        }
        return runtime("ModelActivation", name, {"type": "external", "external": external})
    target, engine = (("cpu", "VLLM"), ("cpu", "OLlama"), ("nvidia-gpu", "VLLM"))[kind]
    local = {"preset": "qwen2505bcpu", "computeTarget": target, "engine": engine}
    return runtime("ModelActivation", name, {"type": "local", "local": local})


def app_instance(index: int, *, long_names: bool = False) -> JsonObject:
    application = APPLICATIONS[index % len(APPLICATIONS)]
    name = _name(f"{application}", index, long_names)
    values = {"name": name[:63] if not long_names else f"i{index:05d}-" + "y" * 56}
    return runtime("AppInstance", name, {"application": application, "values": values})


def large_cluster(models: int, instances: int, *, long_names: bool = False) -> list[JsonObject]:
    """A Ready platform with `models` ModelActivations and `instances` AppInstances, and the gpu
    module disabled by its ModuleActivation, so that a quarter of the models wait on it."""
    modules = {m for entry in CATALOGS.applications.entries for m in entry.required_modules}
    objects = [*platform(*sorted(modules)), activation("gpu", enabled=False)]
    objects += [crd(name) for name in (*GATEWAY_CRDS, HELM_RELEASE_CRD)]
    objects += [model_activation(i, long_names=long_names) for i in range(models)]
    objects += [app_instance(i, long_names=long_names) for i in range(instances)]
    return with_flux(objects)
