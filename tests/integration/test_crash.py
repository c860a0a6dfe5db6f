"""A process killed with SIGKILL mid-run: attaching agno-compression never leaves less in the database than plain agno.

Real child processes run a real Agent (``checkpoint`` modes of agno 3.1.10: ``"runs"``, the default, and
``"tool-batch"``; ``"tools"`` is rejected by agno itself) and are killed after a fixed number of tool batches.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from agno.db.base import SessionType

from agno_compression import CompressionManager, SQLAlchemyStore
from agno_compression._plan import is_summary
from agno_compression.testing import WHOLE_SESSION, scripted_agent
from tests._crash_workers import SYSTEM, chunk, run_until_killed
from tests.helpers import DbTarget, db_target

KILL_AT = 22  # tool batches done (and checkpointed) before the kill


@pytest.fixture(params=["sqlite", "postgres"])
def crash_db(request: pytest.FixtureRequest, tmp_path: Path) -> DbTarget:
    """The agent's db: a SQLite file or a fresh PostgreSQL schema."""
    return db_target(request.param, tmp_path, request, file="crash.db")


def _kill_mid_run(target: DbTarget, session_id: str, checkpoint: str, compress: bool, **how: str) -> None:
    """Run ``run_until_killed`` in a spawned child and SIGKILL it after ``KILL_AT`` tool batches."""
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    args = (target, session_id, checkpoint, compress, KILL_AT, f"task {session_id}", ready)
    child = ctx.Process(target=run_until_killed, args=args, kwargs=how)
    child.start()
    try:
        assert ready.wait(240), "the child never reached the kill point"
        os.kill(child.pid, signal.SIGKILL)  # type: ignore[arg-type]
        child.join(60)
        assert child.exitcode == -signal.SIGKILL
    finally:
        if child.is_alive():
            child.kill()


def _stored(db: Any, session_id: str, kind: SessionType = SessionType.AGENT) -> list[Any]:
    session = db.get_session(session_id=session_id, session_type=kind)
    runs = session.runs or [] if session is not None else []
    return [m for run in runs for m in run.messages or [] if not m.from_history]


@pytest.mark.parametrize("checkpoint", ["tool-batch", "runs"])
def test_killed_run_keeps_at_least_what_plain_agno_keeps(crash_db: DbTarget, checkpoint: str) -> None:
    _kill_mid_run(crash_db, "plain", checkpoint, compress=False)
    _kill_mid_run(crash_db, "folded", checkpoint, compress=True)
    db = crash_db.open()
    plain, folded = _stored(db, "plain"), _stored(db, "folded")
    records = SQLAlchemyStore.for_agno_db(db).events("folded")
    assert len(records) >= 3, "the attached child should have folded several times before the kill"
    tools = [m.content for m in plain if m.role == "tool"]
    if checkpoint == "tool-batch":
        assert tools == [chunk(i) for i in range(KILL_AT)], "plain agno keeps every checkpointed batch"
    else:
        assert tools == [], "without checkpoints plain agno stores nothing of a killed run"
    # at least what plain agno keeps: the same tool outputs, byte for byte, in the same order
    assert [m.content for m in folded if m.role == "tool"] == tools
    assert [m.role for m in folded] == [m.role for m in plain]
    assert not any(is_summary(m) for m in folded)
    folded_ids = {i for r in records for i in r.folded_ids}
    if checkpoint == "tool-batch":
        assert folded_ids <= {m.id for m in folded}, "every folded message is in the stored partial run"


