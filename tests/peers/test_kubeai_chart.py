"""The real `helm` renders the vendored KubeAI chart with the values its HelmRelease merges.

KubeAI reads its resource profiles from one place: `resourceProfiles` in the `system.yaml` of
the ConfigMap `kubeai-config` its chart renders. The program never talks to KubeAI about them:
it writes CPU count-one profiles, accelerator models' CPU-policy clones and offloading profiles
into ConfigMaps (magic-cluster/apps/ai/kubeai/stores.yaml) that the KubeAI HelmRelease reads
through `valuesFrom`, and the HelmRelease adds the engine profiles inline (ENGINE_PROFILES). So
a profile reaches KubeAI only if Helm renders it there unchanged. The stores are filled from the
program's own offline renders (tests/peers/kubeai_chart.py), merged as helm-controller merges
them, and rendered by Helm over the chart's own values.yaml, release `kubeai` in namespace `ai`.

Also judged: every rendered object is accepted for its kind (tests/peers/schemas.py: the chart
renders the Model CRD from templates/crds, which the test API server accepts in a dry run and
which equals the vendored upstream CRD the rest of the suite validates Models against), and
`helm lint --strict` of the chart with those values passes (it reports only the INFO that
Chart.yaml has no icon).
"""

from __future__ import annotations

import pytest
import yaml

from planning.frozen import thaw
from planning.models.kubeai import ENGINE_PROFILES, PROFILE_STORE_CONFIG_MAP
from planning.models.offloading import OFFLOADING_CONFIG_MAP
from tests.peers import helm
from tests.peers.kubeai_chart import KUBEAI_CHART, RELEASE_NAMESPACE, ReleaseRender, render_release
from tests.support.vendored import VENDORED_CRDS

STORE_NAMESPACE = "flux-system"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> ReleaseRender:
    return render_release(tmp_path_factory.mktemp("kubeai-chart"), template=helm.template)


def _written(rendered: ReleaseRender, config_map: str) -> dict[str, dict]:
    return {w.name: w.profile for w in rendered.written if (w.namespace, w.config_map) == (STORE_NAMESPACE, config_map)}


def test_the_program_writes_profiles_of_every_kind(rendered):
    runtime = _written(rendered, PROFILE_STORE_CONFIG_MAP)
    assert [n for n in runtime if n.startswith("magicstick-cpu-")], "no CPU count-one profile"
    assert [n for n in runtime if not n.startswith("magicstick-cpu-")], "no CPU-policy clone of an engine profile"
    assert _written(rendered, OFFLOADING_CONFIG_MAP), "no offloading profile"
    assert {w.config_map for w in rendered.written} == {PROFILE_STORE_CONFIG_MAP, OFFLOADING_CONFIG_MAP}


def test_one_profile_name_always_holds_one_profile(rendered):
    bodies: dict[tuple[str, str], list[dict]] = {}
    for w in rendered.written:
        found = bodies.setdefault((w.config_map, w.name), [])
        if w.profile not in found:
            found.append(w.profile)
    assert {key: found for key, found in bodies.items() if len(found) > 1} == {}


def test_the_chart_renders_the_kubeai_config(rendered):
    assert rendered.system()["resourceProfiles"]


def test_every_profile_in_the_stores_reaches_kubeai_unchanged(rendered):
    profiles = rendered.system()["resourceProfiles"]
    for config_map in (PROFILE_STORE_CONFIG_MAP, OFFLOADING_CONFIG_MAP):
        for name, profile in _written(rendered, config_map).items():
            assert profiles.get(name) == profile, (config_map, name)


def test_every_engine_profile_reaches_kubeai_unchanged(rendered):
    profiles = rendered.system()["resourceProfiles"]
    for name, profile in ENGINE_PROFILES.items():
        assert profiles.get(name) == thaw(profile), name


def test_the_charts_own_profiles_are_still_there(rendered):
    own = yaml.safe_load((KUBEAI_CHART / "values.yaml").read_text())["resourceProfiles"]
    profiles = rendered.system()["resourceProfiles"]
    assert "cpu" in own
    overridden = set(rendered.values["resourceProfiles"])
    assert {name: profiles.get(name) for name in own if name not in overridden} == {
        name: body for name, body in own.items() if name not in overridden
    }


def test_kubeai_gets_no_profile_but_the_charts_and_the_programs(rendered):
    own = yaml.safe_load((KUBEAI_CHART / "values.yaml").read_text())["resourceProfiles"]
    expected = {*own, *ENGINE_PROFILES, *(w.name for w in rendered.written)}
    assert set(rendered.system()["resourceProfiles"]) == expected


def test_everything_the_chart_renders_conforms_to_the_schema_of_its_kind(rendered, schemas):
    errors = {
        f"{o['kind']}/{o['metadata']['name']}": schemas.errors(o, namespace=RELEASE_NAMESPACE) for o in rendered.objects
    }
    assert {name: found for name, found in errors.items() if found} == {}


def test_the_chart_renders_the_vendored_upstream_model_crd(rendered):
    (crd,) = [o for o in rendered.objects if o["kind"] == "CustomResourceDefinition"]
    vendored = yaml.safe_load((VENDORED_CRDS / "kubeai" / "kubeai.org_models.yaml").read_text())
    assert crd["metadata"]["name"] == "models.kubeai.org"
    assert crd["spec"] == vendored["spec"]


def test_the_chart_passes_helm_strict_lint_with_the_release_values(rendered):
    answer = helm.lint(rendered.chart, rendered.values, namespace=RELEASE_NAMESPACE)
    assert answer.returncode == 0, f"{answer.stdout}\n{answer.stderr}"
    assert "[WARNING]" not in answer.stdout and "[ERROR]" not in answer.stdout, answer.stdout
