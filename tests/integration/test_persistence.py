"""Compression records across runs and processes, through real agno Agents/Teams, on every kind of agno db."""

from __future__ import annotations

import json
import logging
import multiprocessing
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from agno.agent import Agent
from agno.db.base import SessionType
from agno.db.sqlite import SqliteDb
from agno.models.message import Message
from agno.team import Team

from agno_compression import (
    CompressionManager,
    FoldEvent,
    SQLAlchemyStore,
    compressed_view,
    full_messages,
    load_snapshot,
    snapshot,
    stats,
)
from agno_compression._plan import is_summary, pair_violations
from agno_compression._stores import store_for
from agno_compression.testing import (
    WHOLE_SESSION,
    LoopAgent,
    Reply,
    ScriptedModel,
    ScriptInfo,
    ToolCall,
    current_user,
    log_chunk,
    loop_agent,
)
from tests._store_workers import record_folds
from tests.checks import check_request
from tests.helpers import DbTarget, db_target, open_async_db

BUDGET = 3_000
STEPS = 8
SYSTEM = "You read build logs."


def log_reader(db: Any, session_id: str, **manager_kw: Any) -> LoopAgent:
    """A real Agent reading ``STEPS`` long chunks (non-ASCII included) per run, folding at ``BUDGET``."""
    return loop_agent(
        db=db,
        session_id=session_id,
        steps=STEPS,
        system=SYSTEM,
        tool_text=lambda index, n: log_chunk(index, n, lines=60) + " ✓ é",
        compress_at_tokens=BUDGET,
        **manager_kw,
    )


def check_session(h: LoopAgent, events: list[Any], run_starts: list[int]) -> None:
    """Invariants 4 and 5 over every request the model received."""
    model = h.model
    folds = [e for _, e, _ in h.folds if e.summary]
    assert len(events) == len(folds), "one record per fold"
    assert [e.folded_ids for e in events] == [f.folded_ids for f in folds]
    assert [e.summary for e in events] == [f.summary for f in folds]
    for n, request in enumerate(model.requests):
        before = [e for at, e, _ in h.folds if at <= n and e.summary]
        folded = {i for e in before for i in e.folded_ids}
        sent = {m.id for m in request.messages}
        assert not (sent & folded), f"request {n}: folded ids back in context"
        sums = [m for m in request.messages if is_summary(m)]
        if before:
            # the history summary and the progress summary together are the session's newest summary
            joined = "\n\n".join(str(m.content) for m in sums)
            assert joined == before[-1].summary, f"request {n}: newest summary missing"
        else:
            assert sums == []
    for start in run_starts[1:]:
        assert [m for m in model.requests[start].messages if is_summary(m)], "a new run starts without the summary"


ALL_DBS = ["sqlite", "postgres", "mysql", "redis", "json", "memory"]
SHARED_DBS = ["sqlite", "postgres", "mysql", "redis"]  # safe for many writing processes


