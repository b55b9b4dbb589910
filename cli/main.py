"""The `magicstick` command line. Exit status: 0 done, 2 unusable input (one line on stderr)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cli.render import RenderInputError, render, summary

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
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
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
