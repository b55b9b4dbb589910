"""The floor of the access guard's latency: the same HTTP stack answering 200 with no decision.

uvicorn with the httptools parser on uvloop, as the guard runs them, serving a bare ASGI callable
that answers every request 200 with an empty body. The latency benchmark loads it exactly as it
loads the guard, so the difference between the two rows is what the guard itself costs.

    venv/bin/python -m benchmarks.http_floor PORT
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import uvicorn

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]


async def answer_ok(
    scope: Scope, receive: Callable[[], Awaitable[Message]], send: Callable[[Message], Awaitable[None]]
) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


def main() -> None:
    uvicorn.run(
        answer_ok,
        host="127.0.0.1",
        port=int(sys.argv[1]),
        loop="uvloop",
        http="httptools",
        ws="none",
        lifespan="off",
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
