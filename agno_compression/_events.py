"""A fold as the manager reports it (``FoldEvent``), and the window of the newest ones a manager keeps."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ._stats import Stats


@dataclass
class FoldEvent:
    """One fold (or masking pass) done during a run."""

    strategy: str
    """What acted: ``"mask"``, a summarizer's name, or ``"<name>->extractive"`` after a fallback."""
    folded_ids: list[str]
    """Ids of the messages folded away (empty for a masking pass)."""
    masked_ids: list[str]
    """Ids of tool results masked in place."""
    shortened_ids: list[str]
    """Ids of kept tool results shortened in context because they alone exceeded the budget."""
    summary: str | None
    """The summary text injected, if any."""
    tokens_before: int
    """Prompt tokens before the fold."""
    tokens_after: int
    """Prompt tokens after the fold."""
    created_at: float = field(default_factory=time.time)
    """Unix time of the fold."""
    summarizer_model: str | None = None
    """Id of the model that wrote the summary, if a model did."""
    summarizer_usage: dict[str, Any] | None = None
    """Token usage of the summarizer call, if a model wrote the summary."""
    record_id: int | None = None
    """Id of the stored compression record, once written."""
    call_index: int | None = None
    """Which model call of the run (1-based) the fold came before (an overflow retry: the call that overflowed)."""
    budget: int | None = None
    """``compress_at_tokens`` when the fold was made: ``tokens_before`` above it means the budget forced the fold,
    at or below it that the fold paid for the prompt cache it broke (strategy ``overflow:...``: a retry)."""


EVENTS_WINDOW = 64
"""``FoldEvent``s a manager keeps in ``events`` (the newest; each holds its summary text and folded ids);
older ones are counted in ``stats["events_dropped"]``. The store keeps every fold with a summary (``stats``)."""


def keep_event(events: list[FoldEvent], event: FoldEvent, stats: Stats) -> None:
    """Append ``event`` to a manager's ``events``, dropping (and counting) the oldest beyond ``EVENTS_WINDOW``."""
    events.append(event)
    if len(events) > EVENTS_WINDOW:
        dropped = len(events) - EVENTS_WINDOW
        del events[:dropped]
        stats.add("events_dropped", dropped)
