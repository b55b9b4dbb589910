"""The state a release leaves behind, kept as a fixture for the upgrade test of the next ones.

    venv/bin/python -m tests.e2e.upgrade_state     # writes tests/e2e/fixtures/state-<commit>.json

It runs the release's own program through the real engine, as tests/e2e/test_demo_lifecycle.py
does: the demo appliance converged on a fresh API server, then `pulumi stack export`. The
passphrase of that stack is `FIXTURE_PASSPHRASE` (a test value, no secret: the state holds no
secret value) and the kubeconfig path it records is replaced by `KUBECONFIG_PLACEHOLDER`, so that
the upgrade test can name its own cluster's kubeconfig as the same workstation would. Each
resource's `sourcePosition` and `stackTrace` (where the program registered it, as absolute paths
of the machine that ran it) are left out: the engine records them again at the next update.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Final

from providers.kube import KubeAccess, open_client
from tests.cluster.apiserver import ADMIN_USER, running_cluster
from tests.e2e.engine import REPO_ROOT, JsonObject, PulumiProject
from tests.e2e.lifecycle import GARBAGE_COLLECTION, converge, first_up
from tests.e2e.world import demo_documents, load_demo, prepare_cluster
from tests.live.ollama_double import proxyable_host_address, running_ollama
from tests.live.world import without_server_fields

FIXTURES: Final = Path(__file__).parent / "fixtures"
FIXTURE_PASSPHRASE: Final = "CHANGEME-fixture-passphrase"
KUBECONFIG_PLACEHOLDER: Final = "/CHANGEME/kubeconfig"


MACHINE_FIELDS: Final = ("sourcePosition", "stackTrace")
"""Per-resource registration debug information: paths of the machine that ran the release."""


ObjectIdentity = tuple[str, str, str]
"""A Kubernetes object's (kind, namespace, name); the namespace is empty for a cluster-wide one."""


def applied_objects(exported: JsonObject) -> list[tuple[str, JsonObject]]:
    """The Kubernetes objects the release's `up` applied, each with the field manager that applied
    it, as its state records them: the resource outputs without the provider's bookkeeping keys
    (`__inputs`, ...) and without what the server sets (uid, resourceVersion, managedFields, ...).

    CustomResourceDefinitions are left out: the state records them under the SDK's property names
    (`x_kubernetes_preserve_unknown_fields`), which the API server refuses, and the test cluster
    has the program's CRDs installed already."""
    applied = []
    for resource in exported["deployment"]["resources"]:
        outputs = resource.get("outputs") or {}
        if (
            not resource["type"].startswith("kubernetes:")
            or "metadata" not in outputs
            or outputs.get("kind") == "CustomResourceDefinition"
        ):
            continue
        body = without_server_fields({key: value for key, value in outputs.items() if not key.startswith("__")})
        applied.append((str(outputs.get("__fieldManager") or "pulumi-kubernetes"), body))
    return applied


def identity(body: JsonObject) -> ObjectIdentity:
    metadata = body["metadata"]
    return body["kind"], str(metadata.get("namespace") or ""), metadata["name"]


def without_machine_fields(exported: JsonObject) -> JsonObject:
    """`exported` without each resource's MACHINE_FIELDS. Pure."""
    deployment = exported["deployment"]
    resources = [
        {key: value for key, value in resource.items() if key not in MACHINE_FIELDS}
        for resource in deployment.get("resources") or ()
    ]
    return {**exported, "deployment": {**deployment, "resources": resources}}


def release_commit() -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def export_converged_demo() -> JsonObject:
    from planning.models.kubeai import MODEL_SERVER_PORT

    documents = demo_documents()
    with running_cluster(controllers=GARBAGE_COLLECTION) as cluster, tempfile.TemporaryDirectory() as scratch:
        kubeconfig = cluster.kubeconfig_path(ADMIN_USER)
        with (
            open_client(KubeAccess(kubeconfig=str(kubeconfig))) as kube,
            running_ollama(proxyable_host_address(), port=MODEL_SERVER_PORT) as ollama,
        ):
            prepare_cluster(cluster, kube, documents)
            project = PulumiProject.create(Path(scratch), passphrase=FIXTURE_PASSPHRASE)
            project.config_set({"magicstick:kubeconfig": str(kubeconfig)})
            first_up(cluster, kube, project, documents)
            load_demo(kube, documents)
            converge(project, kube, ollama)
            exported = project.export()
    placeheld: JsonObject = json.loads(
        json.dumps(exported).replace(json.dumps(str(kubeconfig))[1:-1], KUBECONFIG_PLACEHOLDER)
    )
    return placeheld


def main() -> None:
    FIXTURES.mkdir(exist_ok=True)
    path = FIXTURES / f"state-{release_commit()}.json"
    path.write_text(json.dumps(without_machine_fields(export_converged_demo()), indent=1, sort_keys=True) + "\n")
    print(path)


if __name__ == "__main__":
    main()
