"""The table of unreachable releases (tests/flux/releases.py) names every HelmRelease the tree's
module bases and the entrypoint install, so a new chart gets its expected outcome stated."""

from __future__ import annotations

from typing import Any

from catalogs import load_catalogs
from tests.flux.graph import built
from tests.flux.releases import ENTRYPOINT_RELEASES, UNREACHABLE_RELEASES, WAITING_RELEASES

IN_REPOSITORY_SOURCE = ("GitRepository", "flux-system")


def _releases(path: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (d["metadata"]["namespace"], d["metadata"]["name"]): d
        for d in built(path.removeprefix("./"))
        if d["kind"] == "HelmRelease"
    }


def _source(release: dict[str, Any]) -> tuple[str, str]:
    spec = release["spec"]
    reference = spec.get("chartRef") or spec["chart"]["spec"]["sourceRef"]
    return reference["kind"], reference["name"]


def test_every_release_of_every_module_base_is_in_the_table() -> None:
    catalogs = load_catalogs()
    for entry in catalogs.modules.entries:
        releases = _releases(entry.path)
        failing = set(UNREACHABLE_RELEASES.get(entry.name, ()))
        waiting = {key for key in releases if key in WAITING_RELEASES}
        assert set(releases) == failing | waiting, (entry.name, sorted(releases))


def test_every_failing_release_reads_its_chart_from_outside_the_repository() -> None:
    catalogs = load_catalogs()
    for module, listed in UNREACHABLE_RELEASES.items():
        releases = _releases(catalogs.modules.require(module).path)
        for key in listed:
            assert _source(releases[key]) != IN_REPOSITORY_SOURCE, key


def test_the_entrypoints_releases_are_in_the_table() -> None:
    for path, key in ENTRYPOINT_RELEASES.items():
        assert set(_releases(path)) == {key}, path
