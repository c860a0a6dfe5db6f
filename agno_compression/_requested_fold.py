"""Folding a stored session now, on request: ``CompressionManager.fold_session``.

A fold on request is the history fold the session's next run would make, made now: the session as the model
sees it (``compressed_view``: the newest summary and what was not folded) is folded into one summary, written
as one fold record with ``run_id`` ``None`` and the strategy ``request:<summarizer>``; the next run loads that
summary in place of the folded messages, as after any fold. ``instructions`` steer the summary (what to keep
first). A dry run (``apply=False``) says what would fold and the tokens before and after, writing nothing.

Never two folds of one span: the fold holds the session's fold lease while it reads and writes, and refuses
(``busy``) or waits while a run of the session holds a run lease (``_stores`` leases, where the store has them).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from agno.db.base import SessionType
from agno.run.base import RunContext  # resolved at run time: agno injects the run's context by this annotation

from ._archive import SEARCH_HINT
from ._exceptions import ConfigError
from ._keeping import _working_set
from ._plan import HISTORY, SYSTEM_ROLES, filter_folded, make_summary_message
from ._provider_compaction import provider_compaction
from ._sessions import session_runs, stored_ids_of
from ._stores import CompressionRecord, SessionDataStore, agno_session, load_counted, usage_dict
from ._stores._leases import FOLD, RUN, Leases, leases_of
from ._summarizers import SummaryRequest

log = logging.getLogger("agno_compression")

FOLDED = "folded"
DRY_RUN = "dry_run"
NOTHING = "nothing_to_fold"
NO_SESSION = "no_session"
BUSY = "busy"

REQUEST_TAG = "request:"
"""Strategy prefix of a fold made on request (the page and ``inspect`` say "on request")."""
AGENT_TAG = "agent:"
"""Strategy prefix of a fold the agent asked for (``fold_context``): the page and ``inspect`` say "the agent asked"."""


@dataclass(frozen=True)
class FoldResult:
    """What ``fold_session`` did, or would do (a dry run)."""

    status: str
    """``folded``, ``dry_run`` (nothing written), ``nothing_to_fold``, ``no_session`` or ``busy`` (a run or another
    fold of the session is going)."""
    message: str
    """One line a person can be shown."""
    session_id: str
    folded_messages: int = 0
    """Messages the fold replaces (or would replace) with its summary."""
    tokens_before: int = 0
    """The session's history as the next run would load it, in tokens, before the fold."""
    tokens_after: int = 0
    """The same after it: the summary in place of the folded messages."""
    summary: str | None = None
    record_id: int | None = None
    """The fold record written (``None`` for a dry run or a refusal)."""

    @property
    def folded(self) -> bool:
        return self.status == FOLDED

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "folded": self.folded}


def fold_session(
    manager: Any,
    target: Any,
    session_id: str,
    instructions: str | None = None,
    *,
    apply: bool = True,
    wait: float = 0.0,
    user_id: str | None = None,
) -> FoldResult:
    """``CompressionManager.fold_session``: see there."""
    if not isinstance(session_id, str) or not session_id:
        raise ConfigError(f"session_id must be a non-empty string, got {session_id!r}")
    if instructions is not None and not isinstance(instructions, str):
        raise ConfigError(f"instructions must be text or None, got {type(instructions).__name__}")
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or wait < 0:
        raise ConfigError(f"wait must be a number of seconds >= 0, got {wait!r}")
    db, model = _db_and_model(target)
    store = manager._records.store_for(_Owner(db)) if manager.store is None else manager.store
    if store is None:
        raise ConfigError(f"{type(db).__name__} cannot keep compression records: folds on request need a SQL db")
    if not apply:
        return _fold(manager, db, store, model, session_id, instructions, user_id, apply=False)
    leases = leases_of(store)
    manager._records.drain()  # this manager's runs release their leases on its writer thread: ended runs are gone
    deadline = time.monotonic() + wait
    seen: set[str] = set()  # runs found going: agno stores a run after its post-hook released the run's lease
    freed: float | None = None
    while True:
        busy = _take(leases, session_id, manager.summarizer_timeout, seen)
        if busy is None and seen and _unstored(db, session_id, seen):
            freed = time.monotonic() if freed is None else freed
            if time.monotonic() - freed < STORE_GRACE:  # a run that died is never stored: fold after the grace
                leases.release(session_id, FOLD)
                busy = "a run of this session ended and is being stored; fold when it is"
        if busy is None:
            try:
                return _fold(manager, db, store, model, session_id, instructions, user_id, apply=True)
            finally:
                leases.release(session_id, FOLD)
        if time.monotonic() >= deadline:
            return FoldResult(BUSY, busy, session_id)
        time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))


