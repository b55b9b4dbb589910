"""AppInstance: known applications, deny-by-default access and the sharing allow-lists."""

from __future__ import annotations

import pytest
from spec_cases import instance, rejection

from api.instances import APPLICATIONS, AppInstanceSpec, authentication_is_explicit
from api.validation import parse_spec


def parse_instance(spec: dict) -> AppInstanceSpec:
    parsed = parse_spec("AppInstance", spec)
    assert isinstance(parsed, AppInstanceSpec)
    return parsed


@pytest.mark.parametrize("application", APPLICATIONS)
def test_every_catalogued_application_is_accepted(application: str) -> None:
    assert parse_instance({"application": application}).application == application


def test_the_applications_are_the_five_catalogued_ones() -> None:
    assert set(APPLICATIONS) == {"openclaw", "hermes", "paperclip", "kubeopencode", "odysseus"}


@pytest.mark.parametrize("application", ["OpenClaw", "jupyter", ""])
def test_an_unknown_application_is_rejected(application: str) -> None:
    error = rejection("AppInstance", {"application": application})
    assert error.field == "spec.application"
    assert "openclaw" in error.rule


def test_instance_defaults_are_enabled_in_namespace_ai_with_shared_sso_for_users_on_both_hostnames() -> None:
    spec = parse_instance({"application": "hermes"})
    assert (spec.enabled, spec.target_namespace, spec.values) == (True, "ai", {})
    assert (spec.access.authentication, spec.access.role, spec.access.exposure) == ("sso", "user", "localAndPublic")
    assert spec.access.sharing is None


@pytest.mark.parametrize("role", ["user", "viewer", "operator", "admin"])
def test_access_role_accepts_each_dashboard_role(role: str) -> None:
    assert parse_instance(instance(role=role)).access.role == role


@pytest.mark.parametrize(("field", "value"), [("role", "root"), ("exposure", "public"), ("authentication", "basic")])
def test_access_rejects_values_outside_its_choices(field: str, value: str) -> None:
    assert rejection("AppInstance", instance(**{field: value})).field == f"spec.access.{field}"


def test_authentication_none_is_honoured_when_written() -> None:
    assert parse_instance(instance(authentication="none")).access.authentication == "none"


@pytest.mark.parametrize(
    ("raw", "explicit"),
    [
        (None, False),
        ({}, False),
        ({"access": None}, False),
        ({"access": {}}, False),
        ({"access": {"role": "admin"}}, False),
        ({"access": {"authentication": "sso"}}, True),
        ({"access": {"authentication": "none"}}, True),
    ],
)
def test_authentication_is_explicit_only_when_the_raw_spec_writes_it(raw: dict | None, explicit: bool) -> None:
    assert authentication_is_explicit(raw) is explicit


@pytest.mark.parametrize("lists", [{"users": ["u-1"]}, {"groups": ["g-1"]}])
def test_sharing_mode_all_rejects_allow_lists(lists: dict) -> None:
    error = rejection("AppInstance", instance(sharing={"mode": "all", **lists}))
    field = next(iter(lists))
    assert error.field == f"spec.access.sharing.{field}"
    assert "mode is all" in error.rule


def test_sharing_mode_all_accepts_empty_lists() -> None:
    spec = parse_instance(instance(sharing={"mode": "all", "users": [], "groups": []}))
    assert spec.access.sharing is not None
    assert spec.access.sharing.mode == "all"


def test_sharing_mode_selected_requires_sso() -> None:
    error = rejection("AppInstance", instance(authentication="none", sharing={"mode": "selected", "users": ["u-1"]}))
    assert error.field == "spec.access.sharing"
    assert "authentication sso" in error.rule


def test_sharing_mode_selected_with_empty_lists_is_accepted_and_denies_everyone() -> None:
    sharing = parse_instance(instance(sharing={"mode": "selected"})).access.sharing
    assert sharing is not None
    assert (sharing.mode, sharing.users, sharing.groups) == ("selected", [], [])


@pytest.mark.parametrize("field", ["users", "groups"])
def test_sharing_lists_reject_duplicate_ids(field: str) -> None:
    error = rejection("AppInstance", instance(sharing={"mode": "selected", field: ["id-1", "id-2", "id-1"]}))
    assert error.field == f"spec.access.sharing.{field}"
    assert "more than once" in error.rule


@pytest.mark.parametrize("field", ["users", "groups"])
def test_sharing_lists_hold_at_most_one_hundred_ids(field: str) -> None:
    accepted = parse_instance(instance(sharing={"mode": "selected", field: [f"id-{i}" for i in range(100)]}))
    assert len(getattr(accepted.access.sharing, field)) == 100
    error = rejection("AppInstance", instance(sharing={"mode": "selected", field: [f"id-{i}" for i in range(101)]}))
    assert (error.field, error.rule) == (f"spec.access.sharing.{field}", "must have at most 100 entries")


def test_sharing_ids_must_not_be_empty_and_are_reported_by_position() -> None:
    error = rejection("AppInstance", instance(sharing={"mode": "selected", "users": ["id-1", ""]}))
    assert (error.field, error.rule) == ("spec.access.sharing.users[1]", "must not be empty")


def test_sharing_mode_is_all_or_selected() -> None:
    assert rejection("AppInstance", instance(sharing={"mode": "some"})).field == "spec.access.sharing.mode"


def test_instance_values_are_free_form() -> None:
    values = {"name": "default", "agentExecution": {"maxConcurrentAgents": 2, "openCode": {"enabled": True}}}
    assert parse_instance({"application": "paperclip", "values": values}).values == values
