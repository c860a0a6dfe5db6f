"""Streamed usage normalisation: the arithmetic, the per-provider choice, the per-instance patch."""

from __future__ import annotations

import asyncio
import copy
import itertools
import pickle
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.exceptions import ModelProviderError
from agno.metrics import MessageMetrics
from agno.models.base import Model
from agno.models.google import Gemini
from agno.models.message import Message
from agno.models.openai import OpenAIChat, OpenAILike, OpenAIResponses
from agno.models.response import ModelResponse
from hypothesis import given
from hypothesis import strategies as st

from agno_compression import CompressionManager, ConfigError, fix_stream_usage
from agno_compression._metrics import (
    USAGE_STYLES,
    StreamUsage,
    is_fixed,
    is_running_total,
    is_zero,
    stream_usage_style,
    usage_increment,
)
from agno_compression.testing import ScriptedModel


def usage(prompt: int, output: int, **extra: Any) -> MessageMetrics:
    metrics = MessageMetrics(input_tokens=prompt, output_tokens=output, total_tokens=prompt + output)
    for key, value in extra.items():
        setattr(metrics, key, value)
    return metrics


def triple(metrics: MessageMetrics) -> tuple[int, int, int]:
    return metrics.input_tokens, metrics.output_tokens, metrics.total_tokens


def feed(style: str, reports: list[MessageMetrics]) -> MessageMetrics:
    """What agno would record for a stream of ``reports``: the sum of the amounts."""
    counter = StreamUsage(style=style)
    total = MessageMetrics()
    for report in reports:
        total = total + counter.add(report)
    assert triple(total) == triple(counter.counted)
    assert counter.reports == len(reports)
    return total


# --- arithmetic ----------------------------------------------------------------------------------

running_totals = st.tuples(
    st.integers(min_value=1, max_value=1_000_000),
    st.lists(st.integers(min_value=0, max_value=5_000), min_size=1, max_size=30),
).map(lambda t: [usage(t[0], out) for out in itertools.accumulate(t[1])])


@given(running_totals, st.data())
def test_cumulative_reports_count_as_the_last_one_also_when_cut(reports: list[MessageMetrics], data: Any) -> None:
    assert triple(feed("cumulative", reports)) == triple(reports[-1])
    cut = data.draw(st.integers(min_value=1, max_value=len(reports)))
    assert triple(feed("cumulative", reports[:cut])) == triple(reports[cut - 1])


@given(running_totals)
def test_detect_recognises_running_totals(reports: list[MessageMetrics]) -> None:
    assert triple(feed("detect", reports)) == triple(reports[-1])


@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)), min_size=1, max_size=20))
def test_incremental_reports_are_summed(pairs: list[tuple[int, int]]) -> None:
    reports = [usage(p, o) for p, o in pairs]
    want = (sum(p for p, _ in pairs), sum(o for _, o in pairs))
    assert triple(feed("incremental", reports))[:2] == want


@given(st.integers(1, 100_000), st.lists(st.integers(1, 5_000), min_size=1, max_size=20))
def test_detect_adds_increments_that_bill_the_prompt_once(prompt: int, outputs: list[int]) -> None:
    reports = [usage(prompt, outputs[0])] + [usage(0, o) for o in outputs[1:]]
    assert triple(feed("detect", reports))[:2] == (prompt, sum(outputs))


def test_detect_on_the_usual_shapes() -> None:
    assert triple(feed("detect", [usage(40, 9)])) == (40, 9, 49)  # once, at the end
    assert triple(feed("detect", [usage(40, 0), usage(40, 9)])) == (40, 9, 49)  # prompt first, then the total
    assert triple(feed("detect", [usage(40, 3), usage(0, 6)])) == (40, 9, 49)  # increments
    assert triple(feed("detect", [usage(40, 3), usage(0, 6), usage(40, 9)])) == (40, 9, 49)  # increments + total


