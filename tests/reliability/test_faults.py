"""Fault injection through real agno Agent runs (DESIGN invariant 6, and 3/4 under failure).

Each fault: the run completes (a cheaper strategy or no fold, with a warning), nothing stored is lost or
half-written, nothing is retried without bound (calls are counted), and folds stay rare.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from agno.db.sqlite import SqliteDb
from sqlalchemy import event

from agno_compression import CompressionRecord, SQLAlchemyStore, StoreError, full_messages
from agno_compression._plan import is_summary
from agno_compression._stores import SessionCompression
from agno_compression.testing import RUN_MODES, FailingSummarizer, LoopAgent
from agno_compression.tokens import TokenCounter
from tests.checks import check_request
from tests.helpers import DbTarget, db_target
from tests.reliability import _workers
from tests.reliability._agents import BUDGET, SYSTEM, build

TASK = "Read every chunk of the build log."


def check_run(h: LoopAgent, output: Any, task: str = TASK) -> None:
    """Completed, every request under budget with no orphan and system/user/last batch verbatim."""
    assert output is not None and str(output.content).endswith("all chunks read."), output
    for request in h.model.requests:
        check_request(request, BUDGET, user_text=task, system=SYSTEM)


def stored_tools(db: Any, session_id: str = "s1") -> list[str]:
    return [str(m.content) for m in full_messages(db, session_id) if m.role == "tool"]


# --- summarizer faults, in every run mode ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", RUN_MODES)
@pytest.mark.parametrize("how", ["raise", "empty", "none", "garbage", "hang"])
def test_failing_summarizer_degrades_to_extractive_in_every_mode(
    tmp_path: Path, mode: str, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    broken = FailingSummarizer(how)
    db = SqliteDb(db_file=str(tmp_path / "a.db"))
    h = build(db=db, summarizer=broken, summarizer_timeout=0.25)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        out = h.run(TASK, mode)
    check_run(h, out)
    assert 1 <= len(h.summary_folds) <= len(h.model.requests) / 3
    # one try per fold, no retry: every fold fell back exactly once
    assert broken.calls == h.manager.stats["summarizer_failures"] == len(h.summary_folds)
    assert all(e.strategy == f"{broken.name}->extractive" for e in h.summary_folds)
    assert sum("using the extractive summary" in r.message for r in caplog.records) == broken.calls
    if how == "hang":  # the timeout bounds every fold
        assert time.monotonic() - started < 0.25 * broken.calls + 10
    # recorded with the fallback strategy, nothing lost
    events = SQLAlchemyStore.for_agno_db(db).events("s1")
    assert [e.strategy for e in events] == [e.strategy for e in h.summary_folds]
    assert stored_tools(db) == h.produced


# --- token counting faults -------------------------------------------------------------------------------------


class RaisingCounter(TokenCounter):
    """A counter whose prompt count always fails."""

    def __init__(self) -> None:
        super().__init__("gpt-4o")
        self.calls = 0

    def count_prompt(self, *args: Any, **kwargs: Any) -> int:
        self.calls += 1
        raise RuntimeError("tokenizer crashed")


@pytest.mark.parametrize("mode", ["sync", "async-stream"])
def test_token_counter_that_raises_skips_folding_and_the_run_completes(
    tmp_path: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    counter = RaisingCounter()
    db = SqliteDb(db_file=str(tmp_path / "a.db"))
    h = build(db=db, token_counter=counter, steps=6)
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        out = h.run(TASK, mode)
    assert str(out.content).endswith("all chunks read.")
    assert h.folds == [] and h.manager.stats.get("folds", 0) == 0
    assert counter.calls == len(h.model.requests), "one count attempt per model call, no retry"
    assert sum("token count failed" in r.message for r in caplog.records) == len(h.model.requests)
    assert stored_tools(db) == h.produced


class RaisingBackend:
    """A tokenizer backend that dies on first use."""

    name = "flaky-tokenizer"
    exact = True

    def __init__(self) -> None:
        self.calls = 0

    def count(self, text: str) -> int:
        self.calls += 1
        raise OSError("tokenizer.json vanished")


def test_token_backend_that_raises_falls_back_to_the_estimate_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    backend = RaisingBackend()
    counter = TokenCounter("gpt-4o", backend=backend)
    h = build(db=SqliteDb(db_file=str(tmp_path / "a.db")), token_counter=counter)
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        out = h.run(TASK)
    assert str(out.content).endswith("all chunks read.")
    assert backend.calls == 1, "the broken backend is not retried"
    assert sum("falling back" in r.message for r in caplog.records) == 1
    assert 1 <= len(h.summary_folds) <= len(h.model.requests) / 3
    # the estimate (calibrated by reported usage) keeps requests near the budget
    assert max(r.prompt_tokens for r in h.model.requests) <= BUDGET * 1.15


# --- store faults ----------------------------------------------------------------------------------------------


class FailingStore:
    """A CompressionStore that fails on load and/or on record; counts every call."""

    def __init__(self, inner: Any, *, load: bool = False, record: bool = False) -> None:
        self.inner, self.fail_load, self.fail_record = inner, load, record
        self.loads = self.records = 0

    def load(self, session_id: str) -> SessionCompression:
        self.loads += 1
        if self.fail_load:
            raise StoreError("database is unavailable (load)")
        return self.inner.load(session_id)

    def record(self, row: CompressionRecord) -> int:
        self.records += 1
        if self.fail_record:
            raise StoreError("database is unavailable (record)")
        return int(self.inner.record(row))

    def events(self, session_id: str) -> list[CompressionRecord]:
        return list(self.inner.events(session_id))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_store_down_at_load_the_runs_complete_and_fold(
    tmp_path: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    inner = SQLAlchemyStore.from_url(f"sqlite:///{tmp_path / 'records.db'}")
    store = FailingStore(inner, load=True)
    db = SqliteDb(db_file=str(tmp_path / "a.db"))
    h = build(db=db, store=store, store_cooldown=0)
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        for k in range(2):
            out = h.run(f"task {k}", mode)
            assert str(out.content).endswith("all chunks read.")
    assert h.summary_folds and store.records == len(h.summary_folds)
    assert len(inner.events("s1")) == len(h.summary_folds), "folds still recorded while loading fails"
    assert store.loads <= 4, "one load per run start and one for bookkeeping, no retry loop"
    assert any("could not load the session's compression records" in r.message for r in caplog.records)
    assert stored_tools(db) == h.produced


def test_store_down_at_write_costs_one_attempt_per_cooldown(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = FailingStore(SQLAlchemyStore.from_url(f"sqlite:///{tmp_path / 'r.db'}"), record=True)
    db = SqliteDb(db_file=str(tmp_path / "a.db"))
    h = build(db=db, store=store, store_cooldown=600)
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        for k in range(3):
            assert str(h.run(f"task {k}").content).endswith("all chunks read.")
    assert len(h.summary_folds) >= 3
    assert store.records == 1, f"{store.records} record attempts while the store was down"
    assert h.manager.stats["record_failures"] == 1 and h.manager.stats["records_skipped"] >= 2
    assert stored_tools(db) == h.produced, "agno's own record of the runs is complete"


def test_failure_inside_the_record_transaction_leaves_no_half_row(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The INSERT runs, then the connection fails before COMMIT: the row is rolled back, the run goes on."""
    db = SqliteDb(db_file=str(tmp_path / "a.db"))
    store = SQLAlchemyStore.for_agno_db(db)
    store.ensure_table()
    armed = {"on": True, "hits": 0}

    def explode(conn: Any, clauseelement: Any, multiparams: Any, params: Any, options: Any, result: Any) -> None:
        if armed["on"] and "INSERT INTO agno_compression_events" in str(clauseelement):
            armed["hits"] += 1
            raise sqlite3.OperationalError("disk I/O error")

    event.listen(db.db_engine, "after_execute", explode)
    try:
        h = build(db=db, store_cooldown=0)
        with caplog.at_level(logging.WARNING, logger="agno_compression"):
            assert str(h.run("task 0").content).endswith("all chunks read.")
    finally:
        event.remove(db.db_engine, "after_execute", explode)
    assert armed["hits"] == len(h.summary_folds) >= 1, "one attempt per fold, no retry on a non-lock error"
    assert store.events("s1") == [], "a row survived a failed transaction"
    assert any("could not record a fold" in r.message for r in caplog.records)
    # the next run records normally, and the session loads: earlier folds were never recorded, so nothing filtered
    before = len(h.folds)
    h.run("task 1")
    rows = store.events("s1")
    assert rows and all(r.folded_ids and r.summary for r in rows)
    assert len(rows) == len([e for _, e, _ in h.folds[before:] if e.summary])
    assert stored_tools(db) == h.produced


