"""Streamed usage counted once, through real agno Agents and Teams, the real google-genai and openai clients,
and local HTTP servers that answer like the Gemini REST API and an OpenAI-compatible chat API.

The servers stream cumulative usage in every chunk (as Gemini and, for instance, vLLM with
``continuous_usage_stats`` do), optionally end with a usage-only chunk, or break the stream off. For every
scenario the run's metrics must equal the provider's final totals, or the last totals that reached the
client when the stream was cut.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.models.google import Gemini
from agno.models.message import Message
from agno.models.openai import OpenAIChat, OpenAILike
from agno.models.response import ModelResponse
from agno.team import Team
from werkzeug import Request, Response

from agno_compression import CompressionManager, Summary, SummaryRequest, fix_stream_usage
from agno_compression._metrics import is_fixed
from agno_compression._summarizers import SUMMARY_HEADER, render_transcript
from agno_compression.tokens import TokenCounter

MODES = ("sync", "async", "stream", "astream")
STREAMED = ("stream", "astream")
SUMMARIZER_SYSTEM = "compress the earlier part"


# --- what the fake providers play ---------------------------------------------------------------


@dataclass(frozen=True)
class Chunk:
    text: str | None
    prompt: int
    output: int
    """Cumulative usage reported with this chunk."""


@dataclass(frozen=True)
class Call:
    """One model call as the fake provider plays it."""

    chunks: tuple[Chunk, ...]
    tool: tuple[str, dict[str, Any]] | None = None
    """A function call, sent with the last chunk."""
    tail: tuple[int, int] | None = None
    """A last usage-only chunk (prompt, output), after the chunk that finishes the answer."""
    cut: str | None = None
    """``"close"``: the server drops the connection after the chunks; ``"malformed"``: it sends broken JSON."""
    usage_every_chunk: bool = True
    """False: usage only in the tail (a server that reports once, at the end)."""

    @property
    def text(self) -> str:
        return "".join(c.text or "" for c in self.chunks)

    def final(self) -> tuple[int, int]:
        """The totals that reach the client last."""
        if self.tail is not None and self.cut is None:
            return self.tail
        reported = [(c.prompt, c.output) for c in self.chunks] if self.usage_every_chunk else []
        return reported[-1] if reported else (0, 0)


def non_streamed(call: Call) -> tuple[int, int]:
    """The usage of the same call answered without streaming (never cut)."""
    return call.tail or (call.chunks[-1].prompt, call.chunks[-1].output)


def expected(calls: list[Call], streamed: bool) -> tuple[int, int, int]:
    """What the run must record: the sum of each call's final totals."""
    totals = [c.final() if streamed else non_streamed(c) for c in calls]
    prompt, output = sum(p for p, _ in totals), sum(o for _, o in totals)
    return prompt, output, prompt + output


def answer(prompt: int, *texts: str, tail: tuple[int, int] | None = None, cut: str | None = None) -> Call:
    """A text answer streamed in ``texts`` pieces, the output count growing by 3 per piece."""
    chunks = tuple(Chunk(t, prompt, 3 * (i + 1)) for i, t in enumerate(texts))
    return Call(chunks=chunks, tail=tail, cut=cut)


def tool_call(prompt: int, city: str = "Paris") -> Call:
    return Call(
        chunks=(Chunk("Let me check. ", prompt, 4), Chunk(None, prompt, 11)), tool=("get_weather", {"city": city})
    )


SCENARIOS: dict[str, list[Call]] = {
    "cumulative": [answer(52, "The sky ", "is blue ", "today.")],
    "usage_only_tail": [answer(52, "The sky ", "is blue.", tail=(52, 9))],
    "tool_call": [tool_call(61), answer(95, "Sunny ", "in Paris.", tail=(95, 8))],
    "cut_close": [answer(52, "The sky ", "is bl", cut="close")],
    "cut_malformed": [answer(52, "The sky ", "is bl", cut="malformed")],
    "tool_then_cut": [tool_call(61), answer(95, "Sunny ", "in Pa", cut="close")],
}
CASES = [(name, mode) for name, calls in SCENARIOS.items() for mode in MODES if mode in STREAMED or not calls[-1].cut]


def get_weather(city: str) -> str:
    """Return the weather for a city."""
    return f"Sunny and 24 degrees in {city}."


# --- the fake providers ---------------------------------------------------------------------------


