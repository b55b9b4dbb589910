"""The CRD schema validator accepts conforming objects and names what is wrong with the rest.

Upstream kinds are checked against the vendored CRDs in third_party/crds. Dialect features no
upstream CRD in that directory uses (nullable, embedded resources, formats, list types) are
checked against a small Widget CRD written to a temporary directory.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from .crd_schema import (
    CrdSchemaRegistry,
    UnknownKindError,
    to_json_schema,
    upstream_registry,
)
from .vendored import VENDORED_CHARTS, VENDORED_CRDS

WIDGET_CRDS = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            required: [replicas, mode]
            properties:
              port:
                anyOf: [{type: integer}, {type: string}]
                x-kubernetes-int-or-string: true
              nickname: {type: string, nullable: true}
              size: {type: string, enum: [S, M], nullable: true}
              mode: {type: string, enum: [fast, safe], default: safe}
              replicas: {type: integer, format: int32}
              bytes: {type: integer, format: int64}
              startedAt: {type: string, format: date-time}
              timeout: {type: string, format: duration}
              caBundle: {type: string, format: byte}
              contact: {type: string, format: email}
              template:
                type: object
                x-kubernetes-embedded-resource: true
                x-kubernetes-preserve-unknown-fields: true
              extra:
                type: object
                x-kubernetes-preserve-unknown-fields: true
                properties:
                  known:
                    type: object
                    properties: {a: {type: string}}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties: {name: {type: string}, number: {type: integer}}
              tags:
                type: array
                x-kubernetes-list-type: set
                items: {type: string}
              choice:
                type: object
                properties: {a: {type: string}, b: {type: string}}
                anyOf:
                - required: [a]
                  properties: {a: {minLength: 2}}
                - required: [b]
              word:
                type: string
                x-kubernetes-validations:
                - {rule: "self != 'forbidden'", message: word must not be forbidden}
  - name: v1beta1
    served: false
    storage: false
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: not-a-crd, namespace: default}
data: {note: documents that are not CRDs are skipped}
"""


@pytest.fixture(scope="module")
def widget_crd_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("widget-crds") / "example.com_widgets.yaml"
    path.write_text(WIDGET_CRDS, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def widgets(widget_crd_file: Path) -> CrdSchemaRegistry:
    return CrdSchemaRegistry(widget_crd_file)


@pytest.fixture(scope="module")
def upstream() -> CrdSchemaRegistry:
    return upstream_registry()


def kustomization(**spec: Any) -> dict[str, Any]:
    """A valid Flux Kustomization; keyword arguments replace spec fields."""
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {
            "name": "apps",
            "namespace": "flux-system",
            "labels": {"app.kubernetes.io/part-of": "magicstick"},
        },
        "spec": {
            "interval": "10m",
            "retryInterval": "1m30s",
            "prune": True,
            "path": "./apps",
            "deletionPolicy": "Delete",
            "sourceRef": {"kind": "GitRepository", "name": "flux-system"},
            **spec,
        },
    }


def widget(**spec: Any) -> dict[str, Any]:
    """A valid Widget; keyword arguments replace spec fields."""
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"replicas": 1, **spec},
    }


# Flux Kustomization: what passes and what each kind of mistake reports.


def test_a_valid_flux_kustomization_has_no_errors(upstream: CrdSchemaRegistry) -> None:
    assert upstream.errors(kustomization()) == []


def test_a_kustomization_as_kubectl_prints_it_with_server_fields_and_status_has_no_errors(
    upstream: CrdSchemaRegistry,
) -> None:
    obj = kustomization()
    obj["metadata"].update(
        uid="0f8e7c6a-1111-2222-3333-444455556666",
        resourceVersion="4711",
        generation=3,
        creationTimestamp="2026-01-02T03:04:05Z",
        finalizers=["finalizers.fluxcd.io"],
        annotations={"kustomize.toolkit.fluxcd.io/reconcile": "enabled"},
    )
    obj["status"] = {
        "observedGeneration": 3,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "ReconciliationSucceeded",
                "message": "Applied revision: main@sha1:abc",
                "lastTransitionTime": "2026-01-02T03:05:00Z",
                "observedGeneration": 3,
            }
        ],
    }
    assert upstream.errors(obj) == []


