"""The engine profiles the compute-target catalog names are defined where KubeAI reads them: the
inline values of the KubeAI HelmRelease, exactly as the program clones them."""

from __future__ import annotations

from planning.frozen import thaw
from planning.models.kubeai import ENGINE_PROFILES
from tests.gitops.test_kubeai_base import built, of_kind  # noqa: F401  (the fixture)
from tests.planning.builders import CATALOGS


def test_every_engine_profile_the_program_selects_is_in_the_helm_releases_inline_values(built):
    (release,) = of_kind(built, "HelmRelease")
    assert release["spec"]["values"]["resourceProfiles"] == thaw(ENGINE_PROFILES)


def test_every_profile_an_accelerator_target_names_is_an_engine_profile():
    accelerators = [target for target in CATALOGS.compute_targets.entries if target.module]
    named = {profile for target in accelerators for profile in target.resource_profiles.values()}
    assert named <= set(ENGINE_PROFILES)
