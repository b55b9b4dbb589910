"""The program's ServiceAccount may GET the PKO Stack it runs under, by name, and nothing more of Stacks.

Issue 14, point 4: the reader's one GET of `ai-system/magicstick` (stacks.pulumi.com), run as the
ServiceAccount deploy/ defines against the real API server; any other name, a LIST and every
write are Forbidden.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any, Final

import pytest

from planning.settings import DEFAULT_STACK_NAME
from providers.kinds import STACK
from providers.kube import Forbidden, KubeAccess, KubeClient, NotFound
from providers.live_reader import SnapshotReadError, read_snapshot, stack_read
from tests.cluster.apiserver import API_TIMEOUT, TestIdentity
from tests.deploy.manifests import SYSTEM_NAMESPACE, Permission, allows, bound_rules, documents, the_one
from tests.deploy.program_identity import FIELD_MANAGER as LOADER

OTHER: Final = "another-stack"


def stack_object(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "pulumi.com/v1",
        "kind": "Stack",
        "metadata": {"name": name, "namespace": SYSTEM_NAMESPACE},
        "spec": {
            "stack": "organization/magicstick/appliance",
            "projectRepo": "https://git.example.com/CHANGEME/x.git",
            "branch": "main",
        },
    }


def wait_until_named_get_is_allowed(admin: KubeClient, identity: TestIdentity, name: str) -> None:
    """Until the authorizer's cache allows `identity` to GET the Stack `name` (a grant by
    resourceName takes effect a moment after the Role is written); each answer paces the loop."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": identity.name,
            "groups": list(identity.groups),
            "resourceAttributes": {
                "verb": "get",
                "group": "pulumi.com",
                "resource": "stacks",
                "namespace": SYSTEM_NAMESPACE,
                "name": name,
            },
        },
    }
    deadline = time.monotonic() + API_TIMEOUT
    while not admin.request(
        "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body=review, content_type="application/json"
    )["status"].get("allowed"):
        assert time.monotonic() < deadline, f"get stacks/{name} not allowed within {API_TIMEOUT} s"


@pytest.fixture
def stacks(admin: KubeClient, program_identity: TestIdentity) -> Iterator[tuple[str, str]]:
    """Two Stacks in the system namespace: the program's, and another; deleted afterwards."""
    wait_until_named_get_is_allowed(admin, program_identity, DEFAULT_STACK_NAME)
    for name in (DEFAULT_STACK_NAME, OTHER):
        admin.apply(STACK, stack_object(name), field_manager=LOADER)
        status = {
            "apiVersion": "pulumi.com/v1",
            "kind": "Stack",
            "metadata": {"name": name, "namespace": SYSTEM_NAMESPACE},
            "status": {
                "observedGeneration": 1,
                "lastUpdate": {"state": "succeeded", "type": "up", "lastAttemptedCommit": "abc"},
            },
        }
        admin.apply(STACK, status, field_manager=f"{LOADER}-status", subresource="status")
    yield DEFAULT_STACK_NAME, OTHER
    for name in (DEFAULT_STACK_NAME, OTHER):
        with contextlib.suppress(NotFound):
            admin.delete(STACK, name, SYSTEM_NAMESPACE)


class TestTheGrant:
    def test_one_rule_grants_get_of_the_stack_deploy_stack_yaml_names_and_nothing_else_of_stacks(self):
        rbac = documents("rbac.yaml")
        rules = [(rule, namespace) for rule, namespace in bound_rules(rbac) if "stacks" in rule.get("resources", ())]
        stack = the_one(documents("stack.yaml"), "Stack")

        assert rules == [
            (
                {
                    "apiGroups": ["pulumi.com"],
                    "resources": ["stacks"],
                    "resourceNames": [DEFAULT_STACK_NAME],
                    "verbs": ["get"],
                },
                SYSTEM_NAMESPACE,
            )
        ]
        assert stack["metadata"]["name"] == DEFAULT_STACK_NAME
        assert stack["metadata"]["namespace"] == SYSTEM_NAMESPACE

    def test_the_readers_get_is_the_granted_one(self):
        read = stack_read(SYSTEM_NAMESPACE)

        assert allows(
            documents("rbac.yaml"), Permission("get", read.kind.group, read.kind.plural, read.namespace), read.name
        )


class TestAsTheServiceAccount:
    def test_the_live_reader_reads_the_programs_stack(self, stacks, program_access: KubeAccess):
        snapshot = read_snapshot(program_access, system_namespace=SYSTEM_NAMESPACE)

        (found,) = [o for o in snapshot.generated if o.kind == "Stack"]
        assert (found.meta.namespace, found.meta.name) == (SYSTEM_NAMESPACE, DEFAULT_STACK_NAME)
        assert found.status["lastUpdate"]["state"] == "succeeded"

    def test_a_stack_name_the_rbac_does_not_name_stops_the_run_with_the_servers_403(
        self, stacks, program_access: KubeAccess
    ):
        with pytest.raises(
            SnapshotReadError,
            match=rf"^reading Stack \(pulumi.com/v1\) {OTHER} in namespace {SYSTEM_NAMESPACE} failed: 403",
        ):
            read_snapshot(program_access, system_namespace=SYSTEM_NAMESPACE, stack_name=OTHER)

    def test_listing_or_writing_stacks_is_forbidden(self, stacks, program: KubeClient):
        with pytest.raises(Forbidden):
            program.list(STACK, namespace=SYSTEM_NAMESPACE)
        with pytest.raises(Forbidden):
            program.apply(STACK, stack_object(DEFAULT_STACK_NAME), field_manager="magicstick")
        with pytest.raises(Forbidden):
            program.delete(STACK, DEFAULT_STACK_NAME, SYSTEM_NAMESPACE)
        status = {
            "apiVersion": "pulumi.com/v1",
            "kind": "Stack",
            "metadata": {"name": DEFAULT_STACK_NAME, "namespace": SYSTEM_NAMESPACE},
            "status": {},
        }
        with pytest.raises(Forbidden):
            program.apply(STACK, status, field_manager="magicstick", subresource="status")
