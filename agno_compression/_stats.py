"""The manager's counters (``CompressionManager.stats``).

A ``dict`` because agno reads it as one: it copies it into each streamed compression event and its
printer (``print_response``, agents and teams, sync, async, streamed) calls ``stats.clear()`` after
showing a response, to reset agno's own display counters (``tool_results_compressed``,
``original_size``, ``compressed_size``). Those are agno's, so ``clear()`` removes them and nothing
else: every documented counter exists from the start and counts from construction on.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .pricing import reported_usage

if TYPE_CHECKING:
    from agno.models.message import Message

    from .pricing import PriceModel

log = logging.getLogger("agno_compression")

COUNTED_CALLS = 1_024
"""Model calls whose usage is remembered as counted (a paused run is counted when it pauses, not again when it
continues). Kept as hashes of the message ids, so the memory this takes levels off early in a long session."""

STATS_KEYS: tuple[str, ...] = (
    "folds",
    "masks",
    "shortened",
    "messages_folded",
    "tokens_saved",
    "summarizer_calls",
    "summarizer_failures",
    "background_summaries",
    "background_misses",
    "background_late_tokens",
    "overflow_retries",
    "budget_too_small",
    "observations_rewritten",
    "observation_chars_saved",
    "records_written",
    "records_skipped",
    "record_failures",
    "bookkeeping_failures",
    "events_dropped",
    "prompt_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "billed_input_tokens",
    "request_folds",
    "agent_folds",
    "provider_compaction",
)
"""The counters of ``CompressionManager.stats`` (documented in docs/configuration.md)."""


class Stats(dict[str, Any]):
    """Counters by name; ``clear()`` (agno's printer calls it) leaves ours alone."""

    def __init__(self, initial: dict[str, Any] | None = None) -> None:
        super().__init__(initial or {})
        self._counted: OrderedDict[int, None] = OrderedDict()
        self._lock = threading.Lock()
        self._failed: set[str] = set()
        for key in STATS_KEYS:
            self.setdefault(key, 0)

    def add(self, key: str, amount: int = 1) -> None:
        """Add ``amount`` to the counter ``key``."""
        self[key] = self.get(key, 0) + amount

    def count_usage(self, messages: Iterable[Message], price: PriceModel) -> None:
        """Add what the provider reported for the model calls among ``messages`` (a run's own assistant messages,
        each once): whole prompts with cache reads and writes, those reads and writes, and the input billed at
        ``price``."""
        for m in messages:
            if m.role != "assistant" or m.from_history or m.metrics is None:
                continue
            usage = reported_usage(m.metrics, price)
            if not usage.prompt or not self._first_time(hash(m.id) if m.id else id(m)):
                continue
            self.add("prompt_tokens", usage.prompt)
            self.add("cache_read_tokens", usage.read)
            self.add("cache_write_tokens", usage.written + usage.written_long)
            self.add("billed_input_tokens", round(usage.billed(price)))

    def guard(self, what: str, action: Callable[[], object]) -> None:
        """Run one bookkeeping step after a run's messages are restored (usage, accounting, events): a failure
        costs that step alone, counted in ``bookkeeping_failures`` and logged once per step, by its type only (the
        message of an error may quote session text)."""
        try:
            action()
        except Exception as exc:
            self.add("bookkeeping_failures")
            if what not in self._failed:
                self._failed.add(what)
                log.warning("agno-compression: %s failed (%s); the run is unaffected", what, type(exc).__name__)

    def _first_time(self, key: int) -> bool:
        with self._lock:
            if key in self._counted:
                return False
            self._counted[key] = None
            while len(self._counted) > COUNTED_CALLS:
                self._counted.popitem(last=False)
            return True

    def clear(self) -> None:
        """Remove every key that is not one of ``STATS_KEYS`` (agno's own counters); ours keep their counts."""
        for key in [k for k in self if k not in STATS_KEYS]:
            del self[key]