@pytest.mark.parametrize("checkpoint", ["runs", "tool-batch"])
def test_a_killed_runs_folds_count_only_if_its_messages_were_stored(crash_db: DbTarget, checkpoint: str) -> None:
    # run 1 completes (and folds) in this process; run 2 folds too, then is killed
    run_until_killed(crash_db, "s", checkpoint, True, -1, "first task", None)
    _kill_mid_run(crash_db, "s", checkpoint, compress=True)
    db = crash_db.open()
    session = db.get_session(session_id="s", session_type=SessionType.AGENT)
    stored_runs = {r.run_id for r in session.runs}
    stored_ids = {m.id for r in session.runs for m in r.messages or []}
    events = SQLAlchemyStore.for_agno_db(db).events("s")
    # a fold counts when every message it folded is stored (run 2's first fold, of run 1's history, does)
    crashed = [e for e in events if not set(e.folded_ids) <= stored_ids]
    counted = [e for e in events if set(e.folded_ids) <= stored_ids]
    if checkpoint == "runs":
        assert len(stored_runs) == 1
        assert crashed and all(e.run_id not in stored_runs for e in crashed), "run 2 folded its own steps"
        assert all("task s" in (e.summary or "") for e in crashed)
    else:
        assert not crashed and len(stored_runs) == 2
    assert counted
    # run 3: what the model sees first
    manager = CompressionManager(compress_at_tokens=100_000)  # no fold in run 3: its first request shows the load
    options = {"db": db, "session_id": "s", "system_message": SYSTEM, **WHOLE_SESSION}
    agent, model = scripted_agent(lambda messages, info: "ok", manager=manager, **options)
    agent.run("third task")
    assert manager.stats.get("folds", 0) == 0
    first = model.requests[0].messages
    assert [m.content for m in first if is_summary(m)] == [counted[-1].summary]
    assert not ({m.id for m in first} & {i for e in counted for i in e.folded_ids})
    for e in crashed:
        assert e.summary not in [m.content for m in first]


@pytest.mark.slow
@pytest.mark.parametrize("checkpoint", ["runs", "tool-batch"])
def test_a_run_that_runs_again_under_its_id_keeps_the_records_of_the_attempt_that_ends(
    crash_db: DbTarget, checkpoint: str
) -> None:
    """agno's durable queue runs a reclaimed job again from its input under the same run id. The attempt that died
    folded and recorded; the one that ends records its own folds, and the dead attempt's records are dropped when
    it starts. With the default checkpointing the session then holds exactly what one successful run leaves. (With
    ``tool-batch`` agno itself loads the dead attempt's checkpointed steps as history of the retry, so the retry
    is not the clean run; its records are still its own only.)"""
    run_until_killed(crash_db, "clean", checkpoint, True, -1, "the task", None, run_id="run-clean")
    _kill_mid_run(crash_db, "retried", checkpoint, compress=True, run_id="run-again")
    db = crash_db.open()
    store = SQLAlchemyStore.for_agno_db(db)
    dead = {(e.id, e.created_at) for e in store.events("retried")}
    assert dead, "the attempt that died folded and recorded"
    run_until_killed(crash_db, "retried", checkpoint, True, -1, "the task", None, run_id="run-again")
    clean, retried = store.events("clean"), store.events("retried")
    assert retried and not dead & {(e.id, e.created_at) for e in retried}, "the dead attempt's records are gone"
    assert {e.run_id for e in retried} == {"run-again"}
    session = db.get_session(session_id="retried", session_type=SessionType.AGENT)
    assert [r.run_id for r in session.runs] == ["run-again"]
    if checkpoint == "runs":
        shape = [(e.strategy, e.call_index, len(e.folded_ids), e.tokens_before, e.tokens_after) for e in clean]
        assert [
            (e.strategy, e.call_index, len(e.folded_ids), e.tokens_before, e.tokens_after) for e in retried
        ] == shape
        stored = {m.id for r in session.runs for m in r.messages or []}
        assert all(set(e.folded_ids) <= stored for e in retried), "every record folds messages of the stored run"
        loaded = store.load("retried")
        assert loaded.folds == len(clean) and loaded.summary == retried[-1].summary


@pytest.mark.parametrize(
    ("owner", "mode"), [("agent", "stream"), ("agent", "async"), ("agent", "async-stream"), ("team", "sync")]
)
def test_killed_run_keeps_every_checkpointed_batch_on_every_path(owner: str, mode: str, tmp_path: Path) -> None:
    """Every model path of an Agent, and a Team leader's own tool loop."""
    target = db_target("sqlite", tmp_path, file="crash.db")
    _kill_mid_run(target, "plain", "tool-batch", compress=False, mode=mode, owner=owner)
    _kill_mid_run(target, "folded", "tool-batch", compress=True, mode=mode, owner=owner)
    db = target.open()
    kind = SessionType.TEAM if owner == "team" else SessionType.AGENT
    plain, folded = _stored(db, "plain", kind), _stored(db, "folded", kind)
    assert len(SQLAlchemyStore.for_agno_db(db).events("folded")) >= 3
    tools = [m.content for m in plain if m.role == "tool"]
    assert tools == [chunk(i) for i in range(KILL_AT)]
    assert [m.content for m in folded if m.role == "tool"] == tools
    assert [m.role for m in folded] == [m.role for m in plain]
