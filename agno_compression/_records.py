"""Fold records for the manager: which store a run writes to, behind a cooldown, and what it writes.

A store that fails is left alone for ``cooldown`` seconds, so a dead database costs one timeout,
not one per fold; every failure only warns (the run goes on).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from agno.models.message import Message

from ._plan import filter_folded
from ._runs import RunOwner
from ._session_store import SessionDataStore
from ._stats import Stats
from ._store import CompressionRecord, CompressionStore, load_counted, store_for, stored_ids_of

log = logging.getLogger("agno_compression")


@dataclass
class FoldEvent:
    """One fold (or masking pass) done during a run."""

    strategy: str
    """What acted: ``"mask"``, a summarizer's name, or ``"<name>->extractive"`` after a fallback."""
    folded_ids: list[str]
    """Ids of the messages folded away (empty for a masking pass)."""
    masked_ids: list[str]
    """Ids of tool results masked in place."""
    shortened_ids: list[str]
    """Ids of kept tool results shortened in context because they alone exceeded the budget."""
    summary: str | None
    """The summary text injected, if any."""
    tokens_before: int
    """Prompt tokens before the fold."""
    tokens_after: int
    """Prompt tokens after the fold."""
    created_at: float = field(default_factory=time.time)
    """Unix time of the fold."""
    summarizer_model: str | None = None
    """Id of the model that wrote the summary, if a model did."""
    summarizer_usage: dict[str, Any] | None = None
    """Token usage of the summarizer call, if a model wrote the summary."""
    record_id: int | None = None
    """Id of the stored compression record, once written."""


class FoldRecorder:
    """Finds each run's store, loads the session's earlier folds and records new ones."""

    def __init__(self, *, store: CompressionStore | None, cooldown: float, stats: Stats) -> None:
        self.store = store
        self.cooldown = cooldown
        self.stats = stats
        self._lock = threading.Lock()
        self._stores: dict[int, tuple[Any, CompressionStore | None]] = {}
        self._down_until: dict[int, float] = {}

    def owner(self, run_context: Any, owner: Any, session: Any) -> RunOwner | None:
        """Who a registered run belongs to, with its store (``None`` without a session id)."""
        session_id = getattr(run_context, "session_id", None)
        if not session_id:
            return None
        from agno.team import Team

        store = self.store_for(owner)
        saves_own_session = getattr(owner, "team_id", None) is None and getattr(owner, "workflow_id", None) is None
        if isinstance(store, SessionDataStore) and saves_own_session and getattr(session, "session_id", None):
            # Folds go into the session object agno saves with this run's messages (a team member's folds
            # join its team's, which is bound under the same session id).
            store.bind(session)
        return RunOwner(
            session_id=str(session_id),
            run_id=getattr(run_context, "run_id", None),
            owner_type="team" if isinstance(owner, Team) else "agent",
            owner_id=getattr(owner, "id", None),
            store=store,
            history=bool(getattr(owner, "add_history_to_context", False)),
            db=getattr(owner, "db", None),
            session=session,
        )

    def store_for(self, owner: Any) -> CompressionStore | None:
        """The store given to the manager, else one in the owner's ``db`` (found once per db)."""
        if self.store is not None:
            return self.store
        db = getattr(owner, "db", None)
        if db is None:
            return None
        with self._lock:
            cached = self._stores.get(id(db))
            if cached is not None and cached[0] is db:
                return cached[1]
        try:
            store: CompressionStore | None = store_for(db)
        except Exception as exc:
            log.warning("agno-compression: compression records disabled for %s: %s", type(db).__name__, exc)
            store = None
        with self._lock:
            self._stores[id(db)] = (db, store)
        return store

    def usable(self, store: CompressionStore | None) -> bool:
        """True for a store that exists and is not cooling down after a failure."""
        return store is not None and time.monotonic() >= self._down_until.get(id(store), 0.0)

    def failed(self, store: CompressionStore) -> None:
        """Leave ``store`` alone for ``cooldown`` seconds."""
        self._down_until[id(store)] = time.monotonic() + self.cooldown

    def without_earlier_folds(self, owner: RunOwner | None, messages: list[Message]) -> list[Message]:
        """Loaded history minus what the session folded before, with its newest summary in its place."""
        try:
            if owner is None or owner.store is None or not self.usable(owner.store):
                return messages
            try:
                # A fold counts only if its run or the messages it folded were stored (a run killed before agno
                # saved it leaves records behind): checked against the ids agno already loaded with the session.
                loaded = load_counted(owner.store, owner.session_id, stored_ids_of(owner.session, messages))
            except Exception:
                self.failed(owner.store)
                raise
            if not loaded.folds:
                return messages
            return filter_folded(messages, loaded.folded_ids, loaded.summary if owner.history else None)
        except Exception as exc:
            log.warning("agno-compression: could not load the session's compression records: %s", exc)
            return messages

    def record(self, owner: RunOwner | None, event: FoldEvent) -> None:
        """Write the fold (folded ids and summary in one row, one transaction); a failure only warns."""
        if owner is None or owner.store is None:
            return
        if not self.usable(owner.store):
            self.stats.add("records_skipped")
            return
        row = CompressionRecord(
            session_id=owner.session_id,
            folded_ids=list(event.folded_ids),
            summary=event.summary,
            strategy=event.strategy,
            owner_type=owner.owner_type,
            owner_id=owner.owner_id,
            run_id=owner.run_id,
            tokens_before=event.tokens_before,
            tokens_after=event.tokens_after,
            summarizer_model=event.summarizer_model,
            summarizer_usage=event.summarizer_usage,
            created_at=event.created_at,
        )
        try:
            event.record_id = owner.store.record(row)
            self.stats.add("records_written")
        except Exception as exc:
            self.failed(owner.store)
            self.stats.add("record_failures")
            log.warning(
                "agno-compression: could not record the fold of session %r (the run goes on): %s", owner.session_id, exc
            )

    def mirror(self, owner: RunOwner | None, session: Any) -> None:
        """Mirror the session's compression totals into ``session_data``, readable without our table."""
        if owner is None or session is None or owner.store is None or not self.usable(owner.store):
            return
        try:
            loaded = owner.store.load(owner.session_id)
        except Exception as exc:
            self.failed(owner.store)
            log.warning("agno-compression: could not read the session's compression records: %s", exc)
            return
        if not loaded.folds:
            return
        data = session.session_data if isinstance(session.session_data, dict) else {}
        data["agno_compression"] = {
            "folds": loaded.folds,
            "folded_messages": len(loaded.folded_ids),
            "tokens_saved": loaded.tokens_saved,
            "newest_record_id": loaded.newest_id,
        }
        session.session_data = data

    def folded_ids(self, owner: RunOwner | None) -> frozenset[str]:
        """Ids the session folded in earlier runs (empty without a usable store)."""
        if owner is None or owner.store is None or not self.usable(owner.store):
            return frozenset()
        return frozenset(owner.store.load(owner.session_id).folded_ids)
