"""The DirectRuntime provider's pure contract: which API failure is which problem, what the
status writer makes of it, what `check` refuses and normalises, what `diff` says.

Pure: no test here opens a connection. The errors are the typed errors the client raises,
built as it builds them from a server's Status.
"""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest
from pulumi.output import Unknown

from planning.models.direct import DirectRuntimeKind
from providers.direct_runtime import DirectRuntimeProvider, in_delete_order, runtime_problem
from providers.kube import ConnectionFailure, KubeConnectionError, KubeError
from providers.kube.errors import error_for
from providers.outcomes import problem_output
from providers.status_writer import problems_of, status_with_problems
from tests.providers.direct_runtime_objects import config_map, deployment, inputs, runtime_objects, service

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
NAMESPACE = "ai"
NAME = "omni"
IDENTITY = f"Deployment/{NAMESPACE}/{NAME}"


def answered(code: int, reason: str, message: str) -> KubeError:
    """The error the client raises for a server answer `code` with this Status."""
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
    request = httpx.Request("PATCH", f"https://127.0.0.1:6443/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{NAME}")
    return error_for(httpx.Response(code, json=status, request=request))


UNREACHABLE = KubeConnectionError(
    method="PATCH",
    path="/apis/apps/v1",
    url="https://127.0.0.1:6443",
    failure=ConnectionFailure.REFUSED,
    cause="connection refused",
)

MAPPING = {
    "403 is a permission denial": (
        answered(403, "Forbidden", "deployments.apps is forbidden"),
        "PermissionDenied",
        "Temporary",
    ),
    "400 is a permanent rejection": (answered(400, "BadRequest", "bad body"), "ApiRejected", "Permanent"),
    "422 is a permanent rejection": (answered(422, "Invalid", "selector does not match"), "ApiRejected", "Permanent"),
    "404 is a temporary rejection": (
        answered(404, "NotFound", 'namespaces "ai" not found'),
        "ApiRejected",
        "Temporary",
    ),
    "409 is a temporary rejection": (
        answered(409, "Conflict", "Apply failed with 1 conflict"),
        "ApiRejected",
        "Temporary",
    ),
    "401 is a temporary rejection": (answered(401, "Unauthorized", "Unauthorized"), "ApiRejected", "Temporary"),
    "429 is an outage": (answered(429, "TooManyRequests", "slow down"), "ApiUnavailable", "Temporary"),
    "500 is an outage": (answered(500, "InternalError", "etcd leader changed"), "ApiUnavailable", "Temporary"),
    "503 is an outage": (answered(503, "ServiceUnavailable", "try later"), "ApiUnavailable", "Temporary"),
    "no answer is an outage": (UNREACHABLE, "ApiUnavailable", "Temporary"),
}


@pytest.mark.parametrize("kind", list(DirectRuntimeKind), ids=str)
@pytest.mark.parametrize(("error", "suffix", "persistence"), MAPPING.values(), ids=MAPPING.keys())
def test_each_api_failure_becomes_the_problem_the_contract_names_with_the_runtimes_prefix(
    kind, error, suffix, persistence
):
    problem = runtime_problem(kind, error, action="apply", identity=IDENTITY)

    assert (str(problem.reason), problem.persistence.value) == (f"{kind.value}{suffix}", persistence)


def test_the_problem_message_names_the_operation_the_object_and_the_servers_status():
    error = answered(422, "Invalid", 'Deployment.apps "omni" is invalid: spec.selector: Invalid value')

    problem = runtime_problem(DirectRuntimeKind.REALTIME, error, action="apply", identity=IDENTITY)

    assert (
        problem.message
        == f'apply {IDENTITY}: 422 Invalid: Deployment.apps "omni" is invalid: spec.selector: Invalid value'
    )


def test_no_answer_names_the_server_and_the_cause():
    problem = runtime_problem(DirectRuntimeKind.FREETOKEN, UNREACHABLE, action="delete", identity=IDENTITY)

    assert problem.message == f"delete {IDENTITY}: cannot reach https://127.0.0.1:6443: connection refused"


def planned_status() -> dict:
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "Ready",
        "message": "ready",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    return {"phase": "Ready", "reason": "Ready", "message": "ready", "observedGeneration": 1, "conditions": [ready]}


@pytest.mark.parametrize(
    ("error", "phase"),
    [
        (answered(503, "ServiceUnavailable", "try later"), "Starting"),
        (UNREACHABLE, "Starting"),
        (answered(403, "Forbidden", "no"), "Degraded"),
        (answered(422, "Invalid", "no"), "Degraded"),
    ],
    ids=["503", "no answer", "403", "422"],
)
@pytest.mark.parametrize("kind", list(DirectRuntimeKind), ids=str)
def test_an_outage_leaves_the_activation_starting_and_every_other_failure_degrades_it(kind, error, phase):
    problem = runtime_problem(kind, error, action="apply", identity=IDENTITY)
    problems = problems_of(
        {f"{kind.label}/ai/omni": problem_output(problem.reason, problem.message, problem.persistence)}
    )

    status = status_with_problems(planned_status(), problems, previous={}, now=NOW)

    assert (status["phase"], status["reason"]) == (phase, str(problem.reason))
    assert status["conditions"][0]["status"] == "False"