@pytest.mark.parametrize("kind", ALL_DBS)
def test_three_runs_fold_filter_and_lose_nothing(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    db = db_target(kind, tmp_path, request).open()
    h = log_reader(db, "three-runs")
    agent, model = h.agent, h.model
    run_starts, inputs = [], []
    for k in range(3):
        run_starts.append(len(model.requests))
        text = f"Read build log {k}."
        inputs.append(text)
        out = agent.run(text)
        assert out.content.endswith(f"Done with {text!r}: all chunks read.")
        runs_folds = [e for at, e, _ in h.folds if at >= run_starts[-1] and e.summary]
        assert runs_folds, f"run {k} did not fold"
    for n, req in enumerate(model.requests):
        run = max(i for i, s in enumerate(run_starts) if s <= n)
        check_request(req, BUDGET, user_text=inputs[run], system=SYSTEM)
    store = store_for(db)
    assert store is not None
    events = store.events("three-runs")
    check_session(h, events, run_starts)
    assert all(e.owner_type == "agent" and e.owner_id == agent.id and e.run_id for e in events)
    assert len({e.run_id for e in events}) == 3
    # Filtered on load, a folded message never reaches a later run's live list, so it is never folded twice
    # (unfiltered, each run's first call would fold the same history again and still send a valid request).
    folded = [i for e in events for i in e.folded_ids]
    assert len(folded) == len(set(folded)), "a message was folded again: the history was not filtered on load"
    # Nothing lost: every message, byte for byte, in order.
    stored = full_messages(db, "three-runs")
    expected: list[tuple[str, str]] = []
    produced = iter(h.transcript)
    for text in inputs:
        expected += [("system", SYSTEM), ("user", text)]
        for role, content in produced:
            expected.append((role, content))
            if role == "assistant" and content.startswith("Done with"):
                break
    assert [(m.role, m.content) for m in stored] == expected
    assert json.dumps([m.content for m in stored]) == json.dumps([c for _, c in expected])
    assert not any(is_summary(m) or m.from_history for m in stored)


@pytest.fixture(params=SHARED_DBS)
def shared_db(request: pytest.FixtureRequest, tmp_path: Path) -> DbTarget:
    """A db of a kind many processes may write at once."""
    return db_target(request.param, tmp_path, request)


@pytest.mark.slow
def test_eight_processes_record_at_once_and_lose_nothing(shared_db: DbTarget) -> None:
    workers, folds = 8, 25
    db = shared_db.open()
    h = log_reader(db, "shared")
    agent, model = h.agent, h.model
    agent.run("Read build log 0.")
    before = db.get_session(session_id="shared", session_type=SessionType.AGENT).to_dict()
    recorded_here = len(store_for(db).events("shared"))  # type: ignore[union-attr]
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(workers)
    procs = [ctx.Process(target=record_folds, args=(shared_db, "shared", w, folds, barrier)) for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=240)
    done = [folds if p.exitcode == 0 else p.exitcode for p in procs]
    assert done == [folds] * workers
    store = store_for(db)
    assert store is not None
    state = store.load("shared")
    expected = {f"w{w}-f{i}-m{j}" for w in range(workers) for i in range(folds) for j in range(4)}
    lost = expected - state.folded_ids
    assert not lost, f"{len(lost)} folded ids lost"
    assert state.folds == recorded_here + workers * folds
    assert len(store.events("shared")) == state.folds
    after = db.get_session(session_id="shared", session_type=SessionType.AGENT)
    assert after is not None and after.to_dict() == before, "agno's session row changed"
    # and the next run still loads: the folded history stays out, the newest summary comes in. The workers'
    # records fold ids no run ever stored, so they do not count for the live summary (a fold before this
    # run's first request, if any, is the newest one).
    start = len(model.requests)
    agent.run("Read build log 1.")
    first = model.requests[start].messages
    assert not ({m.id for m in first} & state.folded_ids)
    newest = [e.summary for at, e, _ in h.folds if at <= start and e.summary][-1]
    assert [m.content for m in first if is_summary(m)] == [newest]
    assert state.summary is not None and state.summary.startswith("summary of worker")


@pytest.mark.parametrize("kind", ["sqlite", "postgres", "mysql", "redis", "json"])
def test_team_session_records_filters_and_loses_nothing(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    db = db_target(kind, tmp_path, request).open()
    member_model = ScriptedModel(script=lambda m, i: "Report: " + ("all tests passed in module alpha. " * 60))
    member = Agent(name="Tester", id="tester", model=member_model, telemetry=False)
    per_run: dict[str, int] = defaultdict(int)
    produced: list[str] = []

    def leader(messages: list[Message], info: ScriptInfo) -> Reply:
        user = current_user(messages)
        per_run[user] += 1
        if per_run[user] <= 8:
            args = {"member_id": "tester", "task": f"{user} suite {per_run[user]}"}
            reply = Reply(text=f"Round {per_run[user]}.", tool_calls=[ToolCall("delegate_task_to_member", args)])
        else:
            reply = Reply(text=f"Everything delegated for {user}.")
        produced.append(reply.text or "")
        return reply

    leader_model = ScriptedModel(script=leader)
    folds: list[tuple[int, FoldEvent]] = []

    def on_fold(event: FoldEvent, folded: Any) -> None:
        folds.append((len(leader_model.requests), event))

    team = Team(name="Lead", model=leader_model, members=[member], db=db, session_id="team-s", **WHOLE_SESSION)
    manager = CompressionManager(compress_at_tokens=BUDGET, on_fold=on_fold)
    manager.attach(team)
    for k in range(2):
        out = team.run(f"Run suites {k}.")
        assert out.content.endswith(f"Everything delegated for Run suites {k}..")
    events = store_for(db).events("team-s")  # type: ignore[union-attr]
    leader_folds = [(at, e) for at, e in folds if e.summary and e.folded_ids]
    assert events and all(e.owner_type == "team" and e.owner_id == team.id for e in events)
    assert len(events) == len(leader_folds)
    for n, req in enumerate(leader_model.requests):
        folded = {i for at, e in leader_folds if at <= n for i in e.folded_ids}
        assert not ({m.id for m in req.messages} & folded), f"leader request {n}: folded ids back"
    stored = full_messages(db, "team-s")
    assert [m.content for m in stored if m.role == "assistant" and m.content in produced] == produced
    delegations = [m for m in stored if m.role == "tool" and m.tool_name == "delegate_task_to_member"]
    assert len(delegations) == 16
    session = db.get_session(session_id="team-s", session_type=SessionType.TEAM)
    assert session is not None


@pytest.fixture
def dead_store() -> SQLAlchemyStore:
    """A PostgreSQL store on a loopback port nothing listens on: every load and record fails."""
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return SQLAlchemyStore.from_url(f"postgresql+psycopg://postgres@127.0.0.1:{port}/x?connect_timeout=2")


def test_failing_store_leaves_the_run_completing_with_a_warning(
    tmp_path: Path, dead_store: SQLAlchemyStore, caplog: pytest.LogCaptureFixture
) -> None:
    h = log_reader(SqliteDb(db_file=str(tmp_path / "a.db")), "broken", store=dead_store, store_cooldown=0)
    agent, manager = h.agent, h.manager
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        out = agent.run("Read build log 0.")
        agent.run("Read build log 1.")
    assert out.content.endswith("all chunks read.")
    assert manager.stats.get("folds", 0) >= 1 and manager.stats.get("record_failures", 0) >= 1
    assert any("could not record a fold" in r.message for r in caplog.records)
    assert any("could not load the session's compression records" in r.message for r in caplog.records)
    tools = [m.content for m in full_messages(agent.db, "broken") if m.role == "tool"]
    assert tools == h.produced


def test_agent_without_sql_db_keeps_its_records_in_the_session() -> None:
    from agno.db.in_memory import InMemoryDb

    db = InMemoryDb()
    h = log_reader(db, "mem")
    manager = h.manager
    h.agent.run("Read build log 0.")
    assert manager.stats["folds"] >= 1 and manager.stats["records_written"] == manager.stats["folds"]
    session = db.get_session(session_id="mem", session_type=SessionType.AGENT)
    rows = session.session_data["agno_compression_events"]
    assert [r["folded_ids"] for r in rows] == [e.folded_ids for _, e, _ in h.folds if e.summary]


def _three_runs(db: Any, session_id: str) -> LoopAgent:
    h = log_reader(db, session_id)
    for k in range(3):
        h.agent.run(f"Read build log {k}.")
    return h


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_session_data_mirrors_the_records_and_stats_agree(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    db = db_target(kind, tmp_path, request).open()
    _three_runs(db, "books")
    events = SQLAlchemyStore.for_agno_db(db).events("books")
    session = db.get_session(session_id="books", session_type=SessionType.AGENT)
    entry = session.session_data["agno_compression"]
    folded = {i for e in events for i in e.folded_ids}
    saved = sum(e.tokens_before - e.tokens_after for e in events)
    assert entry == {
        "folds": len(events),
        "folded_messages": len(folded),
        "tokens_saved": saved,
        "newest_record_id": events[-1].id,
    }
    st = stats(db, "books")
    assert (st.folds, st.folded_messages, st.tokens_saved, st.newest_record_id) == (
        len(events),
        len(folded),
        saved,
        events[-1].id,
    )
    assert st.strategies == {"extractive": len(events)} and st.summarizer_models == []
    assert stats(db, "no-such-session").folds == 0


@pytest.mark.parametrize("target", ["sqlite", "postgres", "mysql", "redis", "json"])
def test_snapshot_moves_a_session_to_another_database(
    target: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    source = SqliteDb(db_file=str(tmp_path / "source.db"))
    _three_runs(source, "moving")
    snap = json.loads(json.dumps(snapshot(source, "moving")))  # survives a trip through JSON
    (tmp_path / "t").mkdir()
    dest = db_target(target, tmp_path / "t", request).open()
    assert load_snapshot(dest, snap) == len(snap["records"]) > 0
    assert load_snapshot(dest, snap) == 0  # loading twice adds nothing
    assert [m.to_dict() for m in full_messages(dest, "moving")] == [
        m.to_dict() for m in full_messages(source, "moving")
    ]
    assert stats(dest, "moving").folded_messages == stats(source, "moving").folded_messages
    # the moved session keeps working: a new run there does not see folded history, and sees the summary
    h = log_reader(dest, "moving")
    h.agent.run("Read build log 3.")
    folded = {i for r in snap["records"] for i in r["folded_ids"]}
    first = h.model.requests[0].messages
    assert not ({m.id for m in first} & folded)
    assert [m.content for m in first if is_summary(m)] == [snap["records"][-1]["summary"]]


def test_bad_snapshot_is_rejected(tmp_path: Path) -> None:
    from agno_compression import ConfigError

    with pytest.raises(ConfigError, match="not an agno-compression snapshot"):
        load_snapshot(SqliteDb(db_file=str(tmp_path / "x.db")), {"records": []})


def test_compressed_view_is_what_a_new_run_would_see(tmp_path: Path) -> None:
    db = SqliteDb(db_file=str(tmp_path / "v.db"))
    _three_runs(db, "view")
    events = SQLAlchemyStore.for_agno_db(db).events("view")
    view = compressed_view(db, "view")
    folded = {i for e in events for i in e.folded_ids}
    assert [m.role for m in view[:2]] == ["system", "user"] and is_summary(view[1])
    assert view[1].content == events[-1].summary
    assert not ({m.id for m in view} & folded)
    assert pair_violations(view) == []
    assert len(view) < len(full_messages(db, "view"))


def test_a_dead_store_costs_one_attempt_per_cooldown(
    tmp_path: Path, dead_store: SQLAlchemyStore, caplog: pytest.LogCaptureFixture
) -> None:
    h = log_reader(SqliteDb(db_file=str(tmp_path / "a.db")), "dead", store=dead_store, store_cooldown=600)
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        for k in range(3):
            assert h.agent.run(f"Read build log {k}.").content.endswith("all chunks read.")
    attempts = [r for r in caplog.records if "could not" in r.message]
    assert len(attempts) == 1, [r.message for r in attempts]
    assert h.manager.stats["folds"] >= 3 and h.manager.stats["records_skipped"] >= 2


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_async_agno_dbs_record_and_filter(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    import asyncio

    target = db_target(kind, tmp_path, request, file="async.db")
    db = open_async_db(target)
    reader = SQLAlchemyStore.from_url(target.url, schema=target.schema)
    h = log_reader(db, "async-s")
    agent, model, manager = h.agent, h.model, h.manager
    starts = []
    for k in range(2):
        starts.append(len(model.requests))
        asyncio.run(agent.arun(f"Read build log {k}."))
    events = reader.events("async-s")
    assert events and manager.stats["records_written"] == len(events)
    check_session(h, events, starts)


def test_reading_an_async_db_names_the_sync_class_to_use(tmp_path: Path) -> None:
    pytest.importorskip("aiosqlite", reason="AsyncSqliteDb needs aiosqlite (in the test extras)")
    from agno.db.sqlite import AsyncSqliteDb

    from agno_compression import ConfigError

    with pytest.raises(ConfigError, match="SqliteDb or PostgresDb"):
        full_messages(AsyncSqliteDb(db_file=str(tmp_path / "a.db")), "s")


@pytest.mark.slow
def test_eight_agent_processes_fold_one_session_at_once(shared_db: DbTarget) -> None:
    """8 real Agents in 8 processes, one session, >= 25 folds each, all at once: nothing lost."""
    from concurrent.futures import ProcessPoolExecutor

    from tests._store_workers import run_folding_agent

    db = shared_db.open()
    # One run first, in this process: agno creates its own tables (its CREATE TABLE is not race-safe).
    h = log_reader(db, "crowd")
    h.agent.run("Read build log 0.")
    reread = shared_db.open().get_session(session_id="crowd", session_type=SessionType.AGENT)
    if isinstance(reread.session_data, str):
        pytest.skip(
            "agno 3.1.10's MySQLDb reads JSON columns back as text on MariaDB, so plain agno cannot run a second "
            "Agent on a stored session (TypeError in resolve_run_options); the 8-process record test covers our table"
        )
    workers, folds = 8, 25
    store = store_for(db)
    assert store is not None
    first = store.load("crowd")
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Manager().Barrier(workers)
    with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        futures = [pool.submit(run_folding_agent, shared_db, "crowd", w, folds, barrier) for w in range(workers)]
        results = [f.result(timeout=600) for f in futures]
    assert all(n >= folds for n, _, _ in results), [n for n, _, _ in results]
    state = store.load("crowd")
    reported = {i for _, ids, _ in results for i in ids}
    assert not (reported - state.folded_ids), f"{len(reported - state.folded_ids)} folded ids lost"
    assert state.folds == first.folds + sum(n for n, _, _ in results)
    stored_tools = [m.content for m in full_messages(db, "crowd") if m.role == "tool"]
    for _, _, produced in results:
        assert set(produced) <= set(stored_tools)
    assert len(stored_tools) == len(h.produced) + sum(len(p) for _, _, p in results)
    session = db.get_session(session_id="crowd", session_type=SessionType.AGENT)
    assert session is not None and len(session.runs) == workers + 1


def test_folds_count_when_agno_leaves_tool_messages_out_of_storage(tmp_path: Path) -> None:
    """``store_tool_messages=False``: the run is stored without its tool results; its folds still count."""
    db = SqliteDb(db_file=str(tmp_path / "a.db"))
    h = log_reader(db, "no-tools")
    agent, model = h.agent, h.model
    agent.store_tool_messages = False
    starts = []
    for k in range(2):
        starts.append(len(model.requests))
        agent.run(f"Read build log {k}.")
    assert not [m for m in full_messages(db, "no-tools") if m.role == "tool"], "agno stored no tool results"
    earlier = [e for at, e, _ in h.folds if at <= starts[1] and e.summary]
    assert earlier
    first = model.requests[starts[1]].messages
    assert [m.content for m in first if is_summary(m)] == [earlier[-1].summary]
    assert not ({m.id for m in first} & {i for e in earlier for i in e.folded_ids})


@pytest.mark.parametrize("kind", ["sqlite", "postgres", "redis", "json"])
def test_the_records_of_one_run_can_be_dropped_on_every_store(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """What a run that runs again under its id uses to drop its dead attempt's records: that run's only."""
    from agno_compression import CompressionRecord
    from agno_compression._deletion import delete_run_records

    db = db_target(kind, tmp_path, request).open()
    h = log_reader(db, "dropped")
    h.agent.run("Read build log 1.")
    h.manager.flush_records()
    store = store_for(db)
    assert store is not None
    kept = store.events("dropped")
    assert kept
    for n in range(2):
        store.record(
            CompressionRecord("dropped", [f"dead-{n}"], "a dead attempt's summary", "extractive", run_id="dead")
        )
    assert len(store.events("dropped")) == len(kept) + 2
    assert delete_run_records(store, "dropped", "dead") == 2
    assert [(e.run_id, e.folded_ids) for e in store.events("dropped")] == [(e.run_id, e.folded_ids) for e in kept]
    assert delete_run_records(store, "dropped", "dead") == 0
