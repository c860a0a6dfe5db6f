"""The summarizer's timeout and fallback on every path (model summarizer, overflow, a loop that is gone) and the
post-hook's restore of Team and concurrent runs, through real agno Agents and Teams and scripted models."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agno.agent import Agent
from agno.db.base import SessionType
from agno.db.sqlite import SqliteDb
from agno.models.message import Message
from agno.models.response import ModelResponse
from agno.team import Team

from agno_compression import CompressionManager, LLMSummarizer, Summary
from agno_compression._plan import is_summary
from agno_compression.eval import run_in_mode
from agno_compression.testing import Reply, ScriptedModel, ScriptInfo, ToolCall
from tests.fakes import LimitedModel

BUDGET = 3_000
TASK = "Read every chunk of the build log."
MODES = ["sync", "async", "stream", "async-stream"]


def chunk(index: int) -> str:
    lines = (f"[{index:03d}:{line:04d}] compiling src/module_{index}/file_{line}.c ok" for line in range(60))
    return "\n".join(lines) + f"\nerror: ValueError in step {index}"


def read_chunk(index: int) -> str:
    """Read one long chunk of a build log."""
    return chunk(index)


def reader(steps: int = 12) -> Any:
    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index >= steps:
            return Reply(text="All chunks read.")
        return Reply(
            text=f"Reading {info.call_index}.", tool_calls=[ToolCall("read_chunk", {"index": info.call_index})]
        )

    return script


def make_agent(tmp_path: Path, manager: CompressionManager, model: ScriptedModel, session: str = "s1") -> Agent:
    agent = Agent(
        model=model,
        tools=[read_chunk],
        db=SqliteDb(db_file=str(tmp_path / "agent.db")),
        session_id=session,
        system_message="You read build logs.",
        telemetry=False,
    )
    return manager.attach(agent)


def stored(agent: Agent | Team, session: str, kind: SessionType = SessionType.AGENT) -> list[Message]:
    """The stored messages of the session's top-level runs (a team session also holds its members' runs)."""
    found = agent.db.get_session(session_id=session, session_type=kind)  # type: ignore[union-attr]
    assert found is not None
    return [m for run in found.runs or [] if run.parent_run_id is None for m in run.messages or []]


def fallback_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("agno_compression")]


@dataclass
class SlowModel(ScriptedModel):
    """A model that answers after ``delay`` seconds, blocking (sync) or awaiting (async) as a real client does."""

    delay: float = 3.0

    def invoke(self, messages: list[Message], *args: Any, **kwargs: Any) -> ModelResponse:
        time.sleep(self.delay)
        return super().invoke(messages, *args, **kwargs)

    async def ainvoke(self, messages: list[Message], *args: Any, **kwargs: Any) -> ModelResponse:
        await asyncio.sleep(self.delay)
        return await super().ainvoke(messages, *args, **kwargs)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_model_summarizer_past_the_timeout_falls_back(
    tmp_path: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    slow = SlowModel(script=lambda m, i: "## Progress\nread the chunks")
    manager = CompressionManager(
        compress_at_tokens=BUDGET, summarizer=LLMSummarizer(model=slow), summarizer_timeout=0.3
    )
    model = ScriptedModel(script=reader())
    agent = make_agent(tmp_path, manager, model)
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        output = run_in_mode(agent, TASK, mode)
    assert output.content.endswith("All chunks read.")
    folds = [e for e in manager.events if e.summary]
    assert folds and all(e.strategy == "llm->extractive" and e.summarizer_model is None for e in folds)
    warning = "agno-compression: summarizer 'llm' failed (no summary after 0.3s); using the extractive summary"
    assert fallback_warnings(caplog) == [warning] * len(folds)
    assert manager.stats["summarizer_failures"] == len(folds)
    assert "compression_model" not in (output.metrics.details or {})  # a summary never used is never billed


class Gated:
    """A custom summarizer that answers only once the test opens the gate (after the run, its loop closed)."""

    name = "gated"

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.threads: list[threading.Thread] = []

    def summarize(self, request: Any) -> Summary:
        self.threads.append(threading.current_thread())
        self.gate.wait(10)
        return Summary(text="too late", strategy=self.name)

    async def asummarize(self, request: Any) -> Summary:
        return self.summarize(request)


def test_a_summary_that_arrives_after_the_run_ended_is_dropped_quietly(caplog: pytest.LogCaptureFixture) -> None:
    gated = Gated()
    manager = CompressionManager(compress_at_tokens=BUDGET, summarizer=gated, summarizer_timeout=0.2, persist=False)
    agent = manager.attach(Agent(model=ScriptedModel(script=reader()), tools=[read_chunk], telemetry=False))
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        output = run_in_mode(agent, TASK, "async")  # asyncio.run: the run's event loop is closed when it returns
    assert output.content.endswith("All chunks read.")
    assert gated.threads and manager.stats["summarizer_failures"] == len(gated.threads)
    # the abandoned workers now finish into a closed loop: nothing may escape them
    escaped: list[Any] = []
    before = threading.excepthook
    threading.excepthook = escaped.append
    try:
        gated.gate.set()
        for worker in gated.threads:
            worker.join(5)
    finally:
        threading.excepthook = before
    assert not any(w.is_alive() for w in gated.threads)
    assert not escaped, [e.exc_value for e in escaped]


class Raising:
    name = "raising"

    def summarize(self, request: Any) -> Summary:
        raise RuntimeError("provider exploded")

    async def asummarize(self, request: Any) -> Summary:
        return self.summarize(request)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("summarizer", ["mask", "raising"])
def test_a_prompt_too_long_is_folded_with_a_summary(
    tmp_path: Path, mode: str, summarizer: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The provider's limit is under the budget, so only its error makes the manager fold: with a summary even
    when the strategy only masks, and with the extractive one when the summarizer fails."""
    chosen = "mask" if summarizer == "mask" else Raising()
    manager = CompressionManager(compress_at_tokens=50_000, summarizer=chosen, summarizer_timeout=5)
    model = LimitedModel(script=reader())
    agent = make_agent(tmp_path, manager, model)
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        output = run_in_mode(agent, TASK, mode)
    assert output.content.endswith("All chunks read.")
    # one overflow: the rest of the run folds at the budget its retry used, under the provider's limit
    assert model.rejected == 1 and manager.stats["overflow_retries"] == 1
    folds = [e for e in manager.events if e.summary]
    assert folds and folds[0].strategy.startswith("overflow:")
    assert all(not e.strategy.startswith("overflow:") for e in folds[1:])
    if summarizer == "mask":
        assert folds[0].strategy == "overflow:extractive"
        assert all(e.strategy == "mask->extractive" for e in folds[1:])
        assert manager.stats["summarizer_failures"] == 0
    else:
        assert all(e.strategy.endswith("raising->extractive") for e in folds)
        failed = "agno-compression: summarizer 'raising' failed (provider exploded); using the extractive summary"
        assert [w for w in fallback_warnings(caplog) if "summarizer" in w] == [failed] * len(folds)
        assert manager.stats["summarizer_failures"] == len(folds)
    outputs = [m.content for m in stored(agent, "s1") if m.role == "tool"]
    assert outputs == [chunk(i) for i in range(12)]  # folded to answer the provider, nothing lost