def test_final_takes_the_last_report() -> None:
    assert triple(feed("final", [usage(40, 9)])) == (40, 9, 49)
    assert triple(feed("final", [usage(40, 1), usage(40, 9)])) == (40, 9, 49)
    assert triple(feed("final", [usage(40, 12), usage(41, 9)])) == (41, 9, 50)  # the report wins, even lower


def test_cost_and_provider_metrics_follow_the_style() -> None:
    reports = [usage(10, 1, cost=0.5, provider_metrics={"ms": 3, "tier": "a"}), usage(10, 4, cost=0.75)]
    reports[1].provider_metrics = {"ms": 8, "tier": "b"}
    total = feed("cumulative", reports)
    assert total.cost == pytest.approx(0.75)
    assert total.provider_metrics == {"ms": 8, "tier": "b"}
    assert feed("incremental", reports).cost == pytest.approx(1.25)


def test_running_total_needs_the_same_prompt_and_nothing_lower() -> None:
    assert is_running_total(usage(5, 3), usage(5, 1))
    assert not is_running_total(usage(5, 3), MessageMetrics())
    assert not is_running_total(usage(6, 3), usage(5, 1))
    assert not is_running_total(usage(5, 0), usage(5, 1))
    assert is_running_total(usage(1, 2), usage(1, 1)), "a one-token prompt repeated is a running total too"


def test_nothing_is_a_running_total_before_a_prompt_was_counted() -> None:
    assert triple(feed("detect", [usage(0, 5), usage(0, 7)])) == (0, 12, 12)
    assert triple(feed("detect", [usage(0, 5), usage(1, 7)])) == (1, 12, 13)
    # the same prompt with fewer output tokens is below what was counted: new usage, not a total
    assert triple(feed("detect", [usage(10, 1), usage(10, 0)])) == (20, 1, 21)
    cached_then_not = [usage(10, 5, cache_read_tokens=1), usage(10, 6)]  # one counter went down: not a total
    assert triple(feed("detect", cached_then_not)) == (20, 11, 31)


def test_an_amount_keeps_cost_and_provider_metrics() -> None:
    report = usage(10, 2, cost=0.5, provider_metrics={"ms": 3, "tier": "a"})
    amount = usage_increment(report, MessageMetrics(), "incremental")
    assert amount.cost == 0.5 and amount.provider_metrics == {"ms": 3, "tier": "a"}
    # a running total's first cost: nothing counted before, so the whole cost
    assert usage_increment(usage(10, 2, cost=0.5), usage(10, 1), "cumulative").cost == pytest.approx(0.5)


def test_is_zero_only_when_adding_changes_nothing() -> None:
    assert is_zero(MessageMetrics())
    assert is_zero(usage(0, 0, provider_metrics={"ms": 0}))
    assert not is_zero(usage(0, 1))
    assert not is_zero(usage(0, 0, cost=0.25))
    assert not is_zero(usage(0, 0, provider_metrics={"ms": 2}))
    assert not is_zero(usage(0, 0, provider_metrics={"tier": "b"}))


