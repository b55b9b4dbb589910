"""The trigger's flags: defaults, environment fallbacks, one-line errors naming the flag."""

from __future__ import annotations

import pytest

from services.flags import ListenAddress, ServiceFlagError
from services.reconcile_trigger.settings import TriggerSettings, parse_settings


def test_without_flags_or_environment_the_defaults_are_the_deployed_ones():
    assert parse_settings([], {}) == TriggerSettings(
        stack_namespace="ai-system",
        stack_name="magicstick",
        system_namespace="ai-system",
        target_namespaces=("ai",),
        gateway_namespace="ai-system",
        quiet_seconds=0.5,
        max_delay_seconds=2.0,
        resync_seconds=300,
        probe_address=ListenAddress("0.0.0.0", 8081),
        log_level="info",
    )


def test_a_flag_wins_over_its_environment_variable_which_wins_over_the_default():
    environ = {"MAGICSTICK_RECONCILE_TRIGGER_STACK_NAME": "from-env", "MAGICSTICK_RECONCILE_TRIGGER_QUIET_MS": "250"}

    settings = parse_settings(["--stack-name", "from-flag"], environ)

    assert settings.stack_name == "from-flag"
    assert settings.quiet_seconds == 0.25


def test_the_gateway_namespace_defaults_to_the_system_namespace():
    assert parse_settings(["--system-namespace", "appliance"], {}).gateway_namespace == "appliance"
    assert (
        parse_settings(["--system-namespace", "appliance", "--gateway-namespace", "edge"], {}).gateway_namespace
        == "edge"
    )


@pytest.mark.parametrize(
    ("value", "address"),
    [
        ("127.0.0.1:9000", ListenAddress("127.0.0.1", 9000)),
        ("[::]:8081", ListenAddress("::", 8081)),
        ("localhost:0", ListenAddress("localhost", 0)),
    ],
)
def test_the_probe_address_is_host_and_port_with_ipv6_in_brackets(value, address):
    assert parse_settings(["--probe-address", value], {}).probe_address == address
    assert str(address) == value


def test_target_namespaces_are_a_comma_separated_list_kept_sorted_and_once():
    assert parse_settings(["--target-namespaces", "team-b, ai,team-b"], {}).target_namespaces == ("ai", "team-b")


@pytest.mark.parametrize(
    ("argv", "environ", "message"),
    [
        (["--stack-namespace", "AI"], {}, "--stack-namespace: 'AI' is not a namespace name"),
        (["--stack-name=x_y"], {}, "--stack-name: 'x_y' is not an object name"),
        (["--target-namespaces", "ai,,b"], {}, "--target-namespaces: 'ai,,b' holds an empty namespace name"),
        (["--target-namespaces", "ai,Team"], {}, "--target-namespaces: 'Team' is not a namespace name"),
        (["--quiet-ms", "0"], {}, "--quiet-ms: '0' is not a whole number of milliseconds from 1 to 3600000"),
        (["--quiet-ms", "1.5"], {}, "--quiet-ms: '1.5' is not a whole number of milliseconds"),
        (["--quiet-ms", "900", "--max-delay-ms", "800"], {}, "--max-delay-ms: 800 is shorter than --quiet-ms (900)"),
        (["--resync-seconds", "0"], {}, "--resync-seconds: '0' is not a whole number of seconds from 1 to 86400"),
        (
            [],
            {"MAGICSTICK_RECONCILE_TRIGGER_RESYNC_SECONDS": "5m"},
            "--resync-seconds (from MAGICSTICK_RECONCILE_TRIGGER_RESYNC_SECONDS): '5m' is not",
        ),
        (
            ["--max-delay-ms", "5000", "--resync-seconds", "4"],
            {},
            "--resync-seconds: 4 s is shorter than --max-delay-ms (5000 ms)",
        ),
        (["--probe-address", "8081"], {}, "--probe-address: '8081' is not HOST:PORT with a port from 0 to 65535"),
        (["--probe-address", "0.0.0.0:65536"], {}, "--probe-address: '0.0.0.0:65536' is not HOST:PORT"),
        (["--probe-address", "::1:8081"], {}, "--probe-address: '::1:8081': write an IPv6 address in brackets"),
        (["--probe-address", "[ai]:8081"], {}, "--probe-address: '[ai]:8081' holds no IPv6 address in brackets"),
        (
            [],
            {"MAGICSTICK_RECONCILE_TRIGGER_LOG_LEVEL": "loud"},
            "--log-level (from MAGICSTICK_RECONCILE_TRIGGER_LOG_LEVEL): 'loud' is not one of",
        ),
        (
            [],
            {"MAGICSTICK_RECONCILE_TRIGGER_SYSTEM_NAMESPACE": " ai-system"},
            "(from MAGICSTICK_RECONCILE_TRIGGER_SYSTEM_NAMESPACE): ' ai-system' has surrounding",
        ),
        (["--no-such-flag"], {}, "unrecognized arguments: --no-such-flag"),
    ],
)
def test_an_invalid_value_is_refused_in_one_line_naming_the_flag(argv, environ, message):
    with pytest.raises(ServiceFlagError) as refused:
        parse_settings(argv, environ)

    assert message in str(refused.value)
    assert "\n" not in str(refused.value)
