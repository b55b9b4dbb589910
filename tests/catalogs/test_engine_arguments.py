"""The program's engine settings against docs/engine-arguments.md, target by target.

Every argument and variable the program gives a KubeAI Model, over every engine option it
accepts on every compute target, must have a `read` (or `outside`) row at the release that target
runs (catalogs/compute-targets.yaml engineVersions); none may have an `ignored` or `absent` row.
A visionAttention choice newer than the target's release is refused, never given.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from api.models import LocalModelSpec
from api.validation import SpecError
from catalogs import Catalogs
from catalogs.types import ComputeTargetCatalog, version_key
from planning.models.kubeai import engine_settings
from planning.models.offloading import decide_offloading
from planning.models.resolve import resolve_local
from tests.engine_sources import EngineArgument, Verdict, engine_arguments
from tests.planning.builders import CATALOGS

ROWS = engine_arguments()
GIVEN = frozenset({Verdict.READ, Verdict.OUTSIDE})
KUBEAI_ENGINES = ("VLLM", "OLlama")
URLS = {"VLLM": "hf://example/model", "OLlama": "ollama://example-model"}


def _setting(argument: str) -> str:
    return argument.partition("=")[0]


def _options(engine: str, target: str, catalogs: Catalogs) -> Iterator[dict[str, object]]:
    """Every engine option of the API, one activation each, on `target`."""
    entry = catalogs.engines.require(engine)
    for kv_cache_type in entry.allowed_kv_cache_types(target):
        yield {"kvCacheType": kv_cache_type}
    yield {"contextWindow": 8192, "maxNumSeqs": 4}
    yield {"cpuOffloading": False}
    if target == "nvidia-gpu":
        offload = {"cpuOffloadMi": 1024} if engine == "VLLM" else {}
        yield {"cpuOffloading": True, "memoryRequiredMi": 65536, "vramMi": 24576, **offload}
    if engine == "VLLM":
        for value in catalogs.compute_targets.require(target).vision_attention or {}:
            yield {"vllm": {"visionAttention": value}}
    if target == "cpu" and engine == "VLLM":
        yield {"kvCacheMemoryBytes": 3 * 1024**3 + 1, "memoryRequiredMi": 16384}


def _given(engine: str, target: str, options: dict[str, object], catalogs: Catalogs) -> set[str] | None:
    """The settings the program gives for these options, or None when it refuses them."""
    local = LocalModelSpec.model_validate({"url": URLS[engine], "engine": engine, "computeTarget": target, **options})
    try:
        resolved = resolve_local(local, catalogs)
    except SpecError:
        return None
    args, env = engine_settings(resolved, catalogs, None)
    offloading = decide_offloading(local, resolved, "magicstick-nvidia-gpu")
    return {_setting(a) for a in (*args, *offloading.args)} | set(env)


def _rows(engine: str, release: str, target: str, setting: str) -> list[EngineArgument]:
    return [r for r in ROWS if (r.engine, r.release, r.setting) == (engine, release, setting) and target in r.targets]


def _with_release(target: str, release: str) -> Catalogs:
    targets = tuple(
        t.model_copy(update={"engine_versions": {**t.engine_versions, "VLLM": release}}) if t.name == target else t
        for t in CATALOGS.compute_targets.entries
    )
    return CATALOGS.model_copy(update={"compute_targets": ComputeTargetCatalog(entries=targets)})


CASES = [
    (engine, target.name)
    for engine in KUBEAI_ENGINES
    for target in CATALOGS.compute_targets.entries
    if target.name in CATALOGS.engines.require(engine).compute_targets
]


@pytest.mark.parametrize(("engine", "target"), CASES, ids=[f"{e}-{t}" for e, t in CASES])
def test_every_setting_the_program_gives_is_read_by_the_release_its_target_runs(engine: str, target: str) -> None:
    release = CATALOGS.compute_targets.require(target).engine_versions[engine]
    problems = []
    given_options = 0
    for options in _options(engine, target, CATALOGS):
        given = _given(engine, target, options, CATALOGS)
        given_options += given is not None
        for setting in sorted(given or ()):
            verdicts = {r.verdict for r in _rows(engine, release, target, setting)}
            if not verdicts or not verdicts <= GIVEN:
                problems.append(f"{setting} ({options}): {sorted(verdicts) or 'no row'} at {engine} {release}")
    assert given_options >= 3, f"the program refused almost every option of {engine} on {target}"
    assert not problems, f"{engine} on {target}: " + "; ".join(problems)


def test_cpu_vllm_is_never_given_the_flag_its_cpu_backend_ignores() -> None:
    (ignored,) = [r for r in ROWS if r.verdict is Verdict.IGNORED and r.setting == "--kv-cache-memory-bytes"]
    given = _given("VLLM", "cpu", {"kvCacheMemoryBytes": 1024**3, "memoryRequiredMi": 8192}, CATALOGS)
    assert given is not None and "cpu" in ignored.targets
    assert ignored.setting not in given and "VLLM_CPU_KVCACHE_SPACE" in given


@pytest.mark.parametrize("value", ["aotriton", "triton", "flash-attn-triton"])
def test_a_vision_attention_choice_is_refused_below_its_minimum_release_and_given_from_it(value: str) -> None:
    mapping = (CATALOGS.compute_targets.require("amd-gpu").vision_attention or {})[value]
    assert mapping.minimum_engine_version is not None
    shipped = CATALOGS.compute_targets.require("amd-gpu").engine_versions["VLLM"]
    assert version_key(shipped) < version_key(mapping.minimum_engine_version)
    options: dict[str, object] = {"vllm": {"visionAttention": value}}
    for arg in mapping.args:
        assert {r.verdict for r in _rows("VLLM", shipped, "amd-gpu", _setting(arg))} == {Verdict.ABSENT}
    assert _given("VLLM", "amd-gpu", options, CATALOGS) is None
    newer = _with_release("amd-gpu", mapping.minimum_engine_version)
    given = _given("VLLM", "amd-gpu", options, newer)
    assert given is not None
    for setting in given:
        verdicts = {r.verdict for r in _rows("VLLM", mapping.minimum_engine_version, "amd-gpu", setting)}
        assert verdicts and verdicts <= GIVEN, f"{setting} at vLLM {mapping.minimum_engine_version}: {verdicts}"


def test_every_release_a_target_runs_has_rows_in_the_table() -> None:
    releases = {(r.engine, r.release) for r in ROWS}
    for target in CATALOGS.compute_targets.entries:
        for engine, release in target.engine_versions.items():
            assert (engine, release) in releases, f"{target.name} runs {engine} {release}, which the table lacks"