def test_styles_are_validated_with_the_offending_value() -> None:
    assert set(USAGE_STYLES) == {"cumulative", "incremental", "final", "detect"}
    with pytest.raises(ConfigError, match="one of cumulative, incremental, final, detect, got 'sum'"):
        StreamUsage(style="sum")
    with pytest.raises(ConfigError, match="'sum'"):
        StreamUsage(style="sum")
    with pytest.raises(ConfigError, match="None"):
        usage_increment(usage(1, 1), MessageMetrics(), None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'cumulativ'"):
        fix_stream_usage(ScriptedModel(), style="cumulativ")
    with pytest.raises(ConfigError, match="str"):
        fix_stream_usage("gemini-2.0-flash")


# --- the automatic choice ------------------------------------------------------------------------


def test_automatic_style_per_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert stream_usage_style(Gemini(id="gemini-2.0-flash", api_key="k")) == "cumulative"
    assert stream_usage_style(OpenAIChat(id="gpt-4o", api_key="k")) is None  # usage once, agno is right
    assert stream_usage_style(OpenAIChat(id="m", api_key="k", base_url="http://127.0.0.1:8000/v1")) == "detect"
    assert stream_usage_style(OpenAILike(id="m", base_url="http://127.0.0.1:8000/v1")) == "detect"
    assert stream_usage_style(OpenAIResponses(id="gpt-4o", api_key="k")) == "final"
    assert stream_usage_style(ScriptedModel()) == "detect"  # not in the table
    from agno.models.azure import AzureOpenAI
    from agno.models.perplexity import Perplexity

    assert stream_usage_style(Perplexity(api_key="k")) == "cumulative"
    assert stream_usage_style(AzureOpenAI(id="gpt-4o", api_key="k")) is None
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert stream_usage_style(OpenAIChat(id="gpt-4o", api_key="k")) == "detect"


def test_anthropic_is_left_alone() -> None:
    from agno.models.anthropic import Claude  # anthropic is in the test extra: a missing SDK fails, never skips

    model = Claude(api_key="k")
    assert stream_usage_style(model) is None
    assert fix_stream_usage(model) is model and not is_fixed(model)


# --- the per-instance patch ----------------------------------------------------------------------


@dataclass
class ReportingModel(Model):
    """Streams one chunk per report, each carrying that report (as agno providers hand usage over)."""

    id: str = "reporting"
    reports: list[tuple[int, int] | None] = field(default_factory=list)
    """One chunk per entry; ``None``: a chunk without usage."""
    fail_after: int | None = None
    """Raise a provider error (a cut stream) after this many chunks."""

    def _chunks(self) -> Iterator[ModelResponse]:
        for i, report in enumerate(self.reports):
            if i == self.fail_after:
                raise ModelProviderError("stream cut", model_name="reporting", model_id=self.id)
            yield ModelResponse(role="assistant", content=f"w{i} ", response_usage=usage(*report) if report else None)

    def invoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        last = self.reports[-1]
        return ModelResponse(role="assistant", content="ok", response_usage=usage(*last) if last else None)

    async def ainvoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self.invoke()

    def invoke_stream(self, *args: Any, **kwargs: Any) -> Iterator[ModelResponse]:
        yield from self._chunks()

    async def ainvoke_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ModelResponse]:
        for chunk in self._chunks():
            await asyncio.sleep(0)
            yield chunk

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]


def stream_total(model: Model, message: Message | None = None) -> MessageMetrics:
    message = message or Message(role="assistant")
    total = MessageMetrics()
    for response in model.invoke_stream(messages=[], assistant_message=message):
        if response.response_usage is not None:
            total = total + response.response_usage
    return total


def test_fix_returns_the_same_object_with_a_same_named_subclass() -> None:
    model = ReportingModel(reports=[(10, 1), (10, 2), (10, 5)])
    assert triple(stream_total(model)) == (30, 8, 38)  # what agno does alone: running totals summed
    assert fix_stream_usage(model) is model
    assert isinstance(model, ReportingModel) and type(model) is not ReportingModel
    assert type(model).__name__ == "ReportingModel" and type(model).__module__ == __name__
    assert triple(stream_total(model)) == (10, 5, 15)
    assert not is_fixed(ReportingModel())  # the class itself is untouched


def test_fixing_twice_does_not_wrap_twice_and_only_a_style_changes_the_style() -> None:
    model = fix_stream_usage(ReportingModel(reports=[(10, 1), (10, 3)]), style="incremental")
    fixed = type(model)
    fix_stream_usage(model)
    fix_stream_usage(model, style="incremental")
    assert type(model) is fixed and [k.__name__ for k in fixed.__mro__].count("ReportingModel") == 2
    assert stream_usage_style(model) == "incremental"
    assert triple(stream_total(model)) == (20, 4, 24)
    fix_stream_usage(model, style="cumulative")
    assert type(model) is fixed and stream_usage_style(model) == "cumulative"
    assert triple(stream_total(model)) == (10, 3, 13)
    other = fix_stream_usage(ReportingModel(reports=[(1, 1)]))
    assert type(other) is fixed  # one subclass per class


