"""How user-written module keys map to canonical module names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from catalogs import load_catalogs, normalise_key

MODULES = load_catalogs().modules


@pytest.mark.parametrize(
    ("key", "canonical"),
    [
        ("model-catalog", "model-catalog"),
        ("modelCatalog", "model-catalog"),
        ("ModelCatalog", "model-catalog"),
        ("model_catalog", "model-catalog"),
        ("Model-Catalog", "model-catalog"),
        ("MODEL_CATALOG", "model-catalog"),
        ("modelcatalog", "model-catalog"),
        ("nvidia", "gpu"),
        ("NVIDIA", "gpu"),
        ("nvidiaGpu", "gpu"),
        ("nvidia_gpu", "gpu"),
        ("amd", "amd-gpu"),
        ("amdGPU", "amd-gpu"),
        ("AMDGpu", "amd-gpu"),
        ("intel", "intel-gpu"),
        ("liteLLM", "litellm"),
        ("kubeAI", "kubeai"),
        ("openclaw", "openclaw-operator"),
        ("openClawOperator", "openclaw-operator"),
        (" basis ", "basis"),
    ],
)
def test_a_user_key_normalises_to_its_canonical_module(key, canonical):
    assert MODULES.canonical(key) == canonical


@pytest.mark.parametrize("key", ["", "nvidia-amd", "model", "catalog-model", "gpus"])
def test_an_unknown_key_has_no_canonical_module(key):
    assert MODULES.canonical(key) is None


def test_every_canonical_name_normalises_to_itself():
    assert all(MODULES.canonical(name) == name for name in MODULES.names)


def test_every_catalogued_key_resolves_to_the_module_that_lists_it():
    assert all(MODULES.canonical(key) == entry.name for entry in MODULES.entries for key in entry.keys)


def test_get_finds_only_the_exact_canonical_name():
    assert (MODULES.get("model-catalog").name, MODULES.get("modelCatalog")) == ("model-catalog", None)


def _spellings(words: list[str]) -> st.SearchStrategy[str]:
    """Separated spellings in any case, plus camelCase and PascalCase."""
    separated = st.tuples(
        st.sampled_from(["-", "_", "--", "__", "-_"]), st.sampled_from([str.lower, str.upper, str.title])
    )
    camel = words[0] + "".join(word.capitalize() for word in words[1:])
    return st.one_of(
        separated.map(lambda choice: choice[1](choice[0].join(words))),
        st.sampled_from([camel, camel[0].upper() + camel[1:]]),
    )


@given(st.sampled_from(MODULES.names).flatmap(lambda name: st.tuples(st.just(name), _spellings(name.split("-")))))
def test_any_casing_and_separator_spelling_of_a_module_name_resolves_to_it(case):
    name, spelling = case
    assert MODULES.canonical(spelling) == name


@given(st.text(alphabet=st.characters(categories=["Lu", "Ll", "Nd"], include_characters="-_ "), max_size=30))
def test_normalising_is_idempotent(key):
    assert normalise_key(normalise_key(key)) == normalise_key(key)


@given(st.text(max_size=30))
def test_canonical_returns_a_catalogued_name_or_none(key):
    assert MODULES.canonical(key) in (*MODULES.names, None)
