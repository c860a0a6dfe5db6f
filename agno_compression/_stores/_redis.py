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
from ._base import MERGE_FIELDS, CompressionRecord, SessionCompression, merge_rows, records_of

TABLE_TYPE = "agno_compression_events"


class RedisStore:
    """``CompressionStore`` on the Redis client of an agno ``RedisDb``."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self.client = db.redis_client
        self.prefix = str(getattr(db, "db_prefix", None) or "agno")

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
            raise StoreError(f"cannot record a fold for session {row.session_id!r}: {exc}") from exc
        return row.id

    def _rows(self, session_id: str) -> list[dict[str, Any]]:
        try:
            raw = self.client.lrange(self.key(session_id), 0, -1)
        except Exception as exc:
            raise StoreError(f"cannot read compression records of session {session_id!r}: {exc}") from exc
        rows = []
        for position, item in enumerate(raw or [], start=1):
            row = json.loads(item)
            row["id"] = position
            rows.append(row)
        return rows

    def events(self, session_id: str) -> list[CompressionRecord]:
        """Every fold of ``session_id``, oldest first."""
        return records_of(self._rows(session_id))

    def load(self, session_id: str, stored_ids: Collection[str] | None = None) -> SessionCompression:
        """Folded set = union of the session's rows; summary = the newest row's (see ``SQLAlchemyStore.load``)."""
        rows = (tuple(r.get(k) for k in MERGE_FIELDS) for r in self._rows(session_id))
        return merge_rows(rows, stored_ids)
