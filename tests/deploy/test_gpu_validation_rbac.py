"""GPU validation as the deployed ServiceAccount: the history, the Job, the Pod read and the
runtime-images store are allowed; Jobs elsewhere and other ConfigMaps are not."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from planning.hardware.validation import (
    HISTORY_CONFIG_MAP,
    RUNTIME_IMAGES_CONFIG_MAP,
    RUNTIME_IMAGES_NAMESPACE,
    EngineRun,
    PodSecurity,
    job_name,
    validation_job,
)
from providers.gpu_stores import bootstrap_history, put_runtime_image, read_run
from providers.gpu_validation import RunInputs, advance
from providers.kinds import CONFIG_MAP, JOB
from providers.kube import Forbidden, KubeClient, NotFound
from tests.deploy.manifests import SYSTEM_NAMESPACE
from tests.live.test_gpu_validation import OLLAMA_PASSES, delete_job, finish_job, inputs

RUN_ID = "deploy-validation-1"


@pytest.fixture
def cleaned(admin: KubeClient) -> Iterator[None]:
    yield
    for engine in ("OLlama", "VLLM"):
        with contextlib.suppress(NotFound):
            delete_job(admin, SYSTEM_NAMESPACE, job_name(RUN_ID, engine))
    for namespace, name in (
        (SYSTEM_NAMESPACE, HISTORY_CONFIG_MAP),
        (RUNTIME_IMAGES_NAMESPACE, RUNTIME_IMAGES_CONFIG_MAP),
    ):
        with contextlib.suppress(NotFound):
            admin.delete(CONFIG_MAP, name, namespace)


def deployed_inputs() -> RunInputs:
    props = inputs(SYSTEM_NAMESPACE, RUN_ID)
    props["runtimeImagesNamespace"] = RUNTIME_IMAGES_NAMESPACE
    return RunInputs.from_props(props)


def test_the_program_may_record_run_judge_and_publish_a_validation(program: KubeClient, admin: KubeClient, cleaned):
    bootstrap_history(program, SYSTEM_NAMESPACE, bound=32)
    step = advance(program, deployed_inputs())
    assert step.problem is None
    assert admin.get(JOB, job_name(RUN_ID, "OLlama"), SYSTEM_NAMESPACE)
    finish_job(
        admin,
        SYSTEM_NAMESPACE,
        job_name(RUN_ID, "OLlama"),
        image="registry.example.com/magicstick/ollama-rocm-validation:1.0",
        report=OLLAMA_PASSES,
    )
    step = advance(program, deployed_inputs())
    assert step.problem is None
    found = read_run(program, SYSTEM_NAMESPACE, RUN_ID)
    assert found is not None and [e.stage.value for e in found.engines] == ["Passed", "Running"]
    assert admin.get(CONFIG_MAP, RUNTIME_IMAGES_CONFIG_MAP, RUNTIME_IMAGES_NAMESPACE)
    delete_job(program, SYSTEM_NAMESPACE, job_name(RUN_ID, "VLLM"))  # as the provider's delete does


def test_the_program_may_not_create_validation_jobs_outside_the_system_namespace(program: KubeClient):
    body = validation_job(
        run_id=RUN_ID,
        engine=EngineRun("OLlama", "registry.example.com/a/b:1", 900),
        node="halo",
        namespace="ai",
        security=PodSecurity(1000),
    )
    with pytest.raises(Forbidden):
        program.request(
            "POST", JOB.collection_path("ai"), params={"dryRun": "All"}, body=body, content_type="application/json"
        )


def test_the_runtime_images_grant_names_only_its_store(program: KubeClient):
    with pytest.raises(Forbidden):
        put_runtime_image(program, "VLLM", "r/v@sha256:" + "c" * 64, namespace=SYSTEM_NAMESPACE)
