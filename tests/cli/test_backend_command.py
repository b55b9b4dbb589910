"""`magicstick backend check URL`: one line per failed check, a summary, exit 0, 1 or 2."""

from __future__ import annotations

import pytest

from cli.backend import A_CHECK_FAILED, ALL_PASSED
from cli.main import EXIT_BAD_INPUT, main
from tests.support.s3_store import BUCKET, closed_loopback_port, no_aws_credentials, s3, store  # noqa: F401 - fixtures


def run(capsys, *argv: str) -> tuple[int, list[str], list[str]]:
    status = main(["backend", "check", *argv])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err.splitlines()


def test_a_writable_directory_passes_with_a_summary_and_exit_0(capsys, tmp_path):
    assert run(capsys, f"file://{tmp_path}") == (ALL_PASSED, [f"file://{tmp_path}: 2 of 2 checks passed"], [])


def test_a_missing_directory_prints_the_failed_check_with_its_fix_and_exits_1(capsys, tmp_path):
    status, out, err = run(capsys, f"file://{tmp_path}/state")

    assert (status, err) == (A_CHECK_FAILED, [])
    assert out == [
        f"directory: {tmp_path}/state does not exist; create it: mkdir -p {tmp_path}/state",
        f"file://{tmp_path}/state: 0 of 2 checks passed; failed: directory; not run: writable",
    ]


def test_a_bucket_right_in_every_way_exits_0(capsys, s3):
    s3.bucket(BUCKET)
    url = s3.url(BUCKET, "magicstick")

    assert run(capsys, url) == (ALL_PASSED, [f"{url}: 5 of 5 checks passed"], [])


def test_versioning_off_prints_the_versioning_line_with_the_command_that_enables_it_and_exits_1(capsys, s3):
    s3.bucket(BUCKET, versioning=None)
    url = s3.url(BUCKET)

    status, out, _ = run(capsys, url)

    assert status == A_CHECK_FAILED
    assert out == [
        f"versioning: off on bucket {BUCKET}; enable it: aws s3api put-bucket-versioning --bucket {BUCKET}"
        f" --endpoint-url {s3.endpoint} --versioning-configuration Status=Enabled",
        f"{url}: 4 of 5 checks passed; failed: versioning",
    ]


def test_every_failed_check_is_one_line_starting_with_its_name(capsys, s3):
    s3.bucket(BUCKET, versioning="Suspended", encryption=False, public_access=None)

    status, out, _ = run(capsys, s3.url(BUCKET))

    assert status == A_CHECK_FAILED
    assert [line.split(":")[0] for line in out[:-1]] == ["versioning", "encryption", "public-access"]
    assert all("; " in line for line in out[:-1])


def test_a_missing_bucket_exits_1_naming_the_checks_not_run(capsys, s3):
    status, out, _ = run(capsys, s3.url(BUCKET))

    assert status == A_CHECK_FAILED
    assert out[0].startswith(
        f"bucket: bucket {BUCKET} does not exist; create it: aws s3api create-bucket --bucket {BUCKET}"
    )
    assert out[1].endswith("not run: versioning, encryption, public-access, probe")


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("state-bucket", "'state-bucket' is not a backend URL"),
        ("s3://Not_A_Bucket", "is not a valid bucket name"),
        ("azblob://state", "backend scheme 'azblob' is not checked here"),
    ],
)
def test_a_bad_url_is_one_line_on_stderr_and_exit_2(capsys, url, said):
    status, out, err = run(capsys, url)

    assert (status, out) == (EXIT_BAD_INPUT, [])
    assert len(err) == 1 and err[0].startswith("magicstick backend: ") and said in err[0]


def test_an_unreachable_endpoint_is_one_line_on_stderr_and_exit_2(capsys, s3):
    status, out, err = run(capsys, f"s3://{BUCKET}?region=eu-west-1&endpoint=http://127.0.0.1:{closed_loopback_port()}")

    assert (status, out) == (EXIT_BAD_INPUT, [])
    assert len(err) == 1 and err[0].startswith("magicstick backend: cannot reach http://127.0.0.1:")


def test_missing_credentials_are_one_line_on_stderr_and_exit_2(capsys, store, monkeypatch, tmp_path):
    store.reset()
    no_aws_credentials(monkeypatch, tmp_path)

    status, _, err = run(capsys, store.url(BUCKET))

    assert status == EXIT_BAD_INPUT
    assert len(err) == 1 and "no AWS credentials" in err[0]


def test_credentials_come_from_the_aws_chain_never_from_a_flag(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["backend", "check", "--help"])
    out = capsys.readouterr().out

    assert exited.value.code == 0
    assert "standard AWS chain" in " ".join(out.split())
    options = {word.rstrip(",") for word in out.split() if word.startswith("-")}
    assert options == {"-h", "--help"}


def test_the_command_is_listed_in_the_help(capsys):
    main([])

    assert "backend" in capsys.readouterr().out
