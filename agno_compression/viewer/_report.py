"""A session's page from its database: what ``agno-compression report`` writes and ``serve`` shows."""

from __future__ import annotations

from typing import Any

from .._databases import _owner, _session, _sessions, source_label
from .._messages import message_text, one_line
from .._sessions import session_runs, stats_of
from .._stores import store_for
from ._page import session_page
from ._timeline import build_timeline


def report_page(db: Any, session_id: str, spec: str, *, budget: int | None = None, back: str | None = None) -> str:
    """The page of ``session_id`` in the agno ``db`` opened from ``spec`` (exits 2 when there is no such session)."""
    found = _session(db, session_id, spec)
    store = store_for(db)
    records = store.events(session_id) if store is not None else []
    timeline = build_timeline(found, records, budget=budget)
    return session_page(timeline, source=source_label(spec), back=back)


def session_rows(db: Any) -> list[dict[str, Any]]:
    """What ``inspect`` and ``serve`` list about each session of ``db``, newest first."""
    store = store_for(db)
    rows = []
    for s in _sessions(db):
        st = stats_of(s.session_id, store.events(s.session_id)) if store is not None else None
        messages = [m for r in session_runs(s) for m in r.messages or [] if not m.from_history]
        first = sorted(session_runs(s, top_level=True), key=lambda r: getattr(r, "created_at", 0) or 0)[:1]
        asked = [m for r in first for m in r.messages or [] if m.role == "user" and not m.from_history]
        rows.append(
            {
                "session_id": s.session_id,
                "owner": _owner(s),
                "runs": len(s.runs or []),
                "messages": len(messages),
                "folds": st.folds if st else 0,
                "tokens_saved": st.tokens_saved if st else 0,
                "updated_at": getattr(s, "updated_at", None) or getattr(s, "created_at", None),
                "request": one_line(message_text(asked[0], False), 90) if asked else "",
            }
        )
    return rows
