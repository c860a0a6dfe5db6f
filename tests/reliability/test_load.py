"""Load: many writers and runs on one SQLite file and one PostgreSQL database, at once.

Processes (16 writers x 50 folds through ``SQLAlchemyStore.record``, the manager's write path), threads (real
Agents sharing one CompressionManager), and asyncio (real Agents in one event loop): no record lost, no error, no
deadlock (every join is bounded), and every agent's requests stay clean. Figures are printed (run with ``-s``).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from agno_compression import CompressionManager, SQLAlchemyStore, full_messages
from agno_compression._plan import is_summary
from agno_compression.testing import LoopAgent
from tests.checks import check_request
from tests.helpers import db_target
from tests.reliability import _workers
from tests.reliability._agents import BUDGET, SYSTEM, build

FIGURES: dict[str, str] = {}


def _figure(name: str, text: str) -> None:
    FIGURES[name] = text
    print(f"\n[load] {name}: {text}")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_sixteen_writer_processes_fifty_folds_each(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    workers, folds = 16, 50
    target = db_target(kind, tmp_path, request, file="load.db")
    db = target.open()
    SQLAlchemyStore.for_agno_db(db).ensure_table()
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Manager().Barrier(workers)
    started = time.monotonic()
    with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        futures = [pool.submit(_workers.load_sessions, target, w, folds, barrier) for w in range(workers)]
        results = [f.result(timeout=300) for f in futures]
    wall = time.monotonic() - started
    store = SQLAlchemyStore.for_agno_db(db)
    expected = {i for _, _, ids in results for i in ids}
    shared = store.load("shared")
    own = [store.load(f"w{w}") for w in range(workers)]
    found = set(shared.folded_ids).union(*(s.folded_ids for s in own))
    rows = shared.folds + sum(s.folds for s in own)
    assert [n for n, _, _ in results] == [folds] * workers
    assert len(expected) == workers * folds * 4
    assert expected - found == set(), f"{len(expected - found)} folded ids lost"
    assert rows == workers * folds, f"{rows} rows for {workers * folds} folds"
    assert shared.folds == workers * folds // 2
    for w, s in enumerate(own):  # nothing of another session leaks into a session's state
        assert all(i.startswith(f"w{w}f") for i in s.folded_ids)
    slowest = max(t for _, t, _ in results)
    _figure(
        f"{kind} {workers} processes x {folds} folds",
        f"{rows} rows, {len(found)} ids, 0 lost, slowest writer {slowest:.2f}s, wall {wall:.1f}s (with spawn)",
    )


def _check_isolated(h: LoopAgent, mine: set[str], foreign_ids: set[str], foreign_summaries: set[str]) -> None:
    for request in h.model.requests:
        sent = {m.id for m in request.messages}
        assert not (sent & foreign_ids), "a message of another session reached this agent"
        for m in request.messages:
            if is_summary(m):
                assert m.content not in foreign_summaries, "another session's summary reached this agent"
        assert pair_clean(request)


def pair_clean(request: Any) -> bool:
    from agno_compression._plan import pair_violations

    return pair_violations(request.messages) == []


def _many_agents(kind: str, tmp_path: Path, request: pytest.FixtureRequest, n: int) -> tuple[Any, list[LoopAgent]]:
    db = db_target(kind, tmp_path, request, file="load.db").open()
    manager_store = SQLAlchemyStore.for_agno_db(db)
    manager_store.ensure_table()
    shared = CompressionManager(compress_at_tokens=BUDGET)
    hs = []
    for k in range(n):
        h = build(db=db, session_id=f"sess-{k}", tag=f"A{k}-", steps=12, agent_id=f"agent-{k}", user_id=f"user-{k}")
        # one CompressionManager shared by every agent (as one process serving many users would do)
        with pytest.warns(UserWarning, match="replaces the compression manager"):
            shared.attach(h.agent)
        h.manager = shared
        hs.append(h)
    return db, hs


def _verify_many(db: Any, hs: list[LoopAgent], tasks: list[str]) -> None:
    store = SQLAlchemyStore.for_agno_db(db)
    per_session = {f"sess-{k}": store.events(f"sess-{k}") for k in range(len(hs))}
    for k, h in enumerate(hs):
        rows = per_session[f"sess-{k}"]
        assert rows, f"agent {k} never recorded a fold"
        assert all(r.owner_id == f"agent-{k}" for r in rows)
        mine = {i for r in rows for i in r.folded_ids}
        others = {i for j, rs in per_session.items() if j != f"sess-{k}" for r in rs for i in r.folded_ids}
        other_summaries = {r.summary for j, rs in per_session.items() if j != f"sess-{k}" for r in rs}
        assert not (mine & others)
        _check_isolated(h, mine, others, other_summaries)
        for request in h.model.requests:
            check_request(request, BUDGET, user_text=tasks[k], system=SYSTEM)
        tools = [str(m.content) for m in full_messages(db, f"sess-{k}") if m.role == "tool"]
        assert tools == h.produced, f"agent {k}: stored tool outputs differ from what its tools produced"


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_agents_in_threads_share_one_manager_and_one_database(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    n = 8
    db, hs = _many_agents(kind, tmp_path, request, n)
    tasks = [f"Agent {k}: read every chunk." for k in range(n)]
    barrier = threading.Barrier(n)

    def go(k: int) -> Any:
        barrier.wait(timeout=30)
        return hs[k].run(tasks[k], "sync" if k % 2 else "stream")

    started = time.monotonic()
    with ThreadPoolExecutor(n) as pool:
        outs = list(pool.map(go, range(n), timeout=300))
    wall = time.monotonic() - started
    assert all(str(o.content).endswith("all chunks read.") for o in outs)
    _verify_many(db, hs, tasks)
    folds = sum(len(SQLAlchemyStore.for_agno_db(db).events(f"sess-{k}")) for k in range(n))
    calls = sum(len(h.model.requests) for h in hs)
    _figure(f"{kind} {n} agent threads", f"{calls} model calls, {folds} folds recorded, 0 lost, wall {wall:.1f}s")


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_async_agents_interleave_in_one_loop(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    n = 8
    db, hs = _many_agents(kind, tmp_path, request, n)
    tasks = [f"Agent {k}: read every chunk." for k in range(n)]

    async def one(k: int) -> Any:
        if k % 2:
            return await hs[k].agent.arun(tasks[k])
        last = None
        async for event in hs[k].agent.arun(tasks[k], stream=True, yield_run_output=True):
            last = event
        return last

    async def everyone() -> list[Any]:
        return await asyncio.wait_for(asyncio.gather(*(one(k) for k in range(n))), timeout=300)

    started = time.monotonic()
    outs = asyncio.run(everyone())
    wall = time.monotonic() - started
    assert all(str(o.content).endswith("all chunks read.") for o in outs)
    _verify_many(db, hs, tasks)
    calls = sum(len(h.model.requests) for h in hs)
    _figure(f"{kind} {n} async agents", f"{calls} model calls, wall {wall:.1f}s, 0 lost")
