"""A validation run crosses into its dynamic provider in one serialisation, defined on the plan:
what the component declares is `to_inputs`, what the provider reads is `from_inputs`."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from components import dynamic
from planning.hardware.compatibility import ValidationRunPlan
from planning.hardware.validation import EngineRun, HostIdentity, PodSecurity
from planning.provider_wire import PROBLEM_OUTPUT
from providers import outcomes
from providers.gpu_validation import RunInputs

WIRE_NAMES = {
    "runId",
    "profileId",
    "profileVersion",
    "host",
    "hostCurrent",
    "currentHost",
    "engines",
    "security",
    "namespace",
    "historyNamespace",
    "device",
    "runtimeImagesNamespace",
}
"""The input properties Pulumi state holds for every GpuValidationRun."""

text = st.text(min_size=1, max_size=12)
hosts = st.builds(HostIdentity, node=text, node_uid=text, boot_id=text, fingerprint=text)
engines = st.builds(EngineRun, engine=text, image=text, timeout_seconds=st.integers(1, 86_400))
securities = st.builds(
    PodSecurity,
    run_as_user=st.none() | st.integers(0, 65_535),
    supplemental_groups=st.lists(st.integers(0, 65_535), max_size=3).map(tuple),
)
runs = st.builds(
    ValidationRunPlan,
    run_id=text,
    profile_id=text,
    profile_version=text,
    host=hosts,
    host_current=st.booleans(),
    engines=st.lists(engines, max_size=3).map(tuple),
    security=st.dictionaries(text, securities, max_size=3),
    namespace=text,
    history_namespace=text,
    device=st.just("") | text,
    current_host=st.none() | hosts,
    runtime_images_namespace=text,
)


def as_pulumi_passes_them(value: object) -> object:
    """Numbers reach a dynamic provider as floats."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, dict):
        return {key: as_pulumi_passes_them(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_pulumi_passes_them(item) for item in value]
    return value


@given(runs)
def test_a_validation_run_read_back_from_its_inputs_is_the_same_run(run: ValidationRunPlan) -> None:
    assert ValidationRunPlan.from_inputs(run.to_inputs()) == run


@given(runs)
def test_the_provider_reads_the_run_the_plan_declared_even_with_numbers_as_floats(run: ValidationRunPlan) -> None:
    read = RunInputs.from_props(as_pulumi_passes_them(run.to_inputs()))
    assert dataclasses.asdict(read) == dataclasses.asdict(run)


@given(runs)
def test_the_inputs_keep_the_property_names_pulumi_state_holds(run: ValidationRunPlan) -> None:
    inputs = run.to_inputs()
    assert set(inputs) == WIRE_NAMES
    assert all(set(engine) == {"engine", "image", "timeoutSeconds"} for engine in inputs["engines"])
    assert all(set(security) == {"runAsUser", "supplementalGroups"} for security in inputs["security"].values())
    assert set(inputs["host"]) == {"node", "nodeUID", "bootID", "fingerprint"}


def test_an_engine_crosses_as_its_image_and_deadline_whatever_its_record_says() -> None:
    host = HostIdentity("halo", "uid-1", "boot-1", "sha256:1")
    recorded = EngineRun("OLlama", "registry.example.com/a/b:1", 900, job="job-1", message="ran")
    run = ValidationRunPlan("run-1", "halo", "1", host, True, (recorded,), {}, "ai-system", "ai-system")
    assert ValidationRunPlan.from_inputs(run.to_inputs()).engines == (
        EngineRun("OLlama", "registry.example.com/a/b:1", 900),
    )


def test_the_problem_output_is_named_once_for_components_and_providers() -> None:
    assert dynamic.PROBLEM is outcomes.PROBLEM_OUTPUT is PROBLEM_OUTPUT