STORE_GRACE = 5.0
"""Seconds a fold on request that waited for a run waits, after the run's lease went, for agno to store that run."""


def _unstored(db: Any, session_id: str, runs: set[str]) -> bool:
    """True when a run of ``runs`` is not in agno's stored session yet."""
    session, _ = agno_session(db, session_id)
    stored = {getattr(r, "run_id", None) for r in session_runs(session)} if session is not None else set()
    return bool(runs - stored)


def _take(leases: Leases, session_id: str, timeout: float, seen: set[str]) -> str | None:
    """Take the session's fold lease, then look for runs (the order ``_records.enter`` mirrors; their holders, run
    ids, go into ``seen``); ``None`` when the fold may go ahead, else why not (the lease then released again)."""
    if not leases.take(session_id, FOLD, FOLD, timeout + FOLD_MARGIN):
        return "another fold of this session is going; try again when it ends"
    runs = leases.live(session_id, RUN)
    seen.update(runs)
    if not runs:
        return None
    leases.release(session_id, FOLD)
    return f"{plural(len(runs), 'run')} of this session {'is' if len(runs) == 1 else 'are'} going; fold when it ends"


FOLD_MARGIN = 60.0
"""Seconds a fold's lease outlives its summarizer's timeout (a fold that died blocks its session this long)."""


def plural(n: int, word: str) -> str:
    return f"{n:,} {word if n == 1 else word + 's'}"


class _Owner:
    """What ``FoldRecorder.store_for`` reads of an owner: its ``db``."""

    def __init__(self, db: Any) -> None:
        self.db = db


def _db_and_model(target: Any) -> tuple[Any, Any]:
    from agno.agent import Agent
    from agno.team import Team

    if isinstance(target, (Agent, Team)):
        if target.db is None:
            raise ConfigError(f"{type(target).__name__} has no db: there is no stored session to fold")
        return target.db, target.model
    if target is None or not hasattr(target, "get_session"):
        raise ConfigError(f"fold_session takes an agno Agent, Team or db, got {type(target).__name__}")
    return target, None


