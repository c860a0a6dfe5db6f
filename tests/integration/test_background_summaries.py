"""Background summaries through real agno Agents: the fold uses the summary written while the run went on, so the
agent's next model call does not wait for the summarizer; a span that changed too much is summarized anew.

The agent's model and the ``LLMSummarizer``'s model are scripted agno models that take time per call (the agent's
0.25 s, the summarizer's ``DELAY``); the summarizer answers with a fingerprint of the span it was given, so a fold's
summary can be checked against the messages it folded.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agno.agent import Agent
from agno.db.base import SessionType
from agno.db.sqlite import SqliteDb
from agno.models.message import Message
from agno.models.response import ModelResponse

from agno_compression import CompressionManager, FoldEvent, LLMSummarizer
from agno_compression._plan import is_summary
from agno_compression._summarizers import render_transcript
from agno_compression.testing import Reply, ScriptedModel, ScriptInfo, ToolCall, run_in_mode
from tests.checks import check_request

BUDGET = 3_000
DELAY = 1.0
"""Seconds each summarizer call takes."""
AGENT_DELAY = 0.25
"""Seconds each of the agent's model calls takes: several of them pass between a job's start and its fold."""
STEPS = 34
TASK = "Read every chunk of the build log."
CONVERSATION = "Conversation to fold:\n"

pytestmark = pytest.mark.slow  # seconds of a slow summarizer per fold: run once in CI, not per Python


@dataclass
class SlowModel(ScriptedModel):
    """A scripted agno model that takes ``delay`` seconds per call (awaited on the async paths) and notes when each
    call started and returned."""

    delay: float = 0.0
    calls: list[tuple[float, float]] = field(default_factory=list)
    answered: list[int] = field(default_factory=list)

    def _timed(self, start: float) -> None:
        self.calls.append((start, time.monotonic()))

    def invoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        start = time.monotonic()
        time.sleep(self.delay)
        try:
            return super().invoke(*args, **kwargs)
        finally:
            self._timed(start)

    async def ainvoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        start = time.monotonic()
        await asyncio.sleep(self.delay)
        try:
            return await super().ainvoke(*args, **kwargs)
        finally:
            self._timed(start)

    def invoke_stream(self, *args: Any, **kwargs: Any) -> Iterator[ModelResponse]:
        start = time.monotonic()
        time.sleep(self.delay)
        yield from super().invoke_stream(*args, **kwargs)
        self._timed(start)

    async def ainvoke_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ModelResponse]:
        start = time.monotonic()
        await asyncio.sleep(self.delay)
        async for chunk in super().ainvoke_stream(*args, **kwargs):
            yield chunk
        self._timed(start)


def fingerprint(transcript: str) -> str:
    return hashlib.sha1(transcript.encode()).hexdigest()[:16]


def summarizer_model() -> SlowModel:
    """Answers with a deterministic function of the span it is asked to fold; notes each answer's tokens."""

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        prompt = messages[-1].get_content_string()
        text = f"## Progress\nspan {fingerprint(prompt.split(CONVERSATION, 1)[1])}"
        model.answered.append(model.counter.count_text(text))
        return Reply(text=text)

    model = SlowModel(script=script, id="summarizer", delay=DELAY)
    return model


def chunk(index: int, lines: int = 8) -> str:
    return "\n".join(f"[{index:03d}:{n:04d}] compiling src/module_{index}/file_{n}.c ok" for n in range(lines))


@dataclass
class Setup:
    agent: Agent
    model: SlowModel
    summarizer: SlowModel
    manager: CompressionManager
    produced: list[str]
    folds: list[tuple[int, FoldEvent, list[Message]]]

    def waits(self) -> list[float]:
        """Per fold, the seconds between the agent's model call before it returning and the next one starting."""
        calls = self.model.calls
        return [calls[n][0] - calls[n - 1][1] for n, _, _ in self.folds if 0 < n < len(calls)]


def make(tmp_path: Path, sizes: Callable[[int], int] = lambda i: 8, **options: Any) -> Setup:
    produced: list[str] = []
    folds: list[tuple[int, FoldEvent, list[Message]]] = []

    def read_chunk(index: int) -> str:
        """Read one chunk of a build log."""
        text = chunk(index, sizes(index))
        produced.append(text)
        return text

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index >= STEPS:
            return Reply(text="All chunks read.")
        return Reply(
            text=f"Reading chunk {info.call_index}.", tool_calls=[ToolCall("read_chunk", {"index": info.call_index})]
        )

    model, summarizer = SlowModel(script=script, delay=AGENT_DELAY), summarizer_model()
    manager = CompressionManager(
        compress_at_tokens=BUDGET,
        summarizer=LLMSummarizer(model=summarizer),
        on_fold=lambda event, folded: folds.append((len(model.calls), event, list(folded))),
        **{"background_summary_at": 0.7, **options},
    )
    agent = Agent(
        model=model,
        tools=[read_chunk],
        db=SqliteDb(db_file=str(tmp_path / "agent.db")),
        session_id="s1",
        system_message="You read build logs.",
        telemetry=False,
    )
    return Setup(manager.attach(agent), model, summarizer, manager, produced, folds)


