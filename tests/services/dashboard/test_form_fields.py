"""The pages' form and query fields (form_fields.py, and the pages' readers built on it), pure:
whatever a form or query holds ends in values or a 422 naming each field, never an exception.

The four inputs of issue 42 that answered 500 are the first table; the properties then send
any text, any repetition and any field name.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.datastructures import FormData, Headers, QueryParams, UploadFile

from api.validation import SpecError
from planning.hardware.memory import HostMemory
from services.dashboard import pages
from services.dashboard.estimates import LocalModelRequest, estimate_local_model
from services.dashboard.form_fields import MAX_DIGITS, MAX_TEXT, Bounds, FormFields, bounds, object_name
from services.dashboard.forms import (
    MAX_CONTEXT_WINDOW,
    MAX_MEMORY_MI,
    MAX_NUM_SEQS,
    ContextWindow,
    ExternalModelCreate,
    GpuSharingChange,
    HostOperationCreate,
    InstanceCreate,
    InstanceEdit,
    LocalModelCreate,
    LocalModelEdit,
    MaxNumSeqs,
    MemoryRequiredMi,
    ModuleChange,
    SharingSlots,
    VramMi,
)
from services.dashboard.refusals import FieldProblem, Refusal, http_refusal
from tests.planning.builders import CATALOGS
from tests.services.dashboard.test_estimates import SHARED_POOL

SLOTS = Bounds(2, 16)
UNICODE_DIGITS = st.characters(categories=["Nd", "No", "Nl"]).filter(lambda character: not character.isascii())
FORM_NAMES = (
    "name", "variant", "contextWindow", "maxNumSeqs", "kvCacheType", "memoryRequiredMi", "vramMi", "cpuOffloading",
    "allowMemoryRisk", "step", "resourceVersion", "enabled", "hasParameters", "param.postgresStorage", "param.x",
    "mode", "node", "slots", "model", "apiBase", "modelType", "secretName", "secretKey", "application", "role",
    "exposure", "sharingMode", "sharingUsers", "sharingGroups", "operation", "planId", "acknowledgeDisruption",
)  # fmt: skip
"""Every field the pages' forms send, and one no form has."""
HOSTILE = st.one_of(
    st.text(),
    st.text(alphabet=UNICODE_DIGITS, min_size=1),
    st.integers().map(str),
    st.sampled_from(
        ["", " ", "\x00", "-1", "+1", "1e3", "0x10", " 4", "4 ", "true", "on", "²⁵⁶", "٣", "9" * 5000, "x" * 10_000]
    ),
)


def form(*pairs: tuple[str, Any]) -> FormFields:
    return FormFields(FormData(list(pairs)))


def query(text: str) -> FormFields:
    return FormFields(QueryParams(text))


def a_file() -> UploadFile:
    return UploadFile(io.BytesIO(b"4096"), filename="n.txt", headers=Headers({"content-type": "text/plain"}))


def fields_named(problems: list[FieldProblem]) -> set[str]:
    return {problem.field for problem in problems}


class TestTheReportedInputs:
    """Issue 42: each answered 500 (int() of Unicode digits, or of more than 4,300 digits)."""

    @pytest.mark.parametrize(
        ("fields", "name"),
        [
            (form(("name", "m"), ("variant", "qwen2505bcpu|VLLM|cpu|"), ("contextWindow", "²⁵⁶")), "contextWindow"),
            (query("variant=qwen2505bcpu%7CVLLM%7Ccpu%7C&contextWindow=" + "9" * 5000), "contextWindow"),
            (query("contextWindow=%C2%B2"), "contextWindow"),
        ],
        ids=["superscript digits posted", "5000 digits in the query", "a superscript two in the query"],
    )
    def test_the_add_a_model_fields_name_the_context_window(self, fields: FormFields, name: str) -> None:
        entered = pages._local_values(fields)
        assert entered["contextWindow"] is None
        assert fields_named(fields.problems) == {name}
        with pytest.raises(Refusal) as refused:
            fields.check()
        assert refused.value.status == 422
        assert refused.value.reason == "Invalid"
        assert refused.value.fields[0].field == name
        assert "digits 0-9" in refused.value.fields[0].message

    def test_gpu_sharing_slots_of_5000_digits_name_the_slots(self) -> None:
        fields = form(("resourceVersion", "1"), ("mode", "shared"), ("node", "n1"), ("slots", "9" * 5000))
        assert fields.whole_number("slots", pages.SLOTS_BOUNDS) is None
        assert fields.problems == [FieldProblem("slots", "must be a whole number from 2 to 16, in the digits 0-9 only")]


