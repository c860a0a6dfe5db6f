"""A second ``CompressionManager`` attached to an agent (or team) that already has one replaces every hook and tool of
the old one: the agent is left as if only the new manager had been attached. Two agents sharing one model
instance, each with its own manager, are each served by their own.

Real agno Agents and Teams on the scripted model, real SqliteDb files.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.exceptions import ContextWindowExceededError
from agno.models.message import Message
from agno.run.base import RunStatus
from agno.team import Team

from agno_compression import CompressionManager, full_messages
from agno_compression import stats as fold_stats
from agno_compression._compat import walk
from agno_compression._stats import STATS_KEYS
from agno_compression.testing import Reply, ScriptedModel, ScriptInfo, ToolCall
from tests.integration.test_pause import SESSION, Deploy, run_and_pause, stored
from tests.integration.test_recovery import SECRET, log_chunk

WRAPPED = (
    "invoke", "ainvoke", "invoke_stream", "ainvoke_stream",
    "response", "aresponse", "response_stream", "aresponse_stream", "_format_tools",
)  # fmt: skip
"""Every model method the manager may wrap."""


def layers(method: Callable[..., Any]) -> int:
    """How many wrappers deep ``method`` is (1: not wrapped)."""
    depth = 1
    while hasattr(method, "__wrapped__"):
        method, depth = method.__wrapped__, depth + 1
    return depth


def shape(node: Any) -> tuple[Any, ...]:
    """What attach() leaves on an Agent or Team, without the manager's identity."""
    return (
        [hook.__name__ for hook in node.pre_hooks or []],
        [hook.__name__ for hook in node.post_hooks or []],
        node.instructions,
        {name: layers(getattr(node.model, name)) for name in WRAPPED},
        type(node.model).__name__,
        node.compress_tool_results,
    )


def hooks_of(node: Any) -> set[int]:
    """``id()`` of the managers whose hooks ``node`` runs (managers compare by value: not hashable)."""
    return {id(getattr(h, "__self__", None)) for h in [*(node.pre_hooks or []), *(node.post_hooks or [])]}


class Searcher:
    """Reads ten log chunks (the provider rejects the sixth call once as too long), searches the folded log."""

    def __init__(self) -> None:
        self.reads = 0
        self.overflowed = False
        self.searched = False

    def read(self, index: int) -> str:
        """Read one chunk of the build log."""
        self.reads += 1
        return log_chunk(index)

    def script(self, messages: list[Message], info: ScriptInfo) -> Reply:
        del info
        if self.reads < 10:
            if self.reads == 5 and not self.overflowed:
                self.overflowed = True
                raise ContextWindowExceededError("prompt is too long: 210000 tokens > 200000 maximum")
            return Reply(tool_calls=[ToolCall("read", {"index": self.reads})])
        if not self.searched:
            self.searched = True
            return Reply(tool_calls=[ToolCall("search_folded_history", {"query": "tls_handshake ETIMEDOUT"})])
        return Reply(text="Found: " + str(messages[-1].content))


def searching_agent(db: Any) -> tuple[Agent, Searcher]:
    searcher = Searcher()
    agent = Agent(name="builder", model=ScriptedModel(script=searcher.script), tools=[searcher.read], db=db)
    return agent, searcher


def test_reattaching_an_agent_leaves_only_the_new_managers_hooks_tools_and_wrappers(tmp_path: Path) -> None:
    db = SqliteDb(db_file=str(tmp_path / "a.db"))
    agent, _ = searching_agent(db)
    old = CompressionManager(compress_at_tokens=2_500, output_guidance=True, overflow_retries=3)
    old.attach(agent)
    new = CompressionManager(compress_at_tokens=2_500)
    with pytest.warns(UserWarning, match=r"Agent 'builder'.*agno_compression"):
        new.attach(agent)
    once, _ = searching_agent(db)
    CompressionManager(compress_at_tokens=2_500).attach(once)
    assert shape(agent) == shape(once)
    assert hooks_of(agent) == {id(new)}

    out = agent.run("Why did the build fail?", session_id="one")
    assert out.status == RunStatus.completed, out.content
    assert old.events == [] and dict(old.stats) == dict.fromkeys(STATS_KEYS, 0)
    assert new.events and new.stats["overflow_retries"] == 1
    assert fold_stats(db, "one").folds == len(new.events)
    original = next(m for m in full_messages(db, "one") if m.role == "tool" and SECRET in str(m.content))
    assert original.id in str(out.content), "the search was not answered by the new manager"


def test_reattaching_replaces_agnos_own_compression_manager_too() -> None:
    from agno.compression.manager import CompressionManager as AgnoCompressionManager

    agent, _ = searching_agent(None)
    agent.compression_manager = AgnoCompressionManager(compress_tool_results_limit=2)
    agent.compress_tool_results = True
    new = CompressionManager()
    with pytest.warns(UserWarning, match=r"agno\.compression\.manager\.CompressionManager"):
        new.attach(agent)
    once, _ = searching_agent(None)
    CompressionManager().attach(once)
    assert shape(agent) == shape(once) and hooks_of(agent) == {id(new)}


def test_reattaching_a_team_replaces_the_old_manager_on_the_leader_and_every_member(tmp_path: Path) -> None:
    db = SqliteDb(db_file=str(tmp_path / "t.db"))
    searcher = Searcher()
    member = Agent(name="writer", model=ScriptedModel(script=lambda m, i: Reply(text="written")))
    team = Team(
        name="desk", model=ScriptedModel(script=searcher.script), members=[member], tools=[searcher.read], db=db
    )
    old = CompressionManager(compress_at_tokens=2_500, output_guidance=True)
    old.attach(team)
    new = CompressionManager(compress_at_tokens=2_500)
    with pytest.warns(UserWarning):
        new.attach(team)
    for node, path in walk(team, True):
        assert hooks_of(node) == {id(new)}, path
        assert node.compression_manager is new, path
        assert node.instructions is None, path
    out = team.run("Why did the build fail?", session_id="t")
    assert out.status == RunStatus.completed, out.content
    assert old.events == [] and old.stats["folds"] == 0
    assert new.events and new.stats["overflow_retries"] == 1
    assert SECRET in str(out.content)


def test_two_agents_on_one_model_are_each_served_by_their_own_manager(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    deploy, first = Deploy(9), CompressionManager(compress_at_tokens=2_000)
    agent, model = deploy.build(SqliteDb(db_file=str(path)), first)
    other = Agent(name="other", model=model, db=SqliteDb(db_file=str(path)))
    second = CompressionManager(compress_at_tokens=2_000)
    second.attach(other)  # attached after: the shared model must still serve the first agent's manager
    paused = run_and_pause(agent, "sync")
    assert paused.status == RunStatus.paused
    tool_texts = [content for role, content, _ in stored(path) if role == "tool"]
    assert tool_texts == deploy.read, "the paused run was stored folded"
    assert first.events and not second.events
    assert paused.session_id == SESSION
