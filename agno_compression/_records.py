"""Fold records for the manager: which store a run writes to, behind a cooldown, and what it writes.

A fold's record is written on one background thread per manager, in fold order, so the model
call after a fold never waits for the database's commit; the run's post-hook (and a checkpoint)
waits for the run's records before agno stores the run, so a stored run's folds are stored too.
A store that fails is left alone for ``cooldown`` seconds, so a dead database costs one timeout,
not one per fold; every failure only warns (the run goes on).
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from agno.models.message import Message

from ._deletion import delete_run_records
from ._events import FoldEvent
from ._exceptions import StoreError
from ._plan import filter_folded
from ._runs import RunOwner
from ._sessions import stored_ids_of
from ._stats import Stats
from ._stores import CompressionRecord, CompressionStore, SessionDataStore, load_counted, store_for
from ._stores._leases import FOLD, RUN, leases_of

RUN_LEASE_SECONDS = 15 * 60
"""How long a run's lease on its session lasts without a fold renewing it: a run that died blocks folds on request
of its session for at most this long."""
FOLD_WAIT_SECONDS = 600.0
"""Longest a starting run waits for a fold on request of its session to end (the fold's lease expires sooner)."""

log = logging.getLogger("agno_compression")


FROM_EVENT = (
    "summary",
    "strategy",
    "tokens_before",
    "tokens_after",
    "summarizer_model",
    "summarizer_usage",
    "created_at",
    "call_index",
    "budget",
)
"""The fields a fold record copies from its event as they are."""


class FoldRecorder:
    """Finds each run's store, loads the session's earlier folds and records new ones."""

    def __init__(self, *, store: CompressionStore | None, cooldown: float, stats: Stats) -> None:
        self.store = store
        self.cooldown = cooldown
        self.stats = stats
        self._lock = threading.Lock()
        self._stores: dict[int, tuple[Any, CompressionStore | None]] = {}
        self._down_until: dict[int, float] = {}
        self._writer: ThreadPoolExecutor | None = None
        self._lease_warned: dict[int, float] = {}

    def _submit(self, write: Any, *args: Any) -> Future[None]:
        with self._lock:
            if self._writer is None:
                self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agno-compression-records")
            return self._writer.submit(write, *args)

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

    def without_earlier_folds(
        self, owner: RunOwner | None, messages: list[Message], fresh: bool = False
    ) -> list[Message]:
        """Loaded history minus what the session folded before, with its newest summary in its place.

        ``fresh``: the run starts (agno ran its pre-hook). Records under its own run id then belong to an earlier
        attempt that died (agno's durable queue runs a reclaimed job again under the same id; a continued run
        gets no pre-hook): they are dropped, so the session holds the records of the attempt that ends only.
        """
        try:
            if owner is None or owner.store is None or not self.usable(owner.store):
                return messages
            lease_failed = self.enter(owner) if fresh else None
            try:
                # A fold counts only if its run or the messages it folded were stored (a run killed before agno
                # saved it leaves records behind): checked against the ids agno already loaded with the session.
                stored = stored_ids_of(owner.session, messages)
                loaded = load_counted(owner.store, owner.session_id, stored)
                if fresh and owner.run_id and str(owner.run_id) in loaded.run_ids:
                    dropped = delete_run_records(owner.store, owner.session_id, str(owner.run_id))
                    log.info("agno-compression: a run ran again: %d records of its earlier attempt dropped", dropped)
                    loaded = load_counted(owner.store, owner.session_id, stored)
            except Exception:
                self.failed(owner.store)
                raise
            owner.loaded = loaded
            if lease_failed is not None and time.monotonic() >= self._lease_warned.get(id(owner.store), 0.0):
                self._lease_warned[id(owner.store)] = time.monotonic() + self.cooldown  # once per cooldown
                log.warning("agno-compression: could not take the run's lease on its session: %s", lease_failed)
            if not loaded.folds:
                return messages
            return filter_folded(messages, loaded.folded_ids, loaded.summary if owner.history else None)
        except Exception as exc:
            log.warning("agno-compression: could not load the session's compression records: %s", exc)
            return messages

    def enter(self, owner: RunOwner) -> Exception | None:
        """Take the run's lease on its session, then wait while a fold on request holds the session, so the run loads
        the history that fold leaves (``_stores._leases``: take first, then look, as the fold does). A failure is
        returned, not raised: the run goes on (and its store's own load then says whether the database is down)."""
        leases = leases_of(owner.store)
        holder = owner.run_id or f"run-{id(owner)}"
        try:
            leases.take(owner.session_id, holder, RUN, RUN_LEASE_SECONDS)
            owner.lease = holder
            deadline = time.monotonic() + FOLD_WAIT_SECONDS
            while leases.live(owner.session_id, FOLD) and time.monotonic() < deadline:
                time.sleep(0.05)
        except Exception as exc:  # never break a run: it then runs as if no fold on request could come
            return exc
        return None

    def leave(self, owner: RunOwner | None) -> None:
        """Release the run's lease on the writer thread, after its records (the run's end does not wait for it)."""
        if owner is None or owner.lease is None:
            return
        holder, owner.lease = owner.lease, None

        def release() -> None:
            try:
                leases_of(owner.store).release(owner.session_id, holder)
            except Exception as exc:  # the lease expires by itself
                log.warning("agno-compression: could not release the run's lease on its session: %s", exc)

        self._submit(release)

    def record_late(self, owner: RunOwner | None, events: list[FoldEvent]) -> None:
        """Queue the records of folds made before the run's owner was known, with the session's totals so far.

        agno runs no pre-hook on ``continue_run``: a continued run learns its session only in its post-hook.
        """
        if owner is None or not events:
            return
        self.without_earlier_folds(owner, [])  # loads the session's earlier folds into owner.loaded, for mirror()
        for event in events:
            self.record(owner, event)

    def record(self, owner: RunOwner | None, event: FoldEvent) -> None:
        """Queue the fold's record (folded ids and summary in one row, one transaction)."""
        if owner is not None and owner.store is not None:
            owner.pending.append(self._submit(self._write, owner, event))

    def then(self, owner: RunOwner | None, action: Any) -> bool:
        """Run ``action`` on the writer thread after the run's records queued so far (the run's post-hook waits for it
        as for them); False, and nothing queued, when the run has none pending."""
        if owner is None or not owner.pending:
            return False
        owner.pending.append(self._submit(action))
        return True

    def flush(self, owner: RunOwner | None) -> None:
        """Wait until the run's queued records are written (or have failed)."""
        if owner is not None and owner.pending:
            pending, owner.pending = owner.pending, []
            wait(pending)

    def drain(self) -> None:
        """Wait until every record queued so far, by any run, is written (or has failed)."""
        with self._lock:
            writer = self._writer
        if writer is not None:
            writer.submit(lambda: None).result()  # one writer thread, in order: done after everything before it

    def _write(self, owner: RunOwner, event: FoldEvent) -> None:
        assert owner.store is not None
        if not self.usable(owner.store):
            self.stats.add("records_skipped")
            return
        row = CompressionRecord(
            session_id=owner.session_id,
            folded_ids=list(event.folded_ids),
            owner_type=owner.owner_type,
            owner_id=owner.owner_id,
            run_id=owner.run_id,
            **{name: getattr(event, name) for name in FROM_EVENT},
        )
        try:
            event.record_id = owner.store.record(row)
        except Exception as exc:
            self.failed(owner.store)
            self.stats.add("record_failures")
            log.warning(
                "agno-compression: could not record a fold (the run goes on): %s",
                exc if isinstance(exc, StoreError) else type(exc).__name__,  # ours names no session text
            )
            return
        self.stats.add("records_written")
        owner.written.append(event)
        if owner.lease is not None:  # a fold renews the run's lease
            try:
                leases_of(owner.store).take(owner.session_id, owner.lease, RUN, RUN_LEASE_SECONDS)
            except Exception as exc:
                log.warning("agno-compression: could not renew the run's lease on its session: %s", exc)

    def mirror(self, owner: RunOwner | None, session: Any) -> None:
        """Mirror the session's compression totals into ``session_data``, readable without our table.

        The totals are the ones loaded when the run started plus the run's own records: no second query.
        """
        self.flush(owner)
        self.leave(owner)
        if owner is None or session is None or owner.loaded is None:
            return
        start, written = owner.loaded, owner.written
        if not start.folds and not written:
            return
        folded = set(start.folded_ids).union(*(e.folded_ids for e in written))
        data = session.session_data if isinstance(session.session_data, dict) else {}
        data["agno_compression"] = {
            "folds": start.folds + len(written),
            "folded_messages": len(folded),
            "tokens_saved": start.tokens_saved + sum(max(0, e.tokens_before - e.tokens_after) for e in written),
            "newest_record_id": written[-1].record_id if written else start.newest_id,
        }
        session.session_data = data

    def folded_ids(self, owner: RunOwner | None) -> frozenset[str]:
        """Ids the session folded in earlier runs (empty without a usable store)."""
        if owner is None or owner.store is None or not self.usable(owner.store):
            return frozenset()
        return frozenset(owner.store.load(owner.session_id).folded_ids)
