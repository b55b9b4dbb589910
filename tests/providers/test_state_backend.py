"""The state-backend check: URLs as Pulumi reads them, a directory, and S3 buckets right and wrong.

S3 runs against moto in server mode on a loopback port, over real HTTP, with boto3's standard
credential chain fed by the environment (tests/support/s3_store.py). Buckets are built in each
state a check looks at; a denied permission is an IAM user's policy, because moto does not
evaluate bucket policies.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from providers.state_backend import (
    FILE_CHECKS,
    PROBE_PREFIX,
    PUBLIC_ACCESS_FLAGS,
    S3_CHECKS,
    BackendCredentialsError,
    BackendUnreachableError,
    BackendUrlError,
    Check,
    CheckReport,
    FileBackend,
    Finding,
    S3Backend,
    check_backend,
    parse_backend_url,
)
from tests.support.s3_store import (  # noqa: F401 - store and s3 are fixtures
    ALL_BLOCKED,
    BUCKET,
    Credentials,
    aws_environment,
    closed_loopback_port,
    no_aws_credentials,
    s3,
    store,
)
from tests.support.unwritable import refusing_directory


def lines(report: CheckReport) -> list[str]:
    return [finding.line() for finding in report.findings]


class TestS3Urls:
    @pytest.mark.parametrize(
        ("url", "expected"),
        [
            ("s3://state-bucket", dict(bucket="state-bucket", prefix="", region=None, endpoint=None, path_style=False)),
            (
                "s3://state-bucket/",
                dict(bucket="state-bucket", prefix="", region=None, endpoint=None, path_style=False),
            ),
            (
                "s3://state-bucket/magicstick/appliance/?region=eu-central-1",
                dict(prefix="magicstick/appliance", region="eu-central-1"),
            ),
            (
                "s3://state.bucket.example.com/p?region=us-east-1",
                dict(bucket="state.bucket.example.com", prefix="p", region="us-east-1"),
            ),
            (
                "s3://state-bucket?endpoint=minio.example.local:9000&disableSSL=true&s3ForcePathStyle=true",
                dict(endpoint="http://minio.example.local:9000", path_style=True, region=None),
            ),
            ("s3://state-bucket?endpoint=minio.example.local:9000", dict(endpoint="https://minio.example.local:9000")),
            (
                "s3://state-bucket?endpoint=https://s3.example.com/&region=auto",
                dict(endpoint="https://s3.example.com", region="auto"),
            ),
            (
                "s3://state-bucket/state?awssdk=v2&use_path_style=true&endpoint=http://127.0.0.1:9000&region=garage",
                dict(prefix="state", endpoint="http://127.0.0.1:9000", path_style=True, region="garage"),
            ),
            ("s3://state-bucket?profile=appliance&region=eu-west-1", dict(profile="appliance", region="eu-west-1")),
            (
                "s3://state-bucket?disable_https=true&endpoint=store.example.local",
                dict(endpoint="http://store.example.local"),
            ),
        ],
    )
    def test_bucket_prefix_region_endpoint_and_addressing_are_read_as_pulumi_reads_them(self, url, expected):
        backend = parse_backend_url(url)

        assert isinstance(backend, S3Backend)
        assert backend.url == url
        assert {name: getattr(backend, name) for name in expected} == expected

    @pytest.mark.parametrize(
        ("url", "said"),
        [
            ("state-bucket", "is not a backend URL"),
            ("https://state.example.com", "scheme 'https' is not checked here"),
            ("gs://state-bucket", "scheme 'gs' is not checked here"),
            ("s3://", "names no bucket"),
            ("s3:///prefix", "names no bucket"),
            ("s3://State-Bucket", "is not a valid bucket name"),
            ("s3://ab", "is not a valid bucket name"),
            ("s3://state..bucket", "is not a valid bucket name"),
            ("s3://192.168.10.20", "is not a valid bucket name"),
            ("s3://user@state-bucket", "is not a valid bucket name"),
            ("s3://state-bucket?region=", "query parameter 'region' is empty"),
            ("s3://state-bucket?region=a&region=b", "query parameter 'region' is given more than once"),
            ("s3://state-bucket?endpoint=ftp://store.example.com", "must be an http(s) URL or host[:port]"),
            ("s3://state-bucket?endpoint=http://", "must be an http(s) URL or host[:port]"),
            ("s3://state-bucket?endpoint=store.example.com:port", "has an invalid port"),
            ("s3://state-bucket?s3ForcePathStyle=maybe", "must be true or false"),
            ("file://", "names no directory"),
            ("file://?no_tmp_dir=true", "names no directory"),
        ],
    )
    def test_a_bad_url_is_refused_with_one_line_naming_it(self, url, said):
        with pytest.raises(BackendUrlError) as refused:
            parse_backend_url(url)

        assert said in str(refused.value)
        assert "\n" not in str(refused.value)

    def test_a_key_lives_under_the_prefix_and_a_location_names_the_bucket(self):
        assert S3Backend(url="", bucket="b-1", prefix="a/b").key("x") == "a/b/x"
        assert S3Backend(url="", bucket="b-1").key("x") == "x"
        assert S3Backend(url="", bucket="b-1", prefix="a").location("x") == "s3://b-1/a/x"
        assert S3Backend(url="", bucket="b-1").location() == "s3://b-1"


class TestFileUrls:
    @pytest.mark.parametrize(
        ("url", "path"),
        [
            ("file:///state", Path("/state")),
            ("file:///state/", Path("/state")),
            ("file://~/.pulumi-state", Path("~/.pulumi-state")),
            ("file://./state", Path("state")),
            ("file:///state?no_tmp_dir=true", Path("/state")),
            ("FILE:///state", Path("/state")),
        ],
    )
    def test_the_path_is_what_follows_the_scheme_without_the_query(self, url, path):
        assert parse_backend_url(url) == FileBackend(url=url, path=path)


@pytest.fixture
def unwritable_directory(tmp_path) -> Path:
    """A directory this process cannot create a file in (tests/support/unwritable.py)."""
    return refusing_directory(tmp_path)


class TestFileBackend:
    def test_a_writable_directory_passes_both_checks_and_keeps_no_probe_file(self, tmp_path):
        report = check_backend(f"file://{tmp_path}")

        assert (report.ok, report.passed) == (True, FILE_CHECKS)
        assert list(tmp_path.iterdir()) == []

    def test_a_missing_directory_fails_the_directory_check_with_the_command_that_creates_it(self, tmp_path):
        report = check_backend(f"file://{tmp_path}/state")

        assert lines(report) == [f"directory: {tmp_path}/state does not exist; create it: mkdir -p {tmp_path}/state"]
        assert report.not_run == (Check.WRITABLE,)

    def test_a_file_where_the_directory_should_be_fails_the_directory_check(self, tmp_path):
        (tmp_path / "state").write_text("")

        report = check_backend(f"file://{tmp_path}/state")

        assert [finding.problem for finding in report.findings] == [f"{tmp_path}/state is not a directory"]

    def test_a_directory_nobody_here_may_write_fails_the_writable_check_naming_the_user(self, unwritable_directory):
        report = check_backend(f"file://{unwritable_directory}")

        (finding,) = report.findings
        assert report.passed == (Check.DIRECTORY,)
        assert finding.check == Check.WRITABLE
        assert finding.problem.startswith(f"cannot create a file in {unwritable_directory} as uid {os.geteuid()} (")
        assert (
            finding.fix
            == f"make it writable for uid {os.geteuid()} (chown {os.geteuid()} {unwritable_directory}), or mount it read-write"
        )

    def test_a_tilde_is_the_home_directory(self, tmp_path, monkeypatch):
        monkeypatch.setenv("HOME", str(tmp_path))
        (tmp_path / "state").mkdir()

        assert check_backend("file://~/state").ok


class TestS3Bucket:
    def test_a_bucket_right_in_every_way_passes_every_check_and_keeps_no_probe_object(self, s3):
        s3.bucket(BUCKET)

        report = check_backend(s3.url(BUCKET, "magicstick/appliance"))

        assert (report.ok, report.passed, report.not_run) == (True, S3_CHECKS, ())
        assert s3.keys(BUCKET) == []

    def test_a_missing_bucket_fails_the_bucket_check_and_no_other_check_runs(self, s3):
        report = check_backend(s3.url(BUCKET))

        assert lines(report) == [
            f"bucket: bucket {BUCKET} does not exist; create it: aws s3api create-bucket --bucket {BUCKET}"
            f" --endpoint-url {s3.endpoint} --create-bucket-configuration LocationConstraint=eu-west-1"
        ]
        assert (report.passed, report.not_run) == ((), S3_CHECKS[1:])

    @pytest.mark.parametrize(("status", "said"), [(None, "off"), ("Suspended", "suspended")])
    def test_versioning_not_enabled_fails_the_versioning_check_with_the_command_that_enables_it(self, s3, status, said):
        s3.bucket(BUCKET, versioning=status)

        report = check_backend(s3.url(BUCKET))

        assert lines(report) == [
            f"versioning: {said} on bucket {BUCKET}; enable it: aws s3api put-bucket-versioning --bucket {BUCKET}"
            f" --endpoint-url {s3.endpoint} --versioning-configuration Status=Enabled"
        ]

    def test_no_default_encryption_fails_the_encryption_check(self, s3):
        s3.bucket(BUCKET, encryption=False)

        (finding,) = check_backend(s3.url(BUCKET)).findings

        assert (finding.check, finding.problem) == (
            Check.ENCRYPTION,
            f"no default server-side encryption on bucket {BUCKET}",
        )
        assert finding.fix.startswith(
            f"set it: aws s3api put-bucket-encryption --bucket {BUCKET} --endpoint-url {s3.endpoint}"
        )
        assert '"SSEAlgorithm":"AES256"' in finding.fix

    def test_no_public_access_block_fails_the_public_access_check(self, s3):
        s3.bucket(BUCKET, public_access=None)

        (finding,) = check_backend(s3.url(BUCKET)).findings

        assert finding.line() == (
            f"public-access: no public access block on bucket {BUCKET}; block it: aws s3api put-public-access-block"
            f" --bucket {BUCKET} --endpoint-url {s3.endpoint} --public-access-block-configuration"
            " BlockPublicAcls=true,IgnorePublicAcls=true,BlockPublicPolicy=true,RestrictPublicBuckets=true"
        )

    @pytest.mark.parametrize("flag", PUBLIC_ACCESS_FLAGS)
    def test_a_public_access_block_with_one_flag_off_fails_naming_that_flag(self, s3, flag):
        s3.bucket(BUCKET, public_access={**ALL_BLOCKED, flag: False})

        (finding,) = check_backend(s3.url(BUCKET)).findings

        assert (finding.check, finding.problem) == (
            Check.PUBLIC_ACCESS,
            f"not fully blocked on bucket {BUCKET} ({flag} off)",
        )

    def test_a_bucket_wrong_in_every_way_has_one_finding_per_setting_in_the_checks_order(self, s3):
        s3.bucket(
            BUCKET, versioning="Suspended", encryption=False, public_access={**ALL_BLOCKED, "IgnorePublicAcls": False}
        )

        report = check_backend(s3.url(BUCKET))

        assert [finding.check for finding in report.findings] == [
            Check.VERSIONING,
            Check.ENCRYPTION,
            Check.PUBLIC_ACCESS,
        ]
        assert report.passed == (Check.BUCKET, Check.PROBE)

    def test_a_path_style_endpoint_without_a_scheme_reaches_the_store_over_plain_http(self, s3):
        s3.bucket(BUCKET)
        host_port = s3.endpoint.removeprefix("http://")

        report = check_backend(
            f"s3://{BUCKET}/state?region=eu-west-1&endpoint={host_port}&disableSSL=true&s3ForcePathStyle=true"
        )

        assert report.ok


class TestS3Permissions:
    def test_a_denied_write_fails_the_probe_with_the_permissions_to_grant_on_the_prefix(
        self, s3, monkeypatch, tmp_path
    ):
        s3.bucket(BUCKET)
        prober = s3.user_denied("prober", actions=["s3:PutObject"], resource=f"arn:aws:s3:::{BUCKET}/*")
        aws_environment(monkeypatch, tmp_path, prober)

        with s3.authorisation():
            report = check_backend(s3.url(BUCKET, "magicstick"))

        (finding,) = report.findings
        assert finding.check == Check.PROBE
        assert finding.problem.startswith(f"writing s3://{BUCKET}/magicstick/{PROBE_PREFIX}")
        assert finding.problem.endswith("failed (AccessDenied: Access Denied)")
        assert finding.fix == (
            f"grant s3:PutObject, s3:GetObject and s3:DeleteObject on arn:aws:s3:::{BUCKET}/magicstick/* to the credentials in use"
        )

    @pytest.mark.parametrize(("prefix", "ok"), [("magicstick", True), ("elsewhere", False)])
    def test_the_probe_writes_under_the_prefix_of_the_url(self, s3, monkeypatch, tmp_path, prefix, ok):
        s3.bucket(BUCKET)
        prober = s3.user_denied("prober", actions=["s3:PutObject"], resource=f"arn:aws:s3:::{BUCKET}/elsewhere/*")
        aws_environment(monkeypatch, tmp_path, prober)

        with s3.authorisation():
            report = check_backend(s3.url(BUCKET, prefix))

        assert report.ok is ok

    def test_a_denied_listing_fails_the_bucket_check_with_the_permission_to_grant(self, s3, monkeypatch, tmp_path):
        s3.bucket(BUCKET)
        reader = s3.user_denied("reader", actions=["s3:ListBucket"], resource=f"arn:aws:s3:::{BUCKET}")
        aws_environment(monkeypatch, tmp_path, reader)

        with s3.authorisation():
            report = check_backend(s3.url(BUCKET))

        assert lines(report) == [
            f"bucket: ListObjectsV2 on bucket {BUCKET} was denied (AccessDenied); "
            f"grant s3:ListBucket on arn:aws:s3:::{BUCKET} to the credentials in use"
        ]

    def test_a_denied_read_of_a_setting_fails_that_check_with_the_permission_to_grant(self, s3, monkeypatch, tmp_path):
        s3.bucket(BUCKET)
        reader = s3.user_denied("reader", actions=["s3:GetBucketVersioning"], resource=f"arn:aws:s3:::{BUCKET}")
        aws_environment(monkeypatch, tmp_path, reader)

        with s3.authorisation():
            report = check_backend(s3.url(BUCKET))

        assert lines(report) == [
            f"versioning: GetBucketVersioning on bucket {BUCKET} was denied (AccessDenied); "
            f"grant s3:GetBucketVersioning on arn:aws:s3:::{BUCKET} to the credentials in use"
        ]


class TestNothingCanBeChecked:
    def test_an_endpoint_nothing_listens_on_is_unreachable(self, s3):
        url = f"s3://{BUCKET}?region=eu-west-1&endpoint=http://127.0.0.1:{closed_loopback_port()}"

        with pytest.raises(BackendUnreachableError) as unreachable:
            check_backend(url)

        assert str(unreachable.value).startswith("cannot reach http://127.0.0.1:")

    def test_no_credentials_anywhere_in_the_chain_is_said_so(self, store, monkeypatch, tmp_path):
        store.reset()
        no_aws_credentials(monkeypatch, tmp_path)

        with pytest.raises(BackendCredentialsError) as missing:
            check_backend(store.url(BUCKET))

        assert "no AWS credentials" in str(missing.value)

    def test_a_key_the_store_does_not_know_is_refused_credentials_not_a_finding(self, s3, monkeypatch, tmp_path):
        s3.bucket(BUCKET)
        aws_environment(monkeypatch, tmp_path, Credentials("AKIAUNKNOWNKEY000000", "unknown-secret"))

        with s3.authorisation(), pytest.raises(BackendCredentialsError) as refused:
            check_backend(s3.url(BUCKET))

        assert "refused the credentials in use: InvalidAccessKeyId" in str(refused.value)

    def test_a_profile_the_aws_config_does_not_have_is_said_so(self, s3):
        with pytest.raises(BackendCredentialsError) as missing:
            check_backend(s3.url(BUCKET, profile="nonexistent"))

        assert "nonexistent" in str(missing.value)

    def test_an_s3_url_without_boto3_installed_says_which_extra_to_install(self, monkeypatch):
        monkeypatch.setitem(sys.modules, "boto3", None)

        with pytest.raises(BackendUrlError) as refused:
            check_backend("s3://state-bucket?region=eu-west-1")

        assert "pip install 'magicstick[s3]'" in str(refused.value)


class TestReports:
    def test_a_finding_is_one_line_naming_the_check_the_problem_and_the_fix(self):
        finding = Finding(Check.VERSIONING, "off on bucket state-bucket", "enable it: aws s3api put-bucket-versioning")

        assert finding.line() == "versioning: off on bucket state-bucket; enable it: aws s3api put-bucket-versioning"

    def test_the_summary_counts_every_check_and_names_the_failed_and_not_run(self):
        backend = FileBackend(url="file:///state", path=Path("/state"))
        finding = Finding(Check.DIRECTORY, "/state does not exist", "create it: mkdir -p /state")

        assert CheckReport(backend, passed=FILE_CHECKS).summary() == "file:///state: 2 of 2 checks passed"
        assert CheckReport(backend, findings=(finding,), not_run=(Check.WRITABLE,)).summary() == (
            "file:///state: 0 of 2 checks passed; failed: directory; not run: writable"
        )
