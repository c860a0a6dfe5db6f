"""The command line's databases: ``--db`` opened read-only as the agno db that wrote it (writable only for
``fold --apply``), and every database error met while reading it turned into one line and exit code 2.

``--db`` is a SQLite file, a ``JsonDb`` folder or a URL whose scheme picks agno's class (``SCHEMES``): every
database the library writes fold records to. Messages name a URL with its password masked.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import typer

from ._exceptions import StoreError
from ._messages import one_line
from ._visible import visible_line

SCHEMES = {
    "sqlite": "SqliteDb",
    "postgresql": "PostgresDb",
    "mysql": "MySQLDb",
    "mariadb": "MySQLDb",
    "redis": "RedisDb",
    "rediss": "RedisDb",
}
"""The URL schemes ``--db`` reads (a driver may follow: ``postgresql+psycopg``) and agno's class for each."""
JSON_SESSIONS = "agno_sessions.json"
"""The file that makes a folder a ``JsonDb`` (agno's default session table)."""
SQLITE_HEADER = b"SQLite format 3\x00"
_EXTRAS = {"postgresql": "postgres", "mysql": "mysql", "mariadb": "mysql"}
"""The extra that installs each SQL backend's driver."""


def fail(message: str) -> typer.Exit:
    """Print one clear line (session text in it shown, never interpreted) and return the exit (code 2) to raise."""
    typer.echo(f"agno-compression: error: {visible_line(' '.join(message.split()))}", err=True)
    return typer.Exit(code=2)


def source_label(spec: str) -> str:
    """``--db`` as a message or a page names it: a URL with its password masked."""
    if "://" not in spec:
        return spec
    from sqlalchemy.engine import make_url

    try:
        return make_url(spec).render_as_string(hide_password=True)
    except Exception:  # not a URL SQLAlchemy parses: mask what stands between "user:" and "@"
        return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", spec)


def database_name(spec: str) -> str:
    """How a served page names a database: a file's name, or a URL's database and backend; never a directory of
    the server's disk, a host or a password (``source_label`` is the CLI's fuller name, for its own user)."""
    if "://" not in spec:
        return Path(spec).name or "database"
    from sqlalchemy.engine import make_url

    try:
        url = make_url(spec)
        backend = url.get_backend_name()
        name = Path(url.database).name if url.database and backend == "sqlite" else url.database
    except Exception:
        return "database"
    return f"{name} ({backend})" if name else backend


def _password(spec: str) -> str | None:
    if "://" not in spec:
        return None
    from sqlalchemy.engine import make_url

    try:
        return make_url(spec).password
    except Exception:
        return None


def _short(exc: BaseException, spec: str = "") -> str:
    """The driver's own message (``database disk image is malformed``), not SQLAlchemy's statement dump; a password
    it repeats is masked."""
    text = one_line(str(getattr(exc, "orig", None) or exc).split("\n")[0], 400)
    password = _password(spec)
    return text.replace(password, "***") if password else text


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


def _database_errors() -> tuple[type[BaseException], ...]:
    """The errors of every database ``--db`` reads (the drivers installed)."""
    from sqlalchemy.exc import SQLAlchemyError

    errors: tuple[type[BaseException], ...] = (SQLAlchemyError, sqlite3.DatabaseError, StoreError)
    with contextlib.suppress(ImportError):
        from redis.exceptions import RedisError

        errors += (RedisError,)
    return errors


