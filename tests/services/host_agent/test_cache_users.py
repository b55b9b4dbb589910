"""clear-model-cache asks the host, not the API server, whether the model cache is in use
(services/host_agent/cache_users.py): real processes hold, map or work in a cache file, and the
agent, from its console script against the test API server, waits for them and then clears.

A fake root's `proc/<pid>` is a link to the real `/proc/<pid>` of a child process, so the agent
reads that process as it reads every process on a node. A child says `ready` once it uses the
file and ends when its stdin closes: no sleep. Mounts are read from a prepared mountinfo, since
a mount namespace needs privileges a test run may not have.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from api.host_evidence import HOST_PLANS_ANNOTATION
from planning.models.plan import clear_cache_pending
from planning.snapshot import Snapshot
from services.host_agent.cache_users import cache_users, waiting_while_the_cache_is_used
from services.host_agent.engine import Engine
from services.host_agent.journal import Journal
from tests.services.host_agent.fake_host import strix_halo
from tests.services.host_agent.stand_ins import RecordingCluster, context, operation
from tests.services.host_agent.world import NAMESPACE, AgentWorld

OLLAMA: Final = "var/lib/magicstick/model-cache/ollama"
HUGGINGFACE: Final = "var/lib/magicstick/model-cache/huggingface"
LOCATIONS: Final = (OLLAMA, HUGGINGFACE)

HOLDS_OPEN: Final = "import sys; f = open(sys.argv[1], 'rb'); print('ready', flush=True); sys.stdin.read()"
MAPS: Final = (
    "import mmap, os, sys; f = open(sys.argv[1], 'rb'); m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ); f.close(); "
    "os.closerange(3, 65536); print('ready', flush=True); sys.stdin.read()"
)
"""Maps the file, then closes every descriptor beyond stdio (mmap keeps a duplicate of its own)."""
WORKS_IN: Final = "import os, sys; os.chdir(sys.argv[1]); print('ready', flush=True); sys.stdin.read()"


class Child:
    """A process that uses `path` as `script` says until it is ended."""

    def __init__(self, script: str, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", script, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "ready"

    @property
    def pid(self) -> int:
        return self.process.pid

    def end(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.process.wait(timeout=30)


@pytest.fixture
def children() -> Iterator[list[Child]]:
    started: list[Child] = []
    yield started
    for child in started:
        child.end()


def blob(root: Path, location: str = OLLAMA) -> Path:
    path = root / location / "blobs" / "sha256-0001"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"weights" * 1024)
    return path


def seen_by(root: Path, child: Child) -> Child:
    """`root`/proc/<pid> is the child's real /proc entry."""
    (root / "proc").mkdir(parents=True, exist_ok=True)
    (root / "proc" / str(child.pid)).symlink_to(f"/proc/{child.pid}")
    return child


def start(children: list[Child], root: Path, script: str, path: Path) -> Child:
    child = Child(script, path)
    children.append(child)
    return seen_by(root, child)


def fake_container(root: Path, pid: int, *, mount_root: str, mount_point: str, target: Path) -> None:
    """`root`/proc/<pid> of a process that uses no file, in a mount namespace of its own whose
    mountinfo lists one mount; its root directory shows `target` at `mount_point`."""
    process = root / "proc" / str(pid)
    for name in ("fd", "ns"):
        (process / name).mkdir(parents=True)
    (process / "maps").write_text("")
    (process / "comm").write_text("ollama\n")
    (process / "ns" / "mnt").write_text("")
    (process / "cwd").symlink_to("/")
    view = root.parent / f"container-{pid}"
    (view / mount_point.strip("/")).parent.mkdir(parents=True, exist_ok=True)
    (view / mount_point.strip("/")).symlink_to(target)
    (process / "root").symlink_to(view)
    device = target.stat().st_dev
    (process / "mountinfo").write_text(
        f"1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
        f"2 1 {os.major(device)}:{os.minor(device)} {mount_root} {mount_point} rw - ext4 /dev/sda1 rw\n"
    )


# --- who uses the cache ------------------------------------------------------------------------


def test_a_process_holding_a_cache_file_open_uses_the_cache(tmp_path: Path, children: list[Child]) -> None:
    child = start(children, tmp_path, HOLDS_OPEN, blob(tmp_path))

    users = cache_users(tmp_path, LOCATIONS)

    assert [(user.pid, user.use) for user in users] == [(child.pid, "an open file")]
    assert users[0].command.startswith("python")


def test_a_process_mapping_a_cache_file_uses_the_cache(tmp_path: Path, children: list[Child]) -> None:
    child = start(children, tmp_path, MAPS, blob(tmp_path, HUGGINGFACE))

    assert [(user.pid, user.use) for user in cache_users(tmp_path, LOCATIONS)] == [(child.pid, "a mapped file")]


def test_a_process_working_in_a_cache_directory_uses_the_cache(tmp_path: Path, children: list[Child]) -> None:
    directory = blob(tmp_path).parent
    child = start(children, tmp_path, WORKS_IN, directory)

    assert [(user.pid, user.use) for user in cache_users(tmp_path, LOCATIONS)] == [(child.pid, "its working directory")]


