"""MySQL/MariaDB for the storage tests: the local server when reachable, a clear skip when not."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

MYSQL_URL = os.environ.get("AGNO_COMPRESSION_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test")


def mysql_unavailable() -> str | None:
    """Why MySQL cannot be used here, or None when it can."""
    try:
        import pymysql  # noqa: F401
    except ImportError:
        return "pymysql is not installed (pip install 'agno-compression[mysql]')"
    from sqlalchemy.engine import make_url

    url = make_url(MYSQL_URL)
    try:
        with socket.create_connection((url.host or "127.0.0.1", url.port or 3306), timeout=1):
            pass
    except OSError as exc:
        return f"MySQL is not reachable at {url.host}:{url.port} ({exc})"
    from sqlalchemy import create_engine, text

    try:
        engine = create_engine(MYSQL_URL)
        with engine.connect() as conn:
            conn.execute(text("select 1"))
        engine.dispose()
    except Exception as exc:
        return f"MySQL at {MYSQL_URL} refused the test connection ({exc})"
    return None


@dataclass(frozen=True)
class MySqlTarget:
    url: str
    schema: str
    """A database of its own (MySQL's schema), unique per test."""


@pytest.fixture
def mysql_schema() -> Iterator[MySqlTarget]:
    """A fresh database (unique per test) on the local MySQL/MariaDB, dropped afterwards."""
    reason = mysql_unavailable()
    if reason:
        pytest.skip(reason)
    from sqlalchemy import create_engine, text

    schema = f"agc_test_{uuid.uuid4().hex[:12]}"
    yield MySqlTarget(MYSQL_URL, schema)
    engine = create_engine(MYSQL_URL)
    with engine.begin() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS `{schema}`"))
    engine.dispose()
