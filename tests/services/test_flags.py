"""The flag checks both services' settings share: one-line errors naming the flag."""

from __future__ import annotations

import pytest

from services.flags import ServiceFlagError, one_of, required, whole_number


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param(None, "--x: a value is required", id="an unset flag is refused"),
        pytest.param("  ", "--x: a value is required", id="a blank value is refused as unset"),
        pytest.param(" a", "--x: ' a' has surrounding whitespace", id="a value with surrounding whitespace is refused"),
    ],
)
def test_a_required_flag_refuses_what_is_not_a_value(value, message):
    with pytest.raises(ServiceFlagError) as refused:
        required(value, "--x")
    assert str(refused.value) == message


def test_a_required_flag_keeps_its_value():
    assert required("a b", "--x") == "a b"


def test_a_choice_is_read_in_lower_case():
    assert one_of("INFO", "--log-level", ("debug", "info")) == "info"


def test_a_choice_outside_the_list_is_refused_naming_the_list():
    with pytest.raises(ServiceFlagError, match=r"^--log-level: 'loud' is not one of debug, info$"):
        one_of("loud", "--log-level", ("debug", "info"))


@pytest.mark.parametrize("text", ["0", "11", "-1", "1.5", "1e3", "99999999999"])
def test_a_whole_number_outside_one_to_the_maximum_is_refused_naming_its_unit(text):
    with pytest.raises(
        ServiceFlagError, match=rf"^--quiet-ms: '{text}' is not a whole number of milliseconds from 1 to 10$"
    ):
        whole_number(text, "--quiet-ms", maximum=10, unit="milliseconds")


def test_a_whole_number_without_a_unit_says_none():
    with pytest.raises(ServiceFlagError, match=r"^--n: '0' is not a whole number from 1 to 3$"):
        whole_number("0", "--n", maximum=3)


def test_a_whole_number_in_range_is_read():
    assert whole_number("10", "--quiet-ms", maximum=10, unit="milliseconds") == 10
