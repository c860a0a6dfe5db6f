"""A long-lived manager: what it keeps in memory stays bounded however many folds and runs it serves."""

from __future__ import annotations

import json
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from agno.models.message import Message

from agno_compression import CompressionManager
from agno_compression._events import EVENTS_WINDOW
from agno_compression.testing import ScriptedModel, log_chunk
from tests.reliability import _workers

MB = 1e6


def test_events_keep_a_window_and_count_what_they_dropped() -> None:
    """More folds than ``EVENTS_WINDOW``, through agno's hooks as agno calls them before each model call."""
    manager = CompressionManager(compress_at_tokens=1_000, max_summary_tokens=200, min_summary_tokens=50)
    model = ScriptedModel(script=lambda messages, info: "unused")
    live = [Message(role="system", content="You read logs."), Message(role="user", content="Read every log.")]
    folds = EVENTS_WINDOW + 50
    step = 0
    while manager.stats["folds"] < folds:
        step += 1
        arguments = json.dumps({"i": step})
        call = {"id": f"c{step}", "type": "function", "function": {"name": "read", "arguments": arguments}}
        live.append(Message(role="assistant", content=f"reading log {step}", tool_calls=[call]))
        live.append(Message(role="tool", tool_call_id=f"c{step}", tool_name="read", content=log_chunk(step, step)))
        if manager.should_compress(live, None, model):
            manager.compress(live)
        assert step < 20 * folds, "the loop stopped folding"
    assert len(manager.events) == EVENTS_WINDOW == 64  # the documented window (docs/configuration.md)
    assert manager.stats["events_dropped"] == folds - EVENTS_WINDOW
    assert manager.stats["folds"] == len(manager.events) + manager.stats["events_dropped"]
    assert "reading log" in (manager.events[-1].summary or ""), "the newest folds are the ones kept"
    newest = [e.created_at for e in manager.events]
    assert newest == sorted(newest)


def test_a_thousand_runs_of_one_session_add_at_most_twice_the_memory_of_a_hundred(tmp_path: Path) -> None:
    """A real Agent on SQLite, 1,000 runs of one session (two tool calls and an answer each, a fold every other run)
    in a fresh process; beside it, agno alone in another. What the default manager adds (its process's traced heap
    minus agno's alone, after a full gc) levels off: bounded caches, events and run registry, one kept summary per
    session, and summaries that stay within their size (bench/_memory.py)."""
    points = (100, 1_000)
    started = time.monotonic()
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        alone = pool.submit(_workers.session_memory, False, points, str(tmp_path))
        managed = pool.submit(_workers.session_memory, True, points, str(tmp_path))
        (agno, _), (ours, folds) = alone.result(timeout=600), managed.result(timeout=600)
    added = {n: ours[n] - agno[n] for n in points}
    print(
        f"\n[memory] agno alone {agno[100] / MB:.1f} -> {agno[1_000] / MB:.1f} MB; added by the manager "
        f"{added[100] / MB:.2f} -> {added[1_000] / MB:.2f} MB after 100 -> 1,000 runs; {folds} folds; "
        f"{time.monotonic() - started:.0f} s"
    )
    assert folds > 200, "the session folds every few runs: the manager has state to keep"
    assert added[100] > 0
    assert added[1_000] <= 2 * added[100], added
