"""Session leases: which runs of a session are going, and whether a fold on request holds it.

A fold on request (``_requested_fold``) must not fold a session's history while a run of that session is going
(the run loaded the history before the fold and would fold the same span again, or write a summary that knows
nothing of the requested one). Both sides announce themselves before they look at the other (take, then check),
so with any order of commits at least one of them sees the other: the fold then refuses or waits, the run waits
for the fold to end and loads its summary.

On a SQL store the leases are rows of a small table beside the records table (``agno_compression_leases``), so
processes and hosts sharing the database see each other; a lease has an expiry, so a process that died leaves
nothing that blocks for long. Other stores get ``LocalLeases``: one process only (documented).
"""

from __future__ import annotations

import functools
import threading
import time
from typing import Protocol

from sqlalchemy import Column, Float, MetaData, String, Table, and_, delete, insert, select
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from .._exceptions import StoreError
from ._base import sid, why

FOLD = "fold"
"""The one holder of a session's fold lease (a second fold of the session cannot take it)."""
RUN = "run"
LEASES_TABLE = "agno_compression_leases"
"""The leases' table beside the default records table (``<table_name>_leases`` beside another)."""


class Leases(Protocol):
    """Run and fold leases of sessions."""

    def take(self, session_id: str, holder: str, kind: str, ttl: float) -> bool:
        """Take a lease for ``ttl`` seconds. A run lease is always taken (runs do not exclude each other); the fold
        lease only when no other live fold lease holds the session."""
        ...

    def release(self, session_id: str, holder: str) -> None: ...

    def live(self, session_id: str, kind: str) -> list[str]:
        """Holders of the session's unexpired leases of ``kind``."""
        ...


class LocalLeases:
    """Leases in this process's memory (stores without a shared table: agno's session row, Redis)."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, str], tuple[str, float]] = {}
        self._lock = threading.Lock()

    def take(self, session_id: str, holder: str, kind: str, ttl: float) -> bool:
        now = time.time()
        with self._lock:
            held = self._held.get((session_id, holder))
            if kind == FOLD and held is not None and held[1] > now:
                return False
            self._held[(session_id, holder)] = (kind, now + ttl)
            return True

    def release(self, session_id: str, holder: str) -> None:
        with self._lock:
            self._held.pop((session_id, holder), None)

    def live(self, session_id: str, kind: str) -> list[str]:
        now = time.time()
        with self._lock:
            return [h for (s, h), (k, until) in self._held.items() if s == session_id and k == kind and until > now]


@functools.lru_cache(maxsize=64)
def leases_table(schema: str | None, name: str) -> Table:
    return Table(
        name,
        MetaData(schema=schema),
        Column("session_id", String(255), primary_key=True),
        Column("holder", String(255), primary_key=True),
        Column("kind", String(16), nullable=False),
        Column("expires_at", Float().with_variant(mysql.DOUBLE(), "mysql", "mariadb"), nullable=False),
    )


class SQLLeases:
    """Leases as rows of ``<records table>_leases`` on the records' engine: shared by every process on it."""

    def __init__(self, engine: Engine, schema: str | None, records_table: str) -> None:
        self.engine = engine
        name = LEASES_TABLE if records_table == "agno_compression_events" else f"{records_table}_leases"
        self.table = leases_table(schema, name)
        self._created = False

    def _ensure(self) -> None:
        if not self._created:
            self.table.metadata.create_all(self.engine, checkfirst=True)
            self._created = True

    def take(self, session_id: str, holder: str, kind: str, ttl: float) -> bool:
        t, now = self.table, time.time()
        row = {"session_id": session_id, "holder": holder, "kind": kind, "expires_at": now + ttl}
        mine = and_(t.c.session_id == session_id, t.c.holder == holder)
        # One transaction: an expired lease of this holder (a process that died) goes, and a run that runs again under
        # its id renews its own; a live fold lease makes the insert fail on the primary key and the whole roll back.
        gone = and_(mine, t.c.expires_at < now) if kind == FOLD else mine
        try:
            self._ensure()
            try:
                with self.engine.begin() as conn:
                    conn.execute(delete(t).where(gone))
                    conn.execute(insert(t), row)
            except IntegrityError:  # another fold holds the session
                return False
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot take a lease on session {sid(session_id)}: {why(exc)}") from exc
        return True

    def release(self, session_id: str, holder: str) -> None:
        t = self.table
        try:
            self._ensure()
            with self.engine.begin() as conn:
                conn.execute(delete(t).where(t.c.session_id == session_id, t.c.holder == holder))
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot release a lease on session {sid(session_id)}: {why(exc)}") from exc

    def live(self, session_id: str, kind: str) -> list[str]:
        t = self.table
        query = select(t.c.holder).where(t.c.session_id == session_id, t.c.kind == kind, t.c.expires_at > time.time())
        try:
            self._ensure()
            with self.engine.connect() as conn:
                return [str(h) for h in conn.execute(query).scalars()]
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot read the leases of session {sid(session_id)}: {why(exc)}") from exc


_LOCAL = LocalLeases()


def leases_of(store: object) -> Leases:
    """The leases that go with ``store``: its own (a SQL store's table), else this process's."""
    own = getattr(store, "leases", None)
    return own if own is not None else _LOCAL
