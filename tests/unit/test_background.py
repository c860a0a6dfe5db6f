"""Background summaries, the parts that need no agent: which strategies start them, span matching, jobs keyed by run,
usage of discarded jobs accounted once (into the run, or late), and the option's checks."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from agno.metrics import MessageMetrics, RunMetrics
from agno.models.message import Message
from agno.models.response import ModelResponse

from agno_compression import CompressionManager, ConfigError, ExtractiveSummarizer, LLMSummarizer, Pipeline, _background
from agno_compression._background import CHANGED, PREFIX, SAME, Background, Job, Span, prepares
from agno_compression._plan import PROGRESS, make_summary_message, plan_fold
from agno_compression._runs import RunState
from agno_compression._stats import Stats
from agno_compression._summarizers import Summary, SummaryRequest
from agno_compression.testing import ScriptedModel


def call(i: int) -> list[Message]:
    cid = f"c{i}"
    return [
        Message(
            role="assistant",
            content=f"step {i}",
            tool_calls=[{"id": cid, "type": "function", "function": {"name": "read", "arguments": "{}"}}],
        ),
        Message(role="tool", tool_call_id=cid, content=f"output {i} " + "x" * 400),
    ]


def loop(steps: int, *, summary: str | None = None) -> list[Message]:
    messages = [Message(role="system", content="sys"), Message(role="user", content="task")]
    if summary is not None:
        messages.append(make_summary_message(summary, PROGRESS))
    for i in range(steps):
        messages += call(i)
    return messages


LARGE = " ".join(f"word{i}" for i in range(2_000))
"""An output larger than the tests' budget."""


# --- which strategies ----------------------------------------------------------------------------------------------


def test_only_a_model_summary_without_masking_starts_in_the_background() -> None:
    llm = LLMSummarizer(model=ScriptedModel(script=lambda m, i: "x"))
    assert prepares(Pipeline(summarizer=llm, mask=False))
    assert not prepares(Pipeline(summarizer=llm, mask=True))  # masking usually answers first
    assert not prepares(Pipeline(summarizer=ExtractiveSummarizer(), mask=False))  # instant
    assert not prepares(Pipeline(summarizer=None, mask=True))
    custom = type("Custom", (), {"name": "custom", "summarize": lambda s, r: None, "asummarize": None})()
    assert not prepares(Pipeline(summarizer=custom, mask=False))  # user code: asked at the fold
    assert prepares(CompressionManager(summarizer="llm").strategy)
    assert not prepares(CompressionManager().strategy)


@pytest.mark.parametrize("value", ["0.7", True, 0.0, 1.5, float("nan"), float("inf")])
def test_the_option_is_checked(value: Any) -> None:
    with pytest.raises(ConfigError, match="background_summary_at"):
        CompressionManager(background_summary_at=value)


def test_the_option_takes_none_and_a_share() -> None:
    assert CompressionManager(background_summary_at=None)._background.share is None
    assert CompressionManager(background_summary_at=1)._background.share == 1
    assert CompressionManager().background_summary_at is None, "opt-in: it costs summarizer calls and prompt tokens"


# --- spans -------------------------------------------------------------------------------------------------------


def test_a_span_is_the_same_a_prefix_or_changed() -> None:
    messages = loop(6)
    early = Span.of(plan_fold(messages[:8]))  # system, task, three steps: two are folded
    now = Span.of(plan_fold(messages))
    assert early.against(early) == SAME
    assert early.against(now) == PREFIX
    assert now.against(early) == CHANGED  # the fold would fold less than the job
    assert Span((), (None, None)).against(now) == CHANGED  # nothing folded
    other = Span.of(plan_fold(loop(6)))  # other messages with the same text: identity counts
    assert early.against(other) == CHANGED


def test_a_span_absorbing_another_summary_has_changed() -> None:
    messages = loop(4, summary="## Progress\nbefore")
    span = Span.of(plan_fold(messages))
    assert span.previous == (None, "## Progress\nbefore")
    messages[2] = make_summary_message("## Progress\nafter a fold", PROGRESS)
    assert span.against(Span.of(plan_fold(messages))) == CHANGED


# --- jobs --------------------------------------------------------------------------------------------------------


class Answering:
    """A summarizer whose model call reports usage; ``gate`` holds it until set."""

    name = "llm"

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.model = ScriptedModel(script=lambda m, i: "x", id="summarizer")

    def summarize(self, request: SummaryRequest) -> Summary:
        self.gate.wait(5)
        response = ModelResponse(content="s", response_usage=MessageMetrics(input_tokens=100, output_tokens=7))
        return Summary(text="## Progress\nsummary", strategy=self.name, response=response, model=self.model)

    async def asummarize(self, request: SummaryRequest) -> Summary:
        return self.summarize(request)


def job(summarizer: Answering, messages: list[Message] | None = None) -> Job:
    plan = plan_fold(messages or loop(4))
    request = SummaryRequest(messages=plan.folded, previous=None, max_tokens=200, count_tokens=len, kind=PROGRESS)
    return Job(Span.of(plan), plan.folded, summarizer, [(PROGRESS, request)], None, 5.0, summarizer.name)


def compression_tokens(metrics: RunMetrics) -> int:
    return sum(e.input_tokens + e.output_tokens for e in (metrics.details or {}).get("compression_model", []))


