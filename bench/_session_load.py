"""Session load time: agno's plain load versus the same plus this package's folded-history filtering.

A SQLite file gets one agent session of ``n_messages`` messages, stored by agno itself
(``SqliteDb.upsert_session``) as runs, plus ``n_folds`` rows in ``agno_compression_events``
written through ``SQLAlchemyStore`` (the folded ids cover the oldest 90% of the messages, each
row with a summary of about 2,000 tokens). Then, alternating, many times:

* plain: ``db.get_session`` + agno's history building (``session.get_messages`` and
  ``copy_history_message`` on each, as ``Agent`` does before a run with full history);
* filtered: the same, plus what the manager does before the first model call of such a run
  (``FoldRecorder.without_earlier_folds``): ``load_counted`` (the fold rows, counted only where agno
  stored their run or messages: ``stored_ids_of`` the loaded session) and ``filter_folded`` on the
  loaded history.

"cold" opens a new ``SqliteDb`` (and store) for every load, so agno parses every run; "warm"
keeps one ``SqliteDb``, whose run-object cache then serves unchanged runs without parsing them
(a long-lived agent process). A full ``gc.collect()`` precedes every timed load.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agno.models.message import Message

from agno_compression._messages import call_ids
from agno_compression._plan import filter_folded
from agno_compression._sessions import stored_ids_of
from agno_compression._stores import CompressionRecord, SQLAlchemyStore, load_counted

SESSION_ID = "bench-load"


@dataclass
class LoadTimes:
    """Median milliseconds of one way of loading (``cold``: a new ``SqliteDb`` each time; ``warm``: one db object)."""

    mode: str
    plain_ms: float
    filtered_ms: float
    get_session_ms: float
    history_ms: float
    store_load_ms: float
    """``load_counted``: the fold rows, counted against the ids agno stored (``stored_ids_of``)."""
    filter_ms: float

    @property
    def ratio(self) -> float:
        return self.filtered_ms / self.plain_ms if self.plain_ms else float("nan")


@dataclass
class LoadResult:
    messages: int
    runs: int
    folds: int
    folded_ids: int
    db_bytes: int
    kept_after_filter: int
    repeats: int
    times: list[LoadTimes]


def _session_messages(source: Sequence[Sequence[Message]], n_messages: int) -> list[list[Message]]:
    """Runs of real recorded messages (system messages dropped), renumbered so every id and call id is unique."""
    runs: list[list[Message]] = []
    total = 0
    k = 0
    while total < n_messages:
        for conversation in source:
            run: list[Message] = []
            for m in conversation:
                if m.role in ("system", "developer"):
                    continue
                k += 1
                calls = None
                if call_ids(m):
                    calls = [{**c, "id": f"r{len(runs)}-{c['id']}"} for c in m.tool_calls or []]
                run.append(
                    Message(
                        id=f"msg-{k}",
                        role=m.role,
                        content=m.content,
                        tool_calls=calls,
                        tool_call_id=f"r{len(runs)}-{m.tool_call_id}" if m.tool_call_id else None,
                        tool_name=m.tool_name,
                        created_at=k,
                    )
                )
                total += 1
                if total >= n_messages:
                    break
            if run:
                runs.append(run)
            if total >= n_messages:
                break
    return runs


def _synthetic(n: int) -> list[list[Message]]:
    conversation = [Message(role="user", content="Check reservation R00042 and its flights.")]
    for i in range(19):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "lookup", "arguments": f'{{"id": "R{i:05d}"}}'}}
        conversation.append(Message(role="assistant", tool_calls=[call]))
        conversation.append(Message(role="tool", tool_call_id=f"c{i}", content=f"record {i}: " + "x" * 1200))
    return [conversation]


def build(db_file: Path, source: Sequence[Sequence[Message]], n_messages: int, n_folds: int) -> tuple[int, int, int]:
    """Write the session and the fold rows; returns (messages, runs, folded ids)."""
    from agno.db.sqlite import SqliteDb
    from agno.run.agent import RunOutput
    from agno.run.base import RunStatus
    from agno.session.agent import AgentSession

    runs = _session_messages(source or _synthetic(n_messages), n_messages)
    db = SqliteDb(db_file=str(db_file))
    outputs = [
        RunOutput(
            run_id=f"run-{i}",
            agent_id="bench-agent",
            session_id=SESSION_ID,
            messages=run,
            status=RunStatus.completed,
            created_at=i,
        )
        for i, run in enumerate(runs)
    ]
    db.upsert_session(AgentSession(session_id=SESSION_ID, agent_id="bench-agent", created_at=0))
    for i, output in enumerate(outputs):  # agno keeps each run in its own row, as Agent does after each run
        db.upsert_run(run=output, session_id=SESSION_ID, run_index=i)
    ids = [m.id for run in runs for m in run if m.id]
    folded = ids[: int(len(ids) * 0.9)]
    store = SQLAlchemyStore.for_agno_db(db)
    chunk = max(1, -(-len(folded) // n_folds))
    summary_line = "- call lookup(reservation_id=R00042) -> 1204 chars, exit 0: flights HAT001 HAT002 src/app/main.py\n"
    for i in range(n_folds):
        part = folded[i * chunk : (i + 1) * chunk]
        store.record(
            CompressionRecord(
                session_id=SESSION_ID,
                folded_ids=part,
                summary=f"[summary {i}]\n" + summary_line * 80,  # about 2,000 tokens
                strategy="extractive",
                run_id=f"run-{i}",
                tokens_before=16_000,
                tokens_after=8_000,
            )
        )
    db.db_engine.dispose()
    return len(ids), len(runs), len(folded)


def _measure_mode(db_file: Path, mode: str, repeats: int) -> tuple[LoadTimes, int, int]:
    from agno.db.base import SessionType
    from agno.db.sqlite import SqliteDb
    from agno.utils.message import copy_history_message

    shared = SqliteDb(db_file=str(db_file))
    shared_store = SQLAlchemyStore.for_agno_db(shared)

    def open_db() -> tuple[Any, SQLAlchemyStore]:
        if mode == "warm":
            return shared, shared_store
        db = SqliteDb(db_file=str(db_file))
        return db, SQLAlchemyStore.for_agno_db(db)

    def plain(db: Any) -> tuple[Any, list[Message], float, float]:
        t0 = time.perf_counter()
        session = db.get_session(session_id=SESSION_ID, session_type=SessionType.AGENT)
        t1 = time.perf_counter()
        history = [copy_history_message(m) for m in session.get_messages(skip_roles=["system"])]
        return session, history, t1 - t0, time.perf_counter() - t1

    def filtered(db: Any, store: SQLAlchemyStore) -> tuple[list[Message], list[Message], float, float]:
        session, history, _, _ = plain(db)
        t0 = time.perf_counter()
        # the steps of FoldRecorder.without_earlier_folds: count only folds whose run or messages agno stored
        loaded = load_counted(store, SESSION_ID, stored_ids_of(session, history))
        t1 = time.perf_counter()
        kept = filter_folded(history, loaded.folded_ids, loaded.summary)
        return history, kept, t1 - t0, time.perf_counter() - t1

    def dispose(db: Any) -> None:
        if db is not shared:
            db.db_engine.dispose()

    db, store = open_db()
    plain(db)
    filtered(db, store)  # warm-up: imports, SQLite page cache (and, warm, agno's run-object cache)
    dispose(db)
    samples: dict[str, list[float]] = {k: [] for k in ("plain", "filtered", "get", "history", "load", "filter")}
    history: list[Message] = []
    kept: list[Message] = []
    n_history = n_kept = 0
    for i in range(repeats):
        for variant in ("plain", "filtered") if i % 2 == 0 else ("filtered", "plain"):
            db, store = open_db()
            history = kept = []  # freeing the last load's 10,000 messages is neither side's cost
            gc.collect()
            t0 = time.perf_counter()
            if variant == "plain":
                _, history, get_s, build_s = plain(db)
                samples["plain"].append(time.perf_counter() - t0)
                samples["get"].append(get_s)
                samples["history"].append(build_s)
                n_history = len(history)
            else:
                history, kept, load_s, filter_s = filtered(db, store)
                samples["filtered"].append(time.perf_counter() - t0)
                samples["load"].append(load_s)
                samples["filter"].append(filter_s)
                n_kept = len(kept)
            dispose(db)
    shared.db_engine.dispose()

    def med(key: str) -> float:
        return statistics.median(samples[key]) * 1e3

    times = LoadTimes(
        mode=mode,
        plain_ms=med("plain"),
        filtered_ms=med("filtered"),
        get_session_ms=med("get"),
        history_ms=med("history"),
        store_load_ms=med("load"),
        filter_ms=med("filter"),
    )
    return times, n_history, n_kept


def measure(db_file: Path, repeats: int) -> LoadResult:
    """Median wall times of the plain and the filtered load, cold and warm (interleaved, ``repeats`` each)."""
    times = []
    n = kept = 0
    for mode in ("cold", "warm"):
        t, n, kept = _measure_mode(db_file, mode, repeats)
        times.append(t)
    store = SQLAlchemyStore.from_url(f"sqlite:///{db_file}")
    loaded = store.load(SESSION_ID)
    store.engine.dispose()
    return LoadResult(
        messages=n,
        runs=0,
        folds=loaded.folds,
        folded_ids=len(loaded.folded_ids),
        db_bytes=db_file.stat().st_size,
        kept_after_filter=kept,
        repeats=repeats,
        times=times,
    )


def run(workdir: Path, source: Sequence[Sequence[Message]], n_messages: int, n_folds: int, repeats: int) -> LoadResult:
    db_file = workdir / "session-load.db"
    n, runs, _ = build(db_file, source, n_messages, n_folds)
    result = measure(db_file, repeats)
    result.runs = runs
    assert result.messages == n, (result.messages, n)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """``python bench/_session_load.py``: the session-load part of ``bench/run.py`` alone, as a table on stdout."""
    import argparse
    import sys
    import tempfile

    from agno_compression.eval import iter_shared_trajectories

    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description="session load: agno's plain load versus ours (bench/run.py's part)")
    parser.add_argument("--trajectories", type=Path, default=here.parent.parent / "shared" / "trajectories")
    parser.add_argument("--session-messages", type=int, default=10_000)
    parser.add_argument("--session-folds", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    source = [t.messages for t in iter_shared_trajectories(args.trajectories)] if args.trajectories.is_dir() else []
    with tempfile.TemporaryDirectory(prefix="agno-compression-load-") as tmp:
        result = run(Path(tmp), source, args.session_messages, args.session_folds, args.repeats)
    print(f"{result.messages:,} messages in {result.runs} runs, {result.folds} folds, {result.repeats} loads each")
    print("mode | plain ms | filtered ms | ratio | get_session | history | load_counted | filter_folded | left")
    for t in result.times:
        print(
            f"{t.mode} | {t.plain_ms:.1f} | {t.filtered_ms:.1f} | {t.ratio:.2f}x | {t.get_session_ms:.1f} "
            f"| {t.history_ms:.1f} | {t.store_load_ms:.1f} | {t.filter_ms:.1f} | {result.kept_after_filter:,}",
            file=sys.stdout,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
