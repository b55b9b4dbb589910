"""Names fit their limits, stably (invariant 8)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from planning.names import KUBEAI_MODEL_NAME_LIMIT, fit

NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=200)


@given(NAMES, st.sampled_from([KUBEAI_MODEL_NAME_LIMIT, 63, 253]))
def test_a_fitted_name_never_exceeds_its_limit(name, limit):
    assert len(fit(name, limit)) <= limit


@given(NAMES)
def test_a_name_that_fits_is_unchanged(name):
    if len(name) <= 63:
        assert fit(name) == name


@given(NAMES, NAMES)
def test_two_different_long_names_stay_different(first, second):
    if first != second:
        assert fit(first * 3, 40) != fit(second * 3, 40)


def test_the_same_long_name_always_gives_the_same_short_name():
    long_name = "qwen3-coder-30b-a3b-instruct-awq-int4-nvidia-gpu-vllm"
    assert fit(long_name, 40) == "qwen3-coder-30b-a3b-instruct-aw-335e1620"
    assert len(fit(long_name, 40)) == 40
