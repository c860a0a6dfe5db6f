"""A scripted agno model for tests, demos and offline replays.

``ScriptedModel`` is a real ``agno.models.base.Model`` whose replies come from a plain
function of the conversation, so a test reads like the conversation it checks:

```python
def script(messages, info):
    if info.call_index == 0:
        return Reply(tool_calls=[ToolCall("list_files", {"path": "."})])
    return Reply(text="done")

agent = Agent(model=ScriptedModel(script), tools=[list_files])
```

Every request the model receives is recorded (``model.requests``) exactly as it was
sent, with its token count, so budgets and tool pairing can be asserted per call.
It never touches the network.

Also here: ``scripted_agent`` and ``loop_agent`` (real Agents on a scripted model; the second reads
long log chunks in a tool loop with a ``CompressionManager`` attached, recording what it produced and
every fold), ``run_in_mode`` and ``run_agent`` (one run on any of agno's four model paths, as the offline
replays of ``agno_compression.eval`` run too), ``FailingSummarizer`` (a summarizer that fails the way real ones
do) and ``offline`` / ``block_network`` (no connection but loopback, no provider API key: no real model request).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

from agno.agent import Agent
from agno.metrics import MessageMetrics
from agno.models.base import Model
from agno.models.message import Message
from agno.models.response import ModelResponse

from ._manager import CompressionManager, FoldEvent
from ._plan import is_summary
from ._summarizers import Summary
from .tokens import TokenCounter


@dataclass(frozen=True)
class ToolCall:
    """One tool call the script asks for."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def to_agno(self) -> dict[str, Any]:
        args = self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)
        return {
            "id": self.id or f"call_{uuid4().hex[:12]}",
            "type": "function",
            "function": {"name": self.name, "arguments": args},
        }


@dataclass(frozen=True)
class Reply:
    """What the scripted model answers: text, tool calls, or both."""

    text: str | None = None
    tool_calls: Sequence[ToolCall] = ()


@dataclass(frozen=True)
class ScriptInfo:
    """What the script function knows besides the messages."""

    call_index: int
    """0 for the first model call this model serves."""
    tools: list[dict[str, Any]]
    """The tool definitions sent with the request."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the model received it."""

    messages: list[Message]
    """Copies of the messages, with the content they had when sent."""
    tools: list[dict[str, Any]]
    prompt_tokens: int
    """o200k tokens of messages plus tool definitions, counted as the budget counts them."""


Script = Callable[[list[Message], ScriptInfo], "Reply | str"]


