"""Databases for the tests: agno dbs of every kind, and the local servers when reachable (a clear skip when not);
and the bench scripts, loaded from their files.

Importable in spawned worker processes: pytest is only asked for a skip or a fixture inside the functions.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

PG_URL = os.environ.get("AGNO_COMPRESSION_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
MYSQL_URL = os.environ.get("AGNO_COMPRESSION_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test")
REDIS_URL = os.environ.get("AGNO_COMPRESSION_REDIS_URL", "redis://127.0.0.1:6379/0")

SERVER_KINDS = ("postgres", "mysql", "redis")


@dataclass(frozen=True)
class DbTarget:
    """Where one test's agno db lives; picklable, so a spawned worker can open the same db."""

    kind: str
    """sqlite, json, memory, postgres, mysql or redis."""
    where: str
    """The file (sqlite), the folder (json) or the server URL."""
    schema: str | None = None
    """The PostgreSQL schema, the MySQL database or the Redis key prefix, unique per test."""

    @property
    def url(self) -> str:
        """The SQLAlchemy URL of an SQL target (``SQLAlchemyStore.from_url(target.url, schema=target.schema)``)."""
        return f"sqlite:///{self.where}" if self.kind == "sqlite" else self.where

    def open(self) -> Any:
        return open_db(self.kind, self.where, self.schema)


def open_db(kind: str, where: str = "", schema: str | None = None) -> Any:
    """The agno db of ``kind`` at ``where`` (see ``DbTarget``)."""
    if kind == "sqlite":
        from agno.db.sqlite import SqliteDb

        return SqliteDb(db_file=where)
    if kind == "postgres":
        from agno.db.postgres import PostgresDb

        return PostgresDb(db_url=where, db_schema=schema)
    if kind == "mysql":
        from agno.db.mysql import MySQLDb

        return MySQLDb(db_url=where, db_schema=schema)
    if kind == "redis":
        from agno.db.redis import RedisDb

        return RedisDb(db_url=where, db_prefix=schema or "agno")
    if kind == "json":
        from agno.db.json import JsonDb

        return JsonDb(db_path=where)
    if kind == "memory":
        from agno.db.in_memory import InMemoryDb

        return InMemoryDb()
    raise ValueError(f"no agno db of kind {kind!r}")


# --- the local servers ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Server:
    name: str
    url: str
    driver: str
    extra: str
    port: int


SERVERS = {
    "postgres": _Server("PostgreSQL", PG_URL, "psycopg", "postgres", 5432),
    "mysql": _Server("MySQL", MYSQL_URL, "pymysql", "mysql", 3306),
    "redis": _Server("Redis", REDIS_URL, "redis", "redis", 6379),
}


def server_unavailable(kind: str) -> str | None:
    """Why the local server of ``kind`` cannot be used here, or None when it can."""
    server = SERVERS[kind]
    try:
        driver = importlib.import_module(server.driver)
    except ImportError:
        return f"{server.driver} is not installed (pip install 'agno-compression[{server.extra}]')"
    if kind == "redis":
        try:
            client = driver.Redis.from_url(server.url, socket_connect_timeout=1)
            client.ping()
            client.close()
        except Exception as exc:
            return f"Redis is not reachable at {server.url} ({exc})"
        return None
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    url = make_url(server.url)
    try:  # a closed port fails here at once, where a driver might wait for its own timeout
        with socket.create_connection((url.host or "127.0.0.1", url.port or server.port), timeout=1):
            pass
    except OSError as exc:
        return f"{server.name} is not reachable at {url.host}:{url.port} ({exc})"
    try:
        engine = create_engine(server.url)
        with engine.connect() as conn:
            conn.execute(text("select 1"))
        engine.dispose()
    except Exception as exc:
        return f"{server.name} at {server.url} refused the test connection ({exc})"
    return None


@contextmanager
def fresh_namespace(kind: str) -> Iterator[DbTarget]:
    """A unique namespace on the local server of ``kind``, removed afterwards; skips the test when unusable."""
    reason = server_unavailable(kind)
    if reason:
        pytest.skip(reason)
    target = DbTarget(kind, SERVERS[kind].url, f"agc_test_{uuid.uuid4().hex[:12]}")
    try:
        yield target
    finally:
        _drop(target)


def _drop(target: DbTarget) -> None:
    if target.kind == "redis":
        import redis

        client = redis.Redis.from_url(target.where)
        keys = list(client.scan_iter(match=f"{target.schema}:*", count=1000))
        if keys:
            client.delete(*keys)
        client.close()
        return
    from sqlalchemy import create_engine, text

    drop = f'DROP SCHEMA IF EXISTS "{target.schema}" CASCADE'
    if target.kind == "mysql":
        drop = f"DROP DATABASE IF EXISTS `{target.schema}`"
    engine = create_engine(target.where)
    with engine.begin() as conn:
        conn.execute(text(drop))
    engine.dispose()


def db_target(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest | None = None, file: str = "agent.db"
) -> DbTarget:
    """This test's db of ``kind``: a file or folder under ``tmp_path``, or (``request`` needed) a fresh namespace on
    a local server, the fixture ``postgres_db``, ``mysql_db`` or ``redis_db``."""
    if kind in SERVER_KINDS:
        assert request is not None, f"a {kind} db is a fixture: pass the test's request"
        return request.getfixturevalue(f"{kind}_db")  # type: ignore[no-any-return]
    if kind == "sqlite":
        return DbTarget(kind, str(tmp_path / file))
    if kind == "json":
        return DbTarget(kind, str(tmp_path / "json"))
    return DbTarget(kind, "")


def open_async_db(target: DbTarget) -> Any:
    """``AsyncSqliteDb`` or ``AsyncPostgresDb`` on ``target`` (a skip when aiosqlite is missing)."""
    if target.kind == "sqlite":
        pytest.importorskip("aiosqlite", reason="AsyncSqliteDb needs aiosqlite (in the test extras)")
        from agno.db.sqlite import AsyncSqliteDb

        return AsyncSqliteDb(db_file=target.where)
    from agno.db.postgres import AsyncPostgresDb

    return AsyncPostgresDb(db_url=target.url.replace("+psycopg", "+psycopg_async"), db_schema=target.schema)


def load_script(path: Path, name: str) -> ModuleType:
    """A script that is not part of a package (``bench/ceiling.py``), imported from its file as module ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