def test_records_file_replaced_by_garbage_mid_run(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    records = tmp_path / "records.db"
    store = SQLAlchemyStore.from_url(f"sqlite:///{records}")
    store.ensure_table()

    def corrupt(n: int) -> None:
        if n == 4:
            h.manager.flush_records()  # no record is being written while the file is overwritten
            store.engine.dispose()
            with records.open("r+b") as fh:  # same inode, garbage content
                fh.write(os.urandom(max(records.stat().st_size, 8192)))

    db = SqliteDb(db_file=str(tmp_path / "a.db"))
    h = build(db=db, store=store, store_cooldown=0, on_tool=corrupt, steps=12)
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        out = h.run(TASK)
        first_run = len(h.model.requests)
        out2 = h.run("a second task")
    for request in h.model.requests[:first_run]:
        check_request(request, BUDGET, user_text=TASK, system=SYSTEM)
    assert str(out.content).endswith("all chunks read.")
    assert str(out2.content).endswith("all chunks read.")
    failures = h.manager.stats.get("record_failures", 0)
    assert failures >= 1 and failures == len(h.summary_folds) - h.manager.stats.get("records_written", 0)
    assert any("could not" in r.message for r in caplog.records)
    assert stored_tools(db) == h.produced, "agno's database is untouched and complete"


# --- processes killed around a record ----------------------------------------------------------------------------


def _spawn(target: Any, *args: Any) -> Any:
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=target, args=args)
    proc.start()
    return proc


