"""The reasons the plan reports (api.vocabulary.Reason, re-exported for planning) and how a
message lists the objects it names."""

from __future__ import annotations

from collections.abc import Sequence

from api.vocabulary import Reason as Reason

LISTED_NAMES_IN_MESSAGE = 5
"""A status message names at most this many objects, then says how many more there are: a
message that lists every requester grows with the cluster (5,000 models waiting on one
disabled module) until the status no longer fits in etcd."""


def listed(names: Sequence[str], limit: int = LISTED_NAMES_IN_MESSAGE, *, separator: str = ", ") -> str:
    """`a, b, c` or `a, b, c and 4 more`: the first `limit` of `names` in the order given. Pure."""
    shown = separator.join(names[:limit])
    more = len(names) - limit
    return f"{shown} and {more} more" if more > 0 else shown
