"""The appliance's model cache on the host: its fixed locations, once for both sides.

The host agent's clear-model-cache empties exactly these folders (services/host_agent); the
program exposes the same folders to the model runtimes as hostPath PersistentVolumes
(planning/models/model_cache.py). One definition, so the runtimes never write where a clear
does not reach. Pure.
"""

from __future__ import annotations

from typing import Final

MODEL_CACHE_ROOT: Final = "/var/lib/magicstick/model-cache"
"""The host folder that holds every runtime's cache, one subfolder each."""

MODEL_CACHE_LOCATIONS: Final = {
    "huggingface": "var/lib/magicstick/model-cache/huggingface",
    "ollama": "var/lib/magicstick/model-cache/ollama",
    "freetoken": "var/lib/magicstick/model-cache/freetoken",
    "vllm-omni": "var/lib/magicstick/model-cache/vllm-omni",
}
"""The cache folders by runtime, relative to the host's root (the host agent acts below a
configurable root; the runtimes see `/` + the location)."""


def host_path(runtime: str) -> str:
    """The absolute host path of one runtime's cache folder. Pure."""
    return "/" + MODEL_CACHE_LOCATIONS[runtime]
