"""Where the configuration comes from: kubeconfig files, kubeconfig contents, contexts, malformed input."""

from __future__ import annotations

import base64
import json
import subprocess
import sys

import pytest

from providers.kinds import CONFIG_MAP
from providers.kube import KubeAccess, KubeConfigError, RetryPolicy, Unauthorized, open_client
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo
from tests.kube import as_yaml, kubeconfig, merged, refusing_port

NAMESPACES = "/api/v1/namespaces"
ONCE = RetryPolicy(attempts=1)


def admin_document(cluster: ClusterInfo, name: str = "admin") -> dict:
    return kubeconfig(name=name, server=cluster.url, ca_file=cluster.ca_file, user={"token": cluster.admin_token})


def namespace_names(access: KubeAccess) -> set[str]:
    with open_client(access) as client:
        return {item["metadata"]["name"] for item in client.request("GET", NAMESPACES)["items"]}


class TestKubeconfigSources:
    def test_a_kubeconfig_file_with_a_token_reaches_the_server(self, cluster, namespace):
        access = KubeAccess(kubeconfig=str(cluster.kubeconfig_path(ADMIN_USER)))
        assert namespace in namespace_names(access)

    def test_a_kubeconfig_path_with_a_tilde_is_expanded(self, cluster, namespace, tmp_path, monkeypatch):
        monkeypatch.setenv("HOME", str(tmp_path))
        (tmp_path / "admin.yaml").write_text(as_yaml(admin_document(cluster)))
        assert namespace in namespace_names(KubeAccess(kubeconfig="~/admin.yaml"))

    def test_kubeconfig_contents_given_as_yaml_text_work(self, cluster, namespace):
        assert namespace in namespace_names(KubeAccess(kubeconfig=as_yaml(admin_document(cluster))))

    def test_kubeconfig_contents_given_as_one_long_line_of_json_work(self, cluster, namespace):
        certificate = cluster.client_certificate("json-admin", "system:masters")
        inline = {
            "client-certificate-data": base64.b64encode(certificate.cert_file.read_bytes()).decode(),
            "client-key-data": base64.b64encode(certificate.key_file.read_bytes()).decode(),
        }
        document = kubeconfig(name="json", server=cluster.url, user=inline)
        document["clusters"][0]["cluster"]["certificate-authority-data"] = base64.b64encode(
            cluster.ca_file.read_bytes()
        ).decode()
        contents = json.dumps(document)
        assert "\n" not in contents
        assert len(contents) > 4096
        assert namespace in namespace_names(KubeAccess(kubeconfig=contents))


class TestContexts:
    def test_a_named_context_is_used_instead_of_the_current_one(self, cluster, namespace):
        with refusing_port() as port:
            wrong = kubeconfig(name="wrong", server=f"https://127.0.0.1:{port}", user={"token": "not-a-token"})
            document = merged(wrong, admin_document(cluster, "right"), current="wrong")
            assert namespace in namespace_names(KubeAccess(kubeconfig=as_yaml(document), context="right", retry=ONCE))

    def test_without_a_context_the_current_context_is_used(self, cluster):
        wrong_token = kubeconfig(
            name="stale", server=cluster.url, ca_file=cluster.ca_file, user={"token": "not-a-token"}
        )
        document = merged(admin_document(cluster, "right"), wrong_token, current="stale")
        with pytest.raises(Unauthorized), open_client(KubeAccess(kubeconfig=as_yaml(document), retry=ONCE)) as client:
            client.list(CONFIG_MAP, namespace="default")

    def test_a_missing_context_raises_kube_config_error_naming_it(self, cluster):
        access = KubeAccess(kubeconfig=as_yaml(admin_document(cluster)), context="elsewhere")
        with pytest.raises(KubeConfigError, match="'elsewhere'"), open_client(access):
            pass

    def test_a_kubeconfig_without_a_current_context_needs_a_named_one(self, cluster):
        document = {**admin_document(cluster), "current-context": None}
        with (
            pytest.raises(KubeConfigError, match="no current-context"),
            open_client(KubeAccess(kubeconfig=as_yaml(document))),
        ):
            pass

    def test_a_context_naming_an_undefined_user_raises_kube_config_error(self, cluster):
        document = admin_document(cluster)
        document["contexts"][0]["context"]["user"] = "ghost"
        with (
            pytest.raises(KubeConfigError, match="user 'ghost'"),
            open_client(KubeAccess(kubeconfig=as_yaml(document))),
        ):
            pass

    def test_a_context_naming_an_undefined_cluster_raises_kube_config_error(self, cluster):
        document = admin_document(cluster)
        document["contexts"][0]["context"]["cluster"] = "ghost"
        with (
            pytest.raises(KubeConfigError, match="cluster 'ghost'"),
            open_client(KubeAccess(kubeconfig=as_yaml(document))),
        ):
            pass


