"""Command-line flags with environment fallbacks, shared by the services.

A flag given on the command line wins over its environment variable (`<prefix><FLAG>`), which
wins over the default. Values are returned raw with where they came from, so each service's
validation can name the flag (and the variable) in a one-line error.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import math
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn, TypeVar
from urllib.parse import urlsplit

LOG_LEVELS = ("debug", "info", "warning", "error")
EXIT_BAD_INPUT = 2
_PORT = re.compile(r"[0-9]{1,5}")
_DIGITS = re.compile(r"[0-9]{1,10}")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
T = TypeVar("T")


class ServiceFlagError(ValueError):
    """An invalid flag or environment value; the message is one line and names the flag."""


@dataclass(frozen=True)
class Flag:
    name: str
    help: str
    default: str | None = None

    @property
    def dest(self) -> str:
        return self.name.removeprefix("--").replace("-", "_")


@dataclass(frozen=True)
class ListenAddress:
    """Where a server listens: an IPv4 or IPv6 address (or a host name) and a port (0: any free one)."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def listen_address(value: str, origin: str) -> ListenAddress:
    """`HOST:PORT`, or `[HOST]:PORT` for IPv6, as a ListenAddress. Raises ServiceFlagError naming `origin`."""
    host, separator, port_text = value.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        try:
            ipaddress.IPv6Address(host)
        except ValueError as error:
            raise ServiceFlagError(f"{origin}: {value!r} holds no IPv6 address in brackets") from error
    elif ":" in host:
        raise ServiceFlagError(f"{origin}: {value!r}: write an IPv6 address in brackets, [HOST]:PORT")
    if not separator or not host or not _PORT.fullmatch(port_text) or int(port_text) > 65535:
        raise ServiceFlagError(f"{origin}: {value!r} is not HOST:PORT with a port from 0 to 65535")
    return ListenAddress(host, int(port_text))


def required(value: str | None, origin: str) -> str:
    """`value`, set, not blank and without surrounding whitespace. Raises ServiceFlagError naming `origin`."""
    if value is None or not value.strip():
        raise ServiceFlagError(f"{origin}: a value is required")
    if value != value.strip():
        raise ServiceFlagError(f"{origin}: {value!r} has surrounding whitespace")
    return value


def one_of(value: str | None, origin: str, choices: Sequence[str]) -> str:
    """`value` in lower case, one of `choices`. Raises ServiceFlagError naming `origin` and the choices."""
    text = required(value, origin).lower()
    if text not in choices:
        raise ServiceFlagError(f"{origin}: {value!r} is not one of {', '.join(choices)}")
    return text


def whole_number(value: str | None, origin: str, *, maximum: int, unit: str | None = None) -> int:
    """`value` as a whole number from 1 to `maximum` (of `unit`). Raises ServiceFlagError naming `origin`."""
    text = required(value, origin)
    if not _DIGITS.fullmatch(text) or not 1 <= int(text) <= maximum:
        of_unit = f" of {unit}" if unit else ""
        raise ServiceFlagError(f"{origin}: {text!r} is not a whole number{of_unit} from 1 to {maximum}")
    return int(text)


RawValues = dict[str, tuple[str | None, str]]
"""By flag destination: the raw value (None: unset) and its origin as an error names it."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ServiceFlagError(message)


def parser_for(flags: Sequence[Flag], *, program: str, description: str, env_prefix: str) -> argparse.ArgumentParser:
    parser = _Parser(prog=program, description=description)
    for flag in flags:
        default = f"; default {flag.default}" if flag.default is not None else ""
        parser.add_argument(
            flag.name,
            dest=flag.dest,
            metavar=flag.dest.upper(),
            help=f"{flag.help} [env {env_prefix}{flag.dest.upper()}{default}]",
        )
    return parser


def raw_values(
    flags: Sequence[Flag],
    argv: Sequence[str],
    environ: Mapping[str, str],
    *,
    program: str,
    description: str,
    env_prefix: str,
) -> RawValues:
    """Each flag's value from `argv`, else `environ`, else its default, with its origin.
    Raises ServiceFlagError for a flag argparse refuses."""
    given = vars(
        parser_for(flags, program=program, description=description, env_prefix=env_prefix).parse_args(list(argv))
    )
    raw: RawValues = {}
    for flag in flags:
        env = env_prefix + flag.dest.upper()
        if given[flag.dest] is not None:
            raw[flag.dest] = (given[flag.dest], flag.name)
        elif environ.get(env, "") != "":
            raw[flag.dest] = (environ[env], f"{flag.name} (from {env})")
        else:
            raw[flag.dest] = (flag.default, flag.name)
    return raw


def start_logging(level: str) -> None:
    """One line per record on stderr, at `level` (a LOG_LEVELS value)."""
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s", stream=sys.stderr)


def settings_or_exit_code(
    parse: Callable[[Sequence[str], Mapping[str, str]], T], argv: Sequence[str] | None, *, program: str
) -> T | int:
    """`parse` of the process's flags and environment, or the exit code of a bad one (said in one line)."""
    try:
        return parse(sys.argv[1:] if argv is None else argv, os.environ)
    except ServiceFlagError as error:
        print(f"{program}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT


def http_url(value: str | None, origin: str) -> str:
    """An http(s) URL with a host."""
    text = required(value, origin)
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ServiceFlagError(f"{origin}: {text!r} is not an http(s) URL")
    return text


def header_name(value: str | None, origin: str) -> str:
    """An HTTP header name (an RFC 9110 token)."""
    text = required(value, origin)
    if not _HEADER_NAME.fullmatch(text):
        raise ServiceFlagError(f"{origin}: {text!r} is not an HTTP header name")
    return text


def seconds(value: str | None, origin: str, *, below: float | None = None) -> float:
    """A finite number of seconds above 0, and below `below` when given."""
    text = required(value, origin)
    try:
        seconds = float(text)
    except ValueError as error:
        raise ServiceFlagError(f"{origin}: {text!r} is not a number of seconds") from error
    if not math.isfinite(seconds) or seconds <= 0:
        raise ServiceFlagError(f"{origin}: {text!r} must be a finite number of seconds above 0")
    if below is not None and seconds >= below:
        raise ServiceFlagError(f"{origin}: {text!r} must be below {below:g} seconds")
    return seconds
