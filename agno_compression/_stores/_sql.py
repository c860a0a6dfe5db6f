"""Compression records in SQL: one append-only row per fold, in the agent's own database.

The table (default name ``agno_compression_events``) lives next to agno's own tables
(same engine; on PostgreSQL the same schema as the ``PostgresDb``). One row per fold
holds the folded message ids *and* the summary that covers them, so both are written
in one statement and one transaction (invariant 4). Rows are never updated: the folded
set of a session is the union of its rows, the live summary is the newest row's.
Concurrent writers (several processes on one session) therefore lose nothing, and a store
may keep the rows it parsed: a later load of the session reads only the rows it has not seen.

Every value is a bound parameter; every SQLAlchemy error surfaces as ``StoreError``. Reading
agno's side of a session (its runs and messages, stats, snapshots) is ``_sessions``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Collection, Iterable
from dataclasses import dataclass, fields
from typing import Any

from sqlalchemy import Text, bindparam, create_engine, insert, inspect, select, type_coerce
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError, SQLAlchemyError

from .._exceptions import ConfigError, StoreError
from ._base import (
    MERGE_FIELDS,
    BadRows,
    CompressionRecord,
    SessionCompression,
    checked,
    merge_fields,
    merge_rows,
    sid,
    why,
)
from ._leases import SQLLeases
from ._tables import ADDED_COLUMNS, KNOWN_LOCK, KNOWN_TABLES, add_columns, columns_of, known_key, records_table

log = logging.getLogger("agno_compression")

TABLE_NAME = "agno_compression_events"
_LOCK_RETRIES = 5
_CACHED_SESSIONS = 64
"""Sessions whose parsed rows a store keeps (least recently loaded dropped first)."""


def _is_lock_error(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, OperationalError) and ("locked" in text or "busy" in text)


@dataclass
class _Parsed:
    """A session's rows as a store parsed them: (id, created_at) -> the row as ``merge_rows`` reads it."""

    rows: dict[tuple[Any, Any], tuple[Any, ...]]
    merged: tuple[tuple[tuple[Any, Any], ...], SessionCompression] | None = None
    """The merge of every row, and the keys of the rows it merged."""


