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
from agno.agent import Agent
from agno.db.base import SessionType

from agno_compression import CompressionManager, SQLAlchemyStore
from agno_compression._plan import is_summary
from agno_compression.testing import ScriptedModel
from tests._crash_workers import SYSTEM, chunk, open_db, run_until_killed
from tests.pg import PgTarget, pg_schema  # noqa: F401  (fixture)

KILL_AT = 22  # tool batches done (and checkpointed) before the kill


def _where(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> tuple[str, str | None]:
    if kind == "sqlite":
        return str(tmp_path / "crash.db"), None
    target: PgTarget = request.getfixturevalue("pg_schema")
    return target.url, target.schema


def _kill_mid_run(
    kind: str,
    where: str,
    schema: str | None,
    session_id: str,
    checkpoint: str,
    compress: bool,
    mode: str = "sync",
    owner: str = "agent",
) -> None:
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    args = (kind, where, schema, session_id, checkpoint, compress, KILL_AT, f"task {session_id}", ready, mode, owner)
    child = ctx.Process(target=run_until_killed, args=args)
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
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_killed_run_keeps_at_least_what_plain_agno_keeps(
    kind: str, checkpoint: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    where, schema = _where(kind, tmp_path, request)
    _kill_mid_run(kind, where, schema, "plain", checkpoint, compress=False)
    _kill_mid_run(kind, where, schema, "folded", checkpoint, compress=True)
    db = open_db(kind, where, schema)
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
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_killed_runs_folds_count_only_if_its_messages_were_stored(
    kind: str, checkpoint: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    where, schema = _where(kind, tmp_path, request)
    # run 1 completes (and folds) in this process; run 2 folds too, then is killed
    run_until_killed(kind, where, schema, "s", checkpoint, True, -1, "first task", None)
    _kill_mid_run(kind, where, schema, "s", checkpoint, compress=True)
    db = open_db(kind, where, schema)
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
    model = ScriptedModel(script=lambda messages, info: "ok")
    agent = Agent(
        model=model,
        db=db,
        session_id="s",
        system_message=SYSTEM,
        add_history_to_context=True,
        num_history_runs=100,
        telemetry=False,
    )
    manager = CompressionManager(compress_at_tokens=100_000)  # no fold in run 3: its first request shows the load
    manager.attach(agent)
    agent.run("third task")
    assert manager.stats.get("folds", 0) == 0
    first = model.requests[0].messages
    assert [m.content for m in first if is_summary(m)] == [counted[-1].summary]
    assert not ({m.id for m in first} & {i for e in counted for i in e.folded_ids})
    for e in crashed:
        assert e.summary not in [m.content for m in first]


@pytest.mark.parametrize("mode", ["stream", "async", "async-stream"])
def test_killed_run_keeps_every_checkpointed_batch_on_every_model_path(mode: str, tmp_path: Path) -> None:
    where = str(tmp_path / "crash.db")
    _kill_mid_run("sqlite", where, None, "plain", "tool-batch", compress=False, mode=mode)
    _kill_mid_run("sqlite", where, None, "folded", "tool-batch", compress=True, mode=mode)
    db = open_db("sqlite", where, None)
    plain, folded = _stored(db, "plain"), _stored(db, "folded")
    assert len(SQLAlchemyStore.for_agno_db(db).events("folded")) >= 3
    tools = [m.content for m in plain if m.role == "tool"]
    assert tools == [chunk(i) for i in range(KILL_AT)]
    assert [m.content for m in folded if m.role == "tool"] == tools
    assert [m.role for m in folded] == [m.role for m in plain]


def test_killed_team_run_keeps_every_checkpointed_batch(tmp_path: Path) -> None:
    where = str(tmp_path / "crash.db")
    _kill_mid_run("sqlite", where, None, "plain", "tool-batch", compress=False, owner="team")
    _kill_mid_run("sqlite", where, None, "folded", "tool-batch", compress=True, owner="team")
    db = open_db("sqlite", where, None)
    plain, folded = _stored(db, "plain", SessionType.TEAM), _stored(db, "folded", SessionType.TEAM)
    assert len(SQLAlchemyStore.for_agno_db(db).events("folded")) >= 3
    tools = [m.content for m in plain if m.role == "tool"]
    assert tools == [chunk(i) for i in range(KILL_AT)]
    assert [m.content for m in folded if m.role == "tool"] == tools
    assert [m.role for m in folded] == [m.role for m in plain]
