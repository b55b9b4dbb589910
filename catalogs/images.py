"""When an image is one the administrator still has to set: the one rule, used everywhere. Pure.

The shipped catalogs, the GitOps tree and the examples name an image they cannot ship as a
placeholder: a reference whose registry, repository, tag or digest contains CHANGEME. No image
at all is a placeholder too (a realtime profile without a default). The status of an activation
that would run one, the warning of `magicstick render` and the run's log all ask
`is_placeholder_image`, so the three never disagree about what is unset.
"""

from __future__ import annotations

from typing import Final

PLACEHOLDER: Final = "CHANGEME"
"""The word that marks a value to replace (invariant 10: examples and defaults use it)."""


def is_placeholder_image(image: str | None) -> bool:
    """True for no image, or an image reference that contains CHANGEME anywhere. Pure."""
    return not image or PLACEHOLDER in image
