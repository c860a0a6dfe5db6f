"""The records table gains columns without breaking older tables: an older table reads, and gets them on a write."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import JSON, Column, Float, Integer, MetaData, String, Table, Text, create_engine, insert, inspect

from agno_compression import CompressionRecord, SQLAlchemyStore
from agno_compression._stores import TABLE_NAME
from agno_compression._stores._tables import ADDED_COLUMNS
from tests.helpers import db_target


def _first_release_table(url: str, schema: str | None) -> None:
    """The table as the first release created it (no ``ADDED_COLUMNS``), with one row."""
    engine = create_engine(url)
    table = Table(
        TABLE_NAME,
        MetaData(schema=schema),
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("session_id", String(255), nullable=False),
        Column("owner_type", String(16), nullable=False),
        Column("owner_id", String(255)),
        Column("run_id", String(255)),
        Column("created_at", Float, nullable=False),
        Column("strategy", String(128), nullable=False),
        Column("summary", Text),
        Column("folded_ids", JSON, nullable=False),
        Column("tokens_before", Integer, nullable=False),
        Column("tokens_after", Integer, nullable=False),
        Column("summarizer_model", String(255)),
        Column("summarizer_usage", JSON),
        Column("schema_version", Integer, nullable=False),
    )
    with engine.begin() as conn:
        if schema is not None:
            from sqlalchemy.schema import CreateSchema

            conn.execute(CreateSchema(schema, if_not_exists=True))
        table.create(conn)
        conn.execute(
            insert(table),
            {
                "session_id": "s",
                "owner_type": "agent",
                "created_at": time.time(),
                "strategy": "extractive",
                "summary": "old",
                "folded_ids": ["a"],
                "tokens_before": 900,
                "tokens_after": 300,
                "schema_version": 1,
            },
        )
    engine.dispose()


@pytest.mark.parametrize("kind", ["sqlite", "postgres", "mysql"])
def test_an_older_table_reads_and_gets_the_added_columns_on_the_next_write(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    target = db_target(kind, tmp_path, request, file="old.db")
    _first_release_table(target.url, target.schema)
    reader = SQLAlchemyStore.from_url(target.url, schema=target.schema)
    [old] = reader.events("s")
    assert (old.summary, old.call_index, old.budget) == ("old", None, None)
    assert reader.load("s").folded_ids == {"a"}
    columns = {c["name"] for c in inspect(reader.engine).get_columns(TABLE_NAME, schema=target.schema)}
    assert not columns & set(ADDED_COLUMNS), "reading changes nothing"

    writer = SQLAlchemyStore.from_url(target.url, schema=target.schema)
    writer.record(CompressionRecord("s", ["b"], "new", "extractive", call_index=4, budget=6_000))
    columns = {c["name"] for c in inspect(writer.engine).get_columns(TABLE_NAME, schema=target.schema)}
    assert columns >= set(ADDED_COLUMNS)
    fresh = SQLAlchemyStore.from_url(target.url, schema=target.schema)
    assert [(r.summary, r.call_index, r.budget) for r in fresh.events("s")] == [("old", None, None), ("new", 4, 6_000)]


def test_a_table_that_cannot_be_altered_is_written_without_the_added_columns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A database that refuses ALTER (no rights: SQLite's authorizer here) keeps working: records lose only the
    added fields, with one warning."""
    import sqlite3

    from sqlalchemy import event

    url = f"sqlite:///{tmp_path / 'locked.db'}"
    _first_release_table(url, None)
    store = SQLAlchemyStore.from_url(url)

    def no_alter(action: int, *args: object) -> int:
        return sqlite3.SQLITE_DENY if action == sqlite3.SQLITE_ALTER_TABLE else sqlite3.SQLITE_OK

    event.listen(store.engine, "connect", lambda dbapi, record: dbapi.set_authorizer(no_alter))
    with caplog.at_level("WARNING", logger="agno_compression"):
        store.record(CompressionRecord("s", ["b"], "new", "extractive", call_index=2, budget=500))
    assert "cannot add columns call_index, budget" in caplog.text
    stored = SQLAlchemyStore.from_url(url).events("s")
    assert [(r.summary, r.call_index) for r in stored] == [("old", None), ("new", None)]
