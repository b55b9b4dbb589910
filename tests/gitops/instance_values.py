"""The HelmReleases the program generates for AppInstances, built by its own planning code.

Each application is released with the values of every AppInstance the project ships for it
(the demo snapshot), the product contract's examples, a minimal instance and an instance without values:
exactly what `planning.instances.releases.helm_release` puts into `spec.values`. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from catalogs import ApplicationEntry
from planning.frozen import thaw
from planning.instances.names import derived_release_name, instance_name_of
from planning.instances.releases import helm_release
from planning.kustomizations import SourceRef
from tests.gitops.tree import REPOSITORY, application_entries
from tests.planning.instances.scene import PAPERCLIP_VALUES

DEMO_SNAPSHOT: Final = REPOSITORY / "examples" / "demo" / "snapshot.yaml"
TARGET_NAMESPACE: Final = "ai"

SEED_VALUES: Final[dict[str, tuple[dict[str, Any], ...]]] = {
    "openclaw": ({"name": "default", "model": "CHANGEME_MODEL"},),
    "paperclip": (PAPERCLIP_VALUES,),
}
"""Instance values as the product contract's examples write them."""


@dataclass(frozen=True)
class RenderedRelease:
    """What the program declares for one instance: where the chart goes and with which values."""

    label: str
    application: ApplicationEntry
    chart: Path
    release: str
    namespace: str
    values: dict[str, Any]


def _demo_values() -> list[tuple[str, str, dict[str, Any]]]:
    found = []
    for document in yaml.safe_load_all(DEMO_SNAPSHOT.read_text()):
        if document and document.get("kind") == "AppInstance":
            spec = document["spec"]
            found.append((document["metadata"]["name"], spec["application"], spec.get("values") or {}))
    return found


def _release(label: str, application: ApplicationEntry, object_name: str, values: dict[str, Any]) -> RenderedRelease:
    name = instance_name_of(values=values, object_name=object_name)
    release_name = derived_release_name(application=application.name, instance_name=name)
    body = helm_release(
        instance=object_name,
        release_name=release_name,
        application=application,
        system_namespace="ai-system",
        target_namespace=TARGET_NAMESPACE,
        values=values,
        source=SourceRef(),
        field_manager="magicstick",
    ).body
    spec = thaw(body["spec"])
    return RenderedRelease(
        label=label,
        application=application,
        chart=REPOSITORY / spec["chart"]["spec"]["chart"].removeprefix("./"),
        release=spec["releaseName"],
        namespace=spec["targetNamespace"],
        values=spec["values"],
    )


def program_releases() -> list[RenderedRelease]:
    """Every (application, values) pair the tests render, as the program would release it."""
    applications = {entry.name: entry for entry in application_entries()}
    releases = []
    for object_name, application, values in _demo_values():
        releases.append(_release(f"demo:{object_name}", applications[application], object_name, values))
    for application, examples in SEED_VALUES.items():
        for index, values in enumerate(examples):
            releases.append(
                _release(f"seed:{application}-{index}", applications[application], f"{application}-seed", values)
            )
    for entry in applications.values():
        releases.append(
            _release(
                f"minimal:{entry.name}", entry, f"{entry.name}-minimal", {"name": "minimal", "model": "qwen2505bcpu"}
            )
        )
        releases.append(_release(f"empty:{entry.name}", entry, f"{entry.name}-empty", {}))
    return releases
