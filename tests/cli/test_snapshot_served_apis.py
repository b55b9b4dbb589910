"""A snapshot file records which optional built-in APIs (DRA, MutatingAdmissionPolicy) the
cluster served, so an offline render decides GPU sharing as the live run would."""

from __future__ import annotations

import pytest
import yaml

from providers.snapshot_capture import snapshot_document, snapshot_text
from providers.snapshot_file import SERVED_APIS_ANNOTATION, SnapshotFileError, parse_snapshot_text

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}
SERVED = ("resourceclaims.resource.k8s.io/v1", "mutatingadmissionpolicies.admissionregistration.k8s.io/v1beta1")


def test_a_captured_file_reads_back_with_the_apis_the_cluster_served():
    text = snapshot_text(snapshot_document([NODE], system_namespace="ai-system", served_apis=SERVED))
    assert parse_snapshot_text(text, source="captured.yaml").snapshot.served_apis == frozenset(SERVED)


def test_a_file_from_a_cluster_serving_none_of_them_has_no_annotation_and_serves_none():
    document = snapshot_document([NODE], system_namespace="ai-system")
    assert SERVED_APIS_ANNOTATION not in document["metadata"]["annotations"]
    assert parse_snapshot_text(snapshot_text(document), source="plain.yaml").snapshot.served_apis == frozenset()


@pytest.mark.parametrize(
    ("value", "expected"),
    [("[1]", "must be a JSON array of strings"), ('{"a": 1}', "must be a JSON array"), ("nope", "is not JSON")],
)
def test_a_malformed_served_apis_annotation_is_refused_naming_it(value, expected):
    text = yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "List",
            "metadata": {"annotations": {SERVED_APIS_ANNOTATION: value}},
            "items": [NODE],
        }
    )
    with pytest.raises(SnapshotFileError, match=expected):
        parse_snapshot_text(text, source="bad.yaml")