@contextmanager
def reading(spec: str) -> Iterator[None]:
    """Database errors met while reading ``spec`` become one line and exit 2, wherever they surface.

    A damaged page only fails when a query reaches it, deep inside agno's or our own reads; any other
    error is translated too when SQLite's ``quick_check`` confirms the file is damaged (garbled JSON in a
    corrupt row), and re-raised untouched otherwise (a bug is not a bad database).
    """
    label = source_label(spec)
    try:
        yield
    except typer.Exit:
        raise
    except _database_errors() as exc:
        raise fail(f"{label}: cannot read the database: {_short(exc, spec)}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:  # a damaged page or JSON file garbles a stored value
        raise fail(f"{label}: cannot read the database: a stored value is damaged ({_short(exc, spec)})") from exc
    except Exception as exc:
        damage = _damage(spec)
        if damage is None:
            raise
        raise fail(f"{label}: the database is damaged ({damage}); {type(exc).__name__}: {_short(exc)}") from exc


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


def read_only_uri(path: Path) -> str:
    """A SQLite URI that reads ``path`` and leaves nothing beside it.

    ``mode=ro`` alone still creates ``-wal`` and ``-shm`` files next to a WAL database, and leaves them. With no
    ``-wal`` or ``-journal`` file there (no writer in the middle of something) the file is opened ``immutable``,
    which creates nothing; otherwise those files exist already and ``mode=ro`` reads the writer's committed pages.
    """
    resolved = path.resolve()
    busy = any(Path(f"{resolved}{suffix}").exists() for suffix in ("-wal", "-journal"))
    return f"file:{quote(str(resolved), safe='/')}?mode=ro" + ("" if busy else "&immutable=1")


def is_json_db(path: Path) -> bool:
    """Whether ``path`` is a folder agno's ``JsonDb`` wrote sessions to."""
    return path.is_dir() and (path / JSON_SESSIONS).is_file()


def _unsupported(spec: str, scheme: str) -> typer.Exit:
    schemes = ", ".join(f"{s}://" for s in SCHEMES)
    return fail(
        f"{source_label(spec)}: no agno database for the URL scheme {scheme!r}; --db takes {schemes} URLs, "
        "a SQLite file or a JsonDb folder"
    )


def open_db(spec: str, *, schema: str | None = None, writable: bool = False) -> Any:
    """The agno db for ``--db`` (a SQLite file, a ``JsonDb`` folder or a URL of ``SCHEMES``), opened read-only.

    SQL connections run every statement in a read-only transaction; a SQLite file is opened without leaving a
    side file; a ``JsonDb`` folder and Redis are only read (agno reads them without writing). ``writable`` opens
    it as the agent does instead (``fold --apply`` writes a fold record); the same checks hold.
    """
    _text_option("--db", spec)
    if "://" not in spec:
        return _open_path(Path(spec), writable=writable)
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(spec)
    except ArgumentError:
        raise fail(f"{source_label(spec)}: not a database URL") from None
    backend = url.get_backend_name()
    if backend not in SCHEMES:
        raise _unsupported(spec, backend)
    if backend == "sqlite":
        if not url.database:
            raise fail(f"{spec}: no file in the URL")
        if Path(url.database).is_dir():
            raise fail(f"{url.database}: a directory, not a SQLite file (a JsonDb folder is given as a path)")
        return _open_path(Path(url.database), writable=writable)
    if SCHEMES[backend] == "RedisDb":
        return _open_redis(spec, prefix=schema or "agno")
    return _open_sql(spec, backend, schema=schema or "ai", writable=writable)


def _open_path(path: Path, *, writable: bool = False) -> Any:
    if path.is_dir():
        if not is_json_db(path):
            raise fail(
                f"{path}: a directory without {JSON_SESSIONS}; --db takes a SQLite file, a JsonDb folder or a URL"
            )
        from agno.db.json import JsonDb

        return JsonDb(db_path=str(path))
    if not path.exists():
        raise fail(f"{path}: no such file or directory")
    with path.open("rb") as fh:
        if fh.read(16) != SQLITE_HEADER:
            raise fail(f"{path}: not a SQLite database")
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    uri = read_only_uri(path) if not writable else f"file:{quote(str(path.resolve()), safe='/')}?mode=rw"
    engine = create_engine(
        "sqlite://",  # the URI goes to sqlite3 as is: no URL parsing of the path
        creator=lambda: sqlite3.connect(uri, uri=True, check_same_thread=False),
        poolclass=NullPool,
    )
    _require_sessions_table(engine, str(path), None)
    from agno.db.sqlite import SqliteDb

    return SqliteDb(db_engine=engine)


def _open_sql(spec: str, backend: str, *, schema: str, writable: bool = False) -> Any:
    from sqlalchemy import create_engine, event
    from sqlalchemy.exc import SQLAlchemyError

    label = source_label(spec)
    try:
        if writable:
            engine = create_engine(spec)
        elif backend == "postgresql":  # every statement runs in a read-only transaction: inspecting never writes
            engine = create_engine(spec, connect_args={"options": "-c default_transaction_read_only=on"})
        else:
            engine = create_engine(spec)

            @event.listens_for(engine, "connect")
            def _read_only(connection: Any, record: Any) -> None:
                with contextlib.closing(connection.cursor()) as cursor:
                    cursor.execute("SET SESSION TRANSACTION READ ONLY")

    except ImportError as exc:
        raise fail(f"{label}: cannot open ({exc}); pip install 'agno-compression[{_EXTRAS[backend]}]'") from exc
    except SQLAlchemyError as exc:
        raise fail(f"{label}: cannot open ({_short(exc, spec)})") from exc
    _require_sessions_table(engine, spec, schema)
    if backend == "postgresql":
        from agno.db.postgres import PostgresDb

        return PostgresDb(db_engine=engine, db_schema=schema)
    from agno.db.mysql import MySQLDb

    return MySQLDb(db_engine=engine, db_schema=schema)


def _require_sessions_table(engine: Any, spec: str, schema: str | None) -> None:
    from sqlalchemy import inspect
    from sqlalchemy.exc import SQLAlchemyError

    try:
        has_sessions = inspect(engine).has_table("agno_sessions", schema=schema)
    except SQLAlchemyError as exc:
        engine.dispose()
        raise fail(f"{source_label(spec)}: cannot read the database ({_short(exc, spec)})") from exc
    if not has_sessions:
        engine.dispose()
        where = f" (schema {schema})" if schema else ""
        raise fail(f"{source_label(spec)}: no agno tables (agno_sessions){where}; is this an agno database?")


def _open_redis(spec: str, *, prefix: str) -> Any:
    label = source_label(spec)
    try:
        from agno.db.redis import RedisDb
        from redis.exceptions import RedisError
    except ImportError as exc:
        raise fail(f"{label}: cannot open ({exc}); pip install 'agno-compression[redis]'") from exc
    db = RedisDb(db_url=spec, db_prefix=prefix)
    try:
        found = next(db.redis_client.scan_iter(match=f"{prefix}:sessions:*", count=1000), None)
    except RedisError as exc:
        close_db(db)
        raise fail(f"{label}: cannot read the database ({_short(exc, spec)})") from exc
    if found is None:
        close_db(db)
        raise fail(f"{label}: no agno sessions (keys {prefix}:sessions:*); is the key prefix --schema {prefix}?")
    return db


def close_db(db: Any) -> None:
    """Release what an opened db holds (its connections)."""
    engine = getattr(db, "db_engine", None)
    if engine is not None:
        engine.dispose()
    client = getattr(db, "redis_client", None)
    if client is not None:
        client.close()


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
        raise fail(f"{source_label(spec)}: no session {session_id!r}")
    return session