def test_a_process_using_files_elsewhere_does_not_use_the_cache(tmp_path: Path, children: list[Child]) -> None:
    blob(tmp_path)
    elsewhere = tmp_path / "var/lib/magicstick/journal/entry.json"
    elsewhere.parent.mkdir(parents=True)
    elsewhere.write_text("{}")
    start(children, tmp_path, HOLDS_OPEN, elsewhere)
    start(children, tmp_path, WORKS_IN, tmp_path / "var/lib/magicstick")

    assert cache_users(tmp_path, LOCATIONS) == []


def test_a_process_that_ended_is_no_user(tmp_path: Path, children: list[Child]) -> None:
    child = start(children, tmp_path, HOLDS_OPEN, blob(tmp_path))
    child.end()

    assert cache_users(tmp_path, LOCATIONS) == []


def test_the_agent_itself_is_left_out(tmp_path: Path, children: list[Child]) -> None:
    child = start(children, tmp_path, HOLDS_OPEN, blob(tmp_path))

    assert cache_users(tmp_path, LOCATIONS, own_pid=child.pid) == []


def test_a_container_with_a_cache_location_mounted_uses_the_cache_though_it_holds_no_file(tmp_path: Path) -> None:
    location = blob(tmp_path).parents[1]
    fake_container(tmp_path, 4242, mount_root="/" + OLLAMA, mount_point="/root/.ollama", target=location)

    assert [(user.pid, user.command, user.use) for user in cache_users(tmp_path, LOCATIONS)] == [
        (4242, "ollama", "a mount")
    ]


def test_the_hosts_own_mount_of_a_location_that_is_a_file_system_of_its_own_is_no_use(tmp_path: Path) -> None:
    location = blob(tmp_path).parents[1]
    fake_container(tmp_path, 4242, mount_root="/", mount_point="/" + OLLAMA, target=location)

    assert cache_users(tmp_path, LOCATIONS) == []


def test_a_command_name_is_shown_as_printable_text_only(tmp_path: Path) -> None:
    location = blob(tmp_path).parents[1]
    fake_container(tmp_path, 4242, mount_root="/" + OLLAMA, mount_point="/models", target=location)
    (tmp_path / "proc/4242/comm").write_text("\x1b[2Jrm -rf\u202e\n")

    assert [user.command for user in cache_users(tmp_path, LOCATIONS)] == ["?[2Jrm -rf?"]


def test_without_cache_locations_nothing_is_read(tmp_path: Path) -> None:
    assert cache_users(tmp_path, LOCATIONS) == []


# --- clear-model-cache waits for them ----------------------------------------------------------


def test_clear_model_cache_waits_while_a_process_holds_a_cache_file_and_names_it(
    tmp_path: Path, children: list[Child]
) -> None:
    host = strix_halo(tmp_path)
    child = start(children, tmp_path, HOLDS_OPEN, blob(tmp_path))
    cluster = RecordingCluster()
    ctx = context(tmp_path, cluster=cluster)

    Engine(Journal(tmp_path / "var/lib/magicstick/journal"), ctx).run_once([operation(ctx, "clear-model-cache")])

    status = cluster.statuses[-1][1]
    assert (status["phase"], status["reason"]) == ("Pending", "WaitingForIdle")
    assert f"(pid {child.pid}, an open file)" in status["message"] and "node halo" in status["message"]
    assert any(host.cache("ollama").iterdir())


def test_the_wait_ends_once_no_process_uses_the_cache(tmp_path: Path, children: list[Child]) -> None:
    strix_halo(tmp_path)
    child = start(children, tmp_path, MAPS, blob(tmp_path))
    ctx = context(tmp_path)
    assert waiting_while_the_cache_is_used(ctx) is not None

    child.end()

    assert waiting_while_the_cache_is_used(ctx) is None


def test_the_wait_names_five_users_and_counts_the_rest(tmp_path: Path, children: list[Child]) -> None:
    strix_halo(tmp_path)
    path = blob(tmp_path)
    for _ in range(7):
        start(children, tmp_path, HOLDS_OPEN, path)

    waiting = waiting_while_the_cache_is_used(context(tmp_path))

    assert waiting is not None
    assert waiting.message.count("an open file") == 5 and waiting.message.endswith(" and 2 more")


# --- the agent, from its console script -------------------------------------------------------


def _plans(world: AgentWorld) -> dict[str, Any]:
    return dict(json.loads(world.node_now()["metadata"]["annotations"][HOST_PLANS_ANNOTATION]))


def test_the_agent_waits_while_a_process_uses_the_cache_the_program_defers_new_runtimes_and_then_it_clears(
    world: AgentWorld, children: list[Child]
) -> None:
    agent = world.start()
    child = start(children, world.host.root, HOLDS_OPEN, blob(world.host.root))
    world.request("clear-cache", "clear-model-cache", planId=_plans(world)["modelCache"]["planId"])

    waiting = world.wait_for("clear-cache", lambda status: status.get("phase") == "Pending", process=agent)
    assert (
        waiting["status"]["reason"] == "WaitingForIdle"
        and f"(pid {child.pid}, an open file)" in waiting["status"]["message"]
    )
    assert clear_cache_pending(Snapshot.from_objects([waiting]), NAMESPACE) == world.object_name("clear-cache")
    assert any(world.host.cache("ollama").iterdir())

    child.end()

    done = world.wait_for("clear-cache", lambda status: status.get("phase") in ("Succeeded", "Failed"), process=agent)
    assert done["status"]["phase"] == "Succeeded", done["status"]
    assert not any(world.host.cache("ollama").iterdir())
    assert clear_cache_pending(Snapshot.from_objects([done]), NAMESPACE) is None
