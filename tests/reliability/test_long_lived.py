"""A long-lived manager: what it keeps in memory stays bounded however many folds and runs it serves."""

from __future__ import annotations

import json

from agno.models.message import Message

from agno_compression import CompressionManager
from agno_compression._records import EVENTS_WINDOW
from agno_compression.testing import ScriptedModel, log_chunk


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
    assert len(manager.events) == EVENTS_WINDOW == 1_000  # the documented window (docs/configuration.md)
    assert manager.stats["events_dropped"] == folds - EVENTS_WINDOW
    assert manager.stats["folds"] == len(manager.events) + manager.stats["events_dropped"]
    assert "reading log" in (manager.events[-1].summary or ""), "the newest folds are the ones kept"
    newest = [e.created_at for e in manager.events]
    assert newest == sorted(newest)