@pytest.mark.parametrize("mode", MODES)
def test_a_team_run_stores_every_leader_message_in_every_mode(tmp_path: Path, mode: str) -> None:
    member = Agent(name="Tester", id="tester", model=ScriptedModel(script=lambda m, i: "ok " * 400), telemetry=False)
    rounds = 10

    def leader(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index < rounds:
            args = {"member_id": "tester", "task": f"run suite {info.call_index}"}
            return Reply(text=f"Round {info.call_index}.", tool_calls=[ToolCall("delegate_task_to_member", args)])
        return Reply(text="Everything delegated.")

    db = SqliteDb(db_file=str(tmp_path / "team.db"))
    team = Team(name="Lead", model=ScriptedModel(script=leader), members=[member], db=db, session_id="t1")
    team.telemetry = False
    manager = CompressionManager(compress_at_tokens=BUDGET)
    manager.attach(team)
    output = run_in_mode(team, "Run all suites.", mode)
    assert output.content.endswith("Everything delegated.")
    assert manager.stats["folds"] >= 1
    messages = stored(team, "t1", SessionType.TEAM)
    assert not any(is_summary(m) for m in messages)
    said = [m.content for m in messages if m.role == "assistant"]
    assert said == [f"Round {i}." for i in range(rounds)] + ["Everything delegated."]
    delegated = [m for m in messages if m.role == "tool" and m.tool_name == "delegate_task_to_member"]
    assert len(delegated) == rounds


def test_concurrent_runs_on_one_manager_each_store_their_own_messages(tmp_path: Path) -> None:
    manager = CompressionManager(compress_at_tokens=BUDGET)
    agents = [make_agent(tmp_path, manager, ScriptedModel(script=reader()), session=f"s{k}") for k in range(2)]

    async def both() -> list[Any]:
        return list(await asyncio.gather(*(a.arun(f"{TASK} ({k})") for k, a in enumerate(agents))))

    outputs = asyncio.run(both())
    assert all(o.content.endswith("All chunks read.") for o in outputs)
    assert manager.stats["folds"] >= 2
    for k, agent in enumerate(agents):
        messages = stored(agent, f"s{k}")
        assert [m.content for m in messages if m.role == "user"] == [f"{TASK} ({k})"]
        assert [m.content for m in messages if m.role == "tool"] == [chunk(i) for i in range(12)]
        assert not any(is_summary(m) for m in messages)