def settled() -> None:
    """Wait for the background summaries still running (a discarded one finishes alone)."""
    for thread in threading.enumerate():
        if thread.name == "agno-compression-background":
            thread.join(timeout=10)


def check_summaries_cover_their_spans(setup: Setup) -> None:
    """Each fold's summary was written for exactly the messages it folded (a stale or mixed one would not be)."""
    for _, event, folded in setup.folds:
        assert event.strategy == "llm"
        expected = fingerprint(render_transcript(folded))
        assert f"span {expected}" in (event.summary or ""), "the summary covers another span"


def check_stored_and_accounted(setup: Setup, output: Any) -> None:
    # every request under the budget and well formed; the stored run keeps every message, folded ones restored
    for request in setup.model.requests:
        check_request(request, BUDGET, user_text=TASK, system=None)
    session = setup.agent.db.get_session(session_id="s1", session_type=SessionType.AGENT)  # type: ignore[union-attr]
    assert session is not None
    stored = [m for run in session.runs or [] for m in run.messages or []]
    assert [m.content for m in stored if m.role == "tool"] == setup.produced
    assert not any(is_summary(m) for m in stored)
    assert len([m for m in stored if m.role == "assistant"]) == len(setup.model.requests)
    # the summarizer's usage is in the run's metrics once per call (or, finished after the run, counted late)
    settled()
    made = sum(r.prompt_tokens for r in setup.summarizer.requests) + sum(setup.summarizer.answered)
    entries = (output.metrics.details or {}).get("compression_model", [])
    accounted = sum(e.input_tokens + e.output_tokens for e in entries if e.id == "summarizer")
    assert accounted + setup.manager.stats["background_late_tokens"] == made
    assert setup.manager.stats["summarizer_calls"] == len(setup.folds)
    calls = setup.manager.stats["background_summaries"] + setup.manager.stats["background_misses"]
    synchronous = len(setup.folds) - setup.manager.stats["background_summaries"]
    assert len(setup.summarizer.requests) == calls + synchronous


@pytest.mark.parametrize("mode", ["sync", "async", "stream"])
def test_the_fold_uses_the_summary_written_in_the_background(tmp_path: Path, mode: str) -> None:
    setup = make(tmp_path)
    output = run_in_mode(setup.agent, TASK, mode)
    assert output.content.endswith("All chunks read.")
    stats = setup.manager.stats
    assert setup.folds and stats["folds"] == len(setup.folds)
    assert stats["background_summaries"] == len(setup.folds), stats
    # the agent's model call after a fold waited a few milliseconds, not the summarizer's second
    waits = setup.waits()
    assert waits and max(waits) < DELAY / 4, waits
    check_summaries_cover_their_spans(setup)
    check_stored_and_accounted(setup, output)


def test_off_the_fold_waits_for_the_summarizer(tmp_path: Path) -> None:
    setup = make(tmp_path, background_summary_at=None)
    output = run_in_mode(setup.agent, TASK, "sync")
    stats = setup.manager.stats
    assert setup.folds and stats["background_summaries"] == stats["background_misses"] == 0
    assert min(setup.waits()) >= DELAY * 0.9
    assert len(setup.summarizer.requests) == len(setup.folds)
    check_summaries_cover_their_spans(setup)
    check_stored_and_accounted(setup, output)


def test_a_span_changed_too_much_is_summarized_anew(tmp_path: Path) -> None:
    """A large output after the job started: folding the job's span alone would leave it (and the steps since) over
    the budget, so the fold discards the job and summarizes its whole span synchronously."""
    started: list[int] = []
    setup = make(tmp_path, sizes=lambda i: 120 if started and i == started[0] + 1 else 8)
    original = setup.manager._background._start

    def start(folder: Any, state: Any) -> None:
        original(folder, state)
        run = setup.manager._background._run(state)
        if not started and run is not None and run.job is not None:
            started.append(len(setup.model.calls))  # the chunk after the next one is large

    setup.manager._background._start = start  # type: ignore[method-assign]
    output = run_in_mode(setup.agent, TASK, "sync")
    assert started, "no background summary started"
    stats = setup.manager.stats
    assert stats["background_misses"] >= 1, stats
    first = setup.folds[0]
    assert first[1].strategy == "llm"
    assert setup.waits()[0] >= DELAY * 0.9, "the missed fold waited for its synchronous summary"
    check_summaries_cover_their_spans(setup)
    check_stored_and_accounted(setup, output)
