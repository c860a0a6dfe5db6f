"""Deleting a session deletes its fold records and summaries, on every agno db, through real Agents (docs/sessions.md).

A session's history summary quotes the user's earlier requests, so a summary can hold "my password is ...": after
agno's ``delete_session`` / ``delete_sessions`` on an attached db, or ``delete_compression`` where the db is shared
with processes that never attached a manager, nothing of it may stay, and a new run of the session starts clean.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from agno_compression import (
    ConfigError,
    SQLAlchemyStore,
    compressed_view,
    delete_compression,
    full_messages,
    is_summary,
    stats,
)
from agno_compression._cli import app
from agno_compression._stores import store_for
from agno_compression.testing import LoopAgent, log_chunk, loop_agent
from tests.helpers import DbTarget, db_target, open_async_db

ALL_DBS = ["sqlite", "postgres", "mysql", "redis", "json", "memory"]
SECRET = "hunter2-s3cr3t-7781"
BUDGET = 3_000


def _agent(db: Any, session_id: str, user_id: str) -> LoopAgent:
    """A real Agent reading long log chunks, folding at ``BUDGET``, every earlier run in its context."""
    return loop_agent(
        db=db,
        session_id=session_id,
        steps=8,
        tool_text=lambda index, n: log_chunk(index, n, lines=60),
        compress_at_tokens=BUDGET,
        agent_kw={"user_id": user_id},
    )


def _with_secret(h: LoopAgent) -> None:
    """Two runs: the second run's history summary quotes the first request, password included."""
    h.run(f"My password is {SECRET}. Read build log 0.")
    h.run("Read build log 1.")


def _opened(kind: str, tmp_path: Path, request: pytest.FixtureRequest, session_id: str, user_id: str) -> Any:
    """The database of ``kind``, its target and an agent whose session ``session_id`` quotes the secret."""
    target = db_target(kind, tmp_path, request)
    db = target.open()
    h = _agent(db, session_id, user_id)
    _with_secret(h)
    return target, db, h


def _stored_text(target: DbTarget, db: Any) -> str:
    """Everything the fold records of ``target`` hold, as text (plus, without a table, agno's own rows)."""
    if target.kind in ("sqlite", "postgres", "mysql"):
        store = SQLAlchemyStore.from_url(target.url, schema=target.schema)
        try:
            with store.engine.connect() as conn:
                rows = conn.execute(select(store.table.c.session_id, store.table.c.summary)).all()
        finally:
            store.engine.dispose()
        return json.dumps([list(r) for r in rows])
    if target.kind == "redis":
        client = db.redis_client
        values = [client.lrange(k, 0, -1) for k in client.scan_iter(match=f"{target.schema}:agno_compression_events:*")]
        return json.dumps(values, default=str)
    if target.kind == "json":
        return "".join(p.read_text(encoding="utf-8") for p in sorted(Path(target.where).rglob("*")) if p.is_file())
    return json.dumps(db.get_sessions(deserialize=False)[0], default=str)


def _starts_clean(h: LoopAgent, text: str) -> list[Any]:
    """Run ``text``; the run's first request holds no summary and nothing sent in the run holds the secret."""
    first = len(h.model.requests)
    h.run(text)
    requests = h.model.requests[first:]
    assert not [m for m in requests[0].messages if is_summary(m)], "a new run starts with a deleted summary"
    assert SECRET not in json.dumps([str(m.content) for r in requests for m in r.messages])
    return requests