class TestMalformedConfiguration:
    @pytest.mark.parametrize(
        "contents",
        [
            "clusters: []\nusers: []\n",
            "clusters: 3\ncontexts: []\n",
            "clusters:\n- name: a\n  cluster: just-a-string\ncontexts: []\n",
            "- a list\n- not a mapping\n",
            "clusters: [\n  unterminated\n",
            "\n",
        ],
        ids=["no-contexts", "clusters-not-a-list", "cluster-not-a-mapping", "a-list", "broken-yaml", "empty"],
    )
    def test_garbage_contents_raise_kube_config_error(self, contents):
        with pytest.raises(KubeConfigError), open_client(KubeAccess(kubeconfig=contents)):
            pass

    def test_a_kubeconfig_path_that_does_not_exist_raises_kube_config_error_naming_it(self, tmp_path):
        missing = tmp_path / "nowhere.yaml"
        with pytest.raises(KubeConfigError, match="nowhere.yaml"), open_client(KubeAccess(kubeconfig=str(missing))):
            pass

    def test_a_kubeconfig_file_that_is_not_a_mapping_raises_kube_config_error(self, tmp_path):
        path = tmp_path / "config"
        path.write_text("")
        with pytest.raises(KubeConfigError, match="not a YAML mapping"), open_client(KubeAccess(kubeconfig=str(path))):
            pass

    def test_the_error_for_unparsable_contents_does_not_quote_the_token_in_them(self):
        contents = "users:\n- name: a\n  user: {token: s3cr3t-t0ken\n"
        with pytest.raises(KubeConfigError) as raised, open_client(KubeAccess(kubeconfig=contents)):
            pass
        assert "s3cr3t-t0ken" not in str(raised.value)
        assert "line" in str(raised.value)

    def test_relative_certificate_paths_in_contents_raise_kube_config_error(self, cluster):
        document = admin_document(cluster)
        document["clusters"][0]["cluster"]["certificate-authority"] = "ca.crt"
        with pytest.raises(KubeConfigError, match="relative"), open_client(KubeAccess(kubeconfig=as_yaml(document))):
            pass


RACE = """
import sys, threading
sys.setswitchinterval(1e-7)
{prime}
from lightkube.config.kubeconfig import KubeConfig
document = {{
    "apiVersion": "v1", "kind": "Config", "current-context": "x",
    "clusters": [{{"name": "c", "cluster": {{"server": "https://127.0.0.1:1"}}}}],
    "users": [{{"name": "u", "user": {{"token": "CHANGEME"}}}}],
    "contexts": [{{"name": "x", "context": {{"cluster": "c", "user": "u"}}}}],
}}
failures = []
start = threading.Barrier(16)
def parse():
    start.wait()
    try:
        KubeConfig.from_dict(document)
    except (TypeError, AttributeError) as error:
        failures.append(error)
threads = [threading.Thread(target=parse) for _ in range(16)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(len(failures))
"""


def _concurrent_first_parses_failing(*, prime: str, runs: int) -> int:
    """How many of `runs` fresh processes saw a first kubeconfig parse fail when 16 threads made it at once."""
    failing = 0
    for _ in range(runs):
        result = subprocess.run(
            [sys.executable, "-c", RACE.format(prime=prime)], capture_output=True, text=True, timeout=60, check=True
        )
        failing += int(result.stdout.strip()) > 0
    return failing


RACE_ATTEMPTS = 100
"""A race shows in some runs only, fewer on a loaded machine (0 of 10 once, with both cores busy):
the control runs until one fails, bounded."""


def test_lightkubes_first_parse_is_not_thread_safe_on_its_own():
    """The race the module's priming answers, shown without it (so the next test can fail)."""
    assert any(_concurrent_first_parses_failing(prime="", runs=1) for _ in range(RACE_ATTEMPTS))


def test_concurrent_first_parses_succeed_once_the_access_module_is_imported():
    assert _concurrent_first_parses_failing(prime="import providers.kube.access", runs=10) == 0
