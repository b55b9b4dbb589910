"""An S3-compatible store for tests: moto in server mode on a free loopback port, over real HTTP.

`S3Store` starts one `ThreadedMotoServer` on 127.0.0.1, empties it between tests, builds
buckets in each state a state-backend check looks at, and can switch IAM authorisation on
so that an identity policy denies one action. moto does not evaluate bucket policies (its S3
authorisation reads only the caller's IAM policies), so a denied write is made with an IAM
user's policy, which the store answers the same way: 403 AccessDenied.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
import httpx
import pytest
from moto.server import ThreadedMotoServer

REGION = "eu-west-1"
ROOT_KEY = ("AKIAROOTTESTKEY00000", "root-test-secret")
"""Credentials of the account's root in moto; any key works while authorisation is off."""
AWS_CHAIN_VARIABLES = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
)
"""Variables through which the machine's own AWS setup could reach a test; each is removed."""
ALL_BLOCKED = {
    "BlockPublicAcls": True,
    "IgnorePublicAcls": True,
    "BlockPublicPolicy": True,
    "RestrictPublicBuckets": True,
}


@dataclass(frozen=True)
class Credentials:
    access_key: str
    secret_key: str


class S3Store:
    def __init__(self) -> None:
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)

    def start(self) -> None:
        self._server.start()

    def stop(self) -> None:
        self._server.stop()

    @property
    def endpoint(self) -> str:
        host, port = self._server.get_host_and_port()
        return f"http://{host}:{port}"

    def url(self, bucket: str, prefix: str = "", **query: str) -> str:
        """An s3:// backend URL of this store: region and endpoint set, plus `query`."""
        path = f"/{prefix}" if prefix else ""
        parameters = {"region": REGION, "endpoint": self.endpoint, **query}
        return f"s3://{bucket}{path}?" + "&".join(f"{name}={value}" for name, value in parameters.items())

    def reset(self) -> None:
        httpx.post(f"{self.endpoint}/moto-api/reset").raise_for_status()

    def client(self, service: str = "s3", credentials: Credentials | None = None) -> Any:
        key = credentials or Credentials(*ROOT_KEY)
        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=key.access_key,
            aws_secret_access_key=key.secret_key,
        )

    def bucket(
        self,
        name: str,
        *,
        versioning: str | None = "Enabled",
        encryption: bool = True,
        public_access: Mapping[str, bool] | None = ALL_BLOCKED,
    ) -> str:
        """Create bucket `name` in the given state; None leaves a setting never configured."""
        s3 = self.client()
        s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": REGION})
        if versioning is not None:
            s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": versioning})
        if encryption:
            s3.put_bucket_encryption(
                Bucket=name,
                ServerSideEncryptionConfiguration={
                    "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
                },
            )
        if public_access is not None:
            s3.put_public_access_block(Bucket=name, PublicAccessBlockConfiguration=dict(public_access))
        return name

    def user_denied(self, name: str, *, actions: list[str], resource: str) -> Credentials:
        """An IAM user allowed every S3 action but `actions` on `resource`, and its access key."""
        iam = self.client("iam")
        iam.create_user(UserName=name)
        policy = {
            "Version": "2012-10-17",
            "Statement": [
                {"Effect": "Allow", "Action": "s3:*", "Resource": "*"},
                {"Effect": "Deny", "Action": actions, "Resource": resource},
            ],
        }
        iam.put_user_policy(UserName=name, PolicyName=f"{name}-policy", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName=name)["AccessKey"]
        return Credentials(key["AccessKeyId"], key["SecretAccessKey"])

    @contextmanager
    def authorisation(self) -> Iterator[None]:
        """Every request is signed by a known key and allowed by its IAM policies, inside."""
        httpx.post(f"{self.endpoint}/moto-api/reset-auth", content=b"0").raise_for_status()
        try:
            yield
        finally:
            httpx.post(f"{self.endpoint}/moto-api/reset-auth", content=b"inf").raise_for_status()

    def keys(self, bucket: str) -> list[str]:
        """Every key of every version and delete marker in `bucket`."""
        versions = self.client().list_object_versions(Bucket=bucket)
        return sorted(entry["Key"] for part in ("Versions", "DeleteMarkers") for entry in versions.get(part, []))


def closed_loopback_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def aws_environment(monkeypatch: Any, tmp_path: Any, credentials: Credentials | None = None) -> None:
    """The standard AWS chain sees only `credentials` (default: root's) and no shared files."""
    key = credentials or Credentials(*ROOT_KEY)
    for name in AWS_CHAIN_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", key.secret_key)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)


def no_aws_credentials(monkeypatch: Any, tmp_path: Any) -> None:
    aws_environment(monkeypatch, tmp_path)
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")


BUCKET = "state-bucket"


@pytest.fixture(scope="module")
def store() -> Iterator[S3Store]:
    """One moto server in server mode, over real HTTP, for the module's tests."""
    running = S3Store()
    running.start()
    yield running
    running.stop()


@pytest.fixture
def s3(store: S3Store, monkeypatch: Any, tmp_path: Any) -> S3Store:
    """The store, emptied, with the AWS chain seeing only the root test key."""
    store.reset()
    aws_environment(monkeypatch, tmp_path)
    return store
