"""Compression records across runs and processes, through real agno Agents/Teams, on every kind of agno db."""

from __future__ import annotations

import json
import logging
import multiprocessing
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
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
    pair_violations,
    snapshot,
    stats,
)
from agno_compression._plan import is_summary
from agno_compression._store import store_for
from agno_compression.testing import Reply, ScriptedModel, ScriptInfo, ToolCall
from tests._store_workers import open_db, record_folds
from tests.checks import check_request
from tests.mysql_server import MySqlTarget, mysql_schema  # noqa: F401  (fixture)
from tests.pg import PgTarget, pg_schema  # noqa: F401  (fixture)
from tests.redis_server import RedisTarget, redis_prefix  # noqa: F401  (fixture)

BUDGET = 3_000
STEPS = 8
SYSTEM = "You read build logs."


@dataclass
class Log:
    """Everything the tools and the model produced, in order."""

    produced: list[tuple[str, str]] = field(default_factory=list)
    folds: list[tuple[int, FoldEvent]] = field(default_factory=list)
    counter: int = 0

    def produced_tools(self) -> list[str]:
        return [c for role, c in self.produced if role == "tool"]


def db_location(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> tuple[str, str | None]:
    """Where a db of ``kind`` lives for this test (unique per test; skips when the server is unreachable)."""
    if kind == "sqlite":
        return str(tmp_path / "agent.db"), None
    if kind == "json":
        return str(tmp_path / "json"), None
    if kind == "postgres":
        pg: PgTarget = request.getfixturevalue("pg_schema")
        return pg.url, pg.schema
    if kind == "mysql":
        my: MySqlTarget = request.getfixturevalue("mysql_schema")
        return my.url, my.schema
    if kind == "redis":
        rd: RedisTarget = request.getfixturevalue("redis_prefix")
        return rd.url, rd.prefix
    raise ValueError(kind)


def make_db(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    if kind == "memory":
        from agno.db.in_memory import InMemoryDb

        return InMemoryDb()
    return open_db(kind, *db_location(kind, tmp_path, request))


def current_user(messages: list[Message]) -> str:
    users = [m for m in messages if m.role == "user" and not m.from_history and not is_summary(m)]
    return str(users[-1].content) if users else ""


def make_agent(db: Any, session_id: str, log: Log, manager: CompressionManager) -> tuple[Agent, ScriptedModel]:
    calls: dict[str, int] = defaultdict(int)

    def read_chunk(index: int) -> str:
        """Read one long chunk of a build log."""
        log.counter += 1
        text = "\n".join(f"[{log.counter:03d}:{line:04d}] compiling src/m{index}/f{line}.c ok" for line in range(60))
        text += f"\nerror: ValueError in step {log.counter}: exit code {index % 3} ✓ é"
        log.produced.append(("tool", text))
        return text

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        user = current_user(messages)
        calls[user] += 1
        n = calls[user]
        if n > STEPS:
            reply = Reply(text=f"Done with {user!r}: all chunks read.")
        else:
            reply = Reply(text=f"{user}: reading chunk {n}.", tool_calls=[ToolCall("read_chunk", {"index": n})])
        log.produced.append(("assistant", reply.text or ""))
        return reply

    model = ScriptedModel(script=script)
    agent = Agent(
        model=model,
        tools=[read_chunk],
        db=db,
        session_id=session_id,
        system_message=SYSTEM,
        add_history_to_context=True,
        num_history_runs=100,
        telemetry=False,
    )
    return manager.attach(agent), model


def tracked_manager(log: Log, model_ref: list[ScriptedModel], **kw: Any) -> CompressionManager:
    def on_fold(event: FoldEvent, folded: Any) -> None:
        log.folds.append((len(model_ref[0].requests), event))

    return CompressionManager(compress_at_tokens=BUDGET, on_fold=on_fold, **kw)


def check_session(model: ScriptedModel, log: Log, events: list[Any], run_starts: list[int]) -> None:
    """Invariants 4 and 5 over every request the model received."""
    folds = [e for _, e in log.folds if e.summary]
    assert len(events) == len(folds), "one record per fold"
    assert [e.folded_ids for e in events] == [f.folded_ids for f in folds]
    assert [e.summary for e in events] == [f.summary for f in folds]
    for n, request in enumerate(model.requests):
        before = [e for at, e in log.folds if at <= n and e.summary]
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
    db = make_db(kind, tmp_path, request)
    log, ref = Log(), []  # type: ignore[var-annotated]
    manager = tracked_manager(log, ref)
    agent, model = make_agent(db, "three-runs", log, manager)
    ref.append(model)
    run_starts, inputs = [], []
    for k in range(3):
        run_starts.append(len(model.requests))
        text = f"Read build log {k}."
        inputs.append(text)
        out = agent.run(text)
        assert out.content.endswith(f"Done with {text!r}: all chunks read.")
        runs_folds = [e for at, e in log.folds if at >= run_starts[-1] and e.summary]
        assert runs_folds, f"run {k} did not fold"
    for n, req in enumerate(model.requests):
        run = max(i for i, s in enumerate(run_starts) if s <= n)
        check_request(req, BUDGET, user_text=inputs[run], system=SYSTEM)
    store = store_for(db)
    assert store is not None
    events = store.events("three-runs")
    check_session(model, log, events, run_starts)
    assert all(e.owner_type == "agent" and e.owner_id == agent.id and e.run_id for e in events)
    assert len({e.run_id for e in events}) == 3
    # Filtered on load, a folded message never reaches a later run's live list, so it is never folded twice
    # (unfiltered, each run's first call would fold the same history again and still send a valid request).
    folded = [i for e in events for i in e.folded_ids]
    assert len(folded) == len(set(folded)), "a message was folded again: the history was not filtered on load"
    # Nothing lost: every message, byte for byte, in order.
    stored = full_messages(db, "three-runs")
    expected: list[tuple[str, str]] = []
    produced = iter(log.produced)
    for text in inputs:
        expected += [("system", SYSTEM), ("user", text)]
        for role, content in produced:
            expected.append((role, content))
            if role == "assistant" and content.startswith("Done with"):
                break
    assert [(m.role, m.content) for m in stored] == expected
    assert json.dumps([m.content for m in stored]) == json.dumps([c for _, c in expected])
    assert not any(is_summary(m) or m.from_history for m in stored)


@pytest.mark.parametrize("kind", SHARED_DBS)
def test_eight_processes_record_at_once_and_lose_nothing(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    workers, folds = 8, 25
    db = make_db(kind, tmp_path, request)
    log, ref = Log(), []  # type: ignore[var-annotated]
    agent, model = make_agent(db, "shared", log, tracked_manager(log, ref))
    ref.append(model)
    agent.run("Read build log 0.")
    before = db.get_session(session_id="shared", session_type=SessionType.AGENT).to_dict()
    recorded_here = len(store_for(db).events("shared"))  # type: ignore[union-attr]
    where, schema = db_location(kind, tmp_path, request)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(workers)
    procs = [
        ctx.Process(target=record_folds, args=(kind, where, schema, "shared", w, folds, barrier))
        for w in range(workers)
    ]
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
    newest = [e.summary for at, e in log.folds if at <= start and e.summary][-1]
    assert [m.content for m in first if is_summary(m)] == [newest]
    assert state.summary is not None and state.summary.startswith("summary of worker")


@pytest.mark.parametrize("kind", ["sqlite", "postgres", "mysql", "redis", "json"])
def test_team_session_records_filters_and_loses_nothing(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    db = make_db(kind, tmp_path, request)
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
    log = Log()

    def on_fold(event: FoldEvent, folded: Any) -> None:
        log.folds.append((len(leader_model.requests), event))

    team = Team(
        name="Lead",
        model=leader_model,
        members=[member],
        db=db,
        session_id="team-s",
        add_history_to_context=True,
        num_history_runs=100,
        telemetry=False,
    )
    manager = CompressionManager(compress_at_tokens=BUDGET, on_fold=on_fold)
    manager.attach(team)
    for k in range(2):
        out = team.run(f"Run suites {k}.")
        assert out.content.endswith(f"Everything delegated for Run suites {k}..")
    events = store_for(db).events("team-s")  # type: ignore[union-attr]
    leader_folds = [(at, e) for at, e in log.folds if e.summary and e.folded_ids]
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
def closed_port() -> Iterator[int]:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    yield port


def test_failing_store_leaves_the_run_completing_with_a_warning(
    tmp_path: Path, closed_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    broken = SQLAlchemyStore.from_url(f"postgresql+psycopg://postgres@127.0.0.1:{closed_port}/x?connect_timeout=2")
    log, ref = Log(), []  # type: ignore[var-annotated]
    manager = tracked_manager(log, ref, store=broken, store_cooldown=0)
    agent, model = make_agent(SqliteDb(db_file=str(tmp_path / "a.db")), "broken", log, manager)
    ref.append(model)
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        out = agent.run("Read build log 0.")
        agent.run("Read build log 1.")
    assert out.content.endswith("all chunks read.")
    assert manager.stats.get("folds", 0) >= 1 and manager.stats.get("record_failures", 0) >= 1
    assert any("could not record the fold" in r.message for r in caplog.records)
    assert any("could not load the session's compression records" in r.message for r in caplog.records)
    tools = [m.content for m in full_messages(agent.db, "broken") if m.role == "tool"]
    assert tools == [c for r, c in log.produced if r == "tool"]


def test_agent_without_sql_db_keeps_its_records_in_the_session() -> None:
    from agno.db.in_memory import InMemoryDb

    log, ref = Log(), []  # type: ignore[var-annotated]
    manager = tracked_manager(log, ref)
    db = InMemoryDb()
    agent, model = make_agent(db, "mem", log, manager)
    ref.append(model)
    agent.run("Read build log 0.")
    assert manager.stats["folds"] >= 1 and manager.stats["records_written"] == manager.stats["folds"]
    session = db.get_session(session_id="mem", session_type=SessionType.AGENT)
    rows = session.session_data["agno_compression_events"]
    assert [r["folded_ids"] for r in rows] == [e.folded_ids for _, e in log.folds if e.summary]


def _three_runs(db: Any, session_id: str) -> tuple[Agent, ScriptedModel, Log]:
    log, ref = Log(), []  # type: ignore[var-annotated]
    agent, model = make_agent(db, session_id, log, tracked_manager(log, ref))
    ref.append(model)
    for k in range(3):
        agent.run(f"Read build log {k}.")
    return agent, model, log


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_session_data_mirrors_the_records_and_stats_agree(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    db = make_db(kind, tmp_path, request)
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
    dest = make_db(target, tmp_path / "t", request)
    assert load_snapshot(dest, snap) == len(snap["records"]) > 0
    assert load_snapshot(dest, snap) == 0  # loading twice adds nothing
    assert [m.to_dict() for m in full_messages(dest, "moving")] == [
        m.to_dict() for m in full_messages(source, "moving")
    ]
    assert stats(dest, "moving").folded_messages == stats(source, "moving").folded_messages
    # the moved session keeps working: a new run there does not see folded history, and sees the summary
    log, ref = Log(), []  # type: ignore[var-annotated]
    agent, model = make_agent(dest, "moving", log, tracked_manager(log, ref))
    ref.append(model)
    agent.run("Read build log 3.")
    folded = {i for r in snap["records"] for i in r["folded_ids"]}
    first = model.requests[0].messages
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
    tmp_path: Path, closed_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    broken = SQLAlchemyStore.from_url(f"postgresql+psycopg://postgres@127.0.0.1:{closed_port}/x?connect_timeout=2")
    log, ref = Log(), []  # type: ignore[var-annotated]
    manager = tracked_manager(log, ref, store=broken, store_cooldown=600)
    agent, model = make_agent(SqliteDb(db_file=str(tmp_path / "a.db")), "dead", log, manager)
    ref.append(model)
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        for k in range(3):
            assert agent.run(f"Read build log {k}.").content.endswith("all chunks read.")
    attempts = [r for r in caplog.records if "could not" in r.message]
    assert len(attempts) == 1, [r.message for r in attempts]
    assert manager.stats["folds"] >= 3 and manager.stats["records_skipped"] >= 2


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_async_agno_dbs_record_and_filter(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    import asyncio

    if kind == "sqlite":
        pytest.importorskip("aiosqlite", reason="AsyncSqliteDb needs aiosqlite (in the test extras)")
        from agno.db.sqlite import AsyncSqliteDb

        db: Any = AsyncSqliteDb(db_file=str(tmp_path / "async.db"))
        reader = SQLAlchemyStore.from_url(f"sqlite:///{tmp_path / 'async.db'}")
    else:
        from agno.db.postgres import AsyncPostgresDb

        target: PgTarget = request.getfixturevalue("pg_schema")
        db = AsyncPostgresDb(db_url=target.url.replace("+psycopg", "+psycopg_async"), db_schema=target.schema)
        reader = SQLAlchemyStore.from_url(target.url, schema=target.schema)
    log, ref = Log(), []  # type: ignore[var-annotated]
    manager = tracked_manager(log, ref)
    agent, model = make_agent(db, "async-s", log, manager)
    ref.append(model)
    starts = []
    for k in range(2):
        starts.append(len(model.requests))
        asyncio.run(agent.arun(f"Read build log {k}."))
    events = reader.events("async-s")
    assert events and manager.stats["records_written"] == len(events)
    check_session(model, log, events, starts)


def test_reading_an_async_db_names_the_sync_class_to_use(tmp_path: Path) -> None:
    pytest.importorskip("aiosqlite", reason="AsyncSqliteDb needs aiosqlite (in the test extras)")
    from agno.db.sqlite import AsyncSqliteDb

    from agno_compression import ConfigError

    with pytest.raises(ConfigError, match="SqliteDb or PostgresDb"):
        full_messages(AsyncSqliteDb(db_file=str(tmp_path / "a.db")), "s")


@pytest.mark.parametrize("kind", SHARED_DBS)
def test_eight_agent_processes_fold_one_session_at_once(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """8 real Agents in 8 processes, one session, >= 25 folds each, all at once: nothing lost."""
    from concurrent.futures import ProcessPoolExecutor

    from tests._store_workers import run_folding_agent

    workers, folds = 8, 25
    db = make_db(kind, tmp_path, request)
    where, schema = db_location(kind, tmp_path, request)
    # One run first, in this process: agno creates its own tables (its CREATE TABLE is not race-safe).
    log, ref = Log(), []  # type: ignore[var-annotated]
    agent, model = make_agent(db, "crowd", log, tracked_manager(log, ref))
    ref.append(model)
    agent.run("Read build log 0.")
    reread = open_db(kind, where, schema).get_session(session_id="crowd", session_type=SessionType.AGENT)
    if isinstance(reread.session_data, str):
        pytest.skip(
            "agno 3.1.10's MySQLDb reads JSON columns back as text on MariaDB, so plain agno cannot run a second "
            "Agent on a stored session (TypeError in resolve_run_options); the 8-process record test covers our table"
        )
    store = store_for(db)
    assert store is not None
    first = store.load("crowd")
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Manager().Barrier(workers)
    with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        futures = [
            pool.submit(run_folding_agent, kind, where, schema, "crowd", w, folds, barrier) for w in range(workers)
        ]
        results = [f.result(timeout=600) for f in futures]
    assert all(n >= folds for n, _, _ in results), [n for n, _, _ in results]
    state = store.load("crowd")
    reported = {i for _, ids, _ in results for i in ids}
    assert not (reported - state.folded_ids), f"{len(reported - state.folded_ids)} folded ids lost"
    assert state.folds == first.folds + sum(n for n, _, _ in results)
    stored_tools = [m.content for m in full_messages(db, "crowd") if m.role == "tool"]
    for _, _, produced in results:
        assert set(produced) <= set(stored_tools)
    assert len(stored_tools) == len(log.produced_tools()) + sum(len(p) for _, _, p in results)
    session = db.get_session(session_id="crowd", session_type=SessionType.AGENT)
    assert session is not None and len(session.runs) == workers + 1


def test_folds_count_when_agno_leaves_tool_messages_out_of_storage(tmp_path: Path) -> None:
    """``store_tool_messages=False``: the run is stored without its tool results; its folds still count."""
    db = SqliteDb(db_file=str(tmp_path / "a.db"))
    log, ref = Log(), []  # type: ignore[var-annotated]
    agent, model = make_agent(db, "no-tools", log, tracked_manager(log, ref))
    agent.store_tool_messages = False
    ref.append(model)
    starts = []
    for k in range(2):
        starts.append(len(model.requests))
        agent.run(f"Read build log {k}.")
    assert not [m for m in full_messages(db, "no-tools") if m.role == "tool"], "agno stored no tool results"
    earlier = [e for at, e in log.folds if at <= starts[1] and e.summary]
    assert earlier
    first = model.requests[starts[1]].messages
    assert [m.content for m in first if is_summary(m)] == [earlier[-1].summary]
    assert not ({m.id for m in first} & {i for e in earlier for i in e.folded_ids})