def test_deletion_goes_deployment_then_service_then_config_map():
    identities = ["ConfigMap/ai/omni-stages", "Service/ai/omni", "Deployment/ai/omni"]

    assert in_delete_order(identities) == ["Deployment/ai/omni", "Service/ai/omni", "ConfigMap/ai/omni-stages"]


class TestCheck:
    def test_valid_inputs_pass_with_each_objects_namespace_set_and_integers_restored(self):
        bodies = runtime_objects(NAMESPACE, NAME)
        del bodies[1]["metadata"]["namespace"]
        bodies[2]["spec"]["replicas"] = 1.0

        result = DirectRuntimeProvider().check({}, inputs(NAMESPACE, bodies))

        assert result.failures == []
        assert result.inputs["objects"][1]["metadata"]["namespace"] == NAMESPACE
        assert result.inputs["objects"][2]["spec"]["replicas"] == 1 and isinstance(
            result.inputs["objects"][2]["spec"]["replicas"], int
        )

    @pytest.mark.parametrize(
        ("change", "failing"),
        [
            ({"runtime": "Ollama"}, ["runtime"]),
            ({"namespace": "Not_A_Label"}, ["namespace"]),
            ({"fieldManager": ""}, ["fieldManager"]),
            ({"objects": []}, ["objects"]),
            ({"objects": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "key"}}]}, ["objects"]),
            (
                {"objects": [{"apiVersion": "extensions/v1beta1", "kind": "Deployment", "metadata": {"name": NAME}}]},
                ["objects"],
            ),
            ({"objects": [{"apiVersion": "v1", "kind": "Service", "metadata": {}}]}, ["objects"]),
            ({"objects": [service("elsewhere", NAME)]}, ["objects"]),
            ({"objects": [service(NAMESPACE, NAME), service(NAMESPACE, NAME)]}, ["objects"]),
        ],
        ids=[
            "unknown runtime",
            "namespace not a label",
            "empty field manager",
            "no objects",
            "a kind no runtime has",
            "an old api version",
            "an object without a name",
            "an object in another namespace",
            "an object listed twice",
        ],
    )
    def test_check_names_every_malformed_input(self, change, failing):
        result = DirectRuntimeProvider().check({}, {**inputs(NAMESPACE, runtime_objects(NAMESPACE, NAME)), **change})

        assert [failure.property for failure in result.failures] == failing

    def test_check_leaves_objects_not_yet_known_in_a_preview_alone(self):
        declared = {**inputs(NAMESPACE, []), "objects": Unknown()}

        result = DirectRuntimeProvider().check({}, declared)

        assert result.failures == [] and isinstance(result.inputs["objects"], Unknown)


def stored_outputs(**overrides) -> dict:
    """What the provider stored on the last run: the checked inputs plus `applied` and `problem`."""
    checked = DirectRuntimeProvider().check({}, inputs(NAMESPACE, runtime_objects(NAMESPACE, NAME))).inputs
    return {
        **checked,
        "applied": [f"ConfigMap/{NAMESPACE}/{NAME}-stages", f"Service/{NAMESPACE}/{NAME}", IDENTITY],
        "problem": {},
        **overrides,
    }


def checked(
    objects: list[dict], namespace: str = NAMESPACE, kind: DirectRuntimeKind = DirectRuntimeKind.REALTIME
) -> dict:
    return DirectRuntimeProvider().check({}, inputs(namespace, objects, kind)).inputs


class TestDiff:
    def test_the_same_inputs_after_a_round_trip_through_the_engine_are_no_change(self):
        olds = stored_outputs()
        olds["objects"][2]["spec"]["replicas"] = 1.0

        diff = DirectRuntimeProvider().diff("id", olds, checked(runtime_objects(NAMESPACE, NAME)))

        assert diff.changes is False

    @pytest.mark.parametrize(
        "news",
        [
            checked(
                [
                    config_map(NAMESPACE, NAME),
                    service(NAMESPACE, NAME),
                    deployment(NAMESPACE, NAME, image="example.com/vllm-omni:2"),
                ]
            ),
            checked(runtime_objects(NAMESPACE, NAME)[1:]),
            checked(runtime_objects(NAMESPACE, NAME), kind=DirectRuntimeKind.FREETOKEN),
            {**checked(runtime_objects(NAMESPACE, NAME)), "fieldManager": "magicstick-other"},
        ],
        ids=["a changed object", "a dropped object", "another runtime", "another field manager"],
    )
    def test_a_changed_input_is_an_update_in_place(self, news):
        diff = DirectRuntimeProvider().diff("id", stored_outputs(), news)

        assert (diff.changes, diff.replaces) == (True, [])

    def test_another_namespace_replaces_the_runtime_deleting_the_old_objects_first(self):
        diff = DirectRuntimeProvider().diff(
            "id", stored_outputs(), checked(runtime_objects("team-x", NAME), namespace="team-x")
        )

        assert (diff.changes, diff.replaces, diff.delete_before_replace) == (True, ["namespace"], True)

    @pytest.mark.parametrize(("persistence", "changes"), [("Temporary", True), ("Permanent", False)])
    def test_a_temporary_problem_asks_for_another_try_and_a_permanent_one_waits_for_new_inputs(
        self, persistence, changes
    ):
        problem = {"reason": "RealtimeApiUnavailable", "message": "503", "persistence": persistence}

        diff = DirectRuntimeProvider().diff(
            "id", stored_outputs(problem=problem), checked(runtime_objects(NAMESPACE, NAME))
        )

        assert diff.changes is changes
