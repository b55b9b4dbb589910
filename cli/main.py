"""The `magicstick` command line.

Exit status: 0 done (diff: no change); 1 a finding (diff: a change; render --strict: a Failed
object); 2 unusable input, output location or cluster (one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from importlib import metadata
from pathlib import Path

from cli.backend import add_backend, run_backend
from cli.diff import compare, load_side
from cli.errors import RenderInputError
from cli.files import RESOURCES
from cli.output import check_output_directory, replace_directory, write_stream
from cli.progress import Progress
from cli.render import STDIN, RenderOptions, render_files, summary
from cli.settings_file import SettingsFile, load_settings_file
from cli.snapshot import write_snapshot
from cli.summary import counted
from planning.access_settings import AccessSettings
from planning.settings import DEFAULT_SYSTEM_NAMESPACE
from program.access_config import ACCESS_KEYS, AccessKey
from program.settings import format_now, parse_now

EXIT_OK = 0
EXIT_FINDING = 1
EXIT_BAD_INPUT = 2
DISTRIBUTION = "magicstick"

_RENDER_EPILOG = """\
The system namespace is --namespace when given, else the settings file's systemNamespace, else
the one the snapshot records (a snapshot taken by `magicstick snapshot --namespace N` records N),
else ai-system. --settings FILE gives `magicstick:` config keys (access keys, systemNamespace,
domain, localDomain) as a YAML mapping (`oidcIssuer: https://...`) or as a Pulumi stack file
(`config: {magicstick:oidcIssuer: ...}`); a flag wins over the file. Lists (--oidc-scopes,
--dashboard-hosts) are comma-separated or a JSON array.
-o - streams the resources only, each a Kubernetes object with apiVersion, kind and
metadata.name, so `magicstick render -f s.yaml -o - | kubectl apply --dry-run=server -f -` works;
--all adds the status/ and dynamic/ documents (they are not objects to apply).
A kind of appliance.magicstick.dev the program does not know (a misspelled kind, another
version) is an error naming the file line; objects of other kinds the program does not read are
counted in the summary; a snapshot with no object renders with a warning.
Exit status: 0 rendered; 1 with --strict when an object's status is Failed; 2 unusable input
or output directory (one line on stderr). OUT must be absent, empty or a previous render
(it holds a .magicstick-render marker); it is replaced whole, atomically."""

_DIFF_EPILOG = """\
OLD and NEW are each a render directory or a snapshot file ("-": standard input); a snapshot
is rendered first with the flags given. A JSON document inside a ConfigMap (models.json,
values.json) is compared key by key, pretty-printed; --show-added prints each added object whole.
Exit status: 0 no change; 1 a change; 2 unusable input."""


def _version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown (the magicstick distribution is not installed)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="magicstick",
        description="Magic Stick as code: render the program offline, diff renders, capture snapshots.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    flags = _run_flags()
    _add_render(commands, flags)
    _add_diff(commands, flags)
    _add_snapshot(commands)
    add_backend(commands)
    return parser


def _run_flags() -> argparse.ArgumentParser:
    """The flags a real run reads from the `magicstick:` Pulumi config, shared by render and diff."""
    flags = argparse.ArgumentParser(add_help=False)
    flags.add_argument(
        "--catalogs", type=Path, default=None, help="a catalog directory overriding the shipped catalogs"
    )
    flags.add_argument(
        "--now", default=None, help="the run's clock, RFC 3339 (default: now); fix it for reproducible output"
    )
    flags.add_argument(
        "--namespace", default=None, help="magicstick:systemNamespace (wins over the namespace the snapshot records)"
    )
    flags.add_argument("--domain", default=None, help="magicstick:domain (default: magicstick.example.com)")
    flags.add_argument("--local-domain", default=None, help="magicstick:localDomain (default: magicstick.local)")
    flags.add_argument(
        "--settings",
        type=Path,
        default=None,
        metavar="FILE",
        help="magicstick: config keys from a YAML file: a mapping (oidcIssuer: ...) or a Pulumi stack file; flags win over it",
    )
    flags.add_argument(
        "-v", "--verbose", action="store_true", help="one line per stage on stderr (default: only on a terminal)"
    )
    access = flags.add_argument_group(
        "single sign-on, Gateway and access guard (magicstick: config keys, see Pulumi.yaml)"
    )
    for entry in ACCESS_KEYS:
        access.add_argument(entry.flag, dest=entry.key, default=None, metavar=entry.metavar, help=_access_help(entry))
    return flags


def _access_help(entry: AccessKey) -> str:
    default = getattr(AccessSettings(), entry.field)
    shown = ",".join(default) if isinstance(default, tuple) else default
    return f"magicstick:{entry.key}: {entry.summary}" + (f" (default: {shown})" if shown else "")


def _add_render(commands: argparse._SubParsersAction[argparse.ArgumentParser], flags: argparse.ArgumentParser) -> None:
    command = commands.add_parser(
        "render",
        parents=[flags],
        help="run the program against a snapshot and write every object and status it would declare",
        epilog=_RENDER_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    command.add_argument(
        "-f", "--snapshot", required=True, help='objects as `kubectl get -o yaml` prints them; "-": standard input'
    )
    command.add_argument(
        "-o",
        "--out",
        required=True,
        help='output directory (resources/, status/, dynamic/); "-": one YAML stream on stdout',
    )
    command.add_argument("--strict", action="store_true", help="exit 1 when any rendered status is Failed (for CI)")
    command.add_argument(
        "--all",
        action="store_true",
        help="with -o -: stream the status/ and dynamic/ documents after the resources (not objects to apply)",
    )


def _add_diff(commands: argparse._SubParsersAction[argparse.ArgumentParser], flags: argparse.ArgumentParser) -> None:
    command = commands.add_parser(
        "diff",
        parents=[flags],
        help="show what a run would change between two renders or snapshots",
        epilog=_DIFF_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    command.add_argument("old", metavar="OLD", help="render directory or snapshot file")
    command.add_argument("new", metavar="NEW", help="render directory or snapshot file")
    command.add_argument("--show-added", action="store_true", help="print the content of each added object and status")


def _add_snapshot(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "snapshot",
        help="capture what the program reads from the live cluster into a snapshot file (no Secret is read)",
    )
    command.add_argument("-o", "--out", required=True, help='the snapshot file to write; "-": standard output')
    command.add_argument(
        "--kubeconfig", default=None, help="kubeconfig path (default: KUBECONFIG, ~/.kube/config, in-cluster)"
    )
    command.add_argument("--context", default=None, help="kubeconfig context (default: the current one)")
    command.add_argument(
        "--namespace",
        default=DEFAULT_SYSTEM_NAMESPACE,
        help="the system namespace, recorded in the file for render (default: ai-system)",
    )
    command.add_argument(
        "--gateway-namespace",
        default=None,
        help="magicstick:gatewayNamespace: where the routes, policies and access guard are read (default: the system namespace)",
    )
    command.add_argument(
        "-v", "--verbose", action="store_true", help="one line per stage on stderr (default: only on a terminal)"
    )


def _options(arguments: argparse.Namespace) -> RenderOptions:
    """The run's settings: each flag given, else the settings file's value for its key."""
    file = load_settings_file(arguments.settings) if arguments.settings is not None else SettingsFile()
    flags = {
        "systemNamespace": arguments.namespace,
        "domain": arguments.domain,
        "localDomain": arguments.local_domain,
        **{entry.key: getattr(arguments, entry.key) for entry in ACCESS_KEYS},
    }
    given = {key: value for key, value in flags.items() if value is not None}
    values = {**file.values, **given}
    return RenderOptions(
        catalog_dir=arguments.catalogs,
        now=arguments.now,
        namespace=values.get("systemNamespace"),
        domain=values.get("domain"),
        local_domain=values.get("localDomain"),
        access={entry.key: values[entry.key] for entry in ACCESS_KEYS if entry.key in values},
        sources={key: name for key, name in file.names.items() if key not in given},
    )


def _render(arguments: argparse.Namespace) -> int:
    progress = Progress.for_terminal(command="magicstick render", verbose=arguments.verbose)
    to_stdout = arguments.out == STDIN
    if arguments.all and not to_stdout:
        raise RenderInputError("--all: only with -o - (a directory render always holds every document)")
    if not to_stdout:
        check_output_directory(Path(arguments.out))
    result = render_files(snapshot=arguments.snapshot, options=_options(arguments), progress=progress)
    resources_only = to_stdout and not arguments.all
    files = [file for file in result.files if file.folder == RESOURCES] if resources_only else result.files
    progress.stage(f"writing: {counted(len(files), 'file')}")
    if to_stdout:
        write_stream(files, stream=sys.stdout)
    else:
        replace_directory(out=Path(arguments.out), files=files)
    # After the writing: a render that fails there says so in one line, without the warnings.
    for warning in result.warnings:
        _warn("magicstick render", warning)
    print(summary(result, arguments.out, resources_only=resources_only), file=sys.stderr if to_stdout else sys.stdout)
    if arguments.strict and result.status_summary.failed:
        return EXIT_FINDING
    return EXIT_OK


def _diff(arguments: argparse.Namespace) -> int:
    if arguments.old == STDIN and arguments.new == STDIN:
        raise RenderInputError("OLD and NEW cannot both be standard input")
    progress = Progress.for_terminal(command="magicstick diff", verbose=arguments.verbose)
    options = _options(arguments)
    if options.now is None:
        # Both sides are rendered at one moment: statuses that depend on the clock (a stalled
        # pod, a backoff) must not differ only because the second render came later.
        options = replace(options, now=format_now(parse_now(None)))
    warn = _once(partial(_warn, "magicstick diff"))
    old = load_side(arguments.old, options=options, progress=progress, warn=warn)
    new = load_side(arguments.new, options=options, progress=progress, warn=warn)
    difference = compare(old, new)
    sys.stdout.writelines(difference.lines(show_added=arguments.show_added))
    return EXIT_OK if difference.equal else EXIT_FINDING


def _snapshot(arguments: argparse.Namespace) -> int:
    progress = Progress.for_terminal(command="magicstick snapshot", verbose=arguments.verbose)
    count = write_snapshot(
        kubeconfig=arguments.kubeconfig,
        context=arguments.context,
        system_namespace=arguments.namespace,
        gateway_namespace=arguments.gateway_namespace,
        out=arguments.out,
        progress=progress,
    )
    print(
        f"wrote {counted(count, 'object')} to {arguments.out}",
        file=sys.stderr if arguments.out == STDIN else sys.stdout,
    )
    return EXIT_OK


def _warn(command: str, text: str) -> None:
    print(f"{command}: warning: {text}", file=sys.stderr, flush=True)


def _once(warn: Callable[[str], None]) -> Callable[[str], None]:
    """`warn`, skipping a text already given: both sides of a diff find the same unset images."""
    given: set[str] = set()

    def warn_once(text: str) -> None:
        if text not in given:
            given.add(text)
            warn(text)

    return warn_once


_COMMANDS = {"render": _render, "diff": _diff, "snapshot": _snapshot, "backend": run_backend}


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    arguments = parser.parse_args(argv)
    if arguments.version:
        print(f"magicstick {_version()}")
        return EXIT_OK
    if arguments.command is None:
        parser.print_help()
        return EXIT_OK
    try:
        return _COMMANDS[arguments.command](arguments)
    except RenderInputError as error:
        one_line = " ".join(line.strip() for line in str(error).splitlines())
        print(f"magicstick {arguments.command}: {one_line}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
