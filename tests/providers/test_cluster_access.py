"""Where the dynamic providers' cluster access comes from: the stack's configuration, never the state.

Pure: no test here opens a connection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi.dynamic import ResourceProvider

from providers.kube import KubeAccess
from providers.kube.access import load_config, select_context
from providers.ollama import OllamaAliasProvider
from providers.pod_recovery import PodRecoveryProvider
from providers.profile_store import RuntimeProfileProvider
from providers.status_writer import StatusProvider
from tests.providers.engine import LEGACY_ACCESS, configure_request, configured, kubeconfig_config

PROVIDERS: dict[str, Callable[[], Any]] = {
    "Status": StatusProvider,
    "RuntimeProfile": RuntimeProfileProvider,
    "PodRecovery": PodRecoveryProvider,
    "OllamaAlias": OllamaAliasProvider,
}


@dataclass(frozen=True)
class Converged:
    """One resource as the program now declares it, and what its provider stored on the last run."""

    inputs: dict[str, Any]
    """What the program declares, before `check`."""
    outputs_beyond_inputs: dict[str, Any]
    """What the provider adds to the inputs in its outputs."""


CONVERGED: dict[str, Converged] = {
    "Status": Converged(
        inputs={
            "apiVersion": "appliance.magicstick.dev/v1alpha1",
            "kind": "ModuleActivation",
            "namespace": "ai-system",
            "name": "basis",
            "status": {"phase": "Ready", "observedGeneration": 1.0},
        },
        outputs_beyond_inputs={"problem": {}},
    ),
    "RuntimeProfile": Converged(
        inputs={"profileName": "magicstick-cpu-4", "profile": {"imageName": "cpu", "requests": {"cpu": "2"}}},
        outputs_beyond_inputs={"problem": {}},
    ),
    "PodRecovery": Converged(
        inputs={"namespace": "ai", "pod": "model-qwen-0", "podUID": "u", "resourceVersion": "7", "attempt": 1.0},
        outputs_beyond_inputs={"outcome": "Deleted", "problem": {}},
    ),
    "OllamaAlias": Converged(
        inputs={"namespace": "ai", "pods": ["model-qwen-0"], "source": "qwen2.5:0.5b", "alias": "qwen", "port": 8000.0},
        outputs_beyond_inputs={"aliased": ["model-qwen-0"], "waiting": [], "problem": {}},
    ),
}


def _kubeconfig_file(directory: Path, server: str) -> Path:
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "CHANGEME"}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }
    path = directory / "kubeconfig"
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.mark.parametrize("kind", PROVIDERS)
def test_a_provider_the_engine_never_configured_uses_the_ambient_access(kind):
    assert PROVIDERS[kind]().cluster_access() == KubeAccess()


@pytest.mark.parametrize("kind", PROVIDERS)
def test_a_configured_provider_reaches_the_cluster_the_stack_config_names(kind):
    provider = configured(PROVIDERS[kind](), kubeconfig_config("/etc/magicstick/kubeconfig", context="appliance"))
    assert provider.cluster_access() == KubeAccess(kubeconfig="/etc/magicstick/kubeconfig", context="appliance")


def test_the_config_keys_are_read_with_their_namespace_whatever_project_the_provider_process_assumes():
    request = configure_request(kubeconfig_config("/etc/magicstick/kubeconfig"), project="some-other-project")
    provider = StatusProvider()
    provider.configure(request)
    assert provider.cluster_access().kubeconfig == "/etc/magicstick/kubeconfig"


def test_kubeconfig_contents_set_as_a_secret_reach_the_provider_as_plain_text():
    contents = "apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n# CHANGEME\n"
    provider = configured(StatusProvider(), kubeconfig_config(contents), secret={"magicstick:kubeconfig"})
    assert provider.cluster_access().kubeconfig == contents


def test_a_stack_config_without_kubeconfig_or_context_means_the_ambient_access():
    provider = configured(StatusProvider(), {"magicstick:systemNamespace": "ai-system", "magicstick:kubeconfig": ""})
    assert provider.cluster_access() == KubeAccess()


def test_the_ambient_access_loads_the_kubeconfig_that_KUBECONFIG_names(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(_kubeconfig_file(tmp_path, "https://ambient.example.local:6443")))
    access = RuntimeProfileProvider().cluster_access()
    assert select_context(load_config(access), access.context).cluster.server == "https://ambient.example.local:6443"


def test_the_configured_access_is_kept_per_provider_object_and_not_shared_by_its_class():
    configured(StatusProvider(), kubeconfig_config("/etc/magicstick/kubeconfig"))
    assert StatusProvider().cluster_access() == KubeAccess()


def _checked(kind: str, provider: ResourceProvider, inputs: dict[str, Any]) -> dict[str, Any]:
    result = provider.check({}, inputs)
    assert result.failures == [], kind
    return result.inputs


@pytest.mark.parametrize("kind", PROVIDERS)
def test_state_written_with_kubeconfig_and_context_shows_no_change_against_inputs_without_them(kind):
    provider = configured(PROVIDERS[kind](), kubeconfig_config("/etc/magicstick/kubeconfig"))
    converged = CONVERGED[kind]
    old_inputs = _checked(kind, provider, {**converged.inputs, **LEGACY_ACCESS})
    old_outputs = {**old_inputs, **converged.outputs_beyond_inputs}
    news = _checked(kind, provider, converged.inputs)
    diff = provider.diff("id", old_outputs, news)
    assert (diff.changes, diff.replaces) == (False, [])


@pytest.mark.parametrize("kind", PROVIDERS)
def test_check_keeps_no_kubeconfig_or_context_in_the_inputs(kind):
    checked = _checked(kind, PROVIDERS[kind](), {**CONVERGED[kind].inputs, **LEGACY_ACCESS})
    assert not {"kubeconfig", "context"} & set(checked)
