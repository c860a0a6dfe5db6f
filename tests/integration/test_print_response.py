"""agno's printer (``print_response`` / ``aprint_response``, streamed or not, Agent and Team) calls
``compression_manager.stats.clear()`` after showing a response to reset agno's own display counters: ours stay.

Real agno Agents and Teams on the scripted model, printing to a captured console.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agno.agent import Agent
from agno.models.message import Message
from agno.team import Team

from agno_compression import CompressionManager
from agno_compression._stats import STATS_KEYS
from agno_compression.testing import Reply, ScriptedModel, ScriptInfo, ToolCall, current_user, log_chunk, loop_agent

PRINTS = ("sync", "async", "stream", "async-stream")


def print_in_mode(target: Any, text: str, how: str) -> None:
    """``print_response`` of an Agent or Team in one of ``PRINTS``."""
    stream = how.endswith("stream")
    if how.startswith("async"):
        asyncio.run(target.aprint_response(text, stream=stream))
    else:
        target.print_response(text, stream=stream)


def assert_counts_survive(manager: CompressionManager) -> None:
    assert set(STATS_KEYS) <= set(manager.stats)
    assert manager.stats["folds"] == len(manager.events) >= 1
    assert manager.stats["messages_folded"] >= manager.stats["folds"]
    assert manager.stats["tokens_saved"] > 0


@pytest.mark.parametrize("how", PRINTS)
def test_printing_an_agents_response_keeps_every_counter(how: str) -> None:
    loop = loop_agent(steps=8, compress_at_tokens=1_500, history=False)
    print_in_mode(loop.agent, "Read the build log.", how)
    assert_counts_survive(loop.manager)
    before = dict(loop.manager.stats)
    print_in_mode(loop.agent, "Read it again.", how)  # counts go on from where they were
    assert loop.manager.stats["folds"] == len(loop.manager.events) > before["folds"]


def read_chunk(index: int) -> str:
    """Read one long chunk of a build log."""
    return log_chunk(index, index)


def leader(messages: list[Message], info: ScriptInfo) -> Reply:
    """Reads eight chunks with the team's own tool, then answers."""
    if info.call_index < 8:
        n = info.call_index + 1
        return Reply(text=f"reading chunk {n}", tool_calls=[ToolCall("read_chunk", {"index": n})])
    return Reply(text=f"Done with {current_user(messages)!r}: every chunk read.")


@pytest.mark.parametrize("how", PRINTS)
def test_printing_a_teams_response_keeps_every_counter(how: str) -> None:
    member = ScriptedModel(script=lambda m, i: Reply(text="member answer"))
    team = Team(
        name="desk",
        model=ScriptedModel(script=leader),
        members=[Agent(name="writer", model=member, telemetry=False)],
        tools=[read_chunk],
        telemetry=False,
    )
    manager = CompressionManager(compress_at_tokens=1_500)
    manager.attach(team)
    print_in_mode(team, "Read the build log.", how)
    assert_counts_survive(manager)


def test_clear_drops_agnos_display_counters_only() -> None:
    manager = CompressionManager()
    manager.stats.add("folds", 3)
    manager.stats["tool_results_compressed"] = 2  # agno's own keys, as its CompressionManager writes them
    manager.stats["original_size"] = 100
    manager.stats.clear()
    assert manager.stats == {**dict.fromkeys(STATS_KEYS, 0), "folds": 3}
