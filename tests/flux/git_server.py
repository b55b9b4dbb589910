"""This repository's GitOps tree in a Git repository served over HTTP, the way Flux reads a source.

Flux's GitRepository takes http, https or ssh URLs only, so `git daemon` will not do. Git's own
smart-HTTP server, `git http-backend` (Debian's git), answers every request, run as CGI by the
small HTTP server here: the server relays each request's method, path, query and body to it and
its reply back, nothing more.

The served repository has one commit on `main`: the working tree's `magic-cluster/` and
`deploy/` (the paths the entrypoint's Kustomizations and the program's generated objects name,
`./magic-cluster/...` and `./deploy`), so a test judges the files as they are, committed or not.
A test may replace some of its files (an earlier release's, for an upgrade).
"""

from __future__ import annotations

import contextlib
import http.server
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tests.toolchain import REPO_ROOT

GIT: Final = "/usr/bin/git"
HTTP_BACKEND: Final = "/usr/lib/git-core/git-http-backend"
"""Debian's package git."""
SERVED_TREES: Final = ("magic-cluster", "deploy")
BRANCH: Final = "main"
REPOSITORY: Final = "magicstick.git"
_COMMIT_IDENTITY: Final = {
    "GIT_AUTHOR_NAME": "magicstick tests",
    "GIT_AUTHOR_EMAIL": "tests@example.com",
    "GIT_COMMITTER_NAME": "magicstick tests",
    "GIT_COMMITTER_EMAIL": "tests@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}


@dataclass(frozen=True)
class GitSource:
    """Where the served repository answers, and the commit its branch points at."""

    url: str
    branch: str
    commit: str

    @property
    def revision(self) -> str:
        """The revision Flux reports for the branch's head (`main@sha1:<commit>`)."""
        return f"{self.branch}@sha1:{self.commit}"


def _git(*arguments: str, cwd: Path) -> str:
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), **_COMMIT_IDENTITY}
    completed = subprocess.run([GIT, *arguments], cwd=cwd, env=environment, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"git {' '.join(arguments)} failed ({completed.returncode}): {completed.stderr.strip()}")
    return completed.stdout.strip()


def bare_repository(
    root: Path, trees: Sequence[str] = SERVED_TREES, replaced: Mapping[str, str] | None = None
) -> tuple[Path, str]:
    """A bare repository `root/<REPOSITORY>` with one commit of `trees` (copied from the working
    tree, each file of `replaced`, by its path in the repository, with the text given) on
    `BRANCH`; its path and the commit."""
    work = root / "work"
    work.mkdir(parents=True)
    for tree in trees:
        shutil.copytree(REPO_ROOT / tree, work / tree, ignore=shutil.ignore_patterns("__pycache__"))
    for path, text in (replaced or {}).items():
        assert (work / path).is_file(), f"{path} is not a file of the served trees"
        (work / path).write_text(text, encoding="utf-8")
    _git("init", "--quiet", f"--initial-branch={BRANCH}", cwd=work)
    _git("add", "--all", cwd=work)
    _git("commit", "--quiet", "--message", "The GitOps tree under test", cwd=work)
    commit = _git("rev-parse", "HEAD", cwd=work)
    bare = root / REPOSITORY
    _git("clone", "--quiet", "--bare", str(work), str(bare), cwd=root)
    return bare, commit


def _split_cgi_reply(output: bytes) -> tuple[bytes, bytes]:
    """A CGI reply's header block and body: the headers end at the first empty line (CRLF or LF)."""
    ends = [(index, len(separator)) for separator in (b"\r\n\r\n", b"\n\n") if (index := output.find(separator)) >= 0]
    if not ends:
        return output, b""
    index, length = min(ends)
    return output[:index], output[index + length :]


def _handler(project_root: Path) -> type[http.server.BaseHTTPRequestHandler]:
    class GitHttpBackend(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._relay()

        def do_POST(self) -> None:
            self._relay()

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            """Quiet: pytest shows the test's own output."""

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                chunks = []
                while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
                self.rfile.readline()
                return b"".join(chunks)
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _relay(self) -> None:
            path, _, query = self.path.partition("?")
            body = self._body()
            environment = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "GIT_PROJECT_ROOT": str(project_root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "GATEWAY_INTERFACE": "CGI/1.1",
                "REQUEST_METHOD": self.command,
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "REMOTE_ADDR": self.client_address[0],
                "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            }
            completed = subprocess.run([HTTP_BACKEND], input=body, env=environment, capture_output=True, check=False)
            head, payload = _split_cgi_reply(completed.stdout)
            status = 200 if completed.returncode == 0 else 500
            headers = []
            for line in head.decode("latin-1").splitlines():
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return GitHttpBackend


@contextlib.contextmanager
def serving_tree(
    root: Path, *, address: str = "127.0.0.1", replaced: Mapping[str, str] | None = None
) -> Iterator[GitSource]:
    """Serve `SERVED_TREES` of the working tree (with the files of `replaced`, see
    `bare_repository`) as `http://<address>:<port>/<REPOSITORY>` until exit."""
    _, commit = bare_repository(root, replaced=replaced)
    server = http.server.ThreadingHTTPServer((address, 0), _handler(root))
    thread = threading.Thread(target=server.serve_forever, name="git-http-backend", daemon=True)
    thread.start()
    try:
        yield GitSource(url=f"http://{address}:{server.server_port}/{REPOSITORY}", branch=BRANCH, commit=commit)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