class TestWholeNumbers:
    @given(st.one_of(st.text(), st.text(alphabet="0123456789+- ", max_size=30)))
    def test_any_text_is_a_number_within_the_range_or_one_problem_naming_the_field(self, text: str) -> None:
        fields = form(("slots", text))
        number = fields.whole_number("slots", SLOTS)
        if number is None:
            assert fields.problems == [] if text == "" else fields_named(fields.problems) == {"slots"}
        else:
            assert 2 <= number <= 16 and fields.problems == []

    @given(st.integers(min_value=2, max_value=16), st.integers(min_value=0, max_value=MAX_DIGITS - 2))
    def test_a_number_in_the_range_is_read_with_or_without_leading_zeros(self, number: int, zeros: int) -> None:
        fields = form(("slots", "0" * zeros + str(number)))
        assert fields.whole_number("slots", SLOTS) == number
        assert fields.problems == []

    @given(st.text(alphabet=UNICODE_DIGITS, min_size=1, max_size=20))
    def test_digits_of_any_other_script_are_refused(self, text: str) -> None:
        fields = form(("contextWindow", text))
        assert fields.whole_number("contextWindow", bounds(ContextWindow)) is None
        assert fields_named(fields.problems) == {"contextWindow"}

    @pytest.mark.parametrize(
        "text", ["-1", "+4", "0", "17", " 4", "4 ", "4.0", "1e1", "0x4", "4_0", "9" * 19, "9" * 5000, "\x004", "4\x00"]
    )
    def test_signs_spaces_other_notations_and_numbers_out_of_range_are_refused(self, text: str) -> None:
        fields = form(("slots", text))
        assert fields.whole_number("slots", SLOTS) is None
        assert fields.problems == [FieldProblem("slots", "must be a whole number from 2 to 16, in the digits 0-9 only")]

    def test_empty_is_absent_and_so_is_a_field_not_sent(self) -> None:
        fields = form(("slots", ""))
        assert fields.whole_number("slots", SLOTS) is None
        assert fields.whole_number("contextWindow", bounds(ContextWindow)) is None
        assert fields.problems == []

    def test_a_number_given_twice_is_refused_even_when_both_agree(self) -> None:
        fields = query("contextWindow=1&contextWindow=1")
        assert fields.whole_number("contextWindow", bounds(ContextWindow)) is None
        assert fields.problems == [FieldProblem("contextWindow", "was given 2 times; give it once")]

    def test_a_file_is_not_a_number(self) -> None:
        fields = form(("slots", a_file()))
        assert fields.whole_number("slots", SLOTS) is None
        assert fields_named(fields.problems) == {"slots"}

    def test_the_pages_ranges_are_the_form_models_own(self) -> None:
        assert pages.CONTEXT_WINDOW_BOUNDS == bounds(ContextWindow) == Bounds(1, MAX_CONTEXT_WINDOW)
        assert pages.NUM_SEQS_BOUNDS == bounds(MaxNumSeqs) == Bounds(1, MAX_NUM_SEQS)
        assert pages.MEMORY_REQUIRED_BOUNDS == bounds(MemoryRequiredMi) == Bounds(16, MAX_MEMORY_MI)
        assert pages.VRAM_BOUNDS == bounds(VramMi) == Bounds(1, MAX_MEMORY_MI)
        assert pages.SLOTS_BOUNDS == bounds(SharingSlots) == SLOTS

    def test_every_number_in_range_fits_in_max_digits(self) -> None:
        assert len(str(MAX_MEMORY_MI)) <= MAX_DIGITS and int("9" * MAX_DIGITS) < 2**63

    def test_the_largest_figures_the_forms_accept_derive_sizes_the_api_server_can_store(self) -> None:
        derived = []
        for preset in CATALOGS.presets.entries:
            for variant in preset.variants:
                for offloading in (False, True):
                    for host in (HostMemory(), SHARED_POOL):
                        request = LocalModelRequest(
                            preset=preset.name,
                            engine=variant.engine,
                            compute_target=variant.compute_target,
                            context_window=MAX_CONTEXT_WINDOW,
                            max_num_seqs=MAX_NUM_SEQS,
                            memory_required_mi=MAX_MEMORY_MI,
                            vram_mi=MAX_MEMORY_MI,
                            cpu_offloading=offloading,
                        )
                        try:
                            estimate = estimate_local_model(request, CATALOGS, host=host)
                        except SpecError:
                            continue  # a combination the catalog does not offer (offloading off NVIDIA)
                        derived += [
                            value
                            for value in (estimate.kv_cache_memory_bytes, estimate.cpu_offload_mi)
                            if value is not None
                        ]
        assert derived
        assert max(derived) < 2**63