def test_a_kustomization_without_a_source_ref_is_missing_a_required_field(
    upstream: CrdSchemaRegistry,
) -> None:
    obj = kustomization()
    del obj["spec"]["sourceRef"]
    assert upstream.errors(obj) == ["spec.sourceRef: required field is missing"]


def test_a_deletion_policy_outside_the_enum_is_rejected(upstream: CrdSchemaRegistry) -> None:
    assert upstream.errors(kustomization(deletionPolicy="Sometimes")) == [
        "spec.deletionPolicy: 'Sometimes' is not one of ['MirrorPrune', 'Delete', 'WaitForTermination', 'Orphan']"
    ]


def test_an_interval_that_is_not_a_go_duration_does_not_match_the_pattern(
    upstream: CrdSchemaRegistry,
) -> None:
    [error] = upstream.errors(kustomization(interval="ten"))
    assert error.startswith("spec.interval: 'ten' does not match ")


def test_a_field_the_schema_does_not_declare_is_reported_as_unknown(
    upstream: CrdSchemaRegistry,
) -> None:
    obj = kustomization(foo=1, sourceRef={"kind": "GitRepository", "name": "x", "nam": "y"})
    obj["extra"] = True
    assert upstream.errors(obj) == [
        "unknown field extra",
        "unknown field spec.foo",
        "unknown field spec.sourceRef.nam",
    ]


def test_an_unknown_metadata_field_is_reported_as_unknown(upstream: CrdSchemaRegistry) -> None:
    obj = kustomization()
    obj["metadata"]["label"] = {"a": "b"}
    assert upstream.errors(obj) == ["unknown field metadata.label"]


def test_a_value_of_the_wrong_type_is_rejected(upstream: CrdSchemaRegistry) -> None:
    assert upstream.errors(kustomization(prune="yes")) == ["spec.prune: 'yes' is not of type 'boolean'"]


def test_errors_inside_list_items_name_the_item_index(upstream: CrdSchemaRegistry) -> None:
    errors = upstream.errors(kustomization(dependsOn=[{"name": "infra"}, {"namespace": "x"}]))
    assert errors == ["spec.dependsOn[1].name: required field is missing"]


def test_a_kustomization_in_a_version_the_crd_does_not_define_is_rejected(
    upstream: CrdSchemaRegistry,
) -> None:
    obj = kustomization()
    obj["apiVersion"] = "kustomize.toolkit.fluxcd.io/v9"
    assert upstream.errors(obj) == [
        "apiVersion: kustomize.toolkit.fluxcd.io/v9 is not a version of"
        " Kustomization.kustomize.toolkit.fluxcd.io (served: v1)"
    ]


def test_a_kind_no_crd_defines_is_rejected(upstream: CrdSchemaRegistry) -> None:
    obj = kustomization()
    obj["kind"] = "Kustomisation"
    assert upstream.errors(obj) == [
        "kind: no CustomResourceDefinition defines Kustomisation in group kustomize.toolkit.fluxcd.io"
    ]


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("apiVersion", None, "apiVersion: required field is missing"),
        ("kind", None, "kind: required field is missing"),
        ("kind", "", "kind: must be a non-empty string, got ''"),
        ("apiVersion", 1, "apiVersion: must be a non-empty string, got 1"),
    ],
)
def test_an_object_without_a_usable_api_version_or_kind_is_rejected(
    upstream: CrdSchemaRegistry, field: str, value: object, expected: str
) -> None:
    obj = kustomization()
    if value is None:
        del obj[field]
    else:
        obj[field] = value
    assert upstream.errors(obj) == [expected]


def test_something_that_is_not_a_mapping_is_rejected(upstream: CrdSchemaRegistry) -> None:
    assert upstream.errors(["not", "an", "object"]) == ["(object): expected a mapping, got list"]


def test_validator_for_an_unknown_kind_raises_unknown_kind_error(
    upstream: CrdSchemaRegistry,
) -> None:
    with pytest.raises(UnknownKindError, match="no CustomResourceDefinition defines Deployment"):
        upstream.validator_for("apps/v1", "Deployment")


# Metadata.