@pytest.mark.parametrize("kind", ALL_DBS)
def test_delete_session_deletes_its_folds_and_summaries(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    target, db, h = _opened(kind, tmp_path, request, "doomed", "u1")
    h.agent.run("Read build log 9.", session_id="kept")  # another session of the same db keeps its folds
    kept = stats(db, "kept").folds
    records = store_for(db).events("doomed")  # type: ignore[union-attr]
    assert kept and records and stats(db, "doomed").folds == len(records)
    assert any(SECRET in (r.summary or "") for r in records), "the history summary quotes the first request"
    assert SECRET in _stored_text(target, db)

    assert db.delete_session("doomed") is not False  # agno's own method on the db object the agent uses

    assert stats(db, "doomed").folds == 0
    assert store_for(db).events("doomed") == []  # type: ignore[union-attr]
    assert SECRET not in _stored_text(target, db)
    assert stats(db, "kept").folds == kept
    n = len(h.folds)
    _starts_clean(h, "Hello again: read build log 2.")
    new = [e for _, e, _ in h.folds[n:] if e.summary and e.folded_ids]
    assert new and stats(db, "doomed").folds == len(new), "only the new run's folds count"
    assert SECRET not in json.dumps([str(m.content) for m in compressed_view(db, "doomed")])
    if kind == "sqlite":  # the command line reads the same: the new run's folds, no deleted summary
        shown = CliRunner().invoke(app, ["inspect", "--db", target.where, "--session", "doomed", "--json", "--full"])
        assert shown.exit_code == 0, shown.output
        folds = [f for run in json.loads(shown.stdout)["runs"] for f in run["folds"]]
        assert len(folds) == len(new) and SECRET not in shown.stdout


@pytest.mark.parametrize("kind", ALL_DBS)
def test_delete_sessions_of_one_user_keeps_the_other_users_folds(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    db = db_target(kind, tmp_path, request).open()
    h = _agent(db, "alice-1", "alice")
    h.run("Alice: read build log 0.")
    h.agent.run("Bob: read build log 1.", session_id="bob-1", user_id="bob")
    before = {s: stats(db, s).folds for s in ("alice-1", "bob-1")}
    assert all(before.values()), before

    db.delete_sessions(["alice-1", "bob-1"], user_id="alice")  # agno deletes only alice's session; so do we

    assert stats(db, "alice-1").folds == 0
    assert stats(db, "bob-1").folds == before["bob-1"]
    db.delete_sessions(["bob-1"])
    assert stats(db, "bob-1").folds == 0


@pytest.mark.parametrize("kind", ALL_DBS)
def test_delete_compression_cleans_up_after_processes_without_a_manager(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    target, db, h = _opened(kind, tmp_path, request, "alice-1", "alice")
    h.agent.run("Alice: read build log 5.", session_id="alice-2")
    h.agent.run("Bob: read build log 6.", session_id="bob-1", user_id="bob")
    folds = {s: stats(db, s).folds for s in ("alice-1", "alice-2", "bob-1")}
    assert all(folds.values()), folds

    # A process that never attached a manager deletes the session with agno's class method: records in a table
    # or a Redis list stay behind (records in agno's own session row go with it).
    type(db).delete_session(db, "alice-1")
    orphans = stats(db, "alice-1").folds
    assert orphans == (0 if kind in ("json", "memory") else folds["alice-1"])
    assert delete_compression(db, session_id="alice-1") == orphans
    assert stats(db, "alice-1").folds == 0

    # Every session agno holds for alice: her records go, her messages stay, and her next run starts unfolded.
    assert delete_compression(db, user_id="alice") == folds["alice-2"]
    assert stats(db, "alice-2").folds == 0 and full_messages(db, "alice-2")
    assert SECRET not in _stored_text(target, db)
    assert stats(db, "bob-1").folds == folds["bob-1"]
    assert delete_compression(db, session_id="bob-1", user_id="alice") == 0  # not alice's session
    assert stats(db, "bob-1").folds == folds["bob-1"]
    if kind != "mysql":  # agno's MySQLDb cannot load a stored session into a new run on MariaDB (docs/sessions.md)
        _starts_clean(h, "Alice: hello, read build log 7.")  # the agent's own session id is alice-1: recreated
        n = len(h.folds)
        h.agent.run("Alice again.", session_id="alice-2")  # her whole history is back: folded anew
        assert stats(db, "alice-2").folds == len([e for _, e, _ in h.folds[n:] if e.summary and e.folded_ids])


def test_delete_compression_names_what_is_missing(tmp_path: Path) -> None:
    from agno.db.sqlite import SqliteDb

    db = SqliteDb(db_file=str(tmp_path / "a.db"))
    with pytest.raises(ConfigError, match="session_id or user_id"):
        delete_compression(db)
    with pytest.raises(ConfigError, match="user_id must be a non-empty string, got ''"):
        delete_compression(db, user_id="")
    store = SQLAlchemyStore.from_url(f"sqlite:///{tmp_path / 'records.db'}")
    with pytest.raises(ConfigError, match="pass a synchronous agno db"):
        delete_compression(store, user_id="alice")
    assert delete_compression(store, session_id="nobody") == 0


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_async_dbs_delete_folds_with_the_session(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    target = db_target(kind, tmp_path, request, file="async.db")
    db = open_async_db(target)
    reader = SQLAlchemyStore.from_url(target.url, schema=target.schema)
    h = _agent(db, "doomed", "u1")
    asyncio.run(h.agent.arun(f"My password is {SECRET}. Read build log 0."))
    asyncio.run(h.agent.arun("Read build log 1.", session_id="kept"))
    assert reader.events("doomed") and reader.events("kept")

    asyncio.run(db.delete_session("doomed"))

    assert reader.events("doomed") == [] and reader.events("kept")
    asyncio.run(db.delete_sessions(["kept"], user_id="someone else"))
    assert reader.events("kept")
    reader.engine.dispose()
