"""Fold-record stores: what every store shares (``_base``), the backends and which one an agno db gets.

The backends are interchangeable ``CompressionStore``s: the SQL table (``_sql``, its columns in ``_tables``),
agno's own session row (``_session``) and a Redis list (``_redis``). ``_choice`` picks one for an agno db.
"""

from ._base import (
    MERGE_FIELDS,
    SCHEMA_VERSION,
    CompressionRecord,
    CompressionStore,
    SessionCompression,
    merge_rows,
    usage_dict,
)
from ._choice import load_counted, store_for
from ._redis import RedisStore
from ._session import EVENTS_KEY, SessionDataStore, agno_session
from ._sql import TABLE_NAME, SQLAlchemyStore

__all__ = [
    "EVENTS_KEY",
    "MERGE_FIELDS",
    "SCHEMA_VERSION",
    "TABLE_NAME",
    "CompressionRecord",
    "CompressionStore",
    "RedisStore",
    "SQLAlchemyStore",
    "SessionCompression",
    "SessionDataStore",
    "agno_session",
    "load_counted",
    "merge_rows",
    "store_for",
    "usage_dict",
]