def test_a_job_answers_in_its_summarizers_place() -> None:
    summarizer = Answering()
    work = job(summarizer)
    work.start()
    assert work.summaries() is None and work.name == "llm"
    summarizer.gate.set()
    summary = work.summarize(work.requests[0][1])  # waits for it
    assert summary.text == "## Progress\nsummary"
    assert work.summaries() == {PROGRESS: summary}
    threads = [t for t in threading.enumerate() if t.name == "agno-compression-background"]
    assert all(t.daemon for t in threads)


def test_a_discarded_job_is_accounted_into_its_run_once() -> None:
    summarizer, stats, metrics = Answering(), Stats(), RunMetrics()
    work = job(summarizer)
    work.start()
    work.discard(metrics, stats)
    assert not work.settle(stats)  # still running: nothing yet
    summarizer.gate.set()
    work.future.result(5)
    assert work.settle(stats) and work.settle(stats)
    assert compression_tokens(metrics) == 107 and stats["background_late_tokens"] == 0


def test_a_job_finishing_after_its_run_ended_is_counted_late() -> None:
    summarizer, stats, metrics = Answering(), Stats(), RunMetrics()
    work = job(summarizer)
    work.start()
    work.discard(metrics, stats)
    with work.lock:
        work.ended = True
    summarizer.gate.set()
    work.future.result(5)
    for _ in range(100):  # the done callback runs on the job's thread
        if stats["background_late_tokens"]:
            break
        threading.Event().wait(0.01)
    assert stats["background_late_tokens"] == 107 and compression_tokens(metrics) == 0
    assert work.settle(stats)  # settled once: nothing more


def test_a_failed_job_has_no_summaries() -> None:
    class Failing(Answering):
        def summarize(self, request: SummaryRequest) -> Summary:
            raise RuntimeError("provider exploded")

    work = job(Failing())
    work.start()
    with pytest.raises(RuntimeError):
        work.future.result(5)
    assert work.summaries() is None


# --- jobs keyed by run -------------------------------------------------------------------------------------------


def background_for(manager: CompressionManager) -> tuple[Background, Any]:
    return manager._background, manager._folder


def state_of(messages: list[Message], prompt: int) -> RunState:
    state = RunState(live=messages)
    state.current, state.prompt_tokens = messages[1], prompt
    return state


def test_jobs_are_kept_per_run_and_forgotten_at_its_end(monkeypatch: pytest.MonkeyPatch) -> None:
    summarizer = Answering()
    manager = CompressionManager(
        compress_at_tokens=1_000, summarizer=summarizer, search_tool=False, background_summary_at=0.7
    )
    monkeypatch.setattr(_background, "prepares", lambda strategy: True)  # as for an LLMSummarizer
    background, folder = background_for(manager)
    one, two = state_of(loop(4), 800), state_of(loop(5), 800)
    low = state_of(loop(3), 600)  # under 0.7 of the budget: nothing starts
    for state in (one, two, low):
        assert background.after_check(folder, state, False) is False
    assert background.after_check(folder, state_of(loop(4), 900), True) is True  # a call that folds: nothing
    first, second = background._run(one), background._run(two)
    assert first is not None and second is not None and first.job is not None and second.job is not None
    assert first.job is not second.job and background._run(low) is None
    job_one = first.job
    background.after_check(folder, one, False)  # one job at a time per run
    assert first.job is job_one
    summarizer.gate.set()
    job_one.future.result(5)
    metrics = RunMetrics()
    background.forget(one, metrics)  # never used: a miss, its usage in the run's metrics
    assert background._run(one) is None and background._run(two) is not None
    assert manager.stats["background_misses"] == 1 and compression_tokens(metrics) == 107
    background.forget(one, metrics)  # once only
    assert manager.stats["background_misses"] == 1


def test_take_uses_a_prefix_that_is_enough_and_misses_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    summarizer = Answering()
    summarizer.gate.set()
    manager = CompressionManager(
        compress_at_tokens=2_000, summarizer=summarizer, search_tool=False, background_summary_at=0.7
    )
    monkeypatch.setattr(_background, "prepares", lambda strategy: True)
    background, folder = background_for(manager)
    messages = loop(5)
    state = state_of(messages, 1_600)
    background.after_check(folder, state, False)
    run = background._run(state)
    assert run is not None and run.job is not None
    run.job.future.result(5)
    messages += call(5)  # one more step: the job's span is a prefix of the fold's
    prepared = background.take(folder, state, folder.plan(state), RunMetrics())
    assert prepared is not None and manager.stats["background_summaries"] == 1
    assert [m.id for m in prepared.plan.folded] == [m.id for m in messages[2:10]]  # the job's span, no more
    assert prepared.plan.kept == tuple(messages[10:])  # the steps since stay verbatim
    assert background.take(folder, state, folder.plan(state), RunMetrics()) is None  # used once

    background.after_check(folder, state, False)
    assert run.job is not None
    run.job.future.result(5)
    messages += [*call(6)[:1], Message(role="tool", tool_call_id="c6", content=LARGE)]
    assert run.job.span.against(Span.of(folder.plan(state))) == PREFIX
    metrics = RunMetrics()
    assert background.take(folder, state, folder.plan(state), metrics) is None  # the prefix is not enough
    assert manager.stats["background_misses"] == 1 and compression_tokens(metrics) == 107
