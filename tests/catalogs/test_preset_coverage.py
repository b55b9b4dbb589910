"""The shipped presets cover every engine on every compute target the catalogs support."""

from __future__ import annotations

import pytest

from api.models import LocalModelSpec
from catalogs import load_catalogs
from planning.models.resolve import resolve_local

CATALOGS = load_catalogs()
SUPPORTED = sorted(
    (engine.name, target)
    for engine in CATALOGS.engines.entries
    for target in engine.compute_targets
    if CATALOGS.compute_targets.get(target) is not None
)


def test_more_than_three_presets_ship():
    assert len(CATALOGS.presets.entries) > 3


def test_every_compute_target_of_the_catalog_is_supported_by_some_engine():
    assert {target for _, target in SUPPORTED} == set(CATALOGS.compute_targets.names)


@pytest.mark.parametrize(("engine", "target"), SUPPORTED)
def test_a_preset_serves_the_engine_on_the_target_with_a_default_artifact_that_resolves(engine, target):
    presets = [p for p in CATALOGS.presets.entries if p.variant(engine, target) is not None]
    assert presets, f"no preset has a variant for {engine} on {target}"
    for preset in presets:
        local = LocalModelSpec.model_validate({"preset": preset.name, "engine": engine, "computeTarget": target})
        resolved = resolve_local(local, CATALOGS)
        assert resolved.artifact == preset.variant(engine, target).default_artifact
        assert (resolved.engine, resolved.compute_target) == (engine, target)


def test_a_declared_default_compute_target_is_one_of_the_presets_variants():
    for preset in CATALOGS.presets.entries:
        if preset.default_compute_target is not None:
            assert preset.default_compute_target in {v.compute_target for v in preset.variants}, preset.name
