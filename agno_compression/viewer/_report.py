"""A session's page from its database: what ``agno-compression report`` writes and ``serve`` shows."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from .._databases import _owner, _session, _sessions, fail, source_label
from .._messages import message_text, one_line
from .._sessions import records_of_run, session_runs, skipped_records, stats_of
from .._stores import store_for
from ._page import session_page
from ._timeline import build_timeline, fold_reason, run_before


def report_page(
    db: Any,
    session_id: str,
    spec: str,
    *,
    budget: int | None = None,
    back: str | None = None,
    label: str | None = None,
    user_id: str | None = None,
) -> str:
    """The page of ``session_id`` in the agno ``db`` opened from ``spec`` (exits 2 when there is no such session, or
    it is not ``user_id``'s), naming the database ``label`` (default: ``spec``, password masked)."""
    found = _owned(db, session_id, spec, user_id)
    store = store_for(db)
    records = store.events(session_id) if store is not None else []
    timeline = build_timeline(found, records, budget=budget)
    skipped = skipped_records(store, session_id)
    return session_page(timeline, source=label or source_label(spec), back=back, skipped=skipped)


def _owned(db: Any, session_id: str, spec: str, user_id: str | None) -> Any:
    """The session, when it is ``user_id``'s (any user's with ``None``); else "no such session", as AgentOS says."""
    found = _session(db, session_id, spec)
    if user_id is not None and getattr(found, "user_id", None) != user_id:
        raise fail(f"{source_label(spec)}: no session {session_id!r}")
    return found


def session_rows(db: Any, *, user_id: str | None = None) -> list[dict[str, Any]]:
    """What ``inspect`` and ``serve`` list about each session of ``db`` (``user_id``'s only, when given), newest
    first."""
    store = store_for(db)
    rows = []
    for s in _sessions(db):
        if user_id is not None and getattr(s, "user_id", None) != user_id:
            continue
        st = None
        if store is not None:
            st = stats_of(s.session_id, store.events(s.session_id), skipped_records(store, s.session_id))
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
                "skipped_records": len(st.skipped) if st else 0,
                "updated_at": getattr(s, "updated_at", None) or getattr(s, "created_at", None),
                "request": one_line(message_text(asked[0], False), 90) if asked else "",
            }
        )
    return rows


def _between_runs(session: Any, records: list[Any]) -> dict[int, list[Any]]:
    """Folds made between runs (on request: ``run_id`` ``None``), by ``id()`` of the top-level run each came after
    (the first run's when it came before them all), listed with that run's folds."""
    top = session_runs(session, top_level=True)
    out: dict[int, list[Any]] = {}
    for record in (r for r in records if r.run_id is None):
        index = run_before(record, top)
        if top:
            out.setdefault(id(top[index or 0]), []).append(record)
    return out


def session_json(
    db: Any, session_id: str, spec: str, *, with_stats: bool = False, user_id: str | None = None
) -> dict[str, Any]:
    """One session's runs, model calls and folds as ``inspect --session --json`` prints them (exits 2 when there is
    no such session, or it is not ``user_id``'s); ``with_stats`` adds ``stats()``'s totals (the viewer's JSON)."""
    found = _owned(db, session_id, spec, user_id)
    store = store_for(db)
    records = store.events(session_id) if store is not None else []
    between = _between_runs(found, records)
    runs = []
    for run in session_runs(found):
        calls = [m for m in run.messages or [] if m.role == "assistant" and not m.from_history]
        runs.append(
            {
                "run_id": run.run_id,
                "status": str(getattr(run.status, "value", run.status)),
                "member_of": getattr(run, "parent_run_id", None),
                "model_calls": len(calls),
                "prompt_tokens": [getattr(m.metrics, "input_tokens", 0) for m in calls],
                "folds": [
                    {
                        "record_id": f.id,
                        "before_call": f.call_index,
                        "reason": fold_reason(f),
                        "budget": f.budget,
                        "strategy": f.strategy,
                        "tokens_before": f.tokens_before,
                        "tokens_after": f.tokens_after,
                        "folded": len(f.folded_ids),
                        "folded_ids": f.folded_ids,
                        "summary": f.summary,
                    }
                    for f in [*records_of_run(records, run), *between.get(id(run), [])]
                ],
            }
        )
    skipped = skipped_records(store, session_id)
    out: dict[str, Any] = {"session_id": session_id}
    if with_stats:
        out["stats"] = asdict(stats_of(session_id, records, skipped))
    out["runs"] = runs
    out["skipped_records"] = skipped
    return out
