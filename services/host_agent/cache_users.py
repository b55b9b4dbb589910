"""Whether anything on the host still uses the model cache, answered from the host's procfs.

clear-model-cache waits while any process of the host uses a file or directory under one of the
cache locations: holds it open, maps it (a model's weights are usually mapped), has it as its
working or root directory, or sees it through a mount (a container given the location as a
volume has it mounted, whether or not it holds a file at the moment). Processes in containers
are processes of the host, so this answers for model runtimes in any namespace, in a Pod or
not, without asking the API server (the agent's identity may list no Pod).

Files are compared by device and inode, never by path: a container sees the cache under a path
of its own. The locations are walked without following links; each process is read through
`<root>/proc/<pid>` (on a node the host's /proc: the agent runs as root in the host's PID
namespace). Only mounts of the cache's own file systems are looked up (no other file system is
touched: an unreachable network share would hang the lookup). A mount counts unless it is the
host's own view of a location that is a file system of its own (the file system's root, mounted
at the location's own path), which every systemd service with a private mount namespace also
sees. Maps and mounts name their file system by the device number the kernel gives its
superblock, which on btrfs is not the one stat() gives a subvolume's files: there only open
files and working or root directories are seen. A process that ends while it is read is
skipped; one whose files cannot be read counts as a user, so clearing never races a runtime it
could not see.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from api.hostoperations import HostOperationReason, HostPhase
from api.model_cache import MODEL_CACHE_LOCATIONS
from services.host_agent.actions.base import ActionContext
from services.host_agent.journal import Outcome

Inode = tuple[int, int]
"""(st_dev, st_ino)"""

MAX_COMMAND_CHARS: Final = 15
"""The kernel keeps at most 15 characters of a command name (/proc/<pid>/comm)."""
MAX_USERS_NAMED: Final = 5


@dataclass(frozen=True)
class CacheUser:
    pid: int
    command: str
    """The process's command name, printable ASCII only (any other character is '?')."""
    use: str
    """How it uses the cache: "an open file", "a mapped file", "its working directory", ..."""

    def describe(self) -> str:
        return f"{self.command} (pid {self.pid}, {self.use})"


@dataclass(frozen=True)
class _Cache:
    inodes: frozenset[Inode]
    """Every file and directory under the locations, the locations included."""
    paths: frozenset[str]
    """The locations as the host names them (/var/lib/magicstick/model-cache/ollama, ...)."""

    @property
    def devices(self) -> frozenset[int]:
        return frozenset(device for device, _ in self.inodes)


def _inodes(root: Path, locations: Collection[str]) -> frozenset[Inode]:
    found: set[Inode] = set()
    for relative in locations:
        location = root / relative
        try:
            status = location.lstat()
        except FileNotFoundError:
            continue
        found.add((status.st_dev, status.st_ino))
        if location.is_symlink():
            continue
        for directory, directories, files in os.walk(location, followlinks=False):
            for name in (*directories, *files):
                try:
                    entry = os.lstat(os.path.join(directory, name))
                except FileNotFoundError:
                    continue
                found.add((entry.st_dev, entry.st_ino))
    return frozenset(found)


def _stat(path: Path) -> Inode | None:
    """What `path` (a /proc link) points to, or None when it points nowhere."""
    try:
        status = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (status.st_dev, status.st_ino)


def _open_files(process: Path) -> Iterator[Inode]:
    for entry in os.scandir(process / "fd"):
        found = _stat(Path(entry.path))
        if found is not None:
            yield found


def _device(field: str, base: int) -> int:
    """`major:minor` as st_dev: hexadecimal in maps, decimal in mountinfo."""
    major, _, minor = field.partition(":")
    return os.makedev(int(major, base), int(minor, base))


def _mapped_files(process: Path) -> Iterator[Inode]:
    """From /proc/<pid>/maps: `address perms offset major:minor inode path`."""
    with (process / "maps").open(encoding="utf-8", errors="replace") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) < 5 or fields[4] == "0":
                continue
            yield (_device(fields[3], 16), int(fields[4]))


