"""The `magicstick` command line. Exit status: 0 done, 2 unusable input or unreadable cluster (one line on stderr)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cli.render import RenderInputError, render, summary
from planning.settings import DEFAULT_SYSTEM_NAMESPACE
from providers.kube import KubeAccess, KubeConfigError, KubeError
from providers.live_reader import SnapshotReadError
from providers.snapshot_capture import capture

EXIT_BAD_INPUT = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="magicstick", description="Magic Stick as code, offline tools.")
    commands = parser.add_subparsers(dest="command", required=True)
    render_command = commands.add_parser(
        "render",
        help="run the program against a snapshot file and write every object and status it would declare",
    )
    render_command.add_argument("--snapshot", required=True, type=Path, help="Kubernetes objects as `kubectl get -o yaml` prints them")
    render_command.add_argument("--out", required=True, type=Path, help="output directory (resources/, status/, dynamic/)")
    render_command.add_argument("--catalogs", type=Path, default=None, help="a catalog directory overriding the shipped catalogs")
    render_command.add_argument("--now", default=None, help="the run's clock, RFC 3339 (default: now); fix it for reproducible output")
    snapshot_command = commands.add_parser(
        "snapshot",
        help="capture what the program reads from the live cluster into a snapshot file (no Secret is read)",
    )
    snapshot_command.add_argument("--out", required=True, type=Path, help="the snapshot file to write")
    snapshot_command.add_argument("--kubeconfig", default=None, help="kubeconfig path (default: KUBECONFIG, ~/.kube/config, in-cluster)")
    snapshot_command.add_argument("--context", default=None, help="kubeconfig context (default: the current one)")
    snapshot_command.add_argument("--namespace", default=DEFAULT_SYSTEM_NAMESPACE, help="the system namespace (default: ai-system)")
    return parser


def _snapshot(arguments: argparse.Namespace) -> int:
    access = KubeAccess(kubeconfig=arguments.kubeconfig, context=arguments.context)
    try:
        count = capture(access, system_namespace=arguments.namespace, out=arguments.out)
    except (KubeConfigError, SnapshotReadError, KubeError) as error:
        print(f"magicstick snapshot: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"wrote {count} objects to {arguments.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
    if arguments.command == "snapshot":
        return _snapshot(arguments)
    if arguments.command == "render":
        try:
            result = render(
                snapshot=arguments.snapshot,
                out=arguments.out,
                catalog_dir=arguments.catalogs,
                now=arguments.now,
            )
        except RenderInputError as error:
            print(f"magicstick render: {error}", file=sys.stderr)
            return EXIT_BAD_INPUT
        for line in summary(result, arguments.out):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
