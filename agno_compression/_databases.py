"""The command line's databases: ``--db`` (a SQLAlchemy URL or a SQLite file path) opened read-only as an agno
db, and every database error met while reading it turned into one line and exit code 2.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import typer

from ._exceptions import StoreError


def fail(message: str) -> typer.Exit:
    """Print one clear line and return the exit (code 2) to raise."""
    typer.echo(f"agno-compression: error: {' '.join(message.split())}", err=True)
    return typer.Exit(code=2)


def _short(exc: BaseException) -> str:
    """The driver's own message (``database disk image is malformed``), not SQLAlchemy's statement dump."""
    text = str(getattr(exc, "orig", None) or exc)
    return " ".join(text.split("\n")[0].split())[:200]


def _sqlite_path(spec: str) -> Path | None:
    if "://" not in spec:
        return Path(spec)
    from sqlalchemy.engine import make_url

    try:
        url = make_url(spec)
    except Exception:
        return None
    return Path(url.database) if url.get_backend_name() == "sqlite" and url.database else None


def _damage(spec: str) -> str | None:
    """What SQLite's ``quick_check`` finds wrong with a SQLite file (``None``: intact, or not SQLite)."""
    path = _sqlite_path(spec)
    if path is None or not path.is_file():
        return None
    try:
        with contextlib.closing(sqlite3.connect(read_only_uri(path), uri=True)) as conn:
            rows = conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    found = [str(r[0]) for r in rows if r and r[0] != "ok"]
    return " ".join(" ".join(found).split())[:200] if found else None


@contextmanager
def reading(spec: str) -> Iterator[None]:
    """Database errors met while reading ``spec`` become one line and exit 2, wherever they surface.

    A damaged page only fails when a query reaches it, deep inside agno's or our own reads; any other
    error is translated too when SQLite's ``quick_check`` confirms the file is damaged (garbled JSON in a
    corrupt row), and re-raised untouched otherwise (a bug is not a bad database).
    """
    from sqlalchemy.exc import SQLAlchemyError

    try:
        yield
    except typer.Exit:
        raise
    except (SQLAlchemyError, sqlite3.DatabaseError, StoreError) as exc:
        raise fail(f"{spec}: cannot read the database: {_short(exc)}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:  # a damaged overflow page garbles a stored value
        raise fail(f"{spec}: cannot read the database: a stored value is damaged ({_short(exc)})") from exc
    except Exception as exc:
        damage = _damage(spec)
        if damage is None:
            raise
        raise fail(f"{spec}: the database is damaged ({damage}); {type(exc).__name__}: {_short(exc)}") from exc


def _text_option(option: str, value: str | None) -> str | None:
    """``--session ''`` and the like are mistakes, not "everything"."""
    if value is not None and not value.strip():
        raise fail(f"{option} must not be empty, got {value!r}")
    return value


def _output_file(option: str, path: Path) -> Path:
    """A file ``--out`` can be written to: not a directory, in a directory that exists."""
    if path.is_dir():
        raise fail(f"{option} {str(path)!r} is a directory; give a file name")
    if not path.parent.is_dir():
        raise fail(f"{option} {str(path)!r}: directory {str(path.parent)!r} does not exist")
    return path


SQLITE_HEADER = b"SQLite format 3\x00"


def read_only_uri(path: Path) -> str:
    """A SQLite URI that reads ``path`` and leaves nothing beside it.

    ``mode=ro`` alone still creates ``-wal`` and ``-shm`` files next to a WAL database, and leaves them. With no
    ``-wal`` or ``-journal`` file there (no writer in the middle of something) the file is opened ``immutable``,
    which creates nothing; otherwise those files exist already and ``mode=ro`` reads the writer's committed pages.
    """
    resolved = path.resolve()
    busy = any(Path(f"{resolved}{suffix}").exists() for suffix in ("-wal", "-journal"))
    return f"file:{quote(str(resolved), safe='/')}?mode=ro" + ("" if busy else "&immutable=1")


def open_db(spec: str, *, schema: str | None = None) -> Any:
    """An agno db for ``--db`` (a SQLAlchemy URL or a SQLite file path), opened read-only."""
    _text_option("--db", spec)
    from sqlalchemy import create_engine, inspect
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, SQLAlchemyError
    from sqlalchemy.pool import NullPool

    if "://" in spec:
        try:
            url = make_url(spec)
        except ArgumentError as exc:
            raise fail(f"{spec}: not a database URL ({exc})") from exc
        backend = url.get_backend_name()
        if backend == "sqlite":
            if not url.database or not Path(url.database).is_file():
                raise fail(f"{url.database or spec}: no such file")
            return open_db(url.database, schema=schema)
        if backend != "postgresql":
            raise fail(f"{spec}: only SQLite and PostgreSQL databases are supported")
        try:
            # every statement runs in a read-only transaction: inspecting never writes
            engine = create_engine(spec, connect_args={"options": "-c default_transaction_read_only=on"})
        except (SQLAlchemyError, ImportError) as exc:
            raise fail(f"{url.render_as_string(hide_password=True)}: cannot open ({exc})") from exc
        schema = schema or "ai"
    else:
        path = Path(spec)
        if not path.is_file():
            raise fail(f"{spec}: no such file")
        with path.open("rb") as fh:
            if fh.read(16) != SQLITE_HEADER:
                raise fail(f"{spec}: not a SQLite database")
        uri = read_only_uri(path)
        engine = create_engine(
            "sqlite://",  # the URI goes to sqlite3 as is: no URL parsing of the path
            creator=lambda: sqlite3.connect(uri, uri=True, check_same_thread=False),
            poolclass=NullPool,
        )
        schema = None
    try:
        has_sessions = inspect(engine).has_table("agno_sessions", schema=schema)
    except SQLAlchemyError as exc:
        raise fail(f"{spec}: cannot read the database ({' '.join(str(exc).split())[:200]})") from exc
    if not has_sessions:
        where = f" (schema {schema})" if schema else ""
        raise fail(f"{spec}: no agno tables (agno_sessions){where}; is this an agno database?")
    if engine.dialect.name == "sqlite":
        from agno.db.sqlite import SqliteDb

        return SqliteDb(db_engine=engine)
    from agno.db.postgres import PostgresDb

    return PostgresDb(db_engine=engine, db_schema=schema)


def _sessions(db: Any) -> list[Any]:
    """Every session of every kind (agent, team, workflow), newest first (by last update)."""
    from agno.db.base import SessionType

    out: list[Any] = []
    for kind in (SessionType.AGENT, SessionType.TEAM, SessionType.WORKFLOW):
        out += db.get_sessions(session_type=kind) or []
    return sorted(out, key=lambda s: -(getattr(s, "updated_at", None) or getattr(s, "created_at", None) or 0))


def _owner(session: Any) -> str:
    for kind in ("workflow", "team", "agent"):
        if getattr(session, f"{kind}_id", None):
            return f"{kind} {getattr(session, f'{kind}_id')}"
    return "-"


def _session(db: Any, session_id: str, spec: str) -> Any:
    from ._stores import agno_session

    session, _ = agno_session(db, session_id)
    if session is None:
        raise fail(f"{spec}: no session {session_id!r}")
    return session