@dataclass
class ScriptedModel(Model):
    """An agno model driven by ``script(messages, info) -> Reply | str``; records every request."""

    script: Script | None = None
    id: str = "scripted"
    name: str | None = "ScriptedModel"
    provider: str | None = "agno-compression"
    stream_chunks: int = 3
    """How many content chunks a streamed text reply is split into."""
    counter: TokenCounter = field(default_factory=lambda: TokenCounter("gpt-4o"))
    requests: list[RecordedRequest] = field(default_factory=list)

    def _reply(self, messages: list[Message], tools: list[dict[str, Any]] | None) -> tuple[Reply, int]:
        if self.script is None:
            raise ValueError("ScriptedModel needs a script function")
        prompt_tokens = self.counter.count_prompt(messages, tools)
        self.requests.append(RecordedRequest([m.model_copy() for m in messages], list(tools or []), prompt_tokens))
        info = ScriptInfo(call_index=len(self.requests) - 1, tools=list(tools or []))
        reply = self.script(list(messages), info)
        return (Reply(text=reply) if isinstance(reply, str) else reply), prompt_tokens

    def _usage(self, prompt_tokens: int, reply: Reply) -> MessageMetrics:
        out = self.counter.count_text(reply.text or "") + sum(
            self.counter.count_text(json.dumps(c.arguments)) for c in reply.tool_calls
        )
        return MessageMetrics(input_tokens=prompt_tokens, output_tokens=out, total_tokens=prompt_tokens + out)

    def _response(self, messages: list[Message], tools: list[dict[str, Any]] | None) -> ModelResponse:
        reply, prompt_tokens = self._reply(messages, tools)
        return ModelResponse(
            role="assistant",
            content=reply.text,
            tool_calls=[c.to_agno() for c in reply.tool_calls],
            response_usage=self._usage(prompt_tokens, reply),
        )

    def _chunks(self, messages: list[Message], tools: list[dict[str, Any]] | None) -> list[ModelResponse]:
        reply, prompt_tokens = self._reply(messages, tools)
        chunks: list[ModelResponse] = []
        text = reply.text or ""
        if text:
            step = max(1, -(-len(text) // self.stream_chunks))
            chunks += [ModelResponse(role="assistant", content=text[i : i + step]) for i in range(0, len(text), step)]
        if reply.tool_calls:
            chunks.append(ModelResponse(role="assistant", tool_calls=[c.to_agno() for c in reply.tool_calls]))
        chunks.append(ModelResponse(response_usage=self._usage(prompt_tokens, reply)))
        return chunks

    def invoke(
        self, messages: list[Message], *args: Any, tools: list[dict[str, Any]] | None = None, **kwargs: Any
    ) -> ModelResponse:
        return self._response(messages, tools)

    async def ainvoke(
        self, messages: list[Message], *args: Any, tools: list[dict[str, Any]] | None = None, **kwargs: Any
    ) -> ModelResponse:
        return self._response(messages, tools)

    def invoke_stream(
        self, messages: list[Message], *args: Any, tools: list[dict[str, Any]] | None = None, **kwargs: Any
    ) -> Iterator[ModelResponse]:
        yield from self._chunks(messages, tools)

    async def ainvoke_stream(
        self, messages: list[Message], *args: Any, tools: list[dict[str, Any]] | None = None, **kwargs: Any
    ) -> AsyncIterator[ModelResponse]:
        for chunk in self._chunks(messages, tools):
            yield chunk

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]


# --- real Agents on a scripted model ------------------------------------------------------------------------------

RUN_MODES = ("sync", "async", "stream", "async-stream")
"""agno's four model paths, as ``run_agent`` names them."""

WHOLE_SESSION: dict[str, Any] = {"add_history_to_context": True, "num_history_runs": 100}
"""Agent or Team options that put the session's earlier runs (up to 100) in the context."""


def run_in_mode(agent: Any, text: str, mode: str) -> Any:
    """Run ``agent`` (or a Team) on ``text`` in one of the four modes and return the final run output."""
    if mode == "sync":
        return agent.run(text)
    if mode == "stream":
        last = None
        for _ in agent.run(text, stream=True, yield_run_output=True):
            last = _
        return last
    if mode == "async":
        return asyncio.run(agent.arun(text))

    async def consume() -> Any:
        last = None
        async for event in agent.arun(text, stream=True, yield_run_output=True):
            last = event
        return last

    return asyncio.run(consume())


def run_agent(agent: Any, text: str, mode: str = "sync") -> Any:
    """Run an Agent or Team on ``text`` in one of ``RUN_MODES``; the final run output."""
    return run_in_mode(agent, text, mode)


def scripted_agent(
    script: Script, *tools: Any, manager: CompressionManager | None = None, **agent_kw: Any
) -> tuple[Agent, ScriptedModel]:
    """A real ``Agent`` (telemetry off) on ``ScriptedModel(script)``, with ``manager`` attached when given."""
    model = ScriptedModel(script=script)
    agent = Agent(model=model, tools=list(tools), **{"telemetry": False, **agent_kw})
    if manager is not None:
        manager.attach(agent)
    return agent, model


def current_user(messages: Sequence[Message]) -> str:
    """The text of the current user message: the last one that is neither agno history nor a summary."""
    users = [m for m in messages if m.role == "user" and not m.from_history and not is_summary(m)]
    return str(users[-1].content) if users else ""


def log_chunk(index: int, n: int, *, tag: str = "", lines: int = 30) -> str:
    """A long build-log chunk (the ``n``-th read, of chunk ``index``): compile lines, then an error and exit code."""
    text = "\n".join(f"[{tag}{n:03d}:{line:04d}] compiling src/m{index}/f{line}.c ok" for line in range(lines))
    return f"{text}\nerror: ValueError in step {n} of {tag or 'log'}: exit code {index % 3}"


@dataclass
class LoopAgent:
    """A ``loop_agent`` with everything it produced and every fold it made."""

    agent: Agent
    model: ScriptedModel
    manager: CompressionManager
    produced: list[str] = field(default_factory=list)
    """Every tool output, in order."""
    transcript: list[tuple[str, str]] = field(default_factory=list)
    """``(role, content)`` of every tool output and model reply, in order."""
    folds: list[tuple[int, FoldEvent, list[Message]]] = field(default_factory=list)
    """``(model requests before it, event, folded messages)`` of every fold."""

    def run(self, text: str, mode: str = "sync") -> Any:
        """Run on ``text`` in one of ``RUN_MODES``; the final run output."""
        return run_agent(self.agent, text, mode)

    @property
    def summary_folds(self) -> list[FoldEvent]:
        return [e for _, e, _ in self.folds if e.summary and e.folded_ids]


def loop_agent(
    *,
    steps: int = 10,
    db: Any = None,
    session_id: str = "s1",
    tag: str = "",
    system: str = "You read build logs.",
    history: bool = True,
    tool_text: Callable[[int, int], str] | None = None,
    on_tool: Callable[[int], None] | None = None,
    agent_kw: dict[str, Any] | None = None,
    **manager_kw: Any,
) -> LoopAgent:
    """A real Agent that reads ``steps`` long log chunks per user message, then says it is done.

    Each read calls ``on_tool(n)`` (the n-th read of this agent) and returns ``tool_text(index, n)``
    (default ``log_chunk``). A fresh ``CompressionManager(**manager_kw)`` is attached; ``agent_kw`` goes to
    the ``Agent`` (``user_id``, ``id``, ...). With ``history``, every earlier run is in the context.
    """
    per_user: dict[str, int] = {}
    reads = [0]

    def read_chunk(index: int) -> str:
        """Read one long chunk of a build log."""
        reads[0] += 1
        if on_tool is not None:
            on_tool(reads[0])
        text = tool_text(index, reads[0]) if tool_text is not None else log_chunk(index, reads[0], tag=tag)
        loop.produced.append(text)
        loop.transcript.append(("tool", text))
        return text

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        user = current_user(messages)
        k = per_user[user] = per_user.get(user, 0) + 1
        if k > steps:
            reply = Reply(text=f"Done with {user!r}: all chunks read.")
        else:
            reply = Reply(text=f"{tag}reading chunk {k}.", tool_calls=[ToolCall("read_chunk", {"index": k})])
        loop.transcript.append(("assistant", reply.text or ""))
        return reply

    def on_fold(event: FoldEvent, folded: Any) -> None:
        loop.folds.append((len(model.requests), event, list(folded)))

    manager = CompressionManager(on_fold=on_fold, **manager_kw)
    options = {"db": db, "session_id": session_id, "system_message": system, **(agent_kw or {})}
    if history:
        options.update(WHOLE_SESSION)
    agent, model = scripted_agent(script, read_chunk, manager=manager, **options)
    loop = LoopAgent(agent, model, manager)
    return loop


# --- a summarizer that fails -------------------------------------------------------------------------------------


class FailingSummarizer:
    """A summarizer that fails the way real ones do, counting its calls.

    ``how``: ``raise`` (a ``RuntimeError``), ``empty`` (an empty summary), ``blank`` (whitespace only), ``none``
    (returns None), ``garbage`` (returns a list), ``hang`` (a good summary, but only after ``hang_seconds``; the
    async call awaits) or ``block`` (the same, but the async call blocks the event loop, as a sync client called
    from ``asummarize`` does). A late summary is good, so only a timeout can make it a failure.
    """

    def __init__(self, how: str, *, hang_seconds: float = 3.0) -> None:
        if how not in ("raise", "empty", "blank", "none", "garbage", "hang", "block"):
            raise ValueError(f"unknown failure {how!r}")
        self.name = f"failing-{how}"
        self.how = how
        self.hang_seconds = hang_seconds
        self.calls = 0

    def _result(self) -> Any:
        if self.how == "raise":
            raise RuntimeError("provider exploded")
        if self.how == "garbage":
            return ["not", "a", "summary"]
        if self.how == "none":
            return None
        if self.how in ("hang", "block"):
            return Summary(text="late summary", strategy=self.name)
        return Summary(text=" \n " if self.how == "blank" else "", strategy=self.name)

    def summarize(self, request: Any) -> Any:
        self.calls += 1
        if self.how in ("hang", "block"):
            time.sleep(self.hang_seconds)
        return self._result()

    async def asummarize(self, request: Any) -> Any:
        if self.how != "block":
            self.calls += 1
            if self.how == "hang":
                await asyncio.sleep(self.hang_seconds)
            return self._result()
        return self.summarize(request)


# --- no real model request ---------------------------------------------------------------------------------------

API_KEYS = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")
"""The providers' keys ``offline`` unsets: without them an agno model fails before it connects."""


def block_network(refusal: str = "only loopback connections are allowed, not to {host}") -> Callable[[], None]:
    """Refuse every connection of this process but to loopback (127.0.0.1, ::1, localhost); returns the undo.

    ``refusal`` is the ``ConnectionRefusedError`` message; ``{host}`` is replaced by the refused host.
    """
    previous = socket.socket.connect

    def loopback_only(self: socket.socket, address: Any) -> None:
        host = address[0] if isinstance(address, tuple) else None  # a Unix socket's address is a path: local
        if isinstance(host, str):
            try:
                allowed = ipaddress.ip_address(host).is_loopback
            except ValueError:
                allowed = host == "localhost"
            if not allowed:
                raise ConnectionRefusedError(refusal.format(host=host))
        previous(self, address)

    socket.socket.connect = loopback_only  # type: ignore[method-assign, assignment]

    def undo() -> None:
        socket.socket.connect = previous  # type: ignore[method-assign]

    return undo


def drop_api_keys() -> Callable[[], None]:
    """Unset the providers' API keys (``API_KEYS``) in this process; returns the undo."""
    removed = {key: os.environ.pop(key) for key in API_KEYS if key in os.environ}
    return lambda: os.environ.update(removed)


@contextmanager
def offline(refusal: str = "only loopback connections are allowed, not to {host}") -> Iterator[None]:
    """No real model request inside: no connection but to loopback, no provider API key (both restored after)."""
    undo_network, undo_keys = block_network(refusal), drop_api_keys()
    try:
        yield
    finally:
        undo_keys()
        undo_network()
