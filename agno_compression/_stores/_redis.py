"""Compression records for agno's ``RedisDb``: one append-only Redis list per session, next to agno's keys.

``RPUSH`` is atomic, so concurrent writers (several processes on one session) lose nothing, as
with the SQL table; a session's rows are read with one ``LRANGE``. The key follows agno's
naming (``{db_prefix}:agno_compression_events:{session_id}``) and gets the db's ``expire``
when one is set, so records do not outlive the sessions they belong to.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import fields
from typing import Any

from .._exceptions import StoreError
from ._base import BadRows, CompressionRecord, SessionCompression, merge_fields, merge_rows, records_of, sid, why

TABLE_TYPE = "agno_compression_events"


class RedisStore:
    """``CompressionStore`` on the Redis client of an agno ``RedisDb``."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self.client = db.redis_client
        self.prefix = str(getattr(db, "db_prefix", None) or "agno")
        self.bad_rows = BadRows()

    def key(self, session_id: str) -> str:
        return f"{self.prefix}:{TABLE_TYPE}:{session_id}"

    def record(self, row: CompressionRecord) -> int:
        """Append one fold (folded ids and summary in one list entry); returns its 1-based position."""
        if not row.session_id:
            raise StoreError("a compression record needs a session_id")
        values = {f.name: getattr(row, f.name) for f in fields(CompressionRecord) if f.name != "id"}
        values["folded_ids"] = list(row.folded_ids)
        try:
            row.id = int(self.client.rpush(self.key(row.session_id), json.dumps(values)))
            expire = getattr(self.db, "expire", None)
            if expire:
                self.client.expire(self.key(row.session_id), int(expire))
        except Exception as exc:
            raise StoreError(f"cannot record a fold for session {sid(row.session_id)}: {why(exc)}") from exc
        return row.id

    def _rows(self, session_id: str) -> list[dict[str, Any]]:
        try:
            raw = self.client.lrange(self.key(session_id), 0, -1)
        except Exception as exc:
            raise StoreError(f"cannot read compression records of session {sid(session_id)}: {why(exc)}") from exc
        rows = []
        for position, item in enumerate(raw or [], start=1):
            try:
                row = json.loads(item)
            except ValueError:
                row = None
            if not isinstance(row, dict):  # one bad item costs itself only
                self.bad_rows.add(session_id, position, "not a JSON object")
                continue
            row["id"] = position
            rows.append(row)
        return rows

    def drop_run(self, session_id: str, run_id: str) -> int:
        """Remove the rows of one run (an earlier attempt of a run that runs again); returns how many."""
        key = self.key(session_id)
        try:
            raw = self.client.lrange(key, 0, -1) or []
            kept = [item for item in raw if _run_of(item) != run_id]
            if len(kept) == len(raw):
                return 0
            pipe = self.client.pipeline(transaction=True)
            pipe.delete(key)
            if kept:
                pipe.rpush(key, *kept)
            pipe.execute()
        except Exception as exc:
            raise StoreError(f"cannot delete the records of an earlier attempt of a run: {why(exc)}") from exc
        return len(raw) - len(kept)

    def events(self, session_id: str) -> list[CompressionRecord]:
        """Every fold of ``session_id``, oldest first."""
        return records_of(self._rows(session_id), session_id, self.bad_rows)

    def load(self, session_id: str, stored_ids: Collection[str] | None = None) -> SessionCompression:
        """Folded set = union of the session's rows; summary = the newest row's (see ``SQLAlchemyStore.load``)."""
        return merge_rows(merge_fields(self._rows(session_id), session_id, self.bad_rows), stored_ids)

    def skipped(self, session_id: str) -> list[str]:
        """The rows of ``session_id`` this store skipped because a field did not read, each named."""
        return self.bad_rows.notes(session_id)


def _run_of(item: Any) -> Any:
    try:
        row = json.loads(item)
    except ValueError:
        return None
    return row.get("run_id") if isinstance(row, dict) else None
