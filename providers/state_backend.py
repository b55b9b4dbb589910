"""Check a Pulumi state backend before the program keeps its state there.

Two kinds of backend, as Pulumi names them by URL:
- `file://PATH`: a directory (on the appliance, the PersistentVolumeClaim mounted at /state).
- `s3://BUCKET[/PREFIX][?region=R&endpoint=E&...]`: AWS S3 or any S3-compatible store.

`parse_backend_url` is pure. `check_backend` runs every check of the URL's kind in one fixed
order and returns a `CheckReport`: each failed check is one `Finding`, printed as one line
naming the check, what is wrong and the fix. It raises `StateBackendError` only when nothing
can be checked: a URL it cannot use, a store it cannot reach, credentials missing or refused.

Checks of a file backend, in order:
  directory      the path exists and is a directory
  writable       a file can be created there and removed again (as the user running the check)
Checks of an S3 backend, in order (when the bucket check fails, the others are not run):
  bucket         the bucket exists and the credentials may list it (ListObjectsV2, as Pulumi does)
  versioning     versioning is Enabled, so every earlier state stays recoverable
  encryption     default server-side encryption is set
  public-access  the bucket's PublicAccessBlock sets all four flags
  probe          an object under the prefix is written, read back identical and deleted: the
                 calls Pulumi makes on every update

S3 credentials and the default region come from boto3's standard chain (environment, shared
credentials and config files, a `profile=` in the URL as Pulumi reads it, container and
instance roles), never from a flag. boto3 is the optional `s3` extra (`pip install
'magicstick[s3]'`); a file backend needs nothing beyond the standard library.
"""

from __future__ import annotations

import os
import re
import secrets
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

S3Client = Any
"""A boto3 S3 client (boto3 is optional and has no type stubs here)."""


class Check(StrEnum):
    """The name of one check, as the first word of its finding's line."""

    DIRECTORY = "directory"
    WRITABLE = "writable"
    BUCKET = "bucket"
    VERSIONING = "versioning"
    ENCRYPTION = "encryption"
    PUBLIC_ACCESS = "public-access"
    PROBE = "probe"


FILE_CHECKS: Final = (Check.DIRECTORY, Check.WRITABLE)
S3_CHECKS: Final = (Check.BUCKET, Check.VERSIONING, Check.ENCRYPTION, Check.PUBLIC_ACCESS, Check.PROBE)

PUBLIC_ACCESS_FLAGS: Final = ("BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy", "RestrictPublicBuckets")
PROBE_PREFIX: Final = ".magicstick-probe-"
"""Name prefix of the probe object (S3) and of the probe file (file://); each removed at once."""

_TRUE: Final = frozenset({"true", "1", "yes"})
_FALSE: Final = frozenset({"false", "0", "no"})
_BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_IPV4 = re.compile(r"\d+\.\d+\.\d+\.\d+")
_REFUSED_CREDENTIALS: Final = frozenset(
    {
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "InvalidToken",
        "TokenRefreshRequired",
        "InvalidClientTokenId",
    }
)
_DENIED: Final = frozenset({"AccessDenied", "AllAccessDisabled"})


class StateBackendError(Exception):
    """Nothing can be checked; the message is one line naming the URL or the store and the cause."""


class BackendUrlError(StateBackendError):
    """The URL is not a backend URL this check understands, or it is malformed."""


class BackendUnreachableError(StateBackendError):
    """The store does not answer: connection refused, a name not resolved, a timeout, TLS."""


class BackendCredentialsError(StateBackendError):
    """No credentials were found, or the store refused them as such (not a permission)."""


@dataclass(frozen=True)
class FileBackend:
    """A `file://` backend: Pulumi keeps its state under `<path>/.pulumi`."""

    url: str
    path: Path
    """As written in the URL; `~` is expanded when checked (Pulumi: `file://~` is the home directory)."""


@dataclass(frozen=True)
class S3Backend:
    """An `s3://` backend: Pulumi keeps its state under `<prefix>/.pulumi` in the bucket."""

    url: str
    bucket: str
    prefix: str = ""
    """Without leading or trailing slash; empty for the bucket's root."""
    region: str | None = None
    """None: the region of the credential chain (AWS_REGION, the profile's config)."""
    endpoint: str | None = None
    """An S3-compatible store's URL, scheme included; None is AWS S3."""
    profile: str | None = None
    path_style: bool = False

    def key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def location(self, name: str = "") -> str:
        key = self.key(name) if name else self.prefix
        return f"s3://{self.bucket}/{key}" if key else f"s3://{self.bucket}"


Backend = FileBackend | S3Backend


