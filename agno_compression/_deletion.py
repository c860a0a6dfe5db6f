"""Deleting sessions' fold records, and with them every summary (which may quote what the user said).

agno deletes its own session rows; the fold records live in a table (``SQLAlchemyStore``), a Redis list
(``RedisStore``) or agno's own session row (``SessionDataStore``, gone with the row). ``guard_deletes``
makes ``delete_session`` / ``delete_sessions`` of one attached db *object* delete the records too (the
instance's methods are wrapped, agno's classes are not patched); ``delete_compression`` does it explicitly,
for a session or for all of a user's sessions, when the sessions are deleted by a process without a manager.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from ._exceptions import ConfigError, StoreError
from ._sessions import _as_store
from ._stores import EVENTS_KEY, CompressionStore, RedisStore, SessionDataStore, SQLAlchemyStore, agno_session
from ._stores._base import why

log = logging.getLogger("agno_compression")

TOTALS_KEY = "agno_compression"
"""The session's compression totals mirrored into agno's ``session_data`` (``_records.FoldRecorder.mirror``)."""
_GUARD = "_agno_compression_delete_stores"
_MAX_STORES = 16
"""Stores one db object's wrapped deletes reach (one per manager attached to it, the newest kept)."""


def delete_compression(
    db: Any, *, session_id: str | None = None, user_id: str | None = None, store: CompressionStore | None = None
) -> int:
    """Delete the fold records of a session, or of every session of a user, with every summary they hold.

    ``db`` is the agno db (or a ``CompressionStore``) the records are in; ``store`` when a manager was given
    ``store=``. ``session_id`` alone: that session's records, whether agno still has the session or not;
    ``user_id`` alone: the records of every session agno holds for that user; both: the session's, if it is that
    user's. agno's sessions and messages are left as they are (delete those with agno's ``delete_session``). A
    session agno still has loses the totals mirrored into its ``session_data`` too; its next run sees its whole
    history, unfolded. Returns the number of records deleted; raises ``StoreError`` when the database fails.
    """
    for name, value in (("session_id", session_id), ("user_id", user_id)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ConfigError(f"{name} must be a non-empty string, got {value!r}")
    if session_id is None and user_id is None:
        raise ConfigError("delete_compression needs session_id or user_id (or both)")
    target = store if store is not None else _as_store(db)
    agno_db = None if isinstance(db, CompressionStore) and not hasattr(db, "get_session") else db
    if user_id is not None and (agno_db is None or _is_async(agno_db)):
        raise ConfigError(
            "delete_compression(user_id=...) reads the user's sessions from agno: pass a synchronous agno db "
            f"(SqliteDb, PostgresDb, ...), got {type(db).__name__}"
        )
    if user_id is None:
        ids = [str(session_id)]
    elif session_id is None:
        ids = _user_sessions(agno_db, user_id)
    else:
        ids = [session_id] if _owned(agno_db, session_id, user_id) else []
    deleted = delete_records(target, ids)
    if agno_db is not None and not _is_async(agno_db):
        deleted += sum(_strip_session_data(agno_db, s) for s in ids)
    return deleted


def delete_records(store: CompressionStore, session_ids: Iterable[str]) -> int:
    """Delete every record of ``session_ids`` from ``store`` (not agno's session rows); returns how many."""
    ids = list(dict.fromkeys(str(s) for s in session_ids if s))
    if not ids:
        return 0
    if isinstance(store, SQLAlchemyStore):
        return _delete_rows(store, ids)
    if isinstance(store, RedisStore):
        return _delete_lists(store, ids)
    if isinstance(store, SessionDataStore):
        store.forget(ids)  # the rows live in agno's session row: deleted with it, or by _strip_session_data
        return 0
    delete = getattr(store, "delete", None)
    if not callable(delete):
        raise ConfigError(f"{type(store).__name__} cannot delete records: give it a delete(session_ids) -> int method")
    return int(delete(ids) or 0)


def delete_run_records(store: CompressionStore, session_id: str, run_id: str) -> int:
    """Delete the records of one run of a session (an earlier attempt of a run that runs again under its id);
    returns how many. A store that cannot do it keeps them (0)."""
    if isinstance(store, SQLAlchemyStore):
        table = store.table
        try:
            with store.engine.begin() as conn:
                where = (table.c.session_id == session_id) & (table.c.run_id == run_id)
                count = conn.execute(table.delete().where(where)).rowcount
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot delete the records of an earlier attempt of a run: {why(exc)}") from exc
        finally:
            store.forget([session_id])
        return max(0, int(count or 0))
    if isinstance(store, (RedisStore, SessionDataStore)):
        return store.drop_run(session_id, run_id)
    return 0


def _delete_rows(store: SQLAlchemyStore, ids: list[str]) -> int:
    from sqlalchemy import inspect as inspect_db

    table = store.table
    try:
        if not inspect_db(store.engine).has_table(table.name, schema=store.schema):
            return 0
        with store.engine.begin() as conn:
            count = conn.execute(table.delete().where(table.c.session_id.in_(ids))).rowcount
    except SQLAlchemyError as exc:
        raise StoreError(f"cannot delete the compression records of {_names(ids)}: {exc}") from exc
    finally:
        store.forget(ids)
    return max(0, int(count or 0))


def _delete_lists(store: RedisStore, ids: list[str]) -> int:
    try:
        pipe = store.client.pipeline()
        for session_id in ids:
            pipe.llen(store.key(session_id))
            pipe.delete(store.key(session_id))
        replies = pipe.execute()
    except Exception as exc:
        raise StoreError(f"cannot delete the compression records of {_names(ids)}: {exc}") from exc
    return sum(int(n or 0) for n in replies[::2])


def _strip_session_data(db: Any, session_id: str) -> int:
    """Remove the records and totals kept in agno's row of a session that still exists; the records removed."""
    session, _ = agno_session(db, session_id)
    data = getattr(session, "session_data", None)
    if not isinstance(data, dict) or (EVENTS_KEY not in data and TOTALS_KEY not in data):
        return 0
    rows = data.pop(EVENTS_KEY, None)
    data.pop(TOTALS_KEY, None)
    try:
        db.upsert_session(session)
    except Exception as exc:
        raise StoreError(f"cannot remove the compression records of session {session_id!r}: {exc}") from exc
    return len(rows) if isinstance(rows, list) else 0


def _user_sessions(db: Any, user_id: str) -> list[str]:
    try:
        found = db.get_sessions(user_id=user_id, deserialize=False)
    except Exception as exc:
        raise StoreError(f"cannot list the sessions of user {user_id!r}: {exc}") from exc
    rows = found[0] if isinstance(found, tuple) else found
    return [str(r["session_id"]) for r in rows or () if isinstance(r, dict) and r.get("session_id")]


def _owned(db: Any, session_id: str, user_id: str) -> bool:
    try:
        return db.get_session(session_id=session_id, session_type=None, user_id=user_id, deserialize=False) is not None
    except Exception as exc:
        raise StoreError(f"cannot read session {session_id!r}: {exc}") from exc


def _is_async(db: Any) -> bool:
    return inspect.iscoroutinefunction(getattr(db, "get_session", None))


def _names(ids: Sequence[str]) -> str:
    return f"session {ids[0]!r}" if len(ids) == 1 else f"{len(ids)} sessions"


# --- agno's own deletes on an attached db ----------------------------------------------------------------------------


def guard_deletes(db: Any, store: CompressionStore | None) -> None:
    """Make ``db.delete_session`` and ``db.delete_sessions`` (this object only) delete the records in ``store`` too."""
    if db is None or store is None or not callable(getattr(db, "delete_session", None)):
        return
    stores: dict[Any, CompressionStore] | None = getattr(db, _GUARD, None)
    if stores is None:
        stores = {}
        for name in ("delete_session", "delete_sessions"):
            original = getattr(db, name, None)
            if callable(original):
                setattr(db, name, _guarded(db, name, original, stores))
        setattr(db, _GUARD, stores)
    key = _place(store)
    stores.pop(key, None)
    stores[key] = store
    while len(stores) > _MAX_STORES:
        stores.pop(next(iter(stores)))


def _place(store: CompressionStore) -> Any:
    """Stores that keep records in the same place delete them once."""
    if isinstance(store, SQLAlchemyStore):
        return "sql", store.engine.url.render_as_string(hide_password=True), store.schema, store.table.name
    if isinstance(store, RedisStore):
        return "redis", id(store.client), store.prefix
    return type(store).__name__, id(getattr(store, "db", store))


def _forget(stores: dict[Any, CompressionStore], ids: list[str]) -> None:
    failures = []
    for store in list(stores.values()):
        try:
            delete_records(store, ids)
        except Exception as exc:
            failures.append(str(exc))
    if failures:
        raise StoreError(
            f"agno deleted {_names(ids)} but not all of its compression records: {'; '.join(failures)}; "
            "retry with agno_compression.delete_compression(db, session_id=...)"
        )


def _guarded(db: Any, name: str, original: Callable[..., Any], stores: dict[Any, CompressionStore]) -> Any:
    """``original`` (agno's ``delete_session`` or ``delete_sessions`` of ``db``), then the same sessions' records.

    A delete scoped to a ``user_id`` reaches only the records of sessions it deleted (that user's); an unscoped one
    also those of sessions agno no longer had, as agno's own cascades do.
    """
    signature = inspect.signature(original)

    def request(args: Any, kwargs: Any) -> tuple[list[str], str | None]:
        given = signature.bind(*args, **kwargs).arguments
        ids = [given["session_id"]] if name == "delete_session" else list(given.get("session_ids") or ())
        return [str(s) for s in ids if s], given.get("user_id")

    if inspect.iscoroutinefunction(original):

        async def aguarded(*args: Any, **kwargs: Any) -> Any:
            ids, user_id = request(args, kwargs)
            if user_id is not None and name == "delete_sessions":
                found = [await db.get_session(session_id=s, user_id=user_id, deserialize=False) for s in ids]
                ids = [s for s, session in zip(ids, found, strict=True) if session is not None]
            result = await original(*args, **kwargs)
            if name == "delete_session" and user_id is not None and not result:
                ids = []
            await asyncio.to_thread(_forget, stores, ids)
            return result

        return functools.update_wrapper(aguarded, original)

    def guarded(*args: Any, **kwargs: Any) -> Any:
        ids, user_id = request(args, kwargs)
        if user_id is not None and name == "delete_sessions":
            ids = [s for s in ids if _owned(db, s, user_id)]
        result = original(*args, **kwargs)
        if name == "delete_session" and user_id is not None and not result:
            ids = []  # not that user's session: agno kept it, and so do we
        _forget(stores, ids)
        return result

    return functools.update_wrapper(guarded, original)