class SQLAlchemyStore:
    """``CompressionStore`` on any SQLAlchemy engine (SQLite, PostgreSQL and MySQL/MariaDB are tested)."""

    def __init__(self, engine: Engine, *, table_name: str = TABLE_NAME, schema: str | None = None) -> None:
        if not table_name or not table_name.replace("_", "").isalnum():
            raise ConfigError(f"table_name must be letters, digits and underscores, got {table_name!r}")
        self.engine = engine
        self.schema = schema if engine.dialect.name != "sqlite" else None
        self.table = t = records_table(self.schema, table_name)
        self._known = known_key(engine, self.schema, table_name)
        self._ready = False
        self._columns: frozenset[str] = frozenset()
        """The columns the table in the database has (known once ready): an older table may lack ``ADDED_COLUMNS``."""
        self._writable = False
        self._lock = threading.Lock()
        self._insert = insert(t)
        self._keys = select(t.c.id, t.c.created_at).where(t.c.session_id == bindparam("sid")).order_by(t.c.id)
        # folded_ids as the text stored (a driver may still parse it): a row that is not JSON is one bad row, read
        # and named by ``checked``, not an error of the whole statement
        self._ids = type_coerce(t.c.folded_ids, Text).label("folded_ids")
        merged = select(t.c.id, t.c.created_at, *(self._ids if n == "folded_ids" else t.c[n] for n in MERGE_FIELDS[1:]))
        self._rows = merged.where(t.c.session_id == bindparam("sid")).order_by(t.c.id)
        self._rows_from = self._rows.where(t.c.id >= bindparam("first"))
        self._parsed: OrderedDict[str, _Parsed] = OrderedDict()
        """The sessions this store loaded, least recently loaded first (``_read``)."""
        self._parsed_lock = threading.Lock()
        self.bad_rows = BadRows()
        """Rows skipped because a field did not read (``skipped``)."""
        self.leases = SQLLeases(engine, self.schema, table_name)
        """Which runs of a session are going and whether a fold on request holds it (``_leases``)."""

    @classmethod
    def from_url(cls, url: str, *, table_name: str = TABLE_NAME, schema: str | None = None) -> SQLAlchemyStore:
        """A store on a new engine for ``url`` (``sqlite:///file.db``, ``postgresql+psycopg://...``)."""
        try:
            kwargs: dict[str, Any] = {"pool_pre_ping": True}
            if url.startswith("sqlite"):
                kwargs["connect_args"] = {"timeout": 30}
            engine = create_engine(url, **kwargs)
        except (SQLAlchemyError, ImportError, ValueError) as exc:
            raise StoreError(f"cannot open compression store at {url!r}: {exc}") from exc
        return cls(engine, table_name=table_name, schema=schema)

    @classmethod
    def for_agno_db(cls, db: Any, *, table_name: str = TABLE_NAME) -> SQLAlchemyStore:
        """A store on the engine of an agno ``SqliteDb`` or ``PostgresDb`` (same schema as agno's tables)."""
        engine = getattr(db, "db_engine", None)
        if not isinstance(engine, Engine):
            raise StoreError(
                f"{type(db).__name__} has no synchronous SQLAlchemy engine (db_engine); "
                "compression records need SqliteDb, PostgresDb or MySQLDb"
            )
        return cls(engine, table_name=table_name, schema=getattr(db, "db_schema", None))

    # --- schema --------------------------------------------------------------------------------------

    def ensure_table(self) -> None:
        """Create the table and its index if missing; idempotent and safe against concurrent creators.

        Done once per process and database: a table this process created or saw with every column is not
        checked again (a write that then finds it gone creates it again). An older table gets ``ADDED_COLUMNS``.
        """
        if self._writable:
            return
        with self._lock:
            if self._writable:
                return
            if (self._ready or self._seen()) and self._columns.issuperset(ADDED_COLUMNS):
                self._writable = True
                return
            delay = 0.05
            for attempt in range(_LOCK_RETRIES):
                try:
                    self._create()
                    break
                except SQLAlchemyError as exc:
                    # Another process may have created it between our check and our CREATE.
                    try:
                        if inspect(self.engine).has_table(self.table.name, schema=self.schema):
                            break
                    except SQLAlchemyError:
                        pass
                    if attempt + 1 < _LOCK_RETRIES:  # a lock or a concurrent CREATE: bounded retry
                        time.sleep(delay)
                        delay *= 2
                        continue
                    raise StoreError(f"cannot create table {self.table.name!r}: {why(exc)}") from exc
            self._mark_ready(add_columns(self.engine, self.table, ADDED_COLUMNS))
            self._writable = True

    def _seen(self) -> bool:
        """Whether this process already created or saw the table (then this store is ready too)."""
        with KNOWN_LOCK:
            columns = KNOWN_TABLES.get(self._known) if self._known is not None else None
        if columns is None:
            return False
        self._columns, self._ready = columns, True
        return True

    def _mark_ready(self, columns: frozenset[str]) -> None:
        self._columns, self._ready = columns, True
        if self._known is not None:
            with KNOWN_LOCK:
                KNOWN_TABLES[self._known] = columns

    def _table_exists(self) -> bool:
        if self._ready or self._seen():
            return True
        if inspect(self.engine).has_table(self.table.name, schema=self.schema):
            self._mark_ready(columns_of(self.engine, self.table))
        return self._ready

    def _table_lost(self) -> bool:
        """After a failed statement: whether the table is gone (dropped, file replaced); forgets it if so."""
        try:
            if inspect(self.engine).has_table(self.table.name, schema=self.schema):
                return False
        except SQLAlchemyError:
            return False  # the database itself fails: the statement's own error says more
        self._ready = self._writable = False
        with KNOWN_LOCK:
            if self._known is not None:
                KNOWN_TABLES.pop(self._known, None)
        with self._parsed_lock:
            self._parsed.clear()
        return True

    def _create(self) -> None:
        with self.engine.begin() as conn:
            if self.schema is not None and conn.dialect.name in ("postgresql", "mysql", "mariadb"):
                from sqlalchemy.schema import CreateSchema

                conn.execute(CreateSchema(self.schema, if_not_exists=True))
            self.table.metadata.create_all(conn, checkfirst=True)

    # --- writes and reads ----------------------------------------------------------------------------

    def record(self, row: CompressionRecord) -> int:
        """Append one fold in one transaction (folded ids and summary together); returns its id."""
        if not row.session_id:
            raise StoreError("a compression record needs a session_id")
        self.ensure_table()
        # The table's columns are the record's fields; the database assigns ``id``.
        values = {f.name: getattr(row, f.name) for f in fields(CompressionRecord) if f.name in self._columns}
        values.pop("id", None)
        values["folded_ids"] = list(row.folded_ids)
        delay = 0.05
        recreated = False
        for attempt in range(_LOCK_RETRIES):
            try:
                with self.engine.begin() as conn:  # one statement, one transaction, no existence check first
                    pk = conn.execute(self._insert, values).inserted_primary_key
                row.id = int(pk[0]) if pk is not None and pk[0] is not None else None
                return row.id or 0
            except SQLAlchemyError as exc:
                if _is_lock_error(exc) and attempt + 1 < _LOCK_RETRIES:
                    time.sleep(delay)
                    delay *= 2
                    continue
                if not recreated and attempt + 1 < _LOCK_RETRIES and self._table_lost():
                    recreated = True
                    self.ensure_table()
                    continue
                raise StoreError(f"cannot record a fold for session {sid(row.session_id)}: {why(exc)}") from exc
        raise StoreError("unreachable")  # pragma: no cover

    def events(self, session_id: str) -> list[CompressionRecord]:
        """Every fold of ``session_id``, oldest first."""
        try:
            if not self._table_exists():
                return []
            t = self.table
            columns = (self._ids if c.name == "folded_ids" else c for c in t.columns if c.name in self._columns)
            query = select(*columns)  # an older table lacks some
            with self.engine.connect() as conn:
                rows = conn.execute(query.where(t.c.session_id == session_id).order_by(t.c.id)).mappings().all()
        except SQLAlchemyError as exc:
            if self._table_lost():
                return []
            raise StoreError(f"cannot read compression records of session {sid(session_id)}: {why(exc)}") from exc
        names = [f.name for f in fields(CompressionRecord) if f.name in self._columns]
        values = (checked({n: r[n] for n in names}, session_id, self.bad_rows) for r in rows)
        return [CompressionRecord(**v) for v in values if v is not None]

    def skipped(self, session_id: str) -> list[str]:
        """The rows of ``session_id`` this store skipped because a field did not read, each named."""
        return self.bad_rows.notes(session_id)

    def load(self, session_id: str, stored_ids: Collection[str] | None = None) -> SessionCompression:
        """Folded set = union of the session's rows; summary = the newest row's.

        With ``stored_ids`` (``stored_ids_of``) a row counts only when its run or every message it folded
        is stored: a run that died before agno saved it leaves no summary behind.
        """
        try:
            if not self._table_exists():
                return SessionCompression(frozenset(), None, 0)
            parsed, keys = self._read(session_id)
            rows = [parsed.rows[k] for k in keys]
            if stored_ids is not None:
                # merge_rows' rule, row by row; usually every row counts and the merge below is reused.
                counted = [r for r in rows if r[1] in stored_ids or all(map(stored_ids.__contains__, r[2]))]
                if len(counted) < len(rows):  # rare (a run died unstored): the parsed rows keep only the newest summary
                    with self.engine.connect() as conn:
                        fetched = [dict(r) for r in conn.execute(self._rows, {"sid": session_id}).mappings()]
                        return merge_rows(merge_fields(fetched, session_id, self.bad_rows), stored_ids)
        except SQLAlchemyError as exc:
            if self._table_lost():
                return SessionCompression(frozenset(), None, 0)
            raise StoreError(f"cannot read compression records of session {sid(session_id)}: {why(exc)}") from exc
        merged = parsed.merged
        if merged is None or merged[0] != keys:
            merged = parsed.merged = (keys, merge_rows(rows))
        return merged[1]

    def forget(self, session_ids: Iterable[str]) -> None:
        """Drop the rows this store parsed of ``session_ids`` (their rows were deleted: no summary stays in memory)."""
        with self._parsed_lock:
            for session_id in session_ids:
                self._parsed.pop(session_id, None)

    def _read(self, session_id: str) -> tuple[_Parsed, tuple[tuple[Any, Any], ...]]:
        """The session's parsed rows and the keys of its rows now, oldest first; parses only rows not seen before.

        Rows never change, so a row parsed once stays right while a row of that id and ``created_at`` exists
        (the pair tells it from a row written under a reused id after a delete). The first load of a session
        reads every row; later loads read the keys, then only the rows from the first new one on.
        """
        with self._parsed_lock:
            parsed = self._parsed.get(session_id)
        keys: tuple[tuple[Any, Any], ...] | None = None
        missing: list[Any] = []
        with self.engine.connect() as conn:
            if parsed is not None:
                keys = tuple((r[0], r[1]) for r in conn.execute(self._keys, {"sid": session_id}))
                missing = [k[0] for k in keys if k not in parsed.rows]
                if len(keys) - len(missing) < len(parsed.rows):  # rows were deleted (the one summary kept, maybe)
                    parsed, missing = None, []
            fetched = conn.execute(self._rows, {"sid": session_id}).all() if parsed is None else []
            if missing:
                fetched = conn.execute(self._rows_from, {"sid": session_id, "first": min(missing)}).all()
        new = {}
        for r in fetched:  # a row that does not read is skipped and named, as if it were not there
            row = checked(dict(zip(("id", "created_at", *MERGE_FIELDS[1:]), r, strict=True)), session_id, self.bad_rows)
            if row is not None:
                new[(r[0], r[1])] = (r[0], *(tuple(row[k]) if k == "folded_ids" else row[k] for k in MERGE_FIELDS[1:]))
        if parsed is None:
            parsed, keys = _Parsed(new), tuple(new)
        elif new:
            parsed = _Parsed({**parsed.rows, **new})
        if new:  # only the newest summary is merged: a long session's older ones need not stay in memory
            newest = max((k for k, r in parsed.rows.items() if r[3]), default=None)
            parsed.rows.update({k: (*r[:3], None, *r[4:]) for k, r in parsed.rows.items() if r[3] and k != newest})
        with self._parsed_lock:
            self._parsed[session_id] = parsed
            self._parsed.move_to_end(session_id)
            while len(self._parsed) > _CACHED_SESSIONS:
                self._parsed.popitem(last=False)
        assert keys is not None
        return parsed, tuple(k for k in keys if k in parsed.rows)
