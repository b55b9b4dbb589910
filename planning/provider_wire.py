"""Names on the wire between the components, which declare dynamic resources, and the dynamic
providers, which run them. PURE."""

from __future__ import annotations

from typing import Final

PROBLEM_OUTPUT: Final = "problem"
"""The output key every dynamic provider of the program sets: a ProblemOutput, or `{}`."""
STATUS_INPUT: Final = "status"
"""The input of a status write that holds the status, as a mapping or as its JSON text."""
PROBLEMS_INPUT: Final = "problems"
"""The input of a status write that holds the `problem` outputs of the object's dynamic
resources, by the resources' logical names."""
MEMBERS_INPUT: Final = "members"
"""The input of a status batch that holds its objects by member key: each one's namespace, name,
status and problems (planning/status_batches.py)."""