class TestText:
    @given(st.text(max_size=MAX_TEXT))
    def test_text_without_control_characters_is_read_exactly_as_sent(self, text: str) -> None:
        fields = form(("name", text))
        value = fields.text("name")
        if text == "":
            assert value is None and fields.problems == []
        elif any(ord(character) < 32 or 127 <= ord(character) < 160 for character in text):
            assert value is None and fields_named(fields.problems) == {"name"}
        else:
            assert value == text and fields.problems == []

    @pytest.mark.parametrize("text", ["\x00", "a\x00b", "line\nbreak", "tab\there", "\x7f", "\x85"])
    def test_a_control_character_is_refused(self, text: str) -> None:
        fields = form(("planId", text))
        assert fields.text("planId") is None
        assert fields.problems == [
            FieldProblem("planId", "must not contain control characters (such as NUL or a line break)")
        ]

    def test_text_longer_than_its_bound_is_refused(self) -> None:
        fields = form(("name", "x" * (MAX_TEXT + 1)), ("sharingUsers", "u," * 100))
        assert fields.text("name") is None
        assert fields.text("sharingUsers", max_length=100) is None
        assert fields.problems == [
            FieldProblem("name", f"must be at most {MAX_TEXT} characters long"),
            FieldProblem("sharingUsers", "must be at most 100 characters long"),
        ]

    def test_text_given_three_times_is_refused(self) -> None:
        fields = query("node=a&node=b&node=c")
        assert fields.text("node") is None
        assert fields.problems == [FieldProblem("node", "was given 3 times; give it once")]

    def test_a_file_is_not_text(self) -> None:
        fields = form(("node", a_file()))
        assert fields.text("node") is None
        assert fields.problems == [FieldProblem("node", "must be text, not a file")]


class TestCheckboxes:
    @pytest.mark.parametrize("text", ["true", "on", "1", "yes", "TRUE", "On"])
    def test_a_checked_box_is_true(self, text: str) -> None:
        fields = form(("enabled", text))
        assert fields.checked("enabled") is True and fields.problems == []

    @pytest.mark.parametrize("text", ["false", "off", "0", "no", "", "False"])
    def test_an_unchecked_box_is_false(self, text: str) -> None:
        fields = form(("enabled", text))
        assert fields.checked("enabled") is False and fields.problems == []

    def test_a_box_not_sent_is_false(self) -> None:
        fields = form()
        assert fields.checked("enabled") is False and fields.problems == []

    @pytest.mark.parametrize(
        "pairs", [[("enabled", "maybe")], [("enabled", "true"), ("enabled", "true")], [("enabled", "\x00")]]
    )
    def test_anything_else_is_refused(self, pairs: list[tuple[str, str]]) -> None:
        fields = form(*pairs)
        assert fields.checked("enabled") is False
        assert fields_named(fields.problems) == {"enabled"}


class TestTheRefusal:
    def test_every_broken_field_is_named_at_once_with_its_rule(self) -> None:
        fields = query("slots=-2&node=a&node=b&name=ok")
        fields.whole_number("slots", SLOTS)
        fields.text("node")
        fields.text("name")
        with pytest.raises(Refusal) as refused:
            fields.check()
        assert (refused.value.status, refused.value.reason) == (422, "Invalid")
        assert [problem.field for problem in refused.value.fields] == ["slots", "node"]
        assert (
            refused.value.message
            == "slots: must be a whole number from 2 to 16, in the digits 0-9 only; node: was given 2 times; give it once"
        )

    def test_fields_that_keep_their_rules_are_not_refused(self) -> None:
        fields = query("slots=4&node=a")
        assert (fields.whole_number("slots", SLOTS), fields.text("node")) == (4, "a")
        fields.check()

    def test_a_very_long_field_name_is_shortened_in_the_refusal(self) -> None:
        fields = form(("param." + "p" * 10_000, "x"))
        pages._module_parameters(fields, CATALOGS, "litellm")
        (problem,) = fields.problems
        assert problem.field.startswith("param.ppp") and len(problem.field) <= 81
        assert problem.message == "is not a parameter the catalog declares for this module"


