"""Folding a stored session on request (``CompressionManager.fold_session``) and the agent's ``fold_context`` tool.

Real Agents on a scripted model, real SQLite and PostgreSQL: a 40-run session folded now (dry run first), the next
run's prompt holding the summary instead of the folded messages, what the instructions asked kept; a fold on request
refused or waiting while a run of the session is going (one process, and two processes on PostgreSQL), a run
waiting for a fold on request to end; the agent folding at a boundary it chooses.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from agno.db.sqlite import SqliteDb
from agno.models.message import Message

from agno_compression import CompressionManager, ConfigError, compressed_view, full_messages, stats
from agno_compression._plan import is_summary
from agno_compression._stores import store_for
from agno_compression._stores._leases import FOLD, leases_of
from agno_compression.testing import Reply, ScriptInfo, ToolCall, current_user, loop_agent, scripted_agent
from tests.helpers import DbTarget

SESSION = "forty"


def forty_runs(db: Any, session_id: str = SESSION) -> Any:
    """A session of 40 stored runs (two reads each) that never folded (a budget far above it)."""
    loop = loop_agent(steps=2, db=db, session_id=session_id, compress_at_tokens=500_000)
    for i in range(40):
        loop.run(f"task {i}: read the logs of module_{i}")
    assert loop.manager.stats["folds"] == 0
    return loop


def sent_after(loop: Any, text: str) -> list[Message]:
    """The messages of the first model request of a new run on ``text``."""
    n = len(loop.model.requests)
    loop.run(text)
    return loop.model.requests[n].messages


@pytest.fixture(params=["sqlite", "postgres", "json"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> DbTarget:
    """SQL (the records' table), and agno's JsonDb (the records in the session row, written by the fold itself)."""
    if request.param == "postgres":
        return request.getfixturevalue("postgres_db")
    if request.param == "json":
        return DbTarget("json", str(tmp_path / "json"))
    return DbTarget("sqlite", str(tmp_path / "s.db"))


def test_a_forty_run_session_folds_on_request(target: DbTarget) -> None:
    db = target.open()
    loop = forty_runs(db)
    originals = full_messages(db, SESSION)

    dry = loop.manager.fold_session(loop.agent, SESSION, instructions="keep module_7", apply=False)
    assert dry.status == "dry_run" and dry.record_id is None and not dry.folded
    assert dry.folded_messages == 240 and dry.tokens_after < dry.tokens_before // 10
    assert stats(db, SESSION).folds == 0, "a dry run writes nothing"

    done = loop.manager.fold_session(loop.agent, SESSION, instructions="keep module_7")
    assert done.folded and done.record_id is not None and done.summary == dry.summary
    [record] = store_for(db).events(SESSION)  # type: ignore[union-attr]
    assert record.strategy == "request:extractive" and record.run_id is None
    assert record.tokens_before == done.tokens_before and record.budget == 500_000
    assert loop.manager.stats["request_folds"] == 1

    sent = sent_after(loop, "task 40: what did module_7 log?")
    summaries = [m for m in sent if is_summary(m)]
    assert len(summaries) == 1 and "## Kept on request" in str(summaries[0].content)
    assert "task 7: read the logs of module_7" in str(summaries[0].content)
    folded = set(record.folded_ids)
    assert not [m for m in sent if m.id in folded], "a folded message was sent again"
    assert [m.role for m in sent] == ["system", "user", "user"]  # system, the summary, the new request
    assert full_messages(db, SESSION)[: len(originals)] == originals, "the originals are kept"
    assert any(is_summary(m) for m in compressed_view(db, SESSION))

    again = loop.manager.fold_session(db, SESSION)  # the new run's messages, with the summary absorbed
    assert again.folded and again.folded_messages == 6
    assert not set(store_for(db).events(SESSION)[-1].folded_ids) & folded, "a span folded twice"  # type: ignore[union-attr]


def test_nothing_to_fold_and_bad_input(tmp_path: Path) -> None:
    db = SqliteDb(db_file=str(tmp_path / "s.db"))
    manager = CompressionManager()
    assert manager.fold_session(db, "missing").status == "no_session"
    loop = forty_runs(db)
    assert loop.manager.fold_session(db, SESSION, user_id="someone-else").status == "no_session"
    assert loop.manager.fold_session(db, SESSION).folded
    assert loop.manager.fold_session(db, SESSION).status == "nothing_to_fold"
    with pytest.raises(ConfigError, match="session_id"):
        manager.fold_session(db, "")
    with pytest.raises(ConfigError, match="wait"):
        manager.fold_session(db, SESSION, wait=-1)
    with pytest.raises(ConfigError, match="Agent, Team or db"):
        manager.fold_session("not a db", SESSION)


def test_a_fold_on_request_waits_for_a_run_of_the_session(tmp_path: Path) -> None:
    """While a run of the session is going, a fold on request answers busy, or waits and then folds the run too."""
    db = SqliteDb(db_file=str(tmp_path / "s.db"))
    loop = forty_runs(db)
    started, release = threading.Event(), threading.Event()

    def slow_read(index: int) -> str:
        """Read slowly."""
        started.set()
        release.wait(30)
        return f"slow chunk {index}"

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if "slow" in current_user(messages) and not any(m.role == "tool" for m in messages if not m.from_history):
            return Reply(tool_calls=[ToolCall("slow_read", {"index": 1})])
        return Reply(text="done")

    agent, _ = scripted_agent(
        script,
        slow_read,
        manager=CompressionManager(compress_at_tokens=500_000),
        db=db,
        session_id=SESSION,
        add_history_to_context=True,
        num_history_runs=100,
    )
    run = threading.Thread(target=agent.run, args=("the slow run",))
    run.start()
    assert started.wait(10)
    busy = loop.manager.fold_session(db, SESSION)
    assert busy.status == "busy" and "run of this session is going" in busy.message
    assert stats(db, SESSION).folds == 0
    threading.Timer(0.5, release.set).start()
    waited = loop.manager.fold_session(db, SESSION, wait=20)
    run.join(10)
    assert waited.folded and waited.folded_messages == 240 + 4, "the fold came after the run, with its messages"


def test_a_fold_on_request_waits_until_agno_stored_the_run_it_waited_for(tmp_path: Path, monkeypatch: Any) -> None:
    """agno stores a run after the run's post-hook released its lease: a fold that waited for the run folds once the
    run is stored, and folds anyway after a grace when it never is (a run that died)."""
    from agno_compression import _requested_fold
    from agno_compression._stores._leases import RUN

    db = SqliteDb(db_file=str(tmp_path / "s.db"))
    loop = forty_runs(db)
    leases = leases_of(store_for(db))
    assert leases.take(SESSION, "a-run-never-stored", RUN, 60)
    threading.Timer(0.3, lambda: leases.release(SESSION, "a-run-never-stored")).start()
    stored = loop.manager.fold_session(db, SESSION, wait=1.5)
    assert stored.status == "busy" and "being stored" in stored.message, stored.message
    monkeypatch.setattr(_requested_fold, "STORE_GRACE", 0.5)
    assert leases.take(SESSION, "another-never-stored", RUN, 60)
    threading.Timer(0.3, lambda: leases.release(SESSION, "another-never-stored")).start()
    started = time.monotonic()
    done = loop.manager.fold_session(db, SESSION, wait=3)
    assert time.monotonic() - started >= 0.3 + 0.5, "it waited for the run, then for the grace"
    assert done.folded and done.folded_messages == 240, "after the grace the fold goes ahead without the run"


def test_a_run_waits_for_a_fold_on_request(tmp_path: Path) -> None:
    db = SqliteDb(db_file=str(tmp_path / "s.db"))
    loop = forty_runs(db)
    leases = leases_of(store_for(db))
    assert leases.take(SESSION, FOLD, FOLD, 30)  # a fold on request holds the session
    assert not leases.take(SESSION, FOLD, FOLD, 30), "never two folds of one session at once"
    n = len(loop.model.requests)
    run = threading.Thread(target=loop.run, args=("task 40",))
    run.start()
    time.sleep(0.6)
    assert len(loop.model.requests) == n, "the run started while the fold held the session"
    leases.release(SESSION, FOLD)
    run.join(20)
    assert len(loop.model.requests) > n


@pytest.mark.slow
def test_two_processes_a_run_and_a_fold_on_request(postgres_db: DbTarget) -> None:
    """PostgreSQL, two processes: a run going in one, folds on request in the other: refused while it goes, done
    after it; no span folded twice, every run and record kept."""
    from concurrent.futures import ProcessPoolExecutor

    from tests._store_workers import run_slow_agent

    db = postgres_db.open()
    loop = forty_runs(db)
    ctx = multiprocessing.get_context("spawn")
    sync = ctx.Manager()
    started, release = sync.Event(), sync.Event()
    with ProcessPoolExecutor(1, mp_context=ctx) as pool:
        worker = pool.submit(run_slow_agent, postgres_db, SESSION, 3, started, release)
        assert started.wait(120), "the other process's run did not start"
        busy = loop.manager.fold_session(db, SESSION)
        assert busy.status == "busy"
        release.set()
        folded = loop.manager.fold_session(db, SESSION, wait=60)
        assert worker.result(timeout=120) == 3
    assert folded.folded and folded.folded_messages == 240 + 8  # the other run's 8 messages are folded too
    session = db.get_session(session_id=SESSION, session_type=None)
    assert len(session.runs) == 41
    records = store_for(db).events(SESSION)  # type: ignore[union-attr]
    ids = [i for r in records for i in r.folded_ids]
    assert len(ids) == len(set(ids)), "a message folded twice"
    assert len(records) == 1
    sent = sent_after(loop, "after both")
    assert sum(1 for m in sent if is_summary(m)) == 1 and len(sent) == 3


def test_the_agent_folds_at_a_boundary_it_chooses(tmp_path: Path) -> None:
    """``fold_tool=True``: the agent calls ``fold_context(keep=...)``; the next call folds, keeping what it named."""
    db = SqliteDb(db_file=str(tmp_path / "s.db"))

    def read_chunk(index: int) -> str:
        """Read one chunk of a build log."""
        return "\n".join(f"chunk {index} line {k}: value_{index}_{k} = {k * index}" for k in range(30))

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index < 4:
            return Reply(tool_calls=[ToolCall("read_chunk", {"index": info.call_index + 1})])
        if info.call_index == 4:
            return Reply(tool_calls=[ToolCall("fold_context", {"keep": "value_2_7 and the chunk 3 totals"})])
        return Reply(text="done")

    manager = CompressionManager(compress_at_tokens=64_000, fold_tool=True)
    agent, model = scripted_agent(script, read_chunk, manager=manager, db=db, session_id="boundary")
    agent.run("read the chunks, then fold")
    assert "fold_context" in [t["name"] for t in model_tools(model, 0)]
    assert manager.stats["agent_folds"] == 1 and manager.stats["folds"] == 1
    after = model.requests[5].messages
    summary = next(str(m.content) for m in after if is_summary(m))
    assert "value_2_7 = 14" in summary and "asked to keep: value_2_7" in summary
    assert model.requests[5].prompt_tokens < model.requests[4].prompt_tokens
    assert not [m for m in after if m.role == "tool" and str(m.content).startswith("chunk")], (
        "the read outputs were folded"
    )
    [record] = store_for(db).events("boundary")  # type: ignore[union-attr]
    assert record.strategy == "agent:extractive" and record.run_id is not None

    plain, plain_model = scripted_agent(
        lambda m, i: Reply(text="ok"), manager=CompressionManager(), db=db, session_id="plain"
    )
    plain.run("hi")
    assert "fold_context" not in [t["name"] for t in model_tools(plain_model, 0)], "off by default"


def model_tools(model: Any, index: int) -> list[dict[str, Any]]:
    return [t.get("function", t) for t in model.requests[index].tools or []]
