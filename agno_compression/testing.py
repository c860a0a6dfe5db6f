"""A scripted agno model for tests, demos and offline replays.

``ScriptedModel`` is a real ``agno.models.base.Model`` whose replies come from a plain
function of the conversation, so a test reads like the conversation it checks::

    def script(messages, info):
        if info.call_index == 0:
            return Reply(tool_calls=[ToolCall("list_files", {"path": "."})])
        return Reply(text="done")

    agent = Agent(model=ScriptedModel(script), tools=[list_files])

Every request the model receives is recorded (``model.requests``) exactly as it was
sent, with its token count, so budgets and tool pairing can be asserted per call.
It never touches the network.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

from agno.metrics import MessageMetrics
from agno.models.base import Model
from agno.models.message import Message
from agno.models.response import ModelResponse

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