@dataclass(frozen=True)
class Finding:
    """One failed check: what is wrong and how to put it right."""

    check: Check
    problem: str
    fix: str

    def line(self) -> str:
        return f"{self.check}: {self.problem}; {self.fix}"


@dataclass(frozen=True)
class CheckReport:
    """Every check of one backend, in order: passed, failed (a finding each) or not run."""

    backend: Backend
    passed: tuple[Check, ...] = ()
    findings: tuple[Finding, ...] = ()
    not_run: tuple[Check, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.findings

    def summary(self) -> str:
        """Pure. One line: how many checks passed, and which failed or were not run."""
        total = len(self.passed) + len(self.findings) + len(self.not_run)
        text = f"{self.backend.url}: {len(self.passed)} of {total} checks passed"
        if self.findings:
            text += f"; failed: {', '.join(finding.check for finding in self.findings)}"
        if self.not_run:
            text += f"; not run: {', '.join(self.not_run)}"
        return text


def parse_backend_url(url: str) -> Backend:
    """Pure. The backend a `file://` or `s3://` URL names, as Pulumi reads it.

    S3 query parameters read here: region, endpoint (a URL, or host[:port] whose scheme is
    https unless disableSSL/disable_https is true), profile, s3ForcePathStyle/use_path_style.
    Other parameters (awssdk, dualstack, fips, ...) are Pulumi's and pass unchecked.
    """
    text = url.strip()
    scheme, separator, rest = text.partition("://")
    if not separator:
        raise BackendUrlError(f"{url!r} is not a backend URL: expected file:///path or s3://bucket[/prefix]?region=...")
    match scheme.lower():
        case "file":
            return _parse_file(text, rest)
        case "s3":
            return _parse_s3(text)
        case _:
            raise BackendUrlError(
                f"{url!r}: backend scheme {scheme!r} is not checked here; use file:///path or s3://bucket[/prefix]"
            )


def _parse_file(url: str, rest: str) -> FileBackend:
    path = rest.partition("?")[0]
    if not path:
        raise BackendUrlError(f"{url!r} names no directory: use file:///absolute/path or file://~/path")
    return FileBackend(url=url, path=Path(path))


def _parse_s3(url: str) -> S3Backend:
    parts = urlsplit(url)
    bucket = parts.netloc
    if not bucket:
        raise BackendUrlError(f"{url!r} names no bucket: use s3://bucket[/prefix]")
    if not _BUCKET_NAME.fullmatch(bucket) or ".." in bucket or _IPV4.fullmatch(bucket):
        raise BackendUrlError(
            f"{url!r}: {bucket!r} is not a valid bucket name (3 to 63 lower-case letters, digits, dots and hyphens)"
        )
    query = _query(url, parts.query)
    secure = not _flag(url, query, "disableSSL", "disable_https")
    return S3Backend(
        url=url,
        bucket=bucket,
        prefix=parts.path.strip("/"),
        region=_non_empty(url, query, "region"),
        endpoint=_endpoint(url, query, secure=secure),
        profile=_non_empty(url, query, "profile"),
        path_style=_flag(url, query, "s3ForcePathStyle", "use_path_style"),
    )


def _query(url: str, text: str) -> dict[str, str]:
    values = parse_qs(text, keep_blank_values=True)
    repeated = sorted(name for name, given in values.items() if len(given) > 1)
    if repeated:
        raise BackendUrlError(f"{url!r}: query parameter {repeated[0]!r} is given more than once")
    return {name: given[0] for name, given in values.items()}


def _non_empty(url: str, query: Mapping[str, str], name: str) -> str | None:
    if name not in query:
        return None
    if not query[name].strip():
        raise BackendUrlError(f"{url!r}: query parameter {name!r} is empty")
    return query[name].strip()


def _flag(url: str, query: Mapping[str, str], *names: str) -> bool:
    value = False
    for name in names:
        if name not in query:
            continue
        given = query[name].strip().lower()
        if given not in _TRUE | _FALSE:
            raise BackendUrlError(f"{url!r}: query parameter {name!r} must be true or false, not {query[name]!r}")
        value = value or given in _TRUE
    return value


def _endpoint(url: str, query: Mapping[str, str], *, secure: bool) -> str | None:
    given = _non_empty(url, query, "endpoint")
    if given is None:
        return None
    endpoint = given if "://" in given else f"{'https' if secure else 'http'}://{given}"
    parts = urlsplit(endpoint)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise BackendUrlError(f"{url!r}: endpoint {given!r} must be an http(s) URL or host[:port]")
    try:
        parts.port  # noqa: B018 - reading it raises ValueError when the port is not a number in range
    except ValueError as error:
        raise BackendUrlError(f"{url!r}: endpoint {given!r} has an invalid port") from error
    return endpoint.rstrip("/")


def check_backend(url: str) -> CheckReport:
    """Run every check of the backend `url` names, in order. Raises StateBackendError when
    nothing can be checked (a bad URL, an unreachable store, missing or refused credentials)."""
    backend = parse_backend_url(url)
    if isinstance(backend, FileBackend):
        return check_file_backend(backend)
    return check_s3_backend(backend, client=s3_client(backend))


# --- file:// ------------------------------------------------------------------------------


def check_file_backend(backend: FileBackend) -> CheckReport:
    path = backend.path.expanduser()
    directory = _directory_finding(path)
    if directory is not None:
        return CheckReport(backend=backend, findings=(directory,), not_run=(Check.WRITABLE,))
    writable = _writable_finding(path)
    if writable is not None:
        return CheckReport(backend=backend, passed=(Check.DIRECTORY,), findings=(writable,))
    return CheckReport(backend=backend, passed=FILE_CHECKS)


def _directory_finding(path: Path) -> Finding | None:
    try:
        is_directory = path.is_dir()
        exists = is_directory or path.exists()
    except OSError as error:
        return Finding(
            Check.DIRECTORY,
            f"{path} cannot be examined ({error.strerror or error})",
            "grant search permission on its parent directories",
        )
    if not exists:
        return Finding(Check.DIRECTORY, f"{path} does not exist", f"create it: mkdir -p {path}")
    if not is_directory:
        return Finding(
            Check.DIRECTORY, f"{path} is not a directory", "point the URL at a directory: file:///path/to/directory"
        )
    return None


def _writable_finding(path: Path) -> Finding | None:
    uid = os.geteuid()
    try:
        descriptor, name = tempfile.mkstemp(prefix=PROBE_PREFIX, dir=path)
        try:
            os.write(descriptor, b"magicstick backend check\n")
        finally:
            os.close(descriptor)
            os.unlink(name)
    except OSError as error:
        return Finding(
            Check.WRITABLE,
            f"cannot create a file in {path} as uid {uid} ({error.strerror or error})",
            f"make it writable for uid {uid} (chown {uid} {path}), or mount it read-write",
        )
    return None


# --- s3:// --------------------------------------------------------------------------------


def s3_client(backend: S3Backend) -> S3Client:
    """A boto3 S3 client for `backend`: the standard credential chain, bounded timeouts and retries."""
    try:
        import boto3
        from botocore.config import Config
        from botocore.exceptions import ProfileNotFound
    except ImportError as error:
        raise BackendUrlError(
            f"{backend.url}: checking an s3:// backend needs boto3: pip install 'magicstick[s3]'"
        ) from error
    try:
        session = boto3.session.Session(profile_name=backend.profile, region_name=backend.region)
    except ProfileNotFound as error:
        raise BackendCredentialsError(f"{backend.url}: {error}") from error
    config = Config(
        connect_timeout=5,
        read_timeout=15,
        retries={"max_attempts": 3, "mode": "standard"},
        s3={"addressing_style": "path" if backend.path_style else "auto"},
    )
    return session.client("s3", endpoint_url=backend.endpoint, config=config)


@dataclass(frozen=True)
class S3Refusal:
    """The store's answer to one call that did not succeed: its error code, message and status."""

    operation: str
    code: str
    message: str
    status: int
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def denied(self) -> bool:
        return self.code in _DENIED or self.status == 403

    def __str__(self) -> str:
        return f"{self.code}: {self.message}" if self.message else self.code


def _ask(backend: S3Backend, operation: str, call: Callable[[], dict[str, Any]]) -> dict[str, Any] | S3Refusal:
    """One call to the store: its response, or the store's refusal as a value. What means that
    nothing can be checked (no connection, no or refused credentials) raises StateBackendError."""
    from botocore.exceptions import (
        ClientError,
        HTTPClientError,
        NoCredentialsError,
        PartialCredentialsError,
    )
    from botocore.exceptions import (
        ConnectionError as BotoConnectionError,
    )

    where = backend.endpoint or "AWS S3"
    try:
        return call()
    except (BotoConnectionError, HTTPClientError) as error:
        raise BackendUnreachableError(f"cannot reach {where}: {error}") from error
    except (NoCredentialsError, PartialCredentialsError) as error:
        raise BackendCredentialsError(
            f"{backend.url}: no AWS credentials ({error}); set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
            "AWS_PROFILE, or run with a container or instance role"
        ) from error
    except ClientError as error:
        refusal = _refusal(operation, error.response)
        if refusal.code in _REFUSED_CREDENTIALS:
            raise BackendCredentialsError(f"{where} refused the credentials in use: {refusal}") from error
        return refusal


def _refusal(operation: str, response: Mapping[str, Any]) -> S3Refusal:
    """Pure. A botocore error response as an S3Refusal."""
    metadata = response.get("ResponseMetadata", {})
    status = int(metadata.get("HTTPStatusCode") or 0)
    error = response.get("Error", {})
    return S3Refusal(
        operation=operation,
        code=str(error.get("Code") or status),
        message=" ".join(str(error.get("Message") or "").split()),
        status=status,
        headers=dict(metadata.get("HTTPHeaders") or {}),
    )


def check_s3_backend(backend: S3Backend, *, client: S3Client) -> CheckReport:
    """The S3 checks, in order. Raises StateBackendError when the store cannot be reached or the
    credentials are missing or refused."""
    bucket = _bucket_finding(backend, client)
    if bucket is not None:
        return CheckReport(backend=backend, findings=(bucket,), not_run=S3_CHECKS[1:])
    passed: list[Check] = [Check.BUCKET]
    findings: list[Finding] = []
    for check, finding_of in (
        (Check.VERSIONING, _versioning_finding),
        (Check.ENCRYPTION, _encryption_finding),
        (Check.PUBLIC_ACCESS, _public_access_finding),
        (Check.PROBE, _probe_finding),
    ):
        finding = finding_of(backend, client)
        if finding is None:
            passed.append(check)
        else:
            findings.append(finding)
    return CheckReport(backend=backend, passed=tuple(passed), findings=tuple(findings))


def _cli(backend: S3Backend, command: str) -> str:
    """Pure. An `aws s3api` command line for `backend`'s store (endpoint and profile included)."""
    options = ""
    if backend.endpoint:
        options += f" --endpoint-url {backend.endpoint}"
    if backend.profile:
        options += f" --profile {backend.profile}"
    return f"aws s3api {command} --bucket {backend.bucket}{options}"


def _refused(check: Check, backend: S3Backend, refusal: S3Refusal, *, action: str, fix: str) -> Finding:
    """The finding for a read the store refused: a permission to grant, or the store's answer."""
    if refusal.denied:
        return Finding(
            check,
            f"{refusal.operation} on bucket {backend.bucket} was denied ({refusal.code})",
            f"grant {action} on arn:aws:s3:::{backend.bucket} to the credentials in use",
        )
    return Finding(check, f"{refusal.operation} on bucket {backend.bucket} failed ({refusal})", fix)


def _bucket_finding(backend: S3Backend, client: S3Client) -> Finding | None:
    prefix = f"{backend.prefix}/" if backend.prefix else ""
    answer = _ask(
        backend, "ListObjectsV2", lambda: client.list_objects_v2(Bucket=backend.bucket, Prefix=prefix, MaxKeys=1)
    )
    if not isinstance(answer, S3Refusal):
        return None
    if answer.status == 404 or answer.code == "NoSuchBucket":
        return Finding(Check.BUCKET, f"bucket {backend.bucket} does not exist", f"create it: {_create_bucket(backend)}")
    if answer.status == 301:
        actual = answer.headers.get("x-amz-bucket-region", "another region")
        wanted = backend.region or "the default region"
        return Finding(
            Check.BUCKET, f"bucket {backend.bucket} is in {actual}, not {wanted}", f"set region={actual} in the URL"
        )
    return _refused(
        Check.BUCKET,
        backend,
        answer,
        action="s3:ListBucket",
        fix="check the URL's endpoint and region and the store's logs",
    )


def _create_bucket(backend: S3Backend) -> str:
    command = _cli(backend, "create-bucket")
    if backend.region and backend.region != "us-east-1":
        command += f" --create-bucket-configuration LocationConstraint={backend.region}"
    return command


def _versioning_finding(backend: S3Backend, client: S3Client) -> Finding | None:
    fix = f"enable it: {_cli(backend, 'put-bucket-versioning')} --versioning-configuration Status=Enabled"
    answer = _ask(backend, "GetBucketVersioning", lambda: client.get_bucket_versioning(Bucket=backend.bucket))
    if isinstance(answer, S3Refusal):
        return _refused(Check.VERSIONING, backend, answer, action="s3:GetBucketVersioning", fix=fix)
    status = answer.get("Status")
    if status == "Enabled":
        return None
    state = "suspended" if status == "Suspended" else "off"
    return Finding(Check.VERSIONING, f"{state} on bucket {backend.bucket}", fix)


_DEFAULT_ENCRYPTION: Final = '\'{"Rules":[{"ApplyServerSideEncryptionByDefault":{"SSEAlgorithm":"AES256"}}]}\''


def _encryption_finding(backend: S3Backend, client: S3Client) -> Finding | None:
    fix = (
        f"set it: {_cli(backend, 'put-bucket-encryption')} --server-side-encryption-configuration {_DEFAULT_ENCRYPTION}"
    )
    answer = _ask(backend, "GetBucketEncryption", lambda: client.get_bucket_encryption(Bucket=backend.bucket))
    if isinstance(answer, S3Refusal):
        if answer.code != "ServerSideEncryptionConfigurationNotFoundError":
            return _refused(Check.ENCRYPTION, backend, answer, action="s3:GetEncryptionConfiguration", fix=fix)
        rules: list[dict[str, Any]] = []
    else:
        rules = answer.get("ServerSideEncryptionConfiguration", {}).get("Rules", [])
    if any(rule.get("ApplyServerSideEncryptionByDefault", {}).get("SSEAlgorithm") for rule in rules):
        return None
    return Finding(Check.ENCRYPTION, f"no default server-side encryption on bucket {backend.bucket}", fix)


def _public_access_finding(backend: S3Backend, client: S3Client) -> Finding | None:
    all_on = ",".join(f"{flag}=true" for flag in PUBLIC_ACCESS_FLAGS)
    fix = f"block it: {_cli(backend, 'put-public-access-block')} --public-access-block-configuration {all_on}"
    answer = _ask(backend, "GetPublicAccessBlock", lambda: client.get_public_access_block(Bucket=backend.bucket))
    if isinstance(answer, S3Refusal):
        if answer.code == "NoSuchPublicAccessBlockConfiguration":
            return Finding(Check.PUBLIC_ACCESS, f"no public access block on bucket {backend.bucket}", fix)
        return _refused(Check.PUBLIC_ACCESS, backend, answer, action="s3:GetBucketPublicAccessBlock", fix=fix)
    configuration = answer.get("PublicAccessBlockConfiguration", {})
    off = [flag for flag in PUBLIC_ACCESS_FLAGS if configuration.get(flag) is not True]
    if not off:
        return None
    return Finding(Check.PUBLIC_ACCESS, f"not fully blocked on bucket {backend.bucket} ({', '.join(off)} off)", fix)


def _probe_finding(backend: S3Backend, client: S3Client) -> Finding | None:
    """Write, read back and delete one probe object under the prefix, then remove its versions
    (a versioned bucket keeps the written version and a delete marker). That removal is best
    effort: without s3:DeleteObjectVersion a noncurrent probe version stays behind, a few bytes
    that Pulumi never reads."""
    name = f"{PROBE_PREFIX}{secrets.token_hex(8)}"
    key, where = backend.key(name), backend.location(name)
    body = f"magicstick backend check {secrets.token_hex(16)}\n".encode()
    scope = f"arn:aws:s3:::{backend.bucket}/{backend.key('*')}"
    fix = f"grant s3:PutObject, s3:GetObject and s3:DeleteObject on {scope} to the credentials in use"

    written = _ask(backend, "PutObject", lambda: client.put_object(Bucket=backend.bucket, Key=key, Body=body))
    if isinstance(written, S3Refusal):
        return Finding(Check.PROBE, f"writing {where} failed ({written})", fix)
    read = _ask(
        backend, "GetObject", lambda: {"Body": client.get_object(Bucket=backend.bucket, Key=key)["Body"].read()}
    )
    deleted = _ask(backend, "DeleteObject", lambda: client.delete_object(Bucket=backend.bucket, Key=key))
    if isinstance(read, S3Refusal):
        return Finding(Check.PROBE, f"reading back {where} failed ({read})", fix)
    if isinstance(deleted, S3Refusal):
        return Finding(Check.PROBE, f"deleting {where} failed ({deleted})", fix)
    _remove_versions(backend, client, key, (written.get("VersionId"), deleted.get("VersionId")))
    if read["Body"] != body:
        return Finding(
            Check.PROBE,
            f"{where} read back differs from what was written ({len(body)} bytes written, {len(read['Body'])} read)",
            "the store does not return what it stores; check its gateway, proxy or encryption settings",
        )
    return None


def _remove_versions(backend: S3Backend, client: S3Client, key: str, versions: tuple[str | None, ...]) -> None:
    """Delete the given versions of `key`; a refusal leaves that version in place."""
    for version in versions:
        if version and version != "null":
            _ask(
                backend,
                "DeleteObject",
                partial(client.delete_object, Bucket=backend.bucket, Key=key, VersionId=version),
            )
