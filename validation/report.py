"""The report every validation check leaves: one JSON object in the Pod's termination message
(planning/hardware/validation.py reads it). Copied beside each check in its image."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

DEFAULT_TERMINATION_LOG = "/dev/termination-log"
MAX_REPORT = 4096
"""Kubernetes keeps at most 4096 bytes of a termination message."""


def write_report(report: Mapping[str, Any], path: str) -> None:
    text = json.dumps(dict(report), sort_keys=True)
    if len(text.encode()) > MAX_REPORT:
        text = json.dumps({**report, "error": str(report.get("error", ""))[:64]}, sort_keys=True)
    print(text, flush=True)
    with open(path, "w", encoding="utf-8") as log:
        log.write(text)


def finish(report: Mapping[str, Any], code: int, environ: Mapping[str, str]) -> int:
    """Write `report` where the environment says (else the termination log); the exit code."""
    try:
        write_report(report, environ.get("MAGICSTICK_TERMINATION_LOG") or DEFAULT_TERMINATION_LOG)
    except OSError as error:
        print(f"cannot write the termination log: {error}", file=sys.stderr)
        return 1
    return code
