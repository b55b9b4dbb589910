"""Where the vendored upstream files live: `third_party/crds/` and
`third_party/charts/` in this repository.

Every test and script that needs an upstream CRD or values file reads it from here, so a clone
in any directory passes on its own. `third_party/crds/SOURCES.md` names each file's project,
tag, upstream path and Git blob.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

REPOSITORY_ROOT: Final = Path(__file__).resolve().parents[2]
VENDORED_CRDS: Final = REPOSITORY_ROOT / "third_party" / "crds"
"""Unmodified upstream CRDs and Helm values files, each project's LICENSE beside them."""
VENDORED_CHARTS: Final = REPOSITORY_ROOT / "third_party" / "charts"
"""Unmodified upstream Helm charts (KubeAI's), for the real `helm` to render."""
VENDORED_MANIFESTS: Final = REPOSITORY_ROOT / "third_party" / "manifests"
"""Unmodified upstream install manifests (the Pulumi Kubernetes Operator's), for the real node."""
