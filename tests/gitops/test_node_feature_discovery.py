"""The one shared Node Feature Discovery (magic-cluster/platform/node-feature-discovery), as the
base entrypoint applies it: its workers re-detect the node's hardware every 60 s, and they
publish the PCI labels in the form the program reads (planning/hardware/nodes.py).

NFD's chart is not vendored here, so its values are read from the HelmRelease as Flux applies it
(built and substituted); the chart's documented defaults fill what the release leaves out.
tests/live/test_nfd_redetection.py shows the program's next pass following NFD's relabelling.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any, Final

from planning.hardware.nodes import GPU_PCI_CLASSES
from tests.gitops.tree import ENTRYPOINTS, build, flux_build, in_repository, of_kind

NFD: Final = "node-feature-discovery"
INTERVAL: Final = timedelta(seconds=60)
CHART_LABEL_FIELDS: Final = ("class", "vendor")
"""NFD's default `sources.pci.deviceLabelFields`: labels `pci-<class>_<vendor>.present`."""
CHART_CLASS_WHITELIST: Final = ("03", "0b40", "12")
"""NFD's default `sources.pci.deviceClassWhitelist`."""
_DURATION: Final = re.compile(r"^(?:(?P<h>[0-9]+)h)?(?:(?P<m>[0-9]+)m)?(?:(?P<s>[0-9]+)s)?$")


def _duration(text: str) -> timedelta:
    """A Go duration of hours, minutes and seconds, as NFD's configuration reads it."""
    match = _DURATION.match(text)
    assert match is not None and text, f"{text!r} is not a duration"
    return timedelta(hours=int(match["h"] or 0), minutes=int(match["m"] or 0), seconds=int(match["s"] or 0))


def _nfd_path() -> str:
    (entrypoint, *_) = ENTRYPOINTS
    kustomizations = [k for k in of_kind(build(entrypoint), "Kustomization") if k["metadata"]["name"] == NFD]
    (kustomization,) = kustomizations
    return str(kustomization["spec"]["path"])


def _worker_config() -> dict[str, Any]:
    (release,) = of_kind(flux_build(in_repository(_nfd_path())), "HelmRelease")
    config: dict[str, Any] = release["spec"]["values"]["worker"]["config"]
    return config


def test_the_entrypoint_applies_the_shared_nfd_from_its_platform_path():
    assert _nfd_path() == "./magic-cluster/platform/node-feature-discovery"


def test_nfd_workers_re_detect_the_hardware_every_60_seconds():
    assert _duration(str(_worker_config()["core"]["sleepInterval"])) == INTERVAL


def test_nfd_labels_every_gpu_class_as_pci_class_and_vendor_which_the_program_reads():
    pci = ((_worker_config().get("sources") or {}).get("pci")) or {}
    fields = tuple(pci.get("deviceLabelFields", CHART_LABEL_FIELDS))
    assert fields == CHART_LABEL_FIELDS
    whitelist = tuple(pci.get("deviceClassWhitelist", CHART_CLASS_WHITELIST))
    assert {cls for cls in GPU_PCI_CLASSES if not any(cls.startswith(prefix) for prefix in whitelist)} == set()
