"""The host agent's configuration: a subcommand, then flags, each with an environment fallback.

`magicstick-host-agent serve` runs the agent; `magicstick-host-agent evidence` publishes the
host evidence once (the evidence timer's service). A flag wins over its environment variable
(MAGICSTICK_HOST_AGENT_<FLAG>), which wins over the default; an invalid value is reported in
one line that names the flag.

`--root` is where the host's file systems are read and written (sysfs, procfs, /etc/netplan,
/etc/modprobe.d, the state directory): `/` on a node, a prepared directory in tests.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from services.flags import LOG_LEVELS, Flag, ServiceFlagError, one_of, raw_values, required, seconds

PROGRAM = "magicstick-host-agent"
ENV_PREFIX = "MAGICSTICK_HOST_AGENT_"
DEFAULT_KUBECONFIG = "/etc/magicstick/host-agent/kubeconfig"
DEFAULT_STATE_DIR = "/var/lib/magicstick"
DEFAULT_NAMESPACE = "ai-system"
DEFAULT_SETUP_NAMESPACE = "identity-system"
DEFAULT_NETWORK_NAMESPACE = "magicstick-host-network"
DEFAULT_POLL_SECONDS = 5.0
DEFAULT_EVIDENCE_SECONDS = 300.0
DEFAULT_CONFIRMATION_SECONDS = 120.0
DESCRIPTION = "The Magic Stick host agent: host evidence, HostOperations and the first-run ApplianceSetup of one node."

_DNS_SUBDOMAIN = re.compile(r"(?=.{1,253}\Z)[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


class Command(StrEnum):
    SERVE = "serve"
    EVIDENCE = "evidence"


@dataclass(frozen=True)
class AgentSettings:
    command: Command
    node_name: str
    """The Node this host is; its UID is read from the API server."""
    root: Path = Path("/")
    kubeconfig: str = DEFAULT_KUBECONFIG
    state_dir: Path = Path(DEFAULT_STATE_DIR)
    """Below `root`: the journal, the installer marker and saved network configurations."""
    namespace: str = DEFAULT_NAMESPACE
    """Where HostOperations live."""
    setup_namespace: str = DEFAULT_SETUP_NAMESPACE
    """Where ApplianceSetup/local lives."""
    network_namespace: str = DEFAULT_NETWORK_NAMESPACE
    """Where the Secrets configure-network names live: the only namespace whose Secrets the agent may read."""
    poll_seconds: float = DEFAULT_POLL_SECONDS
    """How often HostOperations are listed again."""
    evidence_seconds: float = DEFAULT_EVIDENCE_SECONDS
    """How often `serve` publishes the host evidence and host plans itself (the timer does too)."""
    confirmation_seconds: float = DEFAULT_CONFIRMATION_SECONDS
    """How long a new network configuration waits for its confirmation before it is rolled back."""
    log_level: str = "info"

    def host_path(self, path: str) -> Path:
        """`path` (absolute, as on the host) below the root."""
        return self.root / path.lstrip("/")

    @property
    def state_path(self) -> Path:
        return self.host_path(str(self.state_dir))


_FLAGS = (
    Flag("--node-name", "the name of this host's Node; default: the host name"),
    Flag("--root", "where the host's file systems are (/ on a node)", "/"),
    Flag("--kubeconfig", "the agent's kubeconfig (a Node-bound token of its ServiceAccount)", DEFAULT_KUBECONFIG),
    Flag("--state-dir", "the agent's state directory, below --root", DEFAULT_STATE_DIR),
    Flag("--namespace", "namespace of the HostOperations", DEFAULT_NAMESPACE),
    Flag("--setup-namespace", "namespace of ApplianceSetup/local", DEFAULT_SETUP_NAMESPACE),
    Flag("--network-namespace", "namespace of the Secrets configure-network names", DEFAULT_NETWORK_NAMESPACE),
    Flag("--poll-seconds", "list HostOperations again after this many seconds", f"{DEFAULT_POLL_SECONDS:g}"),
    Flag(
        "--evidence-seconds",
        "publish host evidence and plans every this many seconds (serve)",
        f"{DEFAULT_EVIDENCE_SECONDS:g}",
    ),
    Flag(
        "--confirmation-seconds",
        "roll a network change back unless confirmed within this many seconds",
        f"{DEFAULT_CONFIRMATION_SECONDS:g}",
    ),
    Flag("--log-level", f"one of {', '.join(LOG_LEVELS)}", "info"),
)


def _absolute(value: str | None, origin: str) -> Path:
    text = required(value, origin)
    if not text.startswith("/"):
        raise ServiceFlagError(f"{origin}: {text!r} is not an absolute path")
    return Path(text)


def _namespace(value: str | None, origin: str) -> str:
    text = required(value, origin)
    if not _DNS_LABEL.fullmatch(text):
        raise ServiceFlagError(f"{origin}: {text!r} is not a namespace name (a DNS label)")
    return text


def _node_name(value: str | None, origin: str) -> str:
    text = required(value if value is not None else socket.gethostname().lower(), origin)
    if not _DNS_SUBDOMAIN.fullmatch(text):
        raise ServiceFlagError(f"{origin}: {text!r} is not a Node name (a DNS subdomain)")
    return text


def parse_settings(argv: Sequence[str], environ: Mapping[str, str]) -> AgentSettings:
    """The validated settings from `argv` (subcommand first, without the program name) and `environ`.

    Raises ServiceFlagError with a one-line message naming the offending flag.
    """
    if not argv or argv[0] not in tuple(Command):
        given = repr(argv[0]) if argv else "nothing"
        raise ServiceFlagError(f"the first argument must be a command, {' or '.join(Command)}; got {given}")
    raw = raw_values(_FLAGS, argv[1:], environ, program=PROGRAM, description=DESCRIPTION, env_prefix=ENV_PREFIX)
    return AgentSettings(
        command=Command(argv[0]),
        node_name=_node_name(*raw["node_name"]),
        root=_absolute(*raw["root"]),
        kubeconfig=required(*raw["kubeconfig"]),
        state_dir=_absolute(*raw["state_dir"]),
        namespace=_namespace(*raw["namespace"]),
        setup_namespace=_namespace(*raw["setup_namespace"]),
        network_namespace=_namespace(*raw["network_namespace"]),
        poll_seconds=seconds(*raw["poll_seconds"], below=3600),
        evidence_seconds=seconds(*raw["evidence_seconds"], below=1800),
        confirmation_seconds=seconds(*raw["confirmation_seconds"], below=3600),
        log_level=one_of(*raw["log_level"], LOG_LEVELS),
    )
