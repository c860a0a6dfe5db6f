"""The manager's counters (``CompressionManager.stats``).

A ``dict`` because agno reads it as one: it copies it into each streamed compression event and its
printer (``print_response``, agents and teams, sync, async, streamed) calls ``stats.clear()`` after
showing a response, to reset agno's own display counters (``tool_results_compressed``,
``original_size``, ``compressed_size``). Those are agno's, so ``clear()`` removes them and nothing
else: every documented counter exists from the start and counts from construction on.
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
    """Counters by name; ``clear()`` (agno's printer calls it) leaves ours alone."""

    def __init__(self, initial: dict[str, Any] | None = None) -> None:
        super().__init__(initial or {})
        for key in STATS_KEYS:
            self.setdefault(key, 0)

    def add(self, key: str, amount: int = 1) -> None:
        """Add ``amount`` to the counter ``key``."""
        self[key] = self.get(key, 0) + amount

    def clear(self) -> None:
        """Remove every key that is not one of ``STATS_KEYS`` (agno's own counters); ours keep their counts."""
        for key in [k for k in self if k not in STATS_KEYS]:
            del self[key]
