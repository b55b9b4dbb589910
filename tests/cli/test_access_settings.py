"""The access settings of render and diff: one flag per key, a settings file in two forms, flags first."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import yaml

from cli import main as cli_main
from cli.main import EXIT_BAD_INPUT, EXIT_OK, main
from cli.render import RenderOptions, render_files
from planning.access_settings import AccessSettings
from program.access_config import ACCESS_KEYS
from program.settings import Settings
from tests.cli.inputs import DEMO, NOW
from tests.program import every_access_key

ISSUER = "https://sso.example.com/realms/stick"
POLICY = Path("resources") / "securitypolicy.ai-system.openclaw-default-access.yaml"


def _policy(out: Path) -> dict:
    return yaml.safe_load((out / POLICY).read_text())


def _write(tmp_path: Path, document: object, name: str = "settings.yaml") -> Path:
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else yaml.safe_dump(document))
    return path


@pytest.fixture
def settings_seen(monkeypatch) -> list[Settings]:
    """Every render the command runs reads its settings as the program does, and declares nothing."""
    seen: list[Settings] = []
    monkeypatch.setattr(
        cli_main,
        "render_files",
        functools.partial(render_files, pulumi_program=lambda: seen.append(Settings.from_config())),
    )
    return seen


def _render(tmp_path: Path, *flags: str) -> int:
    return main(["render", "-f", str(DEMO), "-o", str(tmp_path / "out"), "--now", NOW, *flags])


class TestTheRenderedPolicy:
    def test_flags_give_the_security_policy_its_issuer_and_client(self, tmp_path):
        assert _render(tmp_path, "--oidc-issuer", ISSUER, "--oidc-client-id", "stick-client") == EXIT_OK

        policy = _policy(tmp_path / "out")["spec"]
        assert policy["oidc"]["provider"]["issuer"] == ISSUER
        assert policy["oidc"]["clientID"] == "stick-client"
        (provider,) = policy["jwt"]["providers"]
        assert provider["issuer"] == ISSUER
        assert provider["audiences"] == ["stick-client"]
        assert provider["remoteJWKS"]["uri"] == f"{ISSUER}/protocol/openid-connect/certs"

    def test_a_stack_file_gives_the_security_policy_its_issuer_and_client(self, tmp_path):
        stack = {"config": {"magicstick:oidcIssuer": ISSUER, "magicstick:oidcClientId": "stick-client"}}

        assert _render(tmp_path, "--settings", str(_write(tmp_path, stack, "Pulumi.dev.yaml"))) == EXIT_OK

        policy = _policy(tmp_path / "out")["spec"]
        assert (policy["oidc"]["provider"]["issuer"], policy["oidc"]["clientID"]) == (ISSUER, "stick-client")


class TestEveryKeyReachesTheProgram:
    def test_every_flag_sets_its_key(self, tmp_path, settings_seen):
        by_flag = {entry.flag: every_access_key.CONFIG[entry.key] for entry in ACCESS_KEYS}
        flags = [part for flag, value in by_flag.items() for part in (flag, value)]

        assert _render(tmp_path, *flags) == EXIT_OK

        assert settings_seen[0].plan.access == every_access_key.SETTINGS

    def test_without_a_flag_or_a_file_the_defaults_hold(self, tmp_path, settings_seen):
        assert _render(tmp_path) == EXIT_OK

        assert settings_seen[0].plan.access == AccessSettings()

    def test_a_plain_settings_file_sets_its_keys_lists_included(self, tmp_path, settings_seen):
        plain = {
            "oidcIssuer": ISSUER,
            "oidcScopes": ["openid", "email"],
            "dashboardHosts": "dashboard.example.local",
            "domain": "stick.example.com",
        }

        assert _render(tmp_path, "--settings", str(_write(tmp_path, plain))) == EXIT_OK

        (seen,) = settings_seen
        assert seen.plan.access == AccessSettings(
            oidc_issuer=ISSUER, oidc_scopes=("openid", "email"), dashboard_hosts=("dashboard.example.local",)
        )
        assert seen.plan.domain == "stick.example.com"

    def test_a_stack_file_skips_other_namespaces_and_the_keys_of_a_live_run(self, tmp_path, settings_seen):
        stack = {
            "secretsprovider": "passphrase",
            "encryptedkey": "CHANGEME",
            "config": {
                "magicstick:gatewayName": "edge",
                "magicstick:kubeconfig": {"secure": "v1:CHANGEME"},
                "magicstick:context": "CHANGEME",
                "magicstick:localDomain": "stick.example.local",
                "kubernetes:context": "CHANGEME",
            },
        }

        assert _render(tmp_path, "--settings", str(_write(tmp_path, stack, "Pulumi.dev.yaml"))) == EXIT_OK

        (seen,) = settings_seen
        assert seen.plan.access == AccessSettings(gateway_name="edge")
        assert seen.plan.local_domain == "stick.example.local"
        assert seen.kubeconfig is None and seen.context is None

    def test_a_flag_wins_over_the_settings_file(self, tmp_path, settings_seen):
        plain = {
            "oidcIssuer": ISSUER,
            "oidcClientId": "from-file",
            "oidcScopes": "openid,email",
            "gatewayListener": "https",
        }
        flags = ["--oidc-client-id", "from-flag", "--oidc-scopes", "openid", "--gateway-listener", ""]

        assert _render(tmp_path, "--settings", str(_write(tmp_path, plain)), *flags) == EXIT_OK

        assert settings_seen[0].plan.access == AccessSettings(
            oidc_issuer=ISSUER, oidc_client_id="from-flag", oidc_scopes=("openid",)
        )

    def test_the_file_namespace_wins_over_the_recorded_one_and_the_flag_over_both(self, tmp_path, settings_seen):
        file = str(_write(tmp_path, {"systemNamespace": "stick-system"}))

        assert _render(tmp_path, "--settings", file) == EXIT_OK
        assert _render(tmp_path, "--settings", file, "--namespace", "flag-system") == EXIT_OK

        assert [seen.plan.system_namespace for seen in settings_seen] == ["stick-system", "flag-system"]

    def test_diff_takes_the_same_flags_and_file(self, tmp_path, settings_seen, monkeypatch):
        monkeypatch.setattr("cli.diff.render_files", cli_main.render_files)
        file = str(_write(tmp_path, {"oidcClientId": "from-file"}))

        main(["diff", str(DEMO), str(DEMO), "--now", NOW, "--settings", file, "--oidc-issuer", ISSUER])

        assert [seen.plan.access for seen in settings_seen] == [
            AccessSettings(oidc_issuer=ISSUER, oidc_client_id="from-file")
        ] * 2


def _one_error_line(capsys, command: str = "render") -> str:
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"magicstick {command}: ")
    return err.removeprefix(f"magicstick {command}: ").rstrip("\n")


class TestUnusableSettings:
    def test_an_invalid_flag_exits_2_naming_the_flag_and_the_rule(self, tmp_path, capsys):
        assert _render(tmp_path, "--oidc-issuer", "http://x") == EXIT_BAD_INPUT

        assert _one_error_line(capsys) == "--oidc-issuer: 'http://x' must be an https URL"
        assert not (tmp_path / "out").exists()

    def test_a_list_flag_without_openid_exits_2(self, tmp_path, capsys):
        assert _render(tmp_path, "--oidc-scopes", "profile,email") == EXIT_BAD_INPUT

        assert _one_error_line(capsys) == "--oidc-scopes: 'profile,email' must include openid"

    def test_an_invalid_file_value_names_the_file_and_the_key(self, tmp_path, capsys):
        file = _write(tmp_path, {"config": {"magicstick:dashboardHosts": ["*.example.com"]}})

        assert _render(tmp_path, "--settings", str(file)) == EXIT_BAD_INPUT

        assert (
            _one_error_line(capsys)
            == f"{file}: magicstick:dashboardHosts: '*.example.com' must be a host name, not a wildcard"
        )

    def test_an_invalid_file_namespace_names_the_file_and_the_key(self, tmp_path, capsys):
        file = _write(tmp_path, {"systemNamespace": "Stick_System"})

        assert _render(tmp_path, "--settings", str(file)) == EXIT_BAD_INPUT

        assert _one_error_line(capsys).startswith(f"{file}: systemNamespace: 'Stick_System' is not a valid DNS name")

    def test_a_flag_that_replaces_an_invalid_file_value_wins(self, tmp_path, settings_seen):
        file = _write(tmp_path, {"guardImage": "not an image"})

        assert _render(tmp_path, "--settings", str(file), "--guard-image", "registry.example.com/guard:1") == EXIT_OK

        assert settings_seen[0].plan.access.guard_image == "registry.example.com/guard:1"

    @pytest.mark.parametrize(
        ("document", "expected"),
        [
            ({"oidcIsuer": ISSUER}, "oidcIsuer: unknown setting (did you mean oidcIssuer?)"),
            (
                {"config": {"magicstick:frobnicate": "x"}},
                "magicstick:frobnicate: unknown setting (Pulumi.yaml lists the settings)",
            ),
            ({"kubernetes:context": "CHANGEME"}, "kubernetes:context: not a magicstick: setting"),
            ({"domain": "example.com", "magicstick:domain": "example.com"}, "magicstick:domain: domain is set twice"),
        ],
        ids=["misspelt", "stack-file", "other-namespace-in-a-plain-file", "twice"],
    )
    def test_an_unknown_key_in_the_file_exits_2_naming_it(self, tmp_path, capsys, document, expected):
        file = _write(tmp_path, document)

        assert _render(tmp_path, "--settings", str(file)) == EXIT_BAD_INPUT

        assert _one_error_line(capsys) == f"{file}: {expected}"

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("- oidcIssuer\n", "must be a mapping of magicstick: settings, or a Pulumi stack file with config:"),
            ("config: [oidcIssuer]\n", "config: must be a mapping of config keys"),
            ("oidcIssuer: [unclosed\n", "not YAML"),
            (
                "config:\n  magicstick:oidcClientId:\n    secure: v1:CHANGEME\n",
                "magicstick:oidcClientId: is an encrypted value",
            ),
            ("oidcClientId: 12345\n", "oidcClientId: must be a string, not int 12345 (quote it in YAML)"),
            ("domain: 12\n", "domain: must be a string, not int"),
        ],
        ids=["a-list", "config-not-a-mapping", "not-yaml", "encrypted", "a-number", "a-number-for-a-run-key"],
    )
    def test_an_unusable_file_exits_2_with_one_line_naming_it(self, tmp_path, capsys, text, expected):
        file = _write(tmp_path, text)

        assert _render(tmp_path, "--settings", str(file)) == EXIT_BAD_INPUT

        line = _one_error_line(capsys)
        assert line.startswith(f"{file}: ") and expected in line

    def test_a_missing_file_exits_2_naming_it(self, tmp_path, capsys):
        assert _render(tmp_path, "--settings", str(tmp_path / "absent.yaml")) == EXIT_BAD_INPUT

        assert _one_error_line(capsys) == f"{tmp_path / 'absent.yaml'}: No such file or directory"

    def test_an_empty_file_sets_nothing(self, tmp_path, settings_seen):
        assert _render(tmp_path, "--settings", str(_write(tmp_path, ""))) == EXIT_OK

        assert settings_seen[0].plan.access == AccessSettings()

    def test_diff_reports_an_invalid_flag_the_same_way(self, tmp_path, capsys):
        assert main(["diff", str(DEMO), str(DEMO), "--gateway-name", "Edge"]) == EXIT_BAD_INPUT

        assert _one_error_line(capsys, "diff").startswith("--gateway-name: 'Edge' must be a DNS label")


def test_the_render_help_lists_every_access_flag_with_its_key(capsys):
    with pytest.raises(SystemExit):
        main(["render", "--help"])

    out = " ".join(capsys.readouterr().out.split())
    assert "--settings FILE" in out
    for entry in ACCESS_KEYS:
        assert entry.flag in out and f"magicstick:{entry.key}" in out


def test_render_options_pass_lists_to_the_program_as_pulumi_passes_structured_config(tmp_path):
    seen: list[Settings] = []
    options = RenderOptions(
        now=NOW, access={"oidcScopes": ("openid", "email"), "dashboardHosts": ["dashboard.example.local"]}
    )

    render_files(snapshot=DEMO, options=options, pulumi_program=lambda: seen.append(Settings.from_config()))

    assert seen[0].plan.access.oidc_scopes == ("openid", "email")
    assert seen[0].plan.access.dashboard_hosts == ("dashboard.example.local",)
