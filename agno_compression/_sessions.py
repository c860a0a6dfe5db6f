"""Reading agno's stored sessions: their runs and messages, the view the model sees, stats and snapshots.

agno keeps every original message in its own session storage; this package only adds fold records
(``_stores``). Everything here reads agno's side (``db.get_session``) and joins the records to it:
``full_messages`` for training-data export, ``compressed_view`` for what the model sees now,
``stats`` and ``snapshot``/``load_snapshot`` for moving a session between databases.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, fields
from itertools import chain
from operator import attrgetter
from typing import Any

from ._exceptions import ConfigError, StoreError
from ._plan import SYSTEM_ROLES, filter_folded
from ._stores import (
    EVENTS_KEY,
    SCHEMA_VERSION,
    CompressionRecord,
    CompressionStore,
    SessionCompression,
    SessionDataStore,
    agno_session,
    load_counted,
    store_for,
)

_ID = attrgetter("id")


class StoredIds(AbstractSet[str]):
    """Ids of the runs agno stored for a session and of their messages: what ``stored_ids_of`` returns.

    Run and message ids are both uuid4s, so one set holds both. A fold record almost always names a stored
    run, so run ids are collected at once and message ids (every message of a long session) only when an id
    that is not a run's is looked up.
    """

    def __init__(self, runs: Sequence[Any], session: Any, live: Iterable[Any]) -> None:
        run_ids = {getattr(run, "run_id", None) for run in runs}
        run_ids.update(getattr(run, "parent_run_id", None) for run in runs)
        run_ids.update(getattr(r, "run_id", None) for r in getattr(session, "runs", None) or ())
        self._runs: frozenset[str] = frozenset(str(i) for i in run_ids if i)
        self._sources = (runs, list(live))  # the live list changes after the run starts
        self._all: frozenset[str] | None = None

    def _everything(self) -> frozenset[str]:
        everything = self._all
        if everything is None:
            runs, live = self._sources
            # C-level maps over every stored message (10,000 on a long session); empty ids dropped at the end.
            ids = set(map(_ID, chain.from_iterable(getattr(run, "messages", None) or () for run in runs)))
            ids.update([m.id for m in live if getattr(m, "from_history", False)])
            ids.discard(None)
            ids.discard("")
            everything = self._all = self._runs | ids
        return everything

    def __contains__(self, item: object) -> bool:
        return item in self._runs or item in self._everything()

    def __iter__(self) -> Iterator[str]:
        return iter(self._everything())

    def __len__(self) -> int:
        return len(self._everything())


def stored_ids_of(session: Any, live: Iterable[Any] = ()) -> StoredIds | None:
    """Ids of the runs agno stored for ``session`` and of their messages (loaded with it), plus history in ``live``.

    ``None`` when the session has no loaded runs (a member's or a fresh session): nothing to check against.
    """
    runs = session_runs(session) if session is not None else []
    if not runs:
        return None
    return StoredIds(runs, session, live)


def session_runs(session: Any, *, top_level: bool = False) -> list[Any]:
    """The runs holding a session's messages, in order.

    Agent and team sessions hold them in ``session.runs`` (a team's member runs included, with a
    ``parent_run_id``). A workflow session keeps the runs of the agents and teams of its steps in
    each workflow run's ``step_executor_runs`` (nested workflows inside those), so those are returned.
    ``top_level`` keeps the runs agno loads as history: no member runs.
    """
    out: list[Any] = []
    seen: set[str] = set()

    def add(run: Any) -> None:
        key = getattr(run, "run_id", None) or str(id(run))
        if key not in seen:
            seen.add(key)
            out.append(run)

    def walk_workflow(run: Any) -> None:
        for executor in getattr(run, "step_executor_runs", None) or []:
            if hasattr(executor, "step_executor_runs"):  # a nested workflow's run
                walk_workflow(executor)
                continue
            if top_level and getattr(executor, "parent_run_id", None) not in (None, run.run_id):
                continue  # a team member's run, stored beside its team's run
            add(executor)
            if not top_level:
                for member in getattr(executor, "member_responses", None) or []:
                    add(member)

    for run in getattr(session, "runs", None) or []:
        if hasattr(run, "step_executor_runs"):
            walk_workflow(run)
        elif not top_level or getattr(run, "parent_run_id", None) is None:
            add(run)
    return out


def records_of_run(records: Iterable[CompressionRecord], run: Any) -> list[CompressionRecord]:
    """The folds done in ``run``. An agent or team in a workflow step runs under the workflow run's id
    (its fold records carry that id), so those are matched by the workflow run and the owner's id."""
    owners = {getattr(run, "agent_id", None), getattr(run, "team_id", None)} - {None}
    parent = getattr(run, "parent_run_id", None)
    return [
        r
        for r in records
        if r.run_id == run.run_id or (parent is not None and r.run_id == parent and r.owner_id in owners)
    ]


def full_messages(db: Any, session_id: str) -> list[Any]:
    """Every original message of a session, in order, as agno stored it (for training-data export).

    Reads agno's own stored runs (agent, team or workflow session; a team session includes its
    members' runs, a workflow session the runs of its steps' agents and teams): history copies
    (``from_history=True``) are skipped, everything else is kept with its full original content,
    whatever was folded, summarized, masked or shortened in context.
    """
    session, _ = agno_session(db, session_id)
    if session is None:
        return []
    return [m for run in session_runs(session) for m in run.messages or [] if not m.from_history]


def compressed_view(db: Any, session_id: str) -> list[Any]:
    """The session as the model sees it now: newest system prompt, newest summary, then what was not folded.

    Reconstructed from agno's stored runs (top-level runs only, as agno loads history) and the
    fold records; masked or shortened tool outputs carry their in-context text in ``compressed_content``.
    """
    session, _ = agno_session(db, session_id)
    if session is None:
        return []
    messages = [m for run in session_runs(session, top_level=True) for m in run.messages or [] if not m.from_history]
    store = store_for(db)
    stored = stored_ids_of(session)
    loaded = load_counted(store, session_id, stored) if store is not None else SessionCompression(frozenset(), None, 0)
    system = [m for m in messages if m.role in SYSTEM_ROLES][-1:]
    rest = [m.model_copy(update={"from_history": True}) for m in messages if m.role not in SYSTEM_ROLES]
    return filter_folded([*system, *rest], loaded.folded_ids, loaded.summary)


# --- stats and snapshots ---------------------------------------------------------------------------


def _as_store(db_or_store: Any) -> CompressionStore:
    if isinstance(db_or_store, CompressionStore):
        return db_or_store
    store = store_for(db_or_store)
    if store is None:
        raise ConfigError(f"{type(db_or_store).__name__} cannot keep compression records (not a synchronous agno db)")
    return store


@dataclass(frozen=True)
class SessionStats:
    """What compression did to one session, from its records."""

    session_id: str
    folds: int
    """Number of folds recorded."""
    folded_messages: int
    """Distinct messages folded away (union over the folds)."""
    tokens_saved: int
    """Sum of prompt tokens before minus after each fold."""
    strategies: dict[str, int]
    """Folds per strategy (e.g. ``extractive``, ``llm``, ``llm->extractive`` after a fallback)."""
    summarizer_models: list[str]
    """Models that wrote summaries, if any."""
    first_fold_at: float | None
    last_fold_at: float | None
    newest_record_id: int | None
    skipped: list[str] = field(default_factory=list)
    """Stored records left out because a field did not read (``"record 7: folded_ids is not JSON"``)."""


def stats(db_or_store: Any, session_id: str) -> SessionStats:
    """Compression statistics of ``session_id`` from an agno db (``SqliteDb``, ``PostgresDb``, ...) or a store."""
    store = _as_store(db_or_store)
    return stats_of(session_id, store.events(session_id), skipped_records(store, session_id))


def skipped_records(store: Any, session_id: str) -> list[str]:
    """The records of ``session_id`` a store skipped as unreadable when it last read them (after ``events``)."""
    skipped = getattr(store, "skipped", None)
    return list(skipped(session_id)) if callable(skipped) else []


def stats_of(session_id: str, rows: Sequence[CompressionRecord], skipped: Sequence[str] = ()) -> SessionStats:
    """``stats`` of records already read (oldest first): the one definition of "tokens saved" that ``inspect``,
    ``report`` and ``serve`` show too."""
    strategies: dict[str, int] = {}
    for r in rows:
        strategies[r.strategy] = strategies.get(r.strategy, 0) + 1
    return SessionStats(
        session_id=session_id,
        folds=len(rows),
        folded_messages=len({i for r in rows for i in r.folded_ids}),
        tokens_saved=sum(max(0, r.tokens_before - r.tokens_after) for r in rows),
        strategies=strategies,
        summarizer_models=sorted({r.summarizer_model for r in rows if r.summarizer_model}),
        first_fold_at=rows[0].created_at if rows else None,
        last_fold_at=rows[-1].created_at if rows else None,
        newest_record_id=rows[-1].id if rows else None,
        skipped=list(skipped),
    )


SNAPSHOT_FORMAT = "agno-compression-snapshot"


def snapshot(db: Any, session_id: str) -> dict[str, Any]:
    """A JSON-safe copy of a session: agno's session (every run, every original message) and its fold records.

    ``load_snapshot`` writes it into another database, so a session can move between databases.
    """
    session, kind = agno_session(db, session_id)
    if session is None:
        raise StoreError(f"no session {session_id!r} in {type(db).__name__}")
    records = []
    for r in _as_store(db).events(session_id):
        row = {f.name: getattr(r, f.name) for f in fields(CompressionRecord) if f.name != "id"}
        records.append(row)
    return {
        "format": SNAPSHOT_FORMAT,
        "schema_version": SCHEMA_VERSION,
        "session_id": session_id,
        "session_type": kind.value,
        "session": session.to_dict(),
        "records": records,
    }


def load_snapshot(db: Any, data: dict[str, Any]) -> int:
    """Write a ``snapshot`` into ``db``: upsert agno's session, append the records it does not have yet.

    Returns the number of records added; loading the same snapshot twice adds nothing the second time.
    """
    from agno.session import AgentSession, TeamSession, WorkflowSession

    if not isinstance(data, dict) or data.get("format") != SNAPSHOT_FORMAT:
        raise ConfigError("not an agno-compression snapshot (missing format marker)")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ConfigError(f"snapshot schema_version {data.get('schema_version')!r} is not {SCHEMA_VERSION}")
    classes: dict[str, Any] = {"team": TeamSession, "workflow": WorkflowSession}
    session_cls = classes.get(str(data.get("session_type")), AgentSession)
    session = session_cls.from_dict(copy.deepcopy(data["session"]))  # agno's from_dict consumes its input
    if session is None:
        raise ConfigError(f"snapshot of {data.get('session_id')!r} holds no readable agno session")
    store = _as_store(db)
    if isinstance(store, SessionDataStore):
        # The records live in the session row being overwritten: keep the destination's own, and let the
        # loop below add the snapshot's (the snapshot's session may carry rows of its source).
        kept = store.rows(str(data["session_id"]))
        session_data = session.session_data if isinstance(session.session_data, dict) else {}
        session_data.pop(EVENTS_KEY, None)
        if kept:
            session_data[EVENTS_KEY] = kept
        session.session_data = session_data
    try:
        db.upsert_session(session)
        # agno keeps runs in their own table where the adapter has one; elsewhere they live in the session row.
        for index, run in enumerate(session.runs or []):
            try:
                db.upsert_run(run, session_id=session.session_id, user_id=session.user_id, run_index=index)
            except NotImplementedError:
                break
    except Exception as exc:
        raise StoreError(f"cannot write session {data.get('session_id')!r}: {exc}") from exc

    def key(r: CompressionRecord) -> tuple[Any, ...]:
        # Milliseconds: MariaDB returns a DOUBLE with 15 significant digits, a unix time has 17.
        return round(float(r.created_at), 3), r.strategy, tuple(r.folded_ids)

    have = {key(r) for r in store.events(data["session_id"])}
    added = 0
    for row in data.get("records", []):
        record = CompressionRecord(**row)
        if key(record) in have:
            continue
        store.record(record)
        added += 1
    return added
