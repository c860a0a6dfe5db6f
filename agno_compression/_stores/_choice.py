"""Which store keeps the fold records of an agno db, and loading through any store.

The only module of ``_stores`` that knows every backend: the backends know only ``_base``.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy.engine import Engine

from ._base import MERGE_FIELDS, CompressionStore, SessionCompression, merge_rows
from ._redis import RedisStore
from ._session import SessionDataStore
from ._sql import SQLAlchemyStore

# Async agno dbs hold an AsyncEngine; records are written from sync code, so use the sync driver twin.
_SYNC_DRIVERS = {
    "sqlite+aiosqlite": "sqlite",
    "mysql+asyncmy": "mysql+pymysql",
    "mysql+aiomysql": "mysql+pymysql",
    "postgresql+asyncpg": "postgresql+psycopg",
    "postgresql+psycopg_async": "postgresql+psycopg",
}


def store_for(db: Any) -> CompressionStore | None:
    """The store for an agno db, or ``None`` when there is no way to keep records in it.

    ``SqliteDb``, ``PostgresDb`` and ``MySQLDb`` share their engine; ``AsyncSqliteDb`` and ``AsyncPostgresDb``
    get a synchronous engine on the same database (same file or server, same schema). Any other
    synchronous agno db (``JsonDb``, ``InMemoryDb``, ``RedisDb``, ``MongoDb``, ...) keeps the records in
    the session's own ``session_data`` (``SessionDataStore``).
    """
    engine = getattr(db, "db_engine", None) if db is not None else None
    if isinstance(engine, Engine):
        return SQLAlchemyStore.for_agno_db(db)
    url = getattr(engine, "url", None)
    if url is None or url.drivername not in _SYNC_DRIVERS:
        if engine is not None or db is None:
            return None
        if getattr(db, "redis_client", None) is not None:  # RedisDb: an append-only list, safe for many writers
            return RedisStore(db)
        from agno.db.base import BaseDb

        return SessionDataStore(db) if isinstance(db, BaseDb) else None
    sync_url = url.set(drivername=_SYNC_DRIVERS[url.drivername]).render_as_string(hide_password=False)
    return SQLAlchemyStore.from_url(sync_url, schema=getattr(db, "db_schema", None))


def load_counted(store: CompressionStore, session_id: str, stored_ids: Collection[str] | None) -> SessionCompression:
    """``store.load``, counting only rows whose folded messages are stored (any ``CompressionStore``)."""
    if stored_ids is None:
        return store.load(session_id)
    if isinstance(store, (SQLAlchemyStore, SessionDataStore, RedisStore)):
        return store.load(session_id, stored_ids=stored_ids)
    rows = (tuple(getattr(r, k) for k in MERGE_FIELDS) for r in store.events(session_id))
    return merge_rows(rows, stored_ids)
