"""Retry policy of every Kubernetes request."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff for 429, 5xx and connection errors."""

    attempts: int = 5
    first_delay_seconds: float = 0.2
    max_delay_seconds: float = 5.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"RetryPolicy.attempts must be at least 1, not {self.attempts}")

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        backoff = min(self.max_delay_seconds, self.first_delay_seconds * (2.0**attempt))
        if retry_after is not None:
            return min(self.max_delay_seconds, max(backoff, retry_after))
        return backoff
