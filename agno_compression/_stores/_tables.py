"""The records table's shape: its columns, the ones added since its first release, and the tables this process knows.

A column added later is nullable, so an older table still reads (its rows get ``None``) and older code still
writes to a newer table. ``add_columns`` brings an older table up to date the first time a store writes to it;
a read-only reader only asks which columns there are (``columns_of``).
"""

from __future__ import annotations

import functools
import logging
import threading

from sqlalchemy import JSON, Column, Float, Index, Integer, MetaData, String, Table, Text, inspect, text
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

log = logging.getLogger("agno_compression")

ADDED_COLUMNS = ("call_index", "budget")
"""Nullable columns added after the table's first release (``CompressionRecord.call_index`` and ``.budget``)."""

KNOWN_TABLES: dict[tuple[str, str | None, str], frozenset[str]] = {}
"""Tables this process created or saw, by database URL, schema and name: the columns each has."""
KNOWN_LOCK = threading.Lock()


@functools.lru_cache(maxsize=64)
def records_table(schema: str | None, name: str) -> Table:
    """The table's definition. One ``Table`` per schema and name for the whole process: SQLAlchemy caches compiled
    statements per ``Table``, so a new store (a new agent or db object) on the same engine compiles nothing again."""
    return Table(
        name,
        MetaData(schema=schema),
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("session_id", String(255), nullable=False),
        Column("owner_type", String(16), nullable=False),
        Column("owner_id", String(255), nullable=True),
        Column("run_id", String(255), nullable=True),
        # MySQL's FLOAT is single precision (a unix time would lose minutes): DOUBLE there.
        Column("created_at", Float().with_variant(mysql.DOUBLE(), "mysql", "mariadb"), nullable=False),
        Column("strategy", String(128), nullable=False),
        Column("summary", Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb"), nullable=True),  # TEXT: 64 KB
        Column("folded_ids", JSON, nullable=False),
        Column("tokens_before", Integer, nullable=False),
        Column("tokens_after", Integer, nullable=False),
        Column("summarizer_model", String(255), nullable=True),
        Column("summarizer_usage", JSON, nullable=True),
        Column("schema_version", Integer, nullable=False),
        Column("call_index", Integer, nullable=True),
        Column("budget", Integer, nullable=True),
        Index(f"ix_{name}_session_id", "session_id"),
    )


def known_key(engine: Engine, schema: str | None, name: str) -> tuple[str, str | None, str] | None:
    """The key of a table in ``KNOWN_TABLES`` (``None`` for an in-memory SQLite, a new database per engine)."""
    url = engine.url
    database = url.database or ""
    in_memory = not database or ":memory:" in database or url.query.get("mode") == "memory"
    if url.get_backend_name() == "sqlite" and in_memory:
        return None  # an in-memory SQLite is a new database per engine (or per connection)
    return url.render_as_string(hide_password=True), schema, name


def columns_of(engine: Engine, table: Table) -> frozenset[str]:
    """The names of the columns ``table`` has in the database."""
    return frozenset(str(c["name"]) for c in inspect(engine).get_columns(table.name, schema=table.schema))


def add_columns(engine: Engine, table: Table, names: tuple[str, ...]) -> frozenset[str]:
    """Add those of ``names`` the table lacks (as defined in ``table``); returns the columns it has now.

    Another process may add them at the same time: a failed ``ALTER`` is checked against the table again. A
    database that refuses (no right to alter the table) keeps its columns, with one warning: records are then
    written without the added fields.
    """
    present = columns_of(engine, table)
    missing = [name for name in names if name not in present]
    if not missing:
        return present
    quote = engine.dialect.identifier_preparer
    try:
        with engine.begin() as conn:
            for name in missing:
                kind = table.c[name].type.compile(dialect=conn.dialect)
                conn.execute(text(f"ALTER TABLE {quote.format_table(table)} ADD COLUMN {quote.quote(name)} {kind}"))
    except SQLAlchemyError as exc:
        present = columns_of(engine, table)
        if not present.issuperset(missing):
            log.warning(
                "agno-compression: cannot add columns %s to %s (%s); records are written without them",
                ", ".join(missing),
                table.name,
                " ".join(str(getattr(exc, "orig", None) or exc).split())[:200],
            )
        return present
    return present | frozenset(missing)