def _fold(
    manager: Any,
    db: Any,
    store: Any,
    model: Any,
    session_id: str,
    instructions: str | None,
    user_id: str | None,
    *,
    apply: bool,
) -> FoldResult:
    session, kind = agno_session(db, session_id)
    if session is None or (user_id is not None and getattr(session, "user_id", None) != user_id):  # as agno scopes
        return FoldResult(NO_SESSION, "no such session", session_id)
    if kind == SessionType.WORKFLOW:
        return FoldResult(NOTHING, "a workflow session folds in its steps' agents and teams", session_id)
    messages = [m for run in session_runs(session, top_level=True) for m in run.messages or [] if not m.from_history]
    loaded = load_counted(store, session_id, stored_ids_of(session))
    system = [m for m in messages if m.role in SYSTEM_ROLES][-1:]
    # as a run loads them: history (filter_folded drops folded history only)
    rest = [m.model_copy(update={"from_history": True}) for m in messages if m.role not in SYSTEM_ROLES]
    view = filter_folded([*system, *rest], loaded.folded_ids, None)
    span = [m for m in view if m.role not in SYSTEM_ROLES and m.id]
    if not span:
        return FoldResult(NOTHING, "nothing to fold: every message of the session is folded already", session_id)
    counter = manager.counter_for(model)
    previous = _working_set.split(loaded.summary)[0] if loaded.summary else None
    before = counter.count_prompt([*system, *([make_summary_message(loaded.summary)] if loaded.summary else []), *span])
    summarizer = manager.strategy.summarizer or manager._runner.fallback  # masking alone: the extractive summary
    hint = counter.count_text(SEARCH_HINT) + 1 if manager.search_tool else 0
    budget = max(manager.min_summary_tokens, min(manager.max_summary_tokens, before // 2) - hint)
    request = SummaryRequest(
        messages=span,
        previous=previous,
        max_tokens=budget,
        count_tokens=counter.count_text,
        kind=HISTORY,
        cap_tokens=max(budget, int(manager.compress_at_tokens * manager.ledger_ratio) - hint),
        instructions=instructions.strip() if instructions and instructions.strip() else None,
    )
    summary = manager._runner.run(summarizer, request)
    text = f"{summary.text}\n{SEARCH_HINT}" if manager.search_tool and SEARCH_HINT not in summary.text else summary.text
    after = counter.count_prompt([*system, make_summary_message(text)])
    result = FoldResult(
        DRY_RUN,
        f"would fold {plural(len(span), 'message')}: {before:,} -> {after:,} tokens; nothing written",
        session_id,
        folded_messages=len(span),
        tokens_before=before,
        tokens_after=after,
        summary=text,
    )
    if after >= before:
        return replace(result, status=NOTHING, message=f"folding would not shrink the history ({before:,} tokens)")
    if not apply:
        return result
    from agno.session import TeamSession

    row = CompressionRecord(
        session_id=session_id,
        folded_ids=[str(m.id) for m in span],
        summary=text,
        strategy=REQUEST_TAG + summary.strategy,
        owner_type="team" if isinstance(session, TeamSession) else "agent",
        owner_id=getattr(session, "team_id", None) or getattr(session, "agent_id", None),
        run_id=None,
        tokens_before=before,
        tokens_after=after,
        summarizer_model=getattr(summary.model, "id", None),
        summarizer_usage=usage_dict(getattr(summary.response, "response_usage", None)),
        budget=manager.compress_at_tokens,
    )
    if isinstance(store, SessionDataStore):  # no run of the session is going (the lease): write agno's row itself,
        store.forget([session_id])  # not the session object a finished run left bound
    record_id = store.record(row)
    manager.stats.add("request_folds")
    manager.stats.add("summarizer_calls")
    manager.stats.add("messages_folded", len(span))
    manager.stats.add("tokens_saved", before - after)
    log.info("agno-compression: folded %d messages on request: %d -> %d tokens", len(span), before, after)
    message = f"folded {plural(len(span), 'message')}: {before:,} -> {after:,} tokens (record {record_id})"
    return replace(result, status=FOLDED, message=message, record_id=record_id)


FOLD_TOOL_NAME = "fold_context"
MAX_KEEP_CHARS = 2_000
"""Longest ``keep`` a ``fold_context`` call passes on (the summary's kept section has its own bound)."""


def fold_tool_function(ask: Callable[[Any, str], str]) -> Callable[..., str]:
    """The ``fold_context`` tool offered to the agent (``fold_tool=True``); ``ask(run_context, keep)`` answers."""

    def fold_context(run_context: RunContext, keep: str = "") -> str:
        """Fold the earlier steps of this conversation into a summary before your next step, to free context.

        Call it at a boundary you choose: a subtask finished, before a long new one. The originals stay
        searchable; the summary keeps what you name first.

        Args:
            keep: What the summary must keep first: names, paths, values and decisions your next steps need.
        """
        return ask(run_context, keep)

    return fold_context


def ask_fold(state: Any, keep: str) -> str:
    """Mark the run ``state`` (a ``RunState`` or ``None``) to fold before its next model call, keeping ``keep``."""
    if state is None:
        return "Nothing to fold: this conversation is not being folded by agno-compression."
    if provider_compaction(state.model) is not None:  # the provider compacts this model's prompts (_trigger)
        return "Nothing to fold: the model's provider compacts this conversation itself."
    keep = keep.strip()[:MAX_KEEP_CHARS] if isinstance(keep, str) else ""
    state.asked = keep
    return "The earlier steps will be folded into a summary before your next step" + (
        f"; kept first: {keep}" if keep else "."
    )