def test_a_provider_agno_counts_right_is_left_alone_unless_a_style_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = OpenAIChat(id="gpt-4o", api_key="k")
    assert fix_stream_usage(model) is model and not is_fixed(model)
    assert is_fixed(fix_stream_usage(model, style="final"))
    assert stream_usage_style(model) == "final"


def test_copies_keep_the_fix_and_act_on_themselves() -> None:
    model = fix_stream_usage(ReportingModel(reports=[(10, 1), (10, 4)]), style="cumulative")
    deep = copy.deepcopy(model)
    shallow = copy.copy(model)
    pickled = pickle.loads(pickle.dumps(model))
    for twin in (deep, shallow, pickled):
        assert is_fixed(twin) and twin is not model
        assert stream_usage_style(twin) == "cumulative"
        twin.reports = [(7, 2), (7, 3)]
        assert triple(stream_total(twin)) == (7, 3, 10)
    assert triple(stream_total(model)) == (10, 4, 14)
    gemini = fix_stream_usage(Gemini(id="gemini-2.0-flash", api_key="k"))
    assert is_fixed(copy.deepcopy(gemini))


def test_agent_deep_copy_keeps_the_fix() -> None:
    model = fix_stream_usage(Gemini(id="gemini-2.0-flash", api_key="k"))
    agent = Agent(model=model, telemetry=False)
    assert is_fixed(agent.deep_copy().model)


def test_a_cut_stream_leaves_its_last_totals_on_the_assistant_message() -> None:
    model = fix_stream_usage(ReportingModel(reports=[(10, 1), (10, 2), (10, 5)], fail_after=2))
    message = Message(role="assistant", metrics=MessageMetrics())
    with pytest.raises(ModelProviderError):
        stream_total(model, message)
    assert message.metrics is not None and triple(message.metrics) == (10, 2, 12)


def test_a_cut_stream_gives_metrics_to_an_assistant_message_without_any() -> None:
    model = fix_stream_usage(ReportingModel(reports=[(10, 1), (10, 2), (10, 5)], fail_after=2))
    message = Message(role="assistant")
    message.metrics = None  # type: ignore[assignment]
    with pytest.raises(ModelProviderError):
        stream_total(model, message)
    assert message.metrics is not None and triple(message.metrics) == (10, 2, 12)


def test_a_cut_stream_without_an_assistant_message_raises_only_the_provider_error() -> None:
    model = fix_stream_usage(ReportingModel(reports=[(10, 1), (10, 2)], fail_after=1))
    with pytest.raises(ModelProviderError):
        list(model.invoke_stream(messages=[], assistant_message=None))
    with pytest.raises(ModelProviderError):
        list(model.invoke_stream([], None))  # positional: the assistant message is the second argument


def test_a_cut_stream_adds_to_what_the_assistant_message_already_has() -> None:
    model = fix_stream_usage(ReportingModel(reports=[(10, 1), (10, 2), (10, 5)], fail_after=2), style="cumulative")
    message = Message(role="assistant", metrics=usage(3, 1))
    with pytest.raises(ModelProviderError):
        list(model.invoke_stream([], message))  # positional, as agno's own callers may pass it
    assert triple(message.metrics) == (13, 3, 16)
    with pytest.raises(ModelProviderError):  # one positional argument: no assistant message to update
        list(model.invoke_stream([]))


def test_chunks_without_new_usage_carry_none() -> None:
    """agno adds every chunk's usage: a chunk with nothing new (or no report at all) must carry None, not zeros."""
    model = fix_stream_usage(ReportingModel(reports=[(10, 5), None, (10, 5), (10, 7)]), style="cumulative")
    sent = [r.response_usage for r in model.invoke_stream(messages=[], assistant_message=Message(role="assistant"))]
    assert sent[1] is None and sent[2] is None
    assert [triple(u) for u in (sent[0], sent[3])] == [(10, 5, 15), (0, 2, 2)]


