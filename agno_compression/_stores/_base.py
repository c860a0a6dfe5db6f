"""What every store of fold records shares: the record, the merged state of a session and how rows merge.

A store keeps one append-only row per fold, holding the folded message ids *and* the summary that covers
them (invariant 4). Rows are never updated: the folded set of a session is the union of its rows, the live
summary is the newest row's (``merge_rows``). The backends (SQL table, agno's session row, Redis list)
differ only in where the rows live.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, runtime_checkable

SCHEMA_VERSION = 1


@dataclass
class CompressionRecord:
    """One fold as stored: the row written to ``agno_compression_events``."""

    session_id: str
    folded_ids: list[str]
    summary: str | None
    strategy: str
    owner_type: str = "agent"
    """``"agent"`` or ``"team"``."""
    owner_id: str | None = None
    run_id: str | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    summarizer_model: str | None = None
    summarizer_usage: dict[str, Any] | None = None
    created_at: float = field(default_factory=time.time)
    schema_version: int = SCHEMA_VERSION
    id: int | None = None
    """Assigned by the database on insert."""
    call_index: int | None = None
    """Which model call of its run (1-based) the fold came before; ``None`` in records older than this field."""
    budget: int | None = None
    """``compress_at_tokens`` when the fold was made; ``None`` in records older than this field."""


@dataclass(frozen=True)
class SessionCompression:
    """A session's compression state, merged over all of its rows."""

    folded_ids: frozenset[str]
    """Union of every row's folded ids."""
    summary: str | None
    """The newest row's summary (``None`` before the first fold)."""
    folds: int
    """Number of rows."""
    newest_id: int | None = None
    """Id of the newest row."""
    tokens_saved: int = 0
    """Sum over the rows of prompt tokens before minus after the fold."""


@runtime_checkable
class CompressionStore(Protocol):
    """Where fold records go. ``SQLAlchemyStore`` is the implementation; tests may pass their own."""

    def record(self, row: CompressionRecord) -> int:
        """Append one fold; returns its id. Raises ``StoreError``."""
        ...

    def load(self, session_id: str) -> SessionCompression:
        """The merged compression state of a session. Raises ``StoreError``."""
        ...

    def events(self, session_id: str) -> list[CompressionRecord]:
        """Every fold of a session, oldest first. Raises ``StoreError``."""
        ...


def merge_rows(
    rows: Iterable[Sequence[Any]],
    stored_ids: Collection[str] | None = None,
) -> SessionCompression:
    """Merge ``(id, run_id, folded_ids, summary, tokens_before, tokens_after)`` rows, oldest first.

    With ``stored_ids`` (``stored_ids_of``), a row counts only when its run is stored or every message it
    folded is: a run killed before agno stored it leaves no summary behind. (A stored run counts whole, as
    agno may leave some of its messages out of storage, e.g. ``store_tool_messages=False``.)
    """
    folded: set[str] = set()
    summary: str | None = None
    saved = folds = 0
    newest: int | None = None
    for row_id, run_id, ids, text, before, after in rows:
        row_ids = tuple(map(str, ids or ()))
        if stored_ids is not None and run_id not in stored_ids and not all(map(stored_ids.__contains__, row_ids)):
            continue
        folded.update(row_ids)
        saved += max(0, int(before or 0) - int(after or 0))
        folds += 1
        newest = row_id
        if text:
            summary = text
    return SessionCompression(frozenset(folded), summary, folds, newest, saved)


MERGE_FIELDS = ("id", "run_id", "folded_ids", "summary", "tokens_before", "tokens_after")
"""The fields of a stored row ``merge_rows`` reads, in its order."""


def records_of(rows: Iterable[dict[str, Any]]) -> list[CompressionRecord]:
    """``CompressionRecord``s from rows stored as JSON objects (Redis, agno's session row); unknown keys ignored."""
    names = {f.name for f in fields(CompressionRecord)}
    records = []
    for raw in rows:
        record = CompressionRecord(**{k: v for k, v in raw.items() if k in names})
        record.folded_ids = [str(i) for i in record.folded_ids or []]
        records.append(record)
    return records


def usage_dict(metrics: Any) -> dict[str, Any] | None:
    """A JSON-safe dict of a summarizer call's usage (``MessageMetrics`` or anything with ``to_dict``)."""
    if metrics is None:
        return None
    try:
        raw = metrics.to_dict() if hasattr(metrics, "to_dict") else dict(vars(metrics))
    except Exception:
        return None
    return {k: v for k, v in raw.items() if isinstance(v, (int, float, str, bool)) or v is None}
