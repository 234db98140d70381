"""When to try a call again, and after how long.

Transport failures, 408, 429 and 5xx answers are retried with exponential back-off and full
jitter, or after the `Retry-After` the server sent. Every attempt of a call carries the same
`Idempotency-Key`, so a retried write has its effect once.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from datetime import datetime, timezone

import httpx

RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """`max_retries` attempts after the first, waits from `initial` doubling up to `cap` s."""

    max_retries: int = 2
    initial: float = 0.5
    cap: float = 8.0

    def after_error(self, attempt: int) -> float | None:
        """The wait before attempt `attempt + 1` after a transport failure; None: give up."""
        return self._backoff(attempt) if attempt < self.max_retries else None

    def after_response(self, attempt: int, response: httpx.Response) -> float | None:
        """The wait before retrying `response`; None: it is the answer."""
        if response.status_code not in RETRIED_STATUSES or attempt >= self.max_retries:
            return None
        told = _retry_after(response.headers.get("retry-after"))
        return min(told, 60.0) if told is not None else self._backoff(attempt)

    def _backoff(self, attempt: int) -> float:
        return random.uniform(0, min(self.cap, self.initial * 2**attempt))


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())