def test_a_stream_the_consumer_stops_reading_keeps_what_was_counted() -> None:
    model = fix_stream_usage(ReportingModel(reports=[(10, 1), (10, 2), (10, 5)]))
    message = Message(role="assistant", metrics=MessageMetrics())
    stream = model.invoke_stream(messages=[], assistant_message=message)
    next(stream)
    stream.close()
    assert message.metrics is not None and triple(message.metrics) == (10, 1, 11)


async def test_concurrent_streams_of_one_model_count_separately() -> None:
    model = fix_stream_usage(ReportingModel(reports=[(10, 1), (10, 2), (10, 6)]), style="cumulative")

    async def one() -> tuple[int, int, int]:
        total = MessageMetrics()
        async for response in model.ainvoke_stream(messages=[], assistant_message=Message(role="assistant")):
            if response.response_usage is not None:
                total = total + response.response_usage
        return triple(total)

    assert await asyncio.gather(one(), one(), one()) == [(10, 6, 16)] * 3


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_agent_run_records_the_totals_of_a_cut_stream(tmp_path: Path, mode: str) -> None:
    model = fix_stream_usage(ReportingModel(reports=[(30, 2), (30, 4), (30, 9)], fail_after=2))
    agent = Agent(model=model, db=SqliteDb(db_file=str(tmp_path / "a.db")), telemetry=False)
    if mode == "stream":
        events = list(agent.run("hi", stream=True))
    else:

        async def consume() -> list[Any]:
            return [e async for e in agent.arun("hi", stream=True)]

        events = asyncio.run(consume())
    assert events[-1].event == "RunError"
    output = agent.get_last_run_output()
    assert output is not None and output.metrics is not None
    assert triple(output.metrics) == (30, 4, 34)  # agno alone: 0


def test_responses_api_usage_on_an_incomplete_response_is_read() -> None:
    from openai.types.responses import ResponseUsage

    model = fix_stream_usage(OpenAIResponses(id="gpt-4o", api_key="k"))
    billed = ResponseUsage.model_construct(
        input_tokens=70, output_tokens=25, total_tokens=95, input_tokens_details=None, output_tokens_details=None
    )
    event = SimpleNamespace(type="response.incomplete", response=SimpleNamespace(usage=billed))
    response, _ = model._parse_provider_response_delta(
        stream_event=event, assistant_message=Message(role="assistant"), tool_use={}
    )
    assert response.response_usage is None  # what agno reads for it
    from agno_compression._metrics import _counted

    counted = _counted(response, StreamUsage(style="final"))
    assert triple(counted.response_usage) == (70, 25, 95)


def test_attach_fixes_known_providers_only_and_keeps_a_chosen_style(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    manager = CompressionManager(persist=False)
    gemini = Gemini(id="gemini-2.0-flash", api_key="k")
    manager.attach(Agent(model=gemini, telemetry=False))
    assert is_fixed(gemini)
    for untouched in (OpenAIChat(id="gpt-4o", api_key="k"), ScriptedModel()):
        manager.attach(Agent(model=untouched, telemetry=False))
        assert not is_fixed(untouched)
    chosen = fix_stream_usage(OpenAILike(id="m", base_url="http://127.0.0.1:1/v1"), style="cumulative")
    manager.attach(Agent(model=chosen, telemetry=False))
    assert stream_usage_style(chosen) == "cumulative"
    summarizer_model = Gemini(id="gemini-2.0-flash-lite", api_key="k")
    CompressionManager(persist=False, summarizer="llm", model=summarizer_model).attach(
        Agent(model=ScriptedModel(), telemetry=False)
    )
    assert is_fixed(summarizer_model)
