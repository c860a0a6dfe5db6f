"""What every store of fold records shares: the record, the merged state of a session and how rows merge.

A store keeps one append-only row per fold, holding the folded message ids *and* the summary that covers
them (invariant 4). Rows are never updated: the folded set of a session is the union of its rows, the live
summary is the newest row's (``merge_rows``). The backends (SQL table, agno's session row, Redis list)
differ only in where the rows live.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, runtime_checkable

log = logging.getLogger("agno_compression")

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
    run_ids: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    """The runs with a row, counted or not (a run that runs again under its id finds its earlier attempt's)."""


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
    runs: set[str] = set()
    for row_id, run_id, ids, text, before, after in rows:
        row_ids = tuple(map(str, ids or ()))
        if run_id:
            runs.add(str(run_id))
        if stored_ids is not None and run_id not in stored_ids and not all(map(stored_ids.__contains__, row_ids)):
            continue
        folded.update(row_ids)
        saved += max(0, int(before or 0) - int(after or 0))
        folds += 1
        newest = row_id
        if text:
            summary = text
    return SessionCompression(frozenset(folded), summary, folds, newest, saved, frozenset(runs))


MERGE_FIELDS = ("id", "run_id", "folded_ids", "summary", "tokens_before", "tokens_after")
"""The fields of a stored row ``merge_rows`` reads, in its order."""


def records_of(rows: Iterable[dict[str, Any]], session_id: str, bad: BadRows) -> list[CompressionRecord]:
    """``CompressionRecord``s from rows stored as JSON objects (Redis, agno's session row); unknown keys ignored,
    a row that does not read skipped and named (``bad``)."""
    names = {f.name for f in fields(CompressionRecord)}
    records = []
    for raw in rows:
        values = checked(raw, session_id, bad)
        if values is not None:
            records.append(CompressionRecord(**{k: v for k, v in values.items() if k in names}))
    return records


def merge_fields(rows: Iterable[Mapping[str, Any]], session_id: str, bad: BadRows) -> Iterable[tuple[Any, ...]]:
    """``rows`` as ``merge_rows`` reads them, those that do not read skipped and named (``bad``)."""
    for raw in rows:
        values = checked(raw, session_id, bad)
        if values is not None:
            yield tuple(values.get(k) for k in MERGE_FIELDS)


def checked(row: Mapping[str, Any], session_id: str, bad: BadRows) -> dict[str, Any] | None:
    """``row`` with its folded ids as a list of strings and its counts as ints, or ``None`` (and the row named in
    ``bad``) when a field does not read: a store's other rows and sessions are unaffected by one bad row."""
    try:
        return {**row, **_fields(row)}
    except ValueError as exc:
        bad.add(session_id, row.get("id"), str(exc))
        return None


def _fields(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"folded_ids": folded_ids_of(row.get("folded_ids"))}
    for name in ("tokens_before", "tokens_after", "call_index", "budget"):
        value = row.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            if not (isinstance(value, str) and value.strip().lstrip("-").isdigit()):
                raise ValueError(f"{name} is not a count ({type(value).__name__})")
            value = int(value)
        out[name] = value
    summary = row.get("summary")
    if summary is not None and not isinstance(summary, str):
        raise ValueError(f"summary is not text ({type(summary).__name__})")
    return out


def folded_ids_of(value: Any) -> list[str]:
    """A stored ``folded_ids`` value (a list, or its JSON text where the driver leaves JSON unparsed) as ids."""
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError("folded_ids is not JSON") from None
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(i, (str, int)) and not isinstance(i, bool) for i in value):
        raise ValueError(f"folded_ids is not a list of message ids ({type(value).__name__})")
    return [str(i) for i in value]


class BadRows:
    """The rows a store skipped because a field did not read, by session: each named once in the log (session,
    record id, what is wrong, never the row's text) and kept for the note the views show (``notes``)."""

    SESSIONS = 256

    def __init__(self) -> None:
        self._notes: OrderedDict[str, dict[Any, str]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, session_id: str, record_id: Any, problem: str) -> None:
        with self._lock:
            notes = self._notes.setdefault(session_id, {})
            self._notes.move_to_end(session_id)
            while len(self._notes) > self.SESSIONS:
                self._notes.popitem(last=False)
            if record_id in notes:
                return
            notes[record_id] = problem
        log.warning(
            "agno-compression: skipped fold record %s of session %s: %s (the session's other records still count)",
            record_id,
            sid(session_id),
            problem,
        )

    def notes(self, session_id: str) -> list[str]:
        """``"record 7: folded_ids is not JSON"`` for each row of ``session_id`` skipped so far."""
        with self._lock:
            return [f"record {i}: {problem}" for i, problem in self._notes.get(session_id, {}).items()]


def why(exc: BaseException) -> str:
    """A database error without the statement and its parameters (they hold summaries and ids: session text)."""
    orig = getattr(exc, "orig", None)
    text = f"{type(orig).__name__}: {orig}" if orig is not None else type(exc).__name__
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:199] + "…"


def sid(session_id: str) -> str:
    return repr(session_id if len(session_id) <= 80 else session_id[:79] + "…")


def usage_dict(metrics: Any) -> dict[str, Any] | None:
    """A JSON-safe dict of a summarizer call's usage (``MessageMetrics`` or anything with ``to_dict``)."""
    if metrics is None:
        return None
    try:
        raw = metrics.to_dict() if hasattr(metrics, "to_dict") else dict(vars(metrics))
    except Exception:
        return None
    return {k: v for k, v in raw.items() if isinstance(v, (int, float, str, bool)) or v is None}
