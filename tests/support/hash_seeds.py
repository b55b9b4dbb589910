"""What a snippet prints in fresh interpreters under different hash seeds.

Two computations in one process share one hash seed, so comparing them cannot show that an
output depends on the iteration order of a set or a dict of strings. Comparing with fresh
interpreters under other seeds can (invariant 2: the same input gives the same output, byte for
byte).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

from tests.support.vendored import REPOSITORY_ROOT

SEEDS = ("1", "2")


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def digests_under_hash_seeds(expression: str, *, imports: str, seeds: tuple[str, ...] = SEEDS) -> list[str]:
    """The digest of `repr(expression)`, evaluated after `imports` from the repository root by
    this interpreter, once under each of `seeds`."""
    code = f"{imports}\nimport hashlib\nprint(hashlib.sha256(repr({expression}).encode()).hexdigest())"
    return [
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=REPOSITORY_ROOT,
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout.strip()
        for seed in seeds
    ]
