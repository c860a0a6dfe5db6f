"""PostgreSQL for the storage tests: the local server when reachable, a clear skip when not."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

PG_URL = os.environ.get("AGNO_COMPRESSION_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def pg_unavailable() -> str | None:
    """Why PostgreSQL cannot be used here, or None when it can."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'agno-compression[postgres]')"
    from sqlalchemy.engine import make_url

    url = make_url(PG_URL)
    try:
        with socket.create_connection((url.host or "127.0.0.1", url.port or 5432), timeout=1):
            pass
    except OSError as exc:
        return f"PostgreSQL is not reachable at {url.host}:{url.port} ({exc})"
    from sqlalchemy import create_engine, text

    try:
        engine = create_engine(PG_URL)
        with engine.connect() as conn:
            conn.execute(text("select 1"))
        engine.dispose()
    except Exception as exc:
        return f"PostgreSQL at {PG_URL} refused the test connection ({exc})"
    return None


@dataclass(frozen=True)
class PgTarget:
    url: str
    schema: str


@pytest.fixture
def pg_schema() -> Iterator[PgTarget]:
    """A fresh schema (unique per test) on the local PostgreSQL, dropped afterwards."""
    reason = pg_unavailable()
    if reason:
        pytest.skip(reason)
    from sqlalchemy import create_engine, text

    schema = f"agc_test_{uuid.uuid4().hex[:12]}"
    yield PgTarget(PG_URL, schema)
    engine = create_engine(PG_URL)
    with engine.begin() as conn:
        conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    engine.dispose()