def test_a_namespaced_kind_without_a_namespace_is_rejected(upstream: CrdSchemaRegistry) -> None:
    obj = kustomization()
    del obj["metadata"]["namespace"]
    assert upstream.errors(obj) == ["metadata.namespace: required for namespaced kind Kustomization"]


def test_a_cluster_scoped_kind_with_a_namespace_is_rejected(upstream: CrdSchemaRegistry) -> None:
    obj = {
        "apiVersion": "deviceplugin.intel.com/v1",
        "kind": "GpuDevicePlugin",
        "metadata": {"name": "gpu", "namespace": "kube-system"},
        "spec": {},
    }
    assert upstream.errors(obj) == ["metadata.namespace: not allowed for cluster-scoped kind GpuDevicePlugin"]


def test_a_namespace_that_is_not_a_dns_label_is_rejected(upstream: CrdSchemaRegistry) -> None:
    obj = kustomization()
    obj["metadata"]["namespace"] = "flux.system"
    [error] = upstream.errors(obj)
    assert error.startswith("metadata.namespace: 'flux.system' must be a DNS-1123 label")


def test_a_missing_name_is_rejected(upstream: CrdSchemaRegistry) -> None:
    obj = kustomization()
    del obj["metadata"]["name"]
    assert upstream.errors(obj) == ["metadata.name: required field is missing"]


@pytest.mark.parametrize("name", ["Apps", "apps_1", "-apps", "a" * 254])
def test_a_name_that_is_not_a_dns_subdomain_is_rejected(upstream: CrdSchemaRegistry, name: str) -> None:
    obj = kustomization()
    obj["metadata"]["name"] = name
    [error] = upstream.errors(obj)
    assert error.startswith(f"metadata.name: {name!r} must be")


@pytest.mark.parametrize("name", ["apps", "apps.v2", "a" * 253, "0-apps"])
def test_a_dns_subdomain_name_is_accepted(upstream: CrdSchemaRegistry, name: str) -> None:
    obj = kustomization()
    obj["metadata"]["name"] = name
    assert upstream.errors(obj) == []


def test_a_label_value_of_64_characters_is_rejected(upstream: CrdSchemaRegistry) -> None:
    obj = kustomization()
    obj["metadata"]["labels"]["app.kubernetes.io/part-of"] = "a" * 64
    assert upstream.errors(obj) == [
        "metadata.labels[app.kubernetes.io/part-of]: value must be no more than 63 characters (has 64)"
    ]


def test_a_label_value_of_63_characters_is_accepted(upstream: CrdSchemaRegistry) -> None:
    obj = kustomization()
    obj["metadata"]["labels"]["app.kubernetes.io/part-of"] = "a" * 63
    assert upstream.errors(obj) == []


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("app.kubernetes.io/name", "-leading-dash", "value must be empty or alphanumerics"),
        ("app.kubernetes.io/name", "has space", "value must be empty or alphanumerics"),
        ("Example.COM/name", "x", "key prefix must be a DNS-1123 subdomain"),
        ("/name", "x", "key prefix must be a DNS-1123 subdomain"),
        ("a/b/c", "x", "key prefix must be a DNS-1123 subdomain"),
        ("n" * 64, "x", "key name must be no more than 63 characters"),
        ("name_", "x", "key name must be alphanumerics"),
    ],
)
def test_a_label_with_invalid_syntax_is_rejected(
    upstream: CrdSchemaRegistry, key: str, value: str, problem: str
) -> None:
    obj = kustomization()
    obj["metadata"]["labels"] = {key: value}
    [error] = upstream.errors(obj)
    assert problem in error


def test_an_empty_label_value_is_accepted(upstream: CrdSchemaRegistry) -> None:
    obj = kustomization()
    obj["metadata"]["labels"] = {"example.com/flag": ""}
    assert upstream.errors(obj) == []


def test_a_label_value_that_is_not_a_string_is_a_type_error(upstream: CrdSchemaRegistry) -> None:
    obj = kustomization()
    obj["metadata"]["labels"] = {"tier": 1}
    assert upstream.errors(obj) == ["metadata.labels.tier: 1 is not of type 'string'"]


# Upstream examples.