def _unescape(field: str) -> str:
    """A mountinfo path: space, tab, newline and backslash are octal escapes (\\040 ...)."""
    return field.encode().decode("unicode_escape") if "\\" in field else field


def _mounts_cache(process: Path, cache: _Cache) -> bool:
    """From /proc/<pid>/mountinfo: `id parent major:minor root mount-point ...`; each mount point
    is looked up through the process's own root, so the answer is what the process sees there."""
    devices = cache.devices
    with (process / "mountinfo").open(encoding="utf-8", errors="replace") as mounts:
        for line in mounts:
            fields = line.split()
            if len(fields) < 5 or _device(fields[2], 10) not in devices:
                continue
            point = _unescape(fields[4])
            if fields[3] == "/" and point in cache.paths:
                continue  # the host's own mount of a location that is a file system of its own
            if _stat(process / "root" / point.lstrip("/")) in cache.inodes:
                return True
    return False


def _use(process: Path, cache: _Cache, seen_namespaces: set[Inode]) -> str | None:
    """How the process uses the cache, or None. Raises OSError when it cannot be read."""
    if _stat(process / "cwd") in cache.inodes:
        return "its working directory"
    if _stat(process / "root") in cache.inodes:
        return "its root directory"
    if any(found in cache.inodes for found in _open_files(process)):
        return "an open file"
    if any(found in cache.inodes for found in _mapped_files(process)):
        return "a mapped file"
    namespace = _stat(process / "ns" / "mnt")
    if namespace is None or namespace in seen_namespaces:
        return None  # no mount namespace (it ended), or one whose mounts were read already
    mounted = _mounts_cache(process, cache)
    seen_namespaces.add(namespace)
    return "a mount" if mounted else None


def _command(process: Path) -> str:
    try:
        raw = (process / "comm").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return "?"
    return "".join(c if c.isascii() and c.isprintable() else "?" for c in raw[:MAX_COMMAND_CHARS]) or "?"


def cache_users(root: Path, locations: Collection[str], *, own_pid: int | None = None) -> list[CacheUser]:
    """The processes of `root`/proc that use a file or directory under `locations` (paths below
    `root`), in pid order. `own_pid` (default: this process) is left out. The mounts of a mount
    namespace are read once, so a container is named once for a mount."""
    cache = _Cache(
        inodes=_inodes(root, locations), paths=frozenset("/" + relative.strip("/") for relative in locations)
    )
    if not cache.inodes:
        return []
    own = os.getpid() if own_pid is None else own_pid
    pids = sorted(int(entry.name) for entry in os.scandir(root / "proc") if entry.name.isdigit())
    users: list[CacheUser] = []
    seen_namespaces: set[Inode] = set()
    for pid in pids:
        if pid == own:
            continue
        process = root / "proc" / str(pid)
        try:
            use = _use(process, cache, seen_namespaces)
        except PermissionError:
            use = "files that could not be read"
        except OSError:
            continue  # it ended while it was read (a zombie's mountinfo is EINVAL)
        if use is not None:
            users.append(CacheUser(pid=pid, command=_command(process), use=use))
    return users


def waiting_while_the_cache_is_used(context: ActionContext) -> Outcome | None:
    """clear-model-cache's wait: Pending (WaitingForIdle) naming the processes that use a cache
    location, read at this moment; None once nothing does."""
    users = cache_users(context.settings.root, tuple(MODEL_CACHE_LOCATIONS.values()))
    if not users:
        return None
    named = ", ".join(user.describe() for user in users[:MAX_USERS_NAMED])
    more = f" and {len(users) - MAX_USERS_NAMED} more" if len(users) > MAX_USERS_NAMED else ""
    return Outcome(
        phase=HostPhase.PENDING,
        reason=HostOperationReason.WAITING_FOR_IDLE.value,
        message=f"waiting until no process on node {context.cluster.node_name} uses the model cache: {named}{more}",
    )