def _complete(rows: list[CompressionRecord]) -> None:
    for r in rows:
        assert r.folded_ids and r.summary, f"half-written row {r.id}: ids={r.folded_ids!r} summary={r.summary!r}"
        assert len(r.folded_ids) == 4 and all(i.startswith(r.summary.split()[-1]) for i in r.folded_ids), r


def _integrity(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.fixture(params=["sqlite", "postgres"])
def kill_db(request: pytest.FixtureRequest, tmp_path: Path) -> DbTarget:
    """The records' database: a SQLite file (``kill.db``) or a fresh PostgreSQL schema."""
    return db_target(request.param, tmp_path, request, file="kill.db")


def test_sigkill_inside_the_record_transaction_is_all_or_nothing(tmp_path: Path, kill_db: DbTarget) -> None:
    url, schema = kill_db.url, kill_db.schema
    flag = tmp_path / "inside"
    proc = _spawn(_workers.record_then_stall_in_transaction, url, schema, str(flag), 3)
    deadline = time.monotonic() + 60
    while not flag.exists() and time.monotonic() < deadline and proc.is_alive():
        time.sleep(0.01)
    assert flag.exists(), "the child never reached its 4th INSERT"
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(10)
    assert proc.exitcode == -signal.SIGKILL
    store = SQLAlchemyStore.from_url(url, schema=schema)
    rows = store.events("killed")
    assert [r.summary for r in rows] == [f"summary of fold f{i}" for i in range(3)], "the in-flight row is absent"
    _complete(rows)
    if kill_db.kind == "sqlite":
        _integrity(tmp_path / "kill.db")
    # the database is usable at once: no stale lock, no hot journal left behind
    store.record(CompressionRecord("killed", [f"f9-m{j}" for j in range(4)], "summary of fold f9", "extractive"))
    assert len(store.events("killed")) == 4


def test_sigkill_at_random_moments_never_leaves_a_half_row(tmp_path: Path, kill_db: DbTarget) -> None:
    url, schema = kill_db.url, kill_db.schema
    acks = tmp_path / "acks.txt"
    acked: set[str] = set()
    rng = __import__("random").Random(7)
    for round_ in range(6):
        proc = _spawn(_workers.record_forever, url, schema, str(acks), f"r{round_}")
        deadline = time.monotonic() + 60
        while f"r{round_}x0" not in (acks.read_text() if acks.exists() else "") and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 0.3))  # then kill at a random moment of the write loop
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(10)
        if acks.exists():
            acked |= {line for line in acks.read_text().split() if line}
    rows = SQLAlchemyStore.from_url(url, schema=schema).events("killed")
    _complete(rows)
    assert len(acked) >= 6, "the workers never managed to record"
    assert acked <= {r.summary.split()[-1] for r in rows}, "an acknowledged fold is missing"
    if kill_db.kind == "sqlite":
        _integrity(tmp_path / "kill.db")


