"""The language host of the e2e suite: the Python SDK's own inline-program server, running `__main__.py`.

    python -m tests.e2e.language_host PROJECT_DIR     # prints 127.0.0.1:PORT, serves until killed

The Pulumi CLI runs a Python program through its language host plugin, `pulumi-language-python`
(an untagged Go module of pulumi/pulumi). When the Go module proxy does not serve that module
(scripts/toolchain/README.md), the suite runs the CLI with `--client=ADDRESS` instead: the
engine then asks this process to run the program, exactly as it asks the Automation API's
inline programs. The server is the SDK's `pulumi.automation._server.LanguageServer`, unchanged;
the program it runs is the project's own `__main__.py`, as `pulumi-language-python-exec` runs it.

What differs from the Go host, and why it does not matter here: the program runs inside this
process instead of a child `python` (one host is started per CLI command, so nothing carries
over), and the host reports no required plugins (the suite installs the Kubernetes provider
itself, from the file the toolchain built, and forbids downloads).
"""

from __future__ import annotations

import runpy
import sys
from concurrent import futures
from pathlib import Path

import grpc
from pulumi.automation._server import LanguageServer
from pulumi.runtime._grpc_settings import _GRPC_CHANNEL_OPTIONS
from pulumi.runtime.proto import language_pb2_grpc


def program_of(project_dir: Path):
    """The program the engine runs: the project's `__main__.py`, from the project directory."""
    main = project_dir / "__main__.py"

    def program() -> None:
        runpy.run_path(str(main), run_name="__main__")

    return program


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.e2e.language_host PROJECT_DIR", file=sys.stderr)
        return 2
    project_dir = Path(argv[0]).resolve()
    sys.path.insert(0, str(project_dir))
    # As pulumi.automation's Stack serves an inline program: same pool and channel options.
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), options=_GRPC_CHANNEL_OPTIONS)
    language_pb2_grpc.add_LanguageRuntimeServicer_to_server(LanguageServer(program_of(project_dir)), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"127.0.0.1:{port}", flush=True)
    server.wait_for_termination()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
