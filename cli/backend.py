"""`magicstick backend check URL`: is this Pulumi state backend fit to keep the program's state?

Prints one line per failed check, naming the check and the fix, then a summary line. Exit
status: 0 every check passed; 1 a check failed; 2 a bad URL, an unreachable store, or missing
or refused credentials (one line on stderr). S3 credentials come from the standard AWS chain
(environment, shared files, profile, roles); there is no flag for them.
"""

from __future__ import annotations

import argparse

from cli.errors import RenderInputError
from providers.state_backend import FILE_CHECKS, S3_CHECKS, StateBackendError, check_backend

ALL_PASSED = 0
A_CHECK_FAILED = 1

_EPILOG = f"""\
URL is file:///path (checks: {", ".join(FILE_CHECKS)}) or
s3://bucket[/prefix][?region=R&endpoint=E&profile=P&s3ForcePathStyle=true&disableSSL=true]
for AWS S3 or an S3-compatible store (checks, in order: {", ".join(S3_CHECKS)}).
Each failed check prints one line: `check: what is wrong; the fix`. S3 credentials and the
default region come from the standard AWS chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY,
AWS_PROFILE or profile= in the URL, shared files, container or instance roles); checking s3://
needs boto3 (pip install 'magicstick[s3]'). Exit status: 0 all checks passed; 1 a check failed;
2 a bad URL, an unreachable store, or missing or refused credentials."""


def add_backend(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "backend", help="check a Pulumi state backend (file:// or s3://) before keeping state there"
    )
    actions = command.add_subparsers(dest="backend_command", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check",
        help="check that the backend exists, is writable and, for S3, is versioned, encrypted and not public",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument("url", metavar="URL", help="the backend URL, as PULUMI_BACKEND_URL or `pulumi login` takes it")


def run_backend(arguments: argparse.Namespace) -> int:
    try:
        report = check_backend(arguments.url)
    except StateBackendError as error:
        raise RenderInputError(str(error)) from error
    for finding in report.findings:
        print(finding.line())
    print(report.summary())
    return ALL_PASSED if report.ok else A_CHECK_FAILED