def test_sigkill_between_summary_and_record_in_a_real_run(tmp_path: Path) -> None:
    """A real Agent in a child process is killed after its 3rd summary, before that fold is recorded."""
    path = tmp_path / "agent.db"
    proc = _spawn(_workers.agent_killed_before_record, str(path), 3)
    proc.join(120)
    assert proc.exitcode == -signal.SIGKILL
    _integrity(path)
    db = SqliteDb(db_file=str(path))
    store = SQLAlchemyStore.for_agno_db(db)
    rows = store.events("victim")
    assert len(rows) == 3 and all(r.folded_ids and r.summary for r in rows), "3 folds recorded, the 4th never"
    # the session goes on in a new process (here): it loads the two folds and never shows their ids again
    h = build(db=db, session_id="victim")
    out = h.run("start again")
    assert str(out.content).endswith("all chunks read.")
    folded = {i for r in rows for i in r.folded_ids}
    for request in h.model.requests:
        assert not ({m.id for m in request.messages} & folded)
    first = h.model.requests[0].messages
    assert [m.content for m in first if is_summary(m)] in ([rows[-1].summary], [])


# --- no fold-every-call loop ---------------------------------------------------------------------------------------


def test_folds_stay_rare_in_a_long_loop(tmp_path: Path) -> None:
    h = build(db=SqliteDb(db_file=str(tmp_path / "a.db")), steps=40)
    check_run(h, h.run(TASK))
    assert 1 <= len(h.summary_folds) <= len(h.model.requests) / 3


def test_giant_current_user_message_does_not_fold_on_every_call(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    giant = "Analyse this specification carefully. " * 1100  # ~6k tokens on its own, budget 3k
    h = build(
        db=SqliteDb(db_file=str(tmp_path / "a.db")),
        steps=20,
        tool_text=lambda index, n: "\n".join(f"line {n}-{i} ok" for i in range(30)),
    )
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        out = h.run(giant)
    assert str(out.content).endswith("all chunks read.")
    over = [r.message for r in caplog.records if "leaving no room" in r.message]
    assert over and over[0].split("holds ", 1)[1].startswith("the current user message"), over[:1]
    calls = len(h.model.requests)
    assert len(h.summary_folds) <= calls / 4, f"{len(h.summary_folds)} folds in {calls} model calls"


def test_blocking_async_summarizer_is_bounded_by_the_timeout(tmp_path: Path) -> None:
    blocking = FailingSummarizer("block", hang_seconds=1.5)  # an async summarizer blocking the event loop
    h = build(db=SqliteDb(db_file=str(tmp_path / "a.db")), summarizer=blocking, summarizer_timeout=0.2, steps=8)
    started = time.monotonic()
    out = h.run(TASK, "async")
    elapsed = time.monotonic() - started
    assert str(out.content).endswith("all chunks read.") and blocking.calls >= 1
    assert elapsed < 0.2 * blocking.calls + 1.0, f"{elapsed:.1f}s for {blocking.calls} folds"