def test_the_upstream_helm_release_example_is_valid(upstream: CrdSchemaRegistry) -> None:
    """The podinfo example from the Flux HelmRelease documentation (helm-controller v1.x)."""
    helm_release = yaml.safe_load(
        """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: default
spec:
  interval: 10m
  timeout: 5m
  chart:
    spec:
      chart: podinfo
      version: '6.5.*'
      sourceRef:
        kind: HelmRepository
        name: podinfo
      interval: 5m
  releaseName: podinfo
  install:
    remediation:
      retries: 3
  upgrade:
    remediation:
      retries: 3
  test:
    enable: true
  driftDetection:
    mode: enabled
    ignore:
    - paths: ["/spec/replicas"]
      target:
        kind: Deployment
  values:
    replicaCount: 2
"""
    )
    assert upstream.errors(helm_release) == []


def test_helm_release_values_keep_undeclared_fields(upstream: CrdSchemaRegistry) -> None:
    """spec.values preserves unknown fields, so arbitrary chart values are not unknown."""
    release = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "kubeai", "namespace": "kubeai"},
        "spec": {
            "interval": "10m",
            "chartRef": {"kind": "OCIRepository", "name": "kubeai"},
            "values": {"resourceProfiles": {"nvidia-gpu-l4": {"nodeSelector": {"a": "b"}}}},
        },
    }
    assert upstream.errors(release) == []


def test_the_upstream_kubeai_model_example_is_valid(upstream: CrdSchemaRegistry) -> None:
    """The Model from the KubeAI model-management documentation, placed in a namespace."""
    model = yaml.safe_load(
        """\
apiVersion: kubeai.org/v1
kind: Model
metadata:
  name: llama-3.1-8b-instruct-fp8-l4
  namespace: kubeai
spec:
  features: ["TextGeneration"]
  owner: neuralmagic
  url: hf://neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8
  engine: VLLM
  args:
    - --max-model-len=16384
    - --max-num-batched-token=16384
    - --gpu-memory-utilization=0.9
  env:
    VLLM_ATTENTION_BACKEND: FLASHINFER
  minReplicas: 0
  maxReplicas: 3
  resourceProfile: L4:1
"""
    )
    assert upstream.errors(model) == []


def test_a_kubeai_model_with_an_unknown_engine_is_rejected(upstream: CrdSchemaRegistry) -> None:
    model = {
        "apiVersion": "kubeai.org/v1",
        "kind": "Model",
        "metadata": {"name": "m", "namespace": "kubeai"},
        "spec": {"features": ["TextGeneration"], "url": "hf://x/y", "engine": "vllm"},
    }
    [error] = upstream.errors(model)
    assert error.startswith("spec.engine: 'vllm' is not one of")


# Loading.


def test_the_registry_loads_every_vendored_crd(upstream: CrdSchemaRegistry) -> None:
    """Every CRD document is loaded and every served version yields a valid JSON Schema."""
    crd_documents = sum(
        len(re.findall(r"^kind: CustomResourceDefinition\s*$", path.read_text(), re.MULTILINE))
        for path in VENDORED_CRDS.rglob("*.yaml")
    )
    assert crd_documents >= 19
    assert len(upstream.definitions) == crd_documents
    for definition in upstream.definitions:
        assert definition.served_versions
        for version in definition.served_versions:
            validator = upstream.validator_for(f"{definition.group}/{version}", definition.kind)
            type(validator).check_schema(validator.schema)


def test_every_crd_of_a_multi_document_file_is_loaded() -> None:
    registry = CrdSchemaRegistry(VENDORED_CRDS / "node-feature-discovery" / "nfd-api-crds.yaml")
    assert sorted(definition.kind for definition in registry.definitions) == [
        "NodeFeature",
        "NodeFeatureGroup",
        "NodeFeatureRule",
    ]
    assert not registry.definition_for("nfd.k8s-sigs.io/v1alpha1", "NodeFeatureRule").namespaced


def test_documents_that_are_not_crds_are_skipped(widgets: CrdSchemaRegistry) -> None:
    assert [definition.kind for definition in widgets.definitions] == ["Widget"]


