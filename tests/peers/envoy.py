"""Envoy Gateway's own translator, `egctl x translate`, run on what the program renders.

`translate(objects)` hands the objects to the real translator (the Gateway API to Gateway API
translation for statuses, and to xDS for the Envoy configuration) and returns both, parsed.

What the translator is given besides the program's objects, and why:
- the GatewayClass and Gateway of the GitOps tree, rendered by the real `helm` from the
  tree's own chart with its HelmRelease's values (`gateway_objects`);
- what the cluster holds beside them, as it would hold it: the Services the application
  operators create for each instance (`backend_services`), every Service with the cluster IP
  the API server would have allocated, the OIDC client Secret the administrator creates, the
  TLS Secret of the HTTPS listener an issuer creates, and Envoy Gateway's own OIDC HMAC Secret
  that its installation creates in its namespace (`cluster_objects`).

egctl's loader keeps only the name and namespace of each object's metadata, so the
statuses it writes carry no observedGeneration; `judged` stamps the generation it
translated (the only one it saw) as the controller does, and nothing else.
"""

from __future__ import annotations

import base64
import datetime
import functools
import json
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests import toolchain
from tests.peers.helm import template
from tests.peers.scene import JsonObject, Rendered, identity

REPOSITORY: Final = Path(__file__).resolve().parents[2]
GATEWAY_CHART: Final = REPOSITORY / "magic-cluster" / "platform" / "basis" / "gateway"
GATEWAY_RELEASE: Final = REPOSITORY / "magic-cluster" / "platform" / "basis" / "gateway.yaml"
ENVOY_GATEWAY_NAMESPACE: Final = "envoy-gateway-system"
GATEWAY_KINDS: Final = frozenset({"EnvoyProxy", "HTTPRoute", "SecurityPolicy", "ReferenceGrant", "Service"})
PLACEHOLDER_SECRET: Final = base64.b64encode(b"CHANGEME-CHANGEME-CHANGEME-CHANGEME").decode()


@dataclass(frozen=True)
class Translation:
    """The translator's answer: objects with their statuses, and the xDS of each Gateway."""

    resources: Mapping[str, Any]
    xds: Mapping[str, Any]

    def of(self, key: str) -> list[JsonObject]:
        return list(self.resources.get(key) or ())

    def named(self, key: str, name: str) -> JsonObject:
        (found,) = [obj for obj in self.of(key) if obj["metadata"]["name"] == name]
        return found

    def configs(self, gateway: str, dump_type: str) -> Mapping[str, Any]:
        config: Mapping[str, Any]
        (config,) = [c for c in self.xds[gateway]["configs"] if c["@type"].endswith(dump_type)]
        return config

    def listeners(self, gateway: str) -> list[JsonObject]:
        dump = self.configs(gateway, "ListenersConfigDump")
        return [entry["activeState"]["listener"] for entry in dump.get("dynamicListeners") or ()]

    def route_configs(self, gateway: str) -> list[JsonObject]:
        dump = self.configs(gateway, "RoutesConfigDump")
        return [entry["routeConfig"] for entry in dump.get("dynamicRouteConfigs") or ()]

    def clusters(self, gateway: str) -> dict[str, JsonObject]:
        dump = self.configs(gateway, "ClustersConfigDump")
        found = [entry["cluster"] for entry in dump.get("dynamicActiveClusters") or ()]
        return {cluster["name"]: cluster for cluster in found}


def _run(input_file: Path, to: str) -> Any:
    answer = subprocess.run(
        [
            str(toolchain.egctl()),
            "x",
            "translate",
            "--from",
            "gateway-api",
            "--to",
            to,
            "-n",
            ENVOY_GATEWAY_NAMESPACE,
            "-o",
            "json",
            "-f",
            str(input_file),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert answer.returncode == 0, f"egctl x translate --to {to}: {answer.stderr}"
    return json.loads(answer.stdout)


def translate(objects: Iterable[JsonObject], directory: Path, *, xds: bool = True) -> Translation:
    """The translator's statuses, and its xDS unless `xds` is false (statuses are enough to judge)."""
    directory.mkdir(parents=True, exist_ok=True)
    input_file = directory / "egctl-input.yaml"
    input_file.write_text(yaml.safe_dump_all(list(objects), sort_keys=False))
    return Translation(resources=_run(input_file, "gateway-api"), xds=_run(input_file, "xds")["xds"] if xds else {})


@functools.cache
def gateway_objects() -> tuple[JsonObject, ...]:
    """The GatewayClass and Gateway the tree's chart renders with its HelmRelease's values."""
    release = yaml.safe_load(GATEWAY_RELEASE.read_text())
    spec = release["spec"]
    return tuple(
        template(GATEWAY_CHART, spec["values"], release=spec["releaseName"], namespace=spec["targetNamespace"])
    )


def _cluster_ip(index: int) -> str:
    return f"10.96.{index // 250}.{index % 250 + 2}"


def backend_services(rendered: Rendered) -> list[JsonObject]:
    """The Service behind each instance route, as its operator or chart creates it."""
    wanted: dict[tuple[str, str], int] = {}
    for route in rendered.of_kind("HTTPRoute"):
        for rule in route["spec"]["rules"]:
            for ref in rule.get("backendRefs") or ():
                wanted[(ref["namespace"], ref["name"])] = ref["port"]
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"type": "ClusterIP", "ports": [{"name": "http", "port": port, "protocol": "TCP"}]},
        }
        for (namespace, name), port in sorted(wanted.items())
    ]


