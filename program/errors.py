"""The error of the run's own settings: a `magicstick:` config value is unusable."""

from __future__ import annotations


class RunSettingsError(Exception):
    """A config value is unusable; the message is one line naming the key and the rule it breaks."""