def test_a_source_without_any_crd_is_an_error() -> None:
    with pytest.raises(ValueError, match="no CustomResourceDefinition"):
        CrdSchemaRegistry(VENDORED_CHARTS / "kubeai" / "values.yaml")


def test_a_source_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        CrdSchemaRegistry(tmp_path / "missing")


def test_a_kind_defined_twice_is_an_error(widget_crd_file: Path) -> None:
    with pytest.raises(ValueError, match="Widget.example.com is defined twice"):
        CrdSchemaRegistry(widget_crd_file, widget_crd_file.parent)


# Structural-schema dialect, on the Widget CRD.


def test_a_widget_using_every_feature_correctly_has_no_errors(widgets: CrdSchemaRegistry) -> None:
    obj = widget(
        port="http",
        nickname=None,
        size=None,
        mode="fast",
        bytes=2**40,
        startedAt="2026-02-28T23:59:59.5+01:00",
        timeout="1h30m",
        caBundle="aGVsbG8=",
        template={"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}},
        extra={"anything": {"goes": [1, 2]}, "known": {"a": "x"}},
        ports=[{"name": "http", "number": 80}, {"name": "https", "number": 443}],
        tags=["a", "b"],
        choice={"b": "x"},
    )
    assert widgets.errors(obj) == []


def test_a_version_the_crd_does_not_serve_is_rejected(widgets: CrdSchemaRegistry) -> None:
    obj = widget()
    obj["apiVersion"] = "example.com/v1beta1"
    assert widgets.errors(obj) == ["apiVersion: example.com/v1beta1 is not served for Widget.example.com (served: v1)"]
    with pytest.raises(UnknownKindError, match="not served"):
        widgets.validator_for("example.com/v1beta1", "Widget")


@pytest.mark.parametrize("port", [8080, "http", "50%"])
def test_int_or_string_accepts_an_integer_or_a_string(widgets: CrdSchemaRegistry, port: object) -> None:
    assert widgets.errors(widget(port=port)) == []


@pytest.mark.parametrize("port", [True, 1.5, None, ["80"]])
def test_int_or_string_rejects_anything_else(widgets: CrdSchemaRegistry, port: object) -> None:
    errors = widgets.errors(widget(port=port))
    assert f"spec.port: {port!r} is not of type 'integer', 'string'" in errors


def test_a_nullable_field_accepts_null_and_its_enum_still_applies(
    widgets: CrdSchemaRegistry,
) -> None:
    assert widgets.errors(widget(nickname=None, size=None)) == []
    assert widgets.errors(widget(size="L")) == ["spec.size: 'L' is not one of ['S', 'M', None]"]


def test_null_in_a_field_that_is_neither_nullable_nor_defaulted_is_a_type_error(
    widgets: CrdSchemaRegistry,
) -> None:
    assert widgets.errors(widget(replicas=None)) == ["spec.replicas: None is not of type 'integer'"]


def test_a_required_field_with_a_default_may_be_omitted_or_null(
    widgets: CrdSchemaRegistry,
) -> None:
    assert widgets.errors(widget()) == []
    assert widgets.errors(widget(mode=None)) == []
    assert widgets.errors(widget(mode="slow")) == ["spec.mode: 'slow' is not one of ['fast', 'safe', None]"]


@pytest.mark.parametrize(
    ("field", "value", "format_name"),
    [("replicas", 2**31, "int32"), ("replicas", -(2**31) - 1, "int32"), ("bytes", 2**63, "int64")],
)
def test_an_integer_outside_its_format_range_is_rejected(
    widgets: CrdSchemaRegistry, field: str, value: int, format_name: str
) -> None:
    assert widgets.errors(widget(**{field: value})) == [f"spec.{field}: {value!r} is not a {format_name!r}"]


@pytest.mark.parametrize(("field", "value"), [("replicas", 2**31 - 1), ("bytes", -(2**63))])
def test_an_integer_at_the_edge_of_its_format_range_is_accepted(
    widgets: CrdSchemaRegistry, field: str, value: int
) -> None:
    assert widgets.errors(widget(**{field: value})) == []


@pytest.mark.parametrize("value", ["2026-02-30T00:00:00Z", "2026-01-01 00:00:00Z", "2026-01-01T00:00:00", "yesterday"])
def test_a_date_time_that_is_not_rfc3339_is_rejected(widgets: CrdSchemaRegistry, value: str) -> None:
    assert widgets.errors(widget(startedAt=value)) == [f"spec.startedAt: {value!r} is not a 'date-time'"]


@pytest.mark.parametrize("value", ["0", "300ms", "1h30m", "-1.5h", "3 days", "2w"])
def test_a_duration_in_go_or_api_server_syntax_is_accepted(widgets: CrdSchemaRegistry, value: str) -> None:
    assert widgets.errors(widget(timeout=value)) == []


@pytest.mark.parametrize("value", ["soon", "10", "1h and more", ""])
def test_a_duration_in_neither_syntax_is_rejected(widgets: CrdSchemaRegistry, value: str) -> None:
    assert widgets.errors(widget(timeout=value)) == [f"spec.timeout: {value!r} is not a 'duration'"]


def test_a_byte_field_that_is_not_base64_is_rejected(widgets: CrdSchemaRegistry) -> None:
    assert widgets.errors(widget(caBundle="not base64!")) == ["spec.caBundle: 'not base64!' is not a 'byte'"]


def test_a_format_the_validator_does_not_know_is_not_checked(widgets: CrdSchemaRegistry) -> None:
    assert widgets.errors(widget(contact="not an email address")) == []


def test_an_embedded_resource_requires_api_version_and_kind(widgets: CrdSchemaRegistry) -> None:
    assert widgets.errors(widget(template={"data": {}})) == [
        "spec.template.apiVersion: required field is missing",
        "spec.template.kind: required field is missing",
    ]


def test_an_embedded_resource_has_object_metadata(widgets: CrdSchemaRegistry) -> None:
    template = {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": 1}, "bogus": 1}}
    assert widgets.errors(widget(template=template)) == [
        "unknown field spec.template.metadata.bogus",
        "spec.template.metadata.labels.a: 1 is not of type 'string'",
    ]


def test_preserve_unknown_fields_keeps_undeclared_fields_but_checks_declared_ones(
    widgets: CrdSchemaRegistry,
) -> None:
    extra = {"anything": 1, "known": {"a": "x", "b": 2}}
    assert widgets.errors(widget(extra=extra)) == ["unknown field spec.extra.known.b"]


def test_a_map_list_with_a_duplicate_key_is_rejected(widgets: CrdSchemaRegistry) -> None:
    ports = [{"name": "http", "number": 80}, {"name": "http", "number": 8080}]
    assert widgets.errors(widget(ports=ports)) == ['spec.ports[1]: duplicate key {"name": "http"} (also at [0])']


def test_a_set_list_with_a_duplicate_value_is_rejected(widgets: CrdSchemaRegistry) -> None:
    assert widgets.errors(widget(tags=["a", "b", "a"])) == ['spec.tags[2]: duplicate value "a" (also at [0])']


def test_an_any_of_branch_listing_some_properties_does_not_make_the_others_unknown(
    widgets: CrdSchemaRegistry,
) -> None:
    assert widgets.errors(widget(choice={"a": "xy", "b": "z"})) == []
    assert widgets.errors(widget(choice={"b": "z"})) == []
    assert widgets.errors(widget(choice={"a": "x"})) == [
        "spec.choice: {'a': 'x'} is not valid under any of the given schemas"
    ]
    assert widgets.errors(widget(choice={"c": "x"})) == [
        "spec.choice: {'c': 'x'} is not valid under any of the given schemas",
        "unknown field spec.choice.c",
    ]


def test_cel_validation_rules_are_not_evaluated(widgets: CrdSchemaRegistry) -> None:
    assert widgets.errors(widget(word="forbidden")) == []


def test_the_translated_schema_is_valid_json_schema_draft_4(widget_crd_file: Path) -> None:
    document = next(yaml.safe_load_all(widget_crd_file.read_text()))
    schema = to_json_schema(document["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    validator = CrdSchemaRegistry(widget_crd_file).validator_for("example.com/v1", "Widget")
    type(validator).check_schema(schema)
    assert schema["properties"]["spec"]["additionalProperties"] is False
    assert "additionalProperties" not in schema["properties"]["spec"]["properties"]["extra"]
