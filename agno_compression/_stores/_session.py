"""Compression records in agno's own session storage, for agno databases without SQL (JSON, in-memory, Redis, ...).

Every agno db persists a session's ``session_data`` dict, so the fold rows live there, under
``session_data["agno_compression_events"]``, with the same ``record``/``load`` semantics as the SQL
table (folded set = union of the rows, live summary = the newest row's).

A fold is appended to the session object of the run that folded (bound by the manager when the
run starts), and agno writes it with the session: at the end of the run and at every
``checkpoint="tool-batch"`` checkpoint. A record is therefore stored together with the messages it
folded, never before them. Without a bound session (snapshots, scripts) the row is written by
reading the session and upserting it back. ``agno_session`` reads a session from any agno db.

Concurrency: agno upserts a session row as a whole, so two processes writing one session at
once on such a db race and the last writer's rows win. Use a SQL db (SQLite, PostgreSQL, MySQL)
when several processes share sessions.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable
from dataclasses import fields
from typing import Any

from sqlalchemy.engine import Engine

from .._exceptions import ConfigError, StoreError
from ._base import BadRows, CompressionRecord, SessionCompression, merge_fields, merge_rows, records_of, sid, why

EVENTS_KEY = "agno_compression_events"
_MAX_BOUND = 256


def agno_session(db: Any, session_id: str) -> tuple[Any, Any]:
    """The agno session ``session_id`` (agent, team or workflow) and its type, or ``(None, None)``."""
    from agno.db.base import SessionType

    if not isinstance(getattr(db, "db_engine", None), Engine) and getattr(db, "db_engine", None) is not None:
        raise ConfigError(
            f"{type(db).__name__} is asynchronous; open the same database with SqliteDb or PostgresDb to read sessions"
        )
    from agno.session import TeamSession, WorkflowSession

    try:
        # No type given: agno reads the row's stored session_type. Asking for a type does not filter;
        # agno would deserialize a workflow or team row as whatever class was asked for.
        session = db.get_session(session_id=session_id, session_type=None)
    except Exception as exc:
        raise StoreError(f"cannot read session {sid(session_id)}: {why(exc)}") from exc
    if session is None:
        return None, None
    if isinstance(session, WorkflowSession):
        return session, SessionType.WORKFLOW
    return session, SessionType.TEAM if isinstance(session, TeamSession) else SessionType.AGENT


class SessionDataStore:
    """``CompressionStore`` kept in ``session.session_data`` through agno's own db API (any sync agno db)."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self._bound: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.bad_rows = BadRows()

    def bind(self, session: Any) -> None:
        """Keep ``session`` (the object agno will save for the running run) as the place for its folds."""
        session_id = getattr(session, "session_id", None)
        if not session_id:
            return
        with self._lock:
            self._bound[str(session_id)] = session
            self._bound.move_to_end(str(session_id))
            while len(self._bound) > _MAX_BOUND:
                self._bound.popitem(last=False)

    def forget(self, session_ids: Iterable[str]) -> None:
        """Stop writing folds of ``session_ids`` into the session objects bound for them (the sessions were deleted)."""
        with self._lock:
            for session_id in session_ids:
                self._bound.pop(session_id, None)

    def _rows_of(self, session: Any) -> list[dict[str, Any]]:
        data = session.session_data if isinstance(session.session_data, dict) else {}
        rows = data.get(EVENTS_KEY)
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def record(self, row: CompressionRecord) -> int:
        """Append one fold to the session's ``session_data``; returns its id (1, 2, ... per session)."""
        if not row.session_id:
            raise StoreError("a compression record needs a session_id")
        with self._lock:
            bound = self._bound.get(row.session_id)
        session = bound if bound is not None else agno_session(self.db, row.session_id)[0]
        if session is None:
            raise StoreError(f"no agno session {row.session_id!r} to keep the fold in")
        with self._lock:
            data = session.session_data if isinstance(session.session_data, dict) else {}
            rows = list(self._rows_of(session))
            row.id = max((int(r.get("id") or 0) for r in rows), default=0) + 1
            values = {f.name: getattr(row, f.name) for f in fields(CompressionRecord)}
            values["folded_ids"] = list(row.folded_ids)
            rows.append(values)
            data[EVENTS_KEY] = rows
            session.session_data = data
        if bound is None:  # nobody will save this session for us: write it now
            try:
                self.db.upsert_session(session)
            except Exception as exc:
                raise StoreError(f"cannot record a fold for session {sid(row.session_id)}: {why(exc)}") from exc
        return row.id

    def drop_run(self, session_id: str, run_id: str) -> int:
        """Remove the rows of one run (an earlier attempt of a run that runs again) from the session agno will save
        for this run, or from its stored row; returns how many."""
        with self._lock:
            bound = self._bound.get(session_id)
        session = bound if bound is not None else agno_session(self.db, session_id)[0]
        if session is None:
            return 0
        with self._lock:
            data = session.session_data if isinstance(session.session_data, dict) else {}
            rows = data.get(EVENTS_KEY)
            if not isinstance(rows, list):
                return 0
            kept = [r for r in rows if not (isinstance(r, dict) and r.get("run_id") == run_id)]
            data[EVENTS_KEY] = kept
        if bound is None and len(kept) < len(rows):
            try:
                self.db.upsert_session(session)
            except Exception as exc:
                raise StoreError(f"cannot delete the records of an earlier attempt of a run: {why(exc)}") from exc
        return len(rows) - len(kept)

    def rows(self, session_id: str) -> list[dict[str, Any]]:
        """The session's stored rows, as kept in ``session_data`` (oldest first)."""
        with self._lock:
            bound = self._bound.get(session_id)
        session = bound if bound is not None else agno_session(self.db, session_id)[0]
        return list(self._rows_of(session)) if session is not None else []

    def events(self, session_id: str) -> list[CompressionRecord]:
        """Every fold of ``session_id``, oldest first."""
        return records_of(self.rows(session_id), session_id, self.bad_rows)

    def load(self, session_id: str, stored_ids: Collection[str] | None = None) -> SessionCompression:
        """Folded set = union of the session's rows; summary = the newest row's (see ``SQLAlchemyStore.load``)."""
        return merge_rows(merge_fields(self.rows(session_id), session_id, self.bad_rows), stored_ids)

    def skipped(self, session_id: str) -> list[str]:
        """The rows of ``session_id`` this store skipped because a field did not read, each named."""
        return self.bad_rows.notes(session_id)
