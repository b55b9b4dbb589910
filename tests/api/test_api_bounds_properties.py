"""Property tests of the numeric and size bounds of the API."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from spec_cases import gpu_sharing, instance, local_model

from api.models import CpuResources
from api.validation import SpecError, parse_spec, validate_cpu_resources

millicores = st.integers(min_value=-10, max_value=64_000)


def accepted(kind: str, spec: dict) -> bool:
    try:
        parse_spec(kind, spec)
    except SpecError:
        return False
    return True


@given(st.integers(min_value=-64, max_value=64) | st.integers(min_value=-(2**31), max_value=2**40))
def test_memory_required_mi_is_accepted_exactly_from_sixteen(memory: int) -> None:
    assert accepted("ModelActivation", local_model(memoryRequiredMi=memory)) is (memory >= 16)


@given(request=millicores, limit=millicores)
def test_an_explicit_cpu_pair_is_accepted_exactly_when_bounded_and_consistent(request: int, limit: int) -> None:
    expected = request >= 1 and limit >= 0 and (limit == 0 or limit >= request)
    spec = local_model(cpuResources={"requestMillicores": request, "limitMillicores": limit})
    assert accepted("ModelActivation", spec) is expected


@given(
    request=st.none() | st.integers(min_value=1, max_value=64_000),
    limit=st.none() | st.integers(min_value=0, max_value=64_000),
    default=st.integers(min_value=1, max_value=64_000),
)
def test_a_positive_limit_must_cover_the_effective_request(
    request: int | None, limit: int | None, default: int
) -> None:
    effective = request if request is not None else default
    expected = not limit or limit >= effective
    try:
        cpu = CpuResources(request_millicores=request, limit_millicores=limit)
    except ValueError:
        assert request is not None and limit and limit < request
        return
    try:
        validate_cpu_resources(cpu, default_request_millicores=default)
    except SpecError:
        assert not expected
    else:
        assert expected


@given(module_mode=st.sampled_from([("amd-gpu", "dra-shared"), ("gpu", "time-slicing")]), slots=st.integers(-5, 40))
def test_shared_gpu_slots_are_accepted_exactly_from_two_to_sixteen(module_mode: tuple[str, str], slots: int) -> None:
    module, mode = module_mode
    spec = {"module": module, "parameters": {"gpuSharing": gpu_sharing(mode, slots=slots)}}
    assert accepted("ModuleActivation", spec) is (2 <= slots <= 16)


id_lists = st.lists(st.integers(0, 130), max_size=10) | st.lists(st.integers(0, 130), min_size=95, max_size=110)


@given(field=st.sampled_from(["users", "groups"]), ids=id_lists)
def test_sharing_lists_are_accepted_exactly_when_unique_and_at_most_one_hundred(field: str, ids: list[int]) -> None:
    spec = instance(sharing={"mode": "selected", field: [f"id-{i}" for i in ids]})
    assert accepted("AppInstance", spec) is (len(ids) <= 100 and len(set(ids)) == len(ids))
