"""The manager's counters (``CompressionManager.stats``).

A ``dict`` because agno reads it as one: it copies it into each model response's metrics and
clears it after printing a team's response. Every documented key exists from the start, at 0.
"""

from __future__ import annotations

from typing import Any

STATS_KEYS: tuple[str, ...] = (
    "folds",
    "masks",
    "shortened",
    "messages_folded",
    "tokens_saved",
    "summarizer_calls",
    "summarizer_failures",
    "overflow_retries",
    "observations_rewritten",
    "observation_chars_saved",
    "records_written",
    "records_skipped",
    "record_failures",
    "events_dropped",
)
"""The counters of ``CompressionManager.stats`` (documented in docs/configuration.md)."""


class Stats(dict[str, Any]):
    """Counters by name; ``add`` works after agno cleared them too."""

    def __init__(self, initial: dict[str, Any] | None = None) -> None:
        super().__init__(initial or {})
        for key in STATS_KEYS:
            self.setdefault(key, 0)

    def add(self, key: str, amount: int = 1) -> None:
        """Add ``amount`` to the counter ``key``."""
        self[key] = self.get(key, 0) + amount