@dataclass
class Script:
    """Calls served in order; summarizer requests get their own queue."""

    calls: deque[Call]
    summaries: deque[Call] = field(default_factory=deque)
    served: list[str] = field(default_factory=list)

    def next(self, summarizer: bool) -> Call:
        queue = self.summaries if summarizer else self.calls
        assert queue, f"unexpected {'summarizer' if summarizer else 'agent'} request"
        self.served.append("summarizer" if summarizer else "agent")
        return queue.popleft()


def sse(events: list[str], cut: str | None, end: str = "") -> Response:
    """An event stream; ``cut`` breaks it off after ``events``."""
    body = "".join(f"data: {e}\r\n\r\n" for e in events)
    if cut == "malformed":
        return Response(body + 'data: {"candidates": [{"content": \r\n\r\n', content_type="text/event-stream")
    if cut == "close":
        # A Content-Length the body never reaches: the client sees the peer close mid-body.
        payload = body.encode()

        def produce() -> Iterator[bytes]:
            yield payload

        headers = {"Content-Length": str(len(payload) + 10_000)}
        return Response(produce(), content_type="text/event-stream", headers=headers)
    return Response(body + end, content_type="text/event-stream")


def gemini_usage(prompt: int, output: int) -> dict[str, int]:
    return {"promptTokenCount": prompt, "candidatesTokenCount": output, "totalTokenCount": prompt + output}


def gemini_chunk(call: Call, i: int) -> dict[str, Any]:
    chunk = call.chunks[i]
    last = i == len(call.chunks) - 1
    parts: list[dict[str, Any]] = [{"text": chunk.text}] if chunk.text else []
    if last and call.tool is not None:
        parts.append({"functionCall": {"name": call.tool[0], "args": call.tool[1]}})
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if last and call.cut is None:
        candidate["finishReason"] = "STOP"
    return {"candidates": [candidate], "usageMetadata": gemini_usage(chunk.prompt, chunk.output), "modelVersion": "x"}


def gemini_handler(script: Script, summarizer_ids: tuple[str, ...] = ()) -> Any:
    def handle(request: Request) -> Response:
        path = request.path
        if path.endswith(":countTokens"):
            return Response(json.dumps({"totalTokens": 10}), content_type="application/json")
        body = request.get_json()
        system = json.dumps(body.get("systemInstruction") or body.get("system_instruction") or "")
        model_id = path.rsplit("/", 1)[-1].split(":")[0]
        call = script.next(SUMMARIZER_SYSTEM in system or model_id in summarizer_ids)
        if path.endswith(":generateContent"):  # the whole answer at once, with the final usage
            whole = Call(chunks=(Chunk(call.text, *non_streamed(call)),), tool=call.tool)
            return Response(json.dumps(gemini_chunk(whole, 0)), content_type="application/json")
        assert path.endswith(":streamGenerateContent") and request.args.get("alt") == "sse", path
        events = [json.dumps(gemini_chunk(call, i)) for i in range(len(call.chunks))]
        if call.tail is not None and call.cut is None:
            events.append(json.dumps({"usageMetadata": gemini_usage(*call.tail), "modelVersion": "x"}))
        return sse(events, call.cut)

    return handle


def openai_usage(prompt: int, output: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output}


