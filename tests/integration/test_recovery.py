"""Recovery from "prompt too long" with the real Gemini and OpenAI clients against local servers, and the
search tool over folded originals.

The servers reject any request whose body is larger than a limit with the provider's own overflow error
(Gemini: 400 INVALID_ARGUMENT "The input token count ... exceeds the maximum number of tokens allowed";
OpenAI: 400 ``context_length_exceeded``). The manager's budget is set far too high on purpose, so only the
recovery path can keep the run alive.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.models.google import Gemini
from agno.models.message import Message
from agno.models.openai import OpenAIChat
from agno.run.base import RunStatus
from agno.team import Team
from werkzeug import Request, Response

from agno_compression import CompressionManager, full_messages
from agno_compression._recovery import is_context_overflow
from agno_compression.eval import run_in_mode
from agno_compression.testing import Reply, ScriptedModel, ScriptInfo, ToolCall

MODES = ("sync", "async", "stream", "astream")
LIMIT = 14_000  # request body bytes the fake provider accepts
STEPS = 8
GEMINI_OVERFLOW = "The input token count (1050000) exceeds the maximum number of tokens allowed (1048576)."


def read_chunk(index: int) -> str:
    """Read one chunk of a build log."""
    return "\n".join(f"[{index:02d}:{i:03d}] compiling src/m{index}/f{i}.c ok" for i in range(70))


@dataclass
class Server:
    """Plays a tool loop; rejects oversized requests like the provider would."""

    limit: int = LIMIT
    accepted: list[int] = field(default_factory=list)
    rejected: list[int] = field(default_factory=list)
    error: str = "overflow"

    def step(self, size: int) -> int | None:
        """The accepted step number, or None when this request is too large."""
        if size > self.limit:
            self.rejected.append(size)
            return None
        self.accepted.append(size)
        return len(self.accepted) - 1


def gemini_handler(server: Server) -> Any:
    def handle(request: Request) -> Response:
        if request.path.endswith(":countTokens"):
            return Response(json.dumps({"totalTokens": 10}), content_type="application/json")
        if server.error == "auth":
            body = {"error": {"code": 403, "message": "API key not valid.", "status": "PERMISSION_DENIED"}}
            return Response(json.dumps(body), status=403, content_type="application/json")
        step = server.step(len(request.get_data()))
        if step is None:
            body = {"error": {"code": 400, "message": GEMINI_OVERFLOW, "status": "INVALID_ARGUMENT"}}
            return Response(json.dumps(body), status=400, content_type="application/json")
        parts: list[dict[str, Any]]
        if step < STEPS:
            parts = [
                {"text": f"Reading chunk {step}."},
                {"functionCall": {"name": "read_chunk", "args": {"index": step}}},
            ]
        else:
            parts = [{"text": "All chunks read."}]
        usage = {"promptTokenCount": 100, "candidatesTokenCount": 5, "totalTokenCount": 105}
        chunk = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": usage,
        }
        if request.path.endswith(":streamGenerateContent"):
            return Response(f"data: {json.dumps(chunk)}\r\n\r\n", content_type="text/event-stream")
        return Response(json.dumps(chunk), content_type="application/json")

    return handle


def openai_handler(server: Server) -> Any:
    def handle(request: Request) -> Response:
        body = request.get_json()
        step = server.step(len(request.get_data()))
        if step is None:
            error = {
                "error": {
                    "message": "This model's maximum context length is 4096 tokens. However, your messages "
                    "resulted in 9000 tokens.",
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            }
            return Response(json.dumps(error), status=400, content_type="application/json")
        base = {"id": "c1", "created": 1, "model": body["model"]}
        usage = {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}
        call = (
            {
                "id": f"call_{step}",
                "type": "function",
                "function": {"name": "read_chunk", "arguments": json.dumps({"index": step})},
            }
            if step < STEPS
            else None
        )
        text = f"Reading chunk {step}." if call else "All chunks read."
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if call:
                message["tool_calls"] = [call]
            choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if call else "stop"}
            return Response(
                json.dumps({**base, "object": "chat.completion", "choices": [choice], "usage": usage}),
                content_type="application/json",
            )
        delta: dict[str, Any] = {"role": "assistant", "content": text}
        if call:
            delta["tool_calls"] = [{"index": 0, **call}]
        events = [
            {
                **base,
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": "tool_calls" if call else "stop"}],
            },
            {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage},
        ]
        sse = "".join(f"data: {json.dumps(e)}\r\n\r\n" for e in events) + "data: [DONE]\r\n\r\n"
        return Response(sse, content_type="text/event-stream")

    return handle


def serve(httpserver: Any, handler: Any) -> None:
    httpserver.expect_request(re.compile(".*"), method="POST").respond_with_handler(handler)


def gemini(httpserver: Any) -> Gemini:
    options = {"base_url": httpserver.url_for("/"), "retry_options": {"attempts": 1}}
    return Gemini(id="gemini-2.0-flash", api_key="test-key", client_params={"http_options": options})


def openai(httpserver: Any) -> OpenAIChat:
    return OpenAIChat(id="gpt-4o", api_key="test-key", base_url=httpserver.url_for("/v1"), max_retries=0)


def run(target: Agent | Team, mode: str, prompt: str = "Read every chunk of the build log.") -> Any:
    """Run in ``mode`` and return the stored run output (also for a run that ended in an error)."""
    run_in_mode(target, prompt, {"astream": "async-stream"}.get(mode, mode))
    output = target.get_last_run_output()
    assert output is not None
    return output


def too_high_budget() -> CompressionManager:
    return CompressionManager(compress_at_tokens=200_000)


def check_recovered(server: Server, manager: CompressionManager, output: Any) -> None:
    assert output.status == RunStatus.completed, output.content
    assert str(output.content).endswith("All chunks read.")
    assert server.rejected, "the provider never rejected a request: the test proves nothing"
    assert len(server.accepted) == STEPS + 1
    assert all(size <= server.limit for size in server.accepted)
    assert manager.stats["overflow_retries"] >= len(server.rejected) >= 1
    assert any(e.strategy.startswith("overflow:") for e in manager.events)


@pytest.mark.parametrize("mode", MODES)
def test_gemini_agent_recovers_from_overflow(
    httpserver: Any, tmp_path: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    server = Server()
    serve(httpserver, gemini_handler(server))
    manager = too_high_budget()
    agent = manager.attach(
        Agent(
            model=gemini(httpserver),
            tools=[read_chunk],
            telemetry=False,
            db=SqliteDb(db_file=str(tmp_path / "a.db")),
            session_id="s",
        )
    )
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        output = run(agent, mode)
    check_recovered(server, manager, output)
    assert any("rejected the prompt as too long" in r.message for r in caplog.records)
    stored = [m.content for m in full_messages(agent.db, "s") if m.role == "tool"]
    assert stored == [read_chunk(i) for i in range(STEPS)], "nothing lost"


@pytest.mark.parametrize("mode", MODES)
def test_gemini_team_leader_recovers_from_overflow(httpserver: Any, tmp_path: Path, mode: str) -> None:
    server = Server()
    serve(httpserver, gemini_handler(server))
    member = Agent(name="Helper", id="helper", model=ScriptedModel(script=lambda m, i: "ok"), telemetry=False)
    team = Team(
        name="Lead",
        model=gemini(httpserver),
        members=[member],
        tools=[read_chunk],
        telemetry=False,
        db=SqliteDb(db_file=str(tmp_path / "t.db")),
    )
    manager = too_high_budget()
    manager.attach(team)
    check_recovered(server, manager, run(team, mode))


@pytest.mark.parametrize("mode", MODES)
def test_openai_agent_recovers_from_context_length_exceeded(httpserver: Any, tmp_path: Path, mode: str) -> None:
    server = Server()
    serve(httpserver, openai_handler(server))
    manager = too_high_budget()
    agent = manager.attach(
        Agent(
            model=openai(httpserver), tools=[read_chunk], telemetry=False, db=SqliteDb(db_file=str(tmp_path / "o.db"))
        )
    )
    check_recovered(server, manager, run(agent, mode))


def test_recovery_is_bounded_and_then_the_provider_error_stands(httpserver: Any, tmp_path: Path) -> None:
    server = Server(limit=1_500)  # even system + task + one batch do not fit
    serve(httpserver, gemini_handler(server))
    manager = CompressionManager(compress_at_tokens=200_000, overflow_retries=2)
    agent = manager.attach(
        Agent(
            model=gemini(httpserver), tools=[read_chunk], telemetry=False, db=SqliteDb(db_file=str(tmp_path / "g.db"))
        )
    )
    output = run(agent, "sync")
    assert output.status == RunStatus.error
    assert "exceeds the maximum number of tokens" in str(output.content)
    assert len(server.rejected) <= 1 + 2 * (len(server.accepted) + 1)


def test_other_errors_pass_through_untouched(httpserver: Any, tmp_path: Path) -> None:
    server = Server(error="auth")
    serve(httpserver, gemini_handler(server))
    manager = too_high_budget()
    agent = manager.attach(
        Agent(
            model=gemini(httpserver), tools=[read_chunk], telemetry=False, db=SqliteDb(db_file=str(tmp_path / "g.db"))
        )
    )
    output = run(agent, "sync")
    assert output.status == RunStatus.error and "API key not valid" in str(output.content)
    assert manager.stats["overflow_retries"] == 0


def test_overflow_errors_are_recognised_per_provider() -> None:
    from agno.exceptions import ModelProviderError

    for text in (
        GEMINI_OVERFLOW,
        "Error code: 400 - {'error': {'code': 'context_length_exceeded'}}",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "Input token count exceeds the maximum",
    ):
        assert is_context_overflow(ModelProviderError(text)), text
    for text in ("API key not valid", "rate limit exceeded", "internal error"):
        assert not is_context_overflow(ModelProviderError(text)), text


# --- the search tool -------------------------------------------------------------------------------------

SECRET = "build-id 7f3a9c21 failed in src/net/tls_handshake.c:418 with ETIMEDOUT"


def log_chunk(index: int) -> str:
    """Read one chunk of the build log."""
    lines = [f"[{index:02d}:{i:03d}] compiling src/m{index}/f{i}.c ok" for i in range(70)]
    if index == 1:
        lines.insert(33, SECRET)
    return "\n".join(lines)


def searching_script(messages: list[Message], info: ScriptInfo) -> Reply:
    """Read 10 chunks, then look up the failure the summary no longer holds, then answer from the tool."""
    if info.call_index < 10:
        return Reply(tool_calls=[ToolCall("log_chunk", {"index": info.call_index})])
    if info.call_index == 10:
        return Reply(tool_calls=[ToolCall("search_folded_history", {"query": "tls_handshake ETIMEDOUT"})])
    found = str(messages[-1].content)
    return Reply(text="Found: " + found)


def test_the_agent_finds_the_exact_text_of_a_folded_output(tmp_path: Path) -> None:
    db = SqliteDb(db_file=str(tmp_path / "s.db"))
    manager = CompressionManager(compress_at_tokens=2_500)
    model = ScriptedModel(script=searching_script)
    agent = manager.attach(Agent(model=model, tools=[log_chunk], db=db, session_id="one", telemetry=False))
    out = agent.run("Why did the build fail?")
    chunk_one = next(m for m in full_messages(db, "one") if m.role == "tool" and SECRET in str(m.content))
    # it really was folded away before the search
    search_request = model.requests[10].messages
    assert not any(SECRET in str(m.content) for m in search_request if m.role == "tool")
    assert "search_folded_history" in str([m.content for m in search_request if m.role == "user"])
    assert SECRET in str(out.content) and chunk_one.id in str(out.content)
    # another session on the same database never sees it
    other_model = ScriptedModel(
        script=lambda m, i: (
            Reply(tool_calls=[ToolCall("search_folded_history", {"query": "tls_handshake"})])
            if i.call_index == 0
            else Reply(text=str(m[-1].content))
        )
    )
    other = manager.attach(Agent(model=other_model, tools=[log_chunk], db=db, session_id="two", telemetry=False))
    reply = other.run("anything?")
    assert SECRET not in str(reply.content) and "No folded" in str(reply.content)


def test_repeated_searches_keep_finding_the_folded_original_not_earlier_searches(tmp_path: Path) -> None:
    """Searches get folded too and quote the query and the hits; they must never crowd the original out."""
    answers: list[str] = []

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index < 10:
            return Reply(tool_calls=[ToolCall("log_chunk", {"index": info.call_index})])
        if info.call_index > 10:
            answers.append(str(messages[-1].content))
        if info.call_index < 17:  # the same search seven times, each with the query in the assistant's text too
            search = ToolCall("search_folded_history", {"query": "tls_handshake ETIMEDOUT"})
            return Reply(text="Looking up tls_handshake ETIMEDOUT.", tool_calls=[search])
        return Reply(text="done")

    db = SqliteDb(db_file=str(tmp_path / "s.db"))
    manager = CompressionManager(compress_at_tokens=2_500)
    agent = manager.attach(Agent(model=ScriptedModel(script=script), tools=[log_chunk], db=db, session_id="one"))
    agent.run("Why did the build fail?")
    original = next(m for m in full_messages(db, "one") if m.tool_name == "log_chunk" and SECRET in str(m.content))
    assert len(manager.events) >= 3  # the searches and their answers were folded too
    assert len(answers) == 7
    for answer in answers:
        assert f"--- message {original.id} (tool from tool log_chunk" in answer
        assert "from tool search_folded_history" not in answer