@functools.cache
def _tls_secret_data() -> Mapping[str, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "magicstick.example.local")])
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("*.magicstick.example.local")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    pem_key = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return {
        "tls.crt": base64.b64encode(certificate.public_bytes(serialization.Encoding.PEM)).decode(),
        "tls.key": base64.b64encode(pem_key).decode(),
    }


def _secret(name: str, namespace: str, data: Mapping[str, str], secret_type: str = "Opaque") -> JsonObject:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": secret_type,
        "data": dict(data),
    }


def cluster_objects(rendered: Rendered) -> list[JsonObject]:
    """What the cluster holds beside the program's objects: Services and Secrets."""
    gateway = next(obj for obj in gateway_objects() if obj["kind"] == "Gateway")
    namespace = gateway["metadata"]["namespace"]
    tls_names = {
        ref["name"]
        for listener in gateway["spec"]["listeners"]
        for ref in (listener.get("tls") or {}).get("certificateRefs") or ()
    }
    client_secrets = {
        policy["spec"]["oidc"]["clientSecret"]["name"]
        for policy in rendered.of_kind("SecurityPolicy")
        if "oidc" in policy["spec"]
    }
    secrets = [_secret(name, namespace, _tls_secret_data(), "kubernetes.io/tls") for name in sorted(tls_names)]
    secrets += [_secret(name, namespace, {"client-secret": PLACEHOLDER_SECRET}) for name in sorted(client_secrets)]
    secrets.append(_secret("envoy-oidc-hmac", ENVOY_GATEWAY_NAMESPACE, {"hmac-secret": PLACEHOLDER_SECRET}))
    return secrets


def _with_cluster_ips(objects: Iterable[JsonObject]) -> Iterator[JsonObject]:
    for index, obj in enumerate(objects):
        if obj["kind"] == "Service":
            obj = {**obj, "spec": {**obj["spec"], "clusterIP": _cluster_ip(index)}}
        yield obj


def translator_input(rendered: Rendered) -> list[JsonObject]:
    """Everything the translator needs for one render, each object once."""
    program = [obj for obj in rendered.of_kind(*GATEWAY_KINDS)]
    objects = [*gateway_objects(), *program, *backend_services(rendered), *cluster_objects(rendered)]
    unique = {identity(obj): obj for obj in objects}
    return list(_with_cluster_ips(unique.values()))


JUDGED: Final = (("SecurityPolicy", "securityPolicies", "ancestors"), ("HTTPRoute", "httpRoutes", "parents"))
"""The program's kinds the translator writes a status on: kind, translator key, status key."""


def judged(rendered: Rendered, translation: Translation) -> list[JsonObject]:
    """The program's SecurityPolicies and HTTPRoutes as the cluster returns them once the
    translator judged them: generation 1, their own annotations, the translator's status."""
    found = []
    for kind, key, status_key in JUDGED:
        for obj in rendered.of_kind(kind):
            status = translation.named(key, obj["metadata"]["name"]).get("status") or {}
            entries = []
            for entry in status.get(status_key) or ():
                conditions = [
                    {**c, "observedGeneration": 1, "lastTransitionTime": "2026-01-01T09:00:00Z"}
                    for c in entry.get("conditions") or ()
                ]
                entries.append({**entry, "conditions": conditions})
            metadata = {**obj["metadata"], "generation": 1, "resourceVersion": "1000"}
            found.append({**obj, "metadata": metadata, "status": {status_key: entries}})
    return found
