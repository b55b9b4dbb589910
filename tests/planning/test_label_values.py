"""Every label value the program writes is one the API server accepts, whatever the length of
the names users choose: at most 63 characters, alphanumeric at both ends, `-`, `_` and `.`
inside (invariant 8). Long names are fitted with planning.names' stable hash suffix."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planning.frozen import thaw
from planning.labels import ACTIVATION
from planning.names import LABEL_VALUE_LIMIT
from tests.planning.builders import activation, cpu_model, instance, plan_of
from tests.planning.instances.scene import platform

LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_SHORT = st.from_regex(r"[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?", fullmatch=True).filter(lambda name: ".." not in name)
_LONG = (
    st.lists(st.from_regex(r"[a-z0-9]{16,24}", fullmatch=True), min_size=3, max_size=10)
    .map("-".join)
    .filter(lambda name: 63 < len(name) <= 253)
)
SUBDOMAIN = st.one_of(_SHORT, _LONG)
"""A DNS subdomain, as a user may name a ModuleActivation, a ModelActivation or an AppInstance:
up to the 63 characters a label value holds, or past them."""


def _label_maps(value: Any) -> Iterator[dict[str, str]]:
    """Every `labels` and `matchLabels` map anywhere in an object's body."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if key in ("labels", "matchLabels") and isinstance(inner, dict):
                yield inner
            yield from _label_maps(inner)
    elif isinstance(value, list):
        for item in value:
            yield from _label_maps(item)


def _bad_label_values(result) -> list[tuple[str, str, str]]:
    return [
        (obj.identity, key, text)
        for obj in result.objects
        for labels in _label_maps(thaw(obj.body))
        for key, text in labels.items()
        if len(text) > LABEL_VALUE_LIMIT or not LABEL_VALUE.fullmatch(text)
    ]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(module_activation=SUBDOMAIN, model_activation=SUBDOMAIN, app_instance=SUBDOMAIN)
def test_every_label_value_the_plan_writes_fits_whatever_the_names(
    module_activation: str, model_activation: str, app_instance: str
):
    result = plan_of(
        *platform("openclaw"),
        activation(module_activation, "litellm"),
        cpu_model(model_activation),
        instance(app_instance, "openclaw"),
    )

    assert _bad_label_values(result) == []


def test_a_module_activation_named_past_63_characters_labels_its_kustomization_with_the_fitted_name():
    name = "team-" + "a" * 70
    result = plan_of(*platform("openclaw"), activation(name, "litellm"))

    (kustomization,) = [
        o
        for o in result.modules.kustomizations
        if thaw(o.body)["metadata"]["labels"].get("appliance.magicstick.dev/module") == "litellm"
    ]
    metadata = thaw(kustomization.body)["metadata"]
    assert len(metadata["labels"][ACTIVATION]) == LABEL_VALUE_LIMIT
    assert metadata["labels"][ACTIVATION].startswith("team-aaa")
    assert metadata["annotations"][ACTIVATION] == name