class TestModuleParameters:
    @pytest.mark.parametrize(("text", "value"), [("true", True), ("false", False)])
    def test_a_boolean_parameter_is_sent_as_a_boolean(self, text: str, value: bool) -> None:
        fields = form(("param.postgres", text), ("param.postgresStorage", "7Gi"))
        assert pages._module_parameters(fields, CATALOGS, "litellm") == {"postgres": value, "postgresStorage": "7Gi"}
        fields.check()

    def test_a_boolean_parameter_left_empty_is_not_set(self) -> None:
        assert pages._module_parameters(form(("param.postgres", "")), CATALOGS, "litellm") == {}

    def test_a_boolean_parameter_of_any_other_text_is_refused_naming_it(self) -> None:
        fields = form(("param.postgres", "yes"))
        pages._module_parameters(fields, CATALOGS, "litellm")
        (problem,) = fields.problems
        assert (problem.field, problem.message) == ("param.postgres", "must be true or false")


class TestObjectNames:
    @given(st.text())
    def test_any_text_is_a_name_or_a_404(self, text: str) -> None:
        try:
            assert object_name("modelactivations", text) == text
        except Refusal as refused:
            assert refused.status == 404

    @pytest.mark.parametrize("name", ["", "a\x00b", "n" * 10_000, "n" * 254, "..", "a/b", "Upper", "-a", "a-", "²"])
    def test_a_path_name_no_object_can_have_is_not_found(self, name: str) -> None:
        with pytest.raises(Refusal) as refused:
            object_name("appinstances", name)
        assert refused.value.status == 404

    @pytest.mark.parametrize("name", ["a", "qwen-0-5b", "n" * 253, "a.b-c.d"])
    def test_a_dns_subdomain_is_a_name(self, name: str) -> None:
        assert object_name("appinstances", name) == name


# The pages' readers and the form models together: whatever is sent, values or a 422.

PAIRS = st.lists(st.tuples(st.one_of(st.sampled_from(FORM_NAMES), st.text(max_size=20)), HOSTILE), max_size=12)
READERS = {
    "POST /modules/litellm": (lambda fields: pages._module_values(fields, CATALOGS, "litellm"), ModuleChange),
    "POST /modules/amd-gpu": (lambda fields: pages._module_values(fields, CATALOGS, "amd-gpu"), ModuleChange),
    "POST /modules/no-such-module": (
        lambda fields: pages._module_values(fields, CATALOGS, "no-such-module"),
        ModuleChange,
    ),
    "POST /modules/gpu/gpu-sharing": (pages._gpu_sharing_values, GpuSharingChange),
    "GET and POST /models/new": (pages._local_values, LocalModelCreate),
    "POST /models/external/new": (pages._external_model_values, ExternalModelCreate),
    "POST /models/<name>/edit": (pages._local_edit_values, LocalModelEdit),
    "POST /instances": (pages._instance_values, InstanceCreate),
    "POST /instances/<name>/edit": (pages._instance_edit_values, InstanceEdit),
    "POST /host-operations": (pages._host_operation_values, HostOperationCreate),
}
"""Each page form's reader (pages.py) and the form model its values go to."""


@pytest.mark.parametrize("form_of", READERS, ids=list(READERS))
@given(pairs=PAIRS)
def test_any_form_is_read_as_values_the_form_model_takes_or_refused_with_a_422_naming_fields(
    form_of: str, pairs: list[tuple[str, str]]
) -> None:
    reader, model = READERS[form_of]
    fields = form(*pairs)
    values = reader(fields)
    try:
        fields.check()
        pages._form_model(model, values)
    except Refusal as refused:
        assert refused.status == 422 and refused.fields


def test_a_body_the_framework_cannot_decode_is_a_422_naming_a_form_on_the_pages_and_json_under_the_api() -> None:
    page, api = http_refusal(400, "bad byte", json_body=False), http_refusal(400, "bad byte")
    assert (page.status, page.fields[0].field, page.fields[0].message) == (
        422,
        "body",
        "is not a form in UTF-8 (bad byte)",
    )
    assert api.fields[0].message == "is not a JSON document in UTF-8 (bad byte)"