def openai_handler(script: Script) -> Any:
    def handle(request: Request) -> Response:
        assert request.path.endswith("/chat/completions"), request.path
        body = request.get_json()
        system = " ".join(str(m.get("content")) for m in body["messages"] if m["role"] in ("system", "developer"))
        call = script.next(SUMMARIZER_SYSTEM in system)
        tool_calls = []
        if call.tool is not None:
            function = {"name": call.tool[0], "arguments": json.dumps(call.tool[1])}
            tool_calls = [{"index": 0, "id": "call_1", "type": "function", "function": function}]
        finish = "tool_calls" if call.tool else "stop"
        base = {"id": "chatcmpl-1", "created": 1, "model": body["model"]}
        if not body.get("stream"):
            final = non_streamed(call)
            message: dict[str, Any] = {"role": "assistant", "content": call.text or None}
            if tool_calls:
                message["tool_calls"] = [{k: v for k, v in tc.items() if k != "index"} for tc in tool_calls]
            choice = {"index": 0, "message": message, "finish_reason": finish}
            payload = {**base, "object": "chat.completion", "choices": [choice], "usage": openai_usage(*final)}
            return Response(json.dumps(payload), content_type="application/json")
        events = []
        for i, chunk in enumerate(call.chunks):
            last = i == len(call.chunks) - 1
            delta: dict[str, Any] = {"role": "assistant"} if i == 0 else {}
            if chunk.text:
                delta["content"] = chunk.text
            if last and tool_calls:
                delta["tool_calls"] = tool_calls
            done = finish if last and call.cut is None else None
            event = {**base, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
            event["choices"][0]["finish_reason"] = done
            if call.usage_every_chunk:
                event["usage"] = openai_usage(chunk.prompt, chunk.output)
            events.append(json.dumps(event))
        if call.tail is not None and call.cut is None:
            usage_only = {**base, "object": "chat.completion.chunk", "choices": [], "usage": openai_usage(*call.tail)}
            events.append(json.dumps(usage_only))
        return sse(events, call.cut, end="data: [DONE]\r\n\r\n")

    return handle


def serve(httpserver: Any, handler: Any) -> None:
    httpserver.expect_request(re.compile(".*"), method="POST").respond_with_handler(handler)


def gemini(httpserver: Any, model_id: str = "gemini-2.0-flash") -> Gemini:
    options = {"base_url": httpserver.url_for("/"), "retry_options": {"attempts": 1}}
    return Gemini(id=model_id, api_key="test-key", client_params={"http_options": options})


# --- running an agent in each mode ----------------------------------------------------------------


def run(target: Agent | Team, mode: str, prompt: str = "What is the weather in Paris?") -> Any:
    """Run in ``mode`` and return the stored run output (also for a run that ended in an error)."""
    if mode == "sync":
        target.run(prompt)
    elif mode == "stream":
        for _ in target.run(prompt, stream=True):
            pass
    elif mode == "async":
        asyncio.run(target.arun(prompt))  # type: ignore[arg-type]
    else:

        async def consume() -> None:
            async for _ in target.arun(prompt, stream=True):  # type: ignore[union-attr]
                pass

        asyncio.run(consume())
    output = target.get_last_run_output()
    assert output is not None
    return output


def tokens(metrics: Any) -> tuple[int, int, int]:
    return metrics.input_tokens, metrics.output_tokens, metrics.total_tokens


def slot(output: Any, name: str) -> tuple[int, int, int] | None:
    entries = (output.metrics.details or {}).get(name)
    if not entries:
        return None
    assert len(entries) == 1, entries
    return tokens(entries[0])


def make_agent(tmp_path: Path, model: Any, manager: CompressionManager | None = None) -> Agent:
    agent = Agent(
        model=model,
        tools=[get_weather],
        db=SqliteDb(db_file=str(tmp_path / "agent.db")),
        telemetry=False,
    )
    return manager.attach(agent) if manager is not None else agent


def quiet_manager() -> CompressionManager:
    """A manager that never folds here: only its usage fix acts."""
    return CompressionManager(compress_at_tokens=100_000, persist=False, token_counter=TokenCounter("gpt-4o"))


def check_run(output: Any, calls: list[Call], mode: str) -> None:
    want = expected(calls, mode in STREAMED)
    assert tokens(output.metrics) == want, (mode, tokens(output.metrics), want)
    assert slot(output, "model") == want
    assert slot(output, "compression_model") is None
    if calls[-1].cut is not None:
        assert output.status.value == "ERROR"


# --- Gemini ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("scenario", "mode"), CASES)
def test_gemini_run_metrics_equal_the_provider_totals(
    tmp_path: Path, httpserver: Any, scenario: str, mode: str
) -> None:
    calls = SCENARIOS[scenario]
    script = Script(deque(calls))
    serve(httpserver, gemini_handler(script))
    model = gemini(httpserver)
    agent = make_agent(tmp_path, model, quiet_manager())
    assert is_fixed(model)
    output = run(agent, mode)
    assert script.served == ["agent"] * len(calls)
    check_run(output, calls, mode)


@pytest.mark.parametrize("scenario", ["usage_only_tail", "cut_close", "cut_malformed"])
def test_gemini_without_the_fix_agno_miscounts(tmp_path: Path, httpserver: Any, scenario: str) -> None:
    """What the fix is for: agno alone drops the usage-only chunk and records 0 for a cut stream."""
    calls = SCENARIOS[scenario]
    serve(httpserver, gemini_handler(Script(deque(calls))))
    output = run(make_agent(tmp_path, gemini(httpserver)), "stream")
    assert tokens(output.metrics) != expected(calls, streamed=True), "agno now counts this case right by itself"


def test_gemini_flag_off_over_counts_and_the_fix_corrects_it(tmp_path: Path, httpserver: Any) -> None:
    """``collect_metrics_on_completion=False`` makes agno read every chunk and sum the running totals."""
    calls = SCENARIOS["cumulative"]
    serve(httpserver, gemini_handler(Script(deque(calls + calls))))
    model = gemini(httpserver)
    model.collect_metrics_on_completion = False
    agent = make_agent(tmp_path, model)
    assert tokens(run(agent, "stream").metrics) == (3 * 52, 3 + 6 + 9, 3 * 52 + 18)
    fix_stream_usage(model)
    assert tokens(run(agent, "stream").metrics) == expected(calls, streamed=True)


def test_team_leader_and_members_are_fixed(tmp_path: Path, httpserver: Any) -> None:
    calls = SCENARIOS["usage_only_tail"]
    serve(httpserver, gemini_handler(Script(deque(calls))))
    leader, member_model = gemini(httpserver), gemini(httpserver, "gemini-member")
    member = Agent(name="weather", model=member_model, tools=[get_weather], telemetry=False)
    team = Team(
        name="desk", model=leader, members=[member], db=SqliteDb(db_file=str(tmp_path / "team.db")), telemetry=False
    )
    quiet_manager().attach(team)
    assert is_fixed(leader) and is_fixed(member_model)
    output = run(team, "stream")
    assert tokens(output.metrics) == expected(calls, streamed=True)


# --- OpenAI-compatible backend streaming cumulative usage ------------------------------------------


OPENAI_SCENARIOS: dict[str, list[Call]] = {
    **SCENARIOS,
    "once_at_the_end": [
        Call(chunks=answer(52, "The sky ", "is blue.").chunks, tail=(52, 7), usage_every_chunk=False),
    ],
}
OPENAI_CASES = [
    (name, mode) for name, calls in OPENAI_SCENARIOS.items() for mode in MODES if mode in STREAMED or not calls[-1].cut
]


def openai_model(httpserver: Any, kind: str) -> Any:
    url = httpserver.url_for("/v1")
    if kind == "chat":
        return OpenAIChat(id="local-model", base_url=url, api_key="test-key", max_retries=0)
    return OpenAILike(id="local-model", base_url=url, api_key="test-key", max_retries=0)


@pytest.mark.parametrize(("scenario", "mode"), OPENAI_CASES)
@pytest.mark.parametrize("how", ["attach", "explicit"])
def test_openai_compatible_run_metrics_equal_the_provider_totals(
    tmp_path: Path, httpserver: Any, scenario: str, mode: str, how: str
) -> None:
    calls = OPENAI_SCENARIOS[scenario]
    script = Script(deque(calls))
    serve(httpserver, openai_handler(script))
    if how == "attach":  # OpenAILike: the server's style is unknown, detected per report
        model = openai_model(httpserver, "like")
        agent = make_agent(tmp_path, model, quiet_manager())
    else:  # OpenAIChat pointed at the server, style told explicitly
        model = openai_model(httpserver, "chat")
        style = "final" if scenario == "once_at_the_end" else "cumulative"
        agent = make_agent(tmp_path, fix_stream_usage(model, style=style))
    assert is_fixed(model)
    output = run(agent, mode)
    assert script.served == ["agent"] * len(calls)
    check_run(output, calls, mode)


def test_openai_compatible_without_the_fix_agno_over_counts(tmp_path: Path, httpserver: Any) -> None:
    calls = SCENARIOS["cumulative"]
    serve(httpserver, openai_handler(Script(deque(calls))))
    output = run(make_agent(tmp_path, openai_model(httpserver, "like")), "stream")
    assert tokens(output.metrics) == (3 * 52, 3 + 6 + 9, 3 * 52 + 18)  # every running total summed


# --- the summarizer's usage in the compression-model slot ------------------------------------------


def read_log(part: int) -> str:
    """Read one part of a long build log."""
    return "\n".join(f"[{part}:{i:04d}] compiling src/module_{part}/file_{i}.c ok" for i in range(80))


def folding_calls() -> list[Call]:
    """Two tool batches, then the answer: the third call is over budget, so the first batch is folded."""
    read = [
        Call(chunks=(Chunk("Reading. ", 40 + 10 * i, 2), Chunk(None, 40 + 10 * i, 7)), tool=("read_log", {"part": i}))
        for i in (1, 2)
    ]
    return [*read, answer(130, "All ", "parts read.", tail=(130, 9))]


SUMMARY = Call(chunks=(Chunk("## User goal and constraints\n", 300, 6), Chunk("read the log", 300, 12)), tail=(300, 14))


def folding_agent(tmp_path: Path, model: Any, manager: CompressionManager) -> Agent:
    agent = Agent(model=model, tools=[read_log], db=SqliteDb(db_file=str(tmp_path / "agent.db")), telemetry=False)
    return manager.attach(agent)


@pytest.mark.parametrize("mode", MODES)
def test_llm_summarizer_usage_is_reported_in_the_compression_slot(tmp_path: Path, httpserver: Any, mode: str) -> None:
    calls = folding_calls()
    script = Script(deque(calls), deque([SUMMARY]))
    serve(httpserver, gemini_handler(script))
    model = gemini(httpserver)
    manager = CompressionManager(
        compress_at_tokens=2_000, summarizer="llm", persist=False, token_counter=TokenCounter("gpt-4o")
    )
    output = run(folding_agent(tmp_path, model, manager), mode)
    assert script.served == ["agent", "agent", "summarizer", "agent"]
    assert [e.strategy for e in manager.events] == ["llm"]
    agent_totals = expected(calls, mode in STREAMED)
    summarizer_totals = expected([SUMMARY], streamed=False)  # LLMSummarizer's calls are not streamed
    assert slot(output, "model") == agent_totals
    assert slot(output, "compression_model") == summarizer_totals
    assert tokens(output.metrics) == tuple(a + s for a, s in zip(agent_totals, summarizer_totals, strict=True))
    assert manager.events[0].summarizer_usage is not None
    assert manager.events[0].summarizer_usage["input_tokens"] == summarizer_totals[0]


@dataclass
class StreamingSummarizer:
    """A summarizer that streams its model's answer; the usage it reports is what agno counted for the stream."""

    model: Any
    name: str = "streaming-llm"

    def _prompt(self, request: SummaryRequest) -> list[Message]:
        system = f"You {SUMMARIZER_SYSTEM} of the conversation."
        return [
            Message(role="system", content=system),
            Message(role="user", content=render_transcript(request.messages)),
        ]

    def _summary(self, text: str, messages: list[Message]) -> Summary:
        usage = messages[-1].metrics  # the assistant message agno appended, with the stream's usage
        response = ModelResponse(content=text, response_usage=usage)
        return Summary(text=f"{SUMMARY_HEADER}\n{text}", strategy=self.name, response=response, model=self.model)

    def summarize(self, request: SummaryRequest) -> Summary:
        messages = self._prompt(request)
        parts = [r.content for r in self.model.response_stream(messages=messages) if isinstance(r, ModelResponse)]
        return self._summary("".join(p for p in parts if isinstance(p, str)), messages)

    async def asummarize(self, request: SummaryRequest) -> Summary:
        messages = self._prompt(request)
        parts = [
            r.content async for r in self.model.aresponse_stream(messages=messages) if isinstance(r, ModelResponse)
        ]
        return self._summary("".join(p for p in parts if isinstance(p, str)), messages)


@pytest.mark.parametrize("mode", MODES)
def test_a_streaming_summarizer_model_is_fixed_and_accounted(tmp_path: Path, httpserver: Any, mode: str) -> None:
    calls = folding_calls()
    script = Script(deque(calls), deque([SUMMARY]))
    serve(httpserver, gemini_handler(script, summarizer_ids=("gemini-summarizer",)))
    summarizer_model = gemini(httpserver, "gemini-summarizer")
    manager = CompressionManager(
        compress_at_tokens=2_000,
        summarizer=StreamingSummarizer(summarizer_model),
        model=summarizer_model,
        persist=False,
        token_counter=TokenCounter("gpt-4o"),
    )
    output = run(folding_agent(tmp_path, gemini(httpserver), manager), mode)
    assert is_fixed(summarizer_model)
    assert script.served == ["agent", "agent", "summarizer", "agent"]
    summarizer_totals = expected([SUMMARY], streamed=True)  # includes the usage-only tail agno alone drops
    assert slot(output, "compression_model") == summarizer_totals
    assert slot(output, "model") == expected(calls, mode in STREAMED)
