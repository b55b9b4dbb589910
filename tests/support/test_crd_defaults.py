"""CRD defaults are applied as the API server applies them: absent fields, below present ones.

The rules are checked on a small Gadget CRD written to a temporary directory; the upstream
kinds whose defaults the planning doubles rely on are checked against the vendored CRDs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from planning.frozen import thaw
from planning.instances.access import AccessSettings, access_objects
from tests.planning.builders import access_for
from tests.support.crd_defaults import defaulted, with_defaults
from tests.support.crd_schema import CrdSchemaRegistry, upstream_registry

GADGET_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              mode: {type: string, default: safe}
              nickname: {type: string, nullable: true, default: anonymous}
              limits:
                type: object
                default: {}
                properties:
                  cpu: {type: string, default: "1"}
                  burst:
                    type: object
                    default: {}
                    properties:
                      factor: {type: integer, default: 2}
              optional:
                type: object
                properties:
                  level: {type: integer, default: 3}
              ports:
                type: array
                items:
                  type: object
                  properties:
                    protocol: {type: string, default: TCP}
              labelsByZone:
                type: object
                additionalProperties:
                  type: object
                  properties:
                    weight: {type: integer, default: 1}
              extra:
                type: object
                x-kubernetes-preserve-unknown-fields: true
                properties:
                  known:
                    type: object
                    properties:
                      retries: {type: integer, default: 5}
"""


@pytest.fixture(scope="module")
def gadgets(tmp_path_factory: pytest.TempPathFactory) -> CrdSchemaRegistry:
    directory: Path = tmp_path_factory.mktemp("gadget-crd")
    (directory / "gadgets.yaml").write_text(GADGET_CRD)
    return CrdSchemaRegistry(directory)


def gadget(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": spec,
    }


BASE_DEFAULTS = {"mode": "safe", "nickname": "anonymous", "limits": {"cpu": "1", "burst": {"factor": 2}}}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, BASE_DEFAULTS),
        ({"mode": "fast"}, {**BASE_DEFAULTS, "mode": "fast"}),
        ({"mode": None}, BASE_DEFAULTS),
        ({"nickname": None}, {**BASE_DEFAULTS, "nickname": None}),
        ({"limits": {"cpu": "2"}}, {**BASE_DEFAULTS, "limits": {"cpu": "2", "burst": {"factor": 2}}}),
        ({"optional": {}}, {**BASE_DEFAULTS, "optional": {"level": 3}}),
        ({"ports": [{}, {"protocol": "UDP"}]}, {**BASE_DEFAULTS, "ports": [{"protocol": "TCP"}, {"protocol": "UDP"}]}),
        (
            {"labelsByZone": {"a": {}, "b": {"weight": 7}}},
            {**BASE_DEFAULTS, "labelsByZone": {"a": {"weight": 1}, "b": {"weight": 7}}},
        ),
        (
            {"extra": {"known": {}, "unknown": {"retries": None, "known": {}}}},
            {**BASE_DEFAULTS, "extra": {"known": {"retries": 5}, "unknown": {"retries": None, "known": {}}}},
        ),
    ],
    ids=[
        "absent-fields-get-their-default",
        "a-set-field-is-kept",
        "null-in-a-non-nullable-field-becomes-the-default",
        "null-in-a-nullable-field-is-kept",
        "a-default-object-is-defaulted-below-and-a-present-one-too",
        "an-object-without-default-is-defaulted-only-when-present",
        "every-array-item-is-defaulted",
        "every-additional-properties-value-is-defaulted",
        "unknown-preserved-fields-are-never-defaulted",
    ],
)
def test_defaults_follow_the_api_servers_structural_defaulting(gadgets, spec, expected):
    assert with_defaults(gadget(spec), registry=gadgets)["spec"] == expected


def test_an_object_without_a_spec_gets_no_spec(gadgets):
    bare = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    assert with_defaults(bare, registry=gadgets) == bare


def test_defaulting_leaves_its_input_unchanged():
    schema = {
        "type": "object",
        "properties": {"a": {"type": "object", "default": {}, "properties": {"b": {"type": "integer", "default": 1}}}},
    }
    value: dict[str, Any] = {}
    assert defaulted(value, schema) == {"a": {"b": 1}}
    assert value == {}


def planned_policy(**overrides: Any) -> dict[str, Any]:
    (policy,) = [
        thaw(o.body)
        for o in access_objects(access_for(**overrides), AccessSettings(), field_manager="magicstick")
        if o.kind == "SecurityPolicy"
    ]
    return policy


def test_a_planned_single_sign_on_policy_gains_the_defaults_envoy_gateways_crd_declares():
    planned = planned_policy()
    stored = with_defaults(planned)
    assert "refreshToken" not in planned["spec"]["oidc"]
    assert stored["spec"]["oidc"]["refreshToken"] is True
    assert stored["spec"]["jwt"]["providers"][0]["remoteJWKS"]["cacheDuration"] == "300s"
    assert stored["spec"]["extAuth"]["http"]["backendRefs"][0]["weight"] == 1
    assert stored["spec"] != planned["spec"]
    assert upstream_registry().errors(stored) == []


def test_a_client_secret_reference_without_group_and_kind_gets_the_core_secret_kind():
    planned = planned_policy()
    del planned["spec"]["oidc"]["clientSecret"]["group"]
    del planned["spec"]["oidc"]["clientSecret"]["kind"]
    assert with_defaults(planned)["spec"]["oidc"]["clientSecret"] == {
        "group": "",
        "kind": "Secret",
        "name": "magicstick-oidc-client",
    }


def test_a_guard_only_policy_gains_the_backend_weight_and_nothing_of_single_sign_on():
    stored = with_defaults(planned_policy(authentication="none"))
    assert set(stored["spec"]) == {"targetRefs", "extAuth"}
    assert stored["spec"]["extAuth"]["http"]["backendRefs"][0]["weight"] == 1


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [("kustomize.toolkit.fluxcd.io/v1", "Kustomization"), ("helm.toolkit.fluxcd.io/v2", "HelmRelease")],
)
def test_a_flux_object_created_without_status_starts_at_observed_generation_minus_one(api_version, kind):
    bare = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "namespace": "flux-system"}, "spec": {}}
    assert with_defaults(bare)["status"] == {"observedGeneration": -1}


def test_a_null_the_schema_does_not_allow_is_pruned_and_nested_objects_are_defaulted() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "object", "properties": {"b": {"type": "string", "default": "x"}}},
            "c": {"type": "string"},
            "d": {"type": "string", "nullable": True},
        },
    }
    assert defaulted({"a": {}, "c": None, "d": None}, schema) == {"a": {"b": "x"}, "d": None}
