"""Loopback servers that answer like Anthropic's Messages API and OpenAI's Chat Completions API, and bill every
request by the provider's documented prompt caching (``agno_compression.pricing``).

agno's real ``Claude`` and ``OpenAIChat`` classes, with their real SDK clients, talk to them over HTTP on
127.0.0.1: what the provider would receive is exactly what they send, cache markers and ``prompt_cache_key``
included. A script (``body -> Reply``) plays the model's answers; the usage in each response is what the
provider reports (Anthropic: ``input_tokens`` after the last breakpoint, ``cache_read_input_tokens``,
``cache_creation_input_tokens`` and its ``cache_creation`` split; OpenAI: ``prompt_tokens`` with
``prompt_tokens_details.cached_tokens`` inside it), streamed or not, and a prompt over ``context_window`` gets
the provider's "prompt is too long" error. ``calls`` keeps every request with its usage and bill.

Used by the bench and the tests; the rules themselves live in ``agno_compression.pricing`` and are tested on
the documentation's examples.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from uuid import uuid4

from ..pricing import (
    CacheError,
    CacheUsage,
    PriceModel,
    PromptCache,
    anthropic_blocks,
    openai_blocks,
    price_model_for,
)
from ..testing import Reply
from ..tokens import TokenCounter

Script = Callable[[Mapping[str, Any]], "Reply | str"]
"""What the model answers to a request body."""


@dataclass(frozen=True)
class BilledCall:
    """One request a server received, with what the provider would report and bill."""

    body: dict[str, Any]
    usage: CacheUsage
    price: PriceModel
    error: str | None = None
    """The error the server answered instead of a reply (too long, invalid cache markers)."""

    @property
    def billed(self) -> float:
        """Input billed, in tokens at full price (0 for a rejected request)."""
        return 0.0 if self.error else self.usage.billed(self.price)


class _Rejected(Exception):
    def __init__(self, status: int, payload: dict[str, Any]) -> None:
        super().__init__(payload)
        self.status = status
        self.payload = payload


class ProviderServer:
    """A provider's API on 127.0.0.1 (``start``/``stop``, or ``with``): base of the two servers below."""

    provider = ""

    def __init__(
        self,
        script: Script,
        *,
        price: PriceModel | None = None,
        counter: TokenCounter | None = None,
        clock: Callable[[], float] = time.monotonic,
        context_window: int | None = None,
    ) -> None:
        self.script = script
        self.price = price
        self.counter = counter or TokenCounter("gpt-4o")
        self.clock = clock
        self.context_window = context_window
        self.calls: list[BilledCall] = []
        self._caches: dict[str, PromptCache] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The base URL to give the SDK client."""
        if self._server is None:
            raise RuntimeError("the server is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> ProviderServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                owner._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet: the calls are recorded in ``calls``

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name=f"{self.provider}-loopback")
        self._thread.daemon = True
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ProviderServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    # --- billing -------------------------------------------------------------------------------------

    def price_for(self, model_id: str) -> PriceModel:
        """The price model of a request for ``model_id``: the one given, else the table's row."""
        return self.price or price_model_for(provider=self.provider, model_id=model_id)

    def cache_for(self, model_id: str) -> PromptCache:
        """The provider's cache for one model (entries are per model)."""
        cache = self._caches.get(model_id)
        if cache is None:
            cache = self._caches[model_id] = PromptCache(self.price_for(model_id), self.clock)
        return cache

    def billed(self) -> float:
        """Input billed over every call so far, in tokens at full price."""
        return sum(call.billed for call in self.calls)

    def reply_for(self, body: Mapping[str, Any]) -> Reply:
        reply = self.script(body)
        return Reply(text=reply) if isinstance(reply, str) else reply

    def output_tokens(self, reply: Reply) -> int:
        text = (reply.text or "") + "".join(json.dumps(c.arguments) for c in reply.tool_calls)
        return max(1, self.counter.count_text(text))

    # --- HTTP ----------------------------------------------------------------------------------------

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        try:
            length = int(request.headers.get("Content-Length") or 0)
            body = json.loads(request.rfile.read(length) or b"{}")
            status, headers, chunks = self.answer(request.path, body)
        except _Rejected as rejected:
            status, headers, chunks = rejected.status, {}, iter([json.dumps(rejected.payload).encode()])
        request.send_response(status)
        streamed = headers.get("Content-Type") == "text/event-stream"
        request.send_header("Content-Type", headers.get("Content-Type", "application/json"))
        request.send_header("Connection", "close")
        request.end_headers()
        for chunk in chunks:
            request.wfile.write(chunk)
            if streamed:
                request.wfile.flush()

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], Iterator[bytes]]:
        raise NotImplementedError

    def _bill(
        self, body: dict[str, Any], blocks: Any, automatic: str | None, reject: Callable[..., _Rejected]
    ) -> CacheUsage:
        model_id = str(body.get("model", ""))
        price = self.price_for(model_id)
        total = sum(b.tokens for b in blocks)
        with self._lock:
            if self.context_window is not None and total > self.context_window:
                self.calls.append(BilledCall(body, CacheUsage(total), price, error="too long"))
                raise reject("too long", (total, self.context_window))
            try:
                usage = self.cache_for(model_id).charge(blocks, automatic=automatic)
            except CacheError as exc:
                self.calls.append(BilledCall(body, CacheUsage(total), price, error=str(exc)))
                raise reject("cache", str(exc)) from exc
            self.calls.append(BilledCall(body, usage, price))
        return usage


def _sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> Iterator[bytes]:
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        yield (f"event: {name}\n" if name else "").encode() + f"data: {text}\n\n".encode()


class AnthropicServer(ProviderServer):
    """``POST /v1/messages`` (and ``/v1/messages/count_tokens``) as Anthropic answers them; pass ``url`` as the
    client's ``base_url`` (agno: ``Claude(client_params={"base_url": server.url})``)."""

    provider = "anthropic"

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], Iterator[bytes]]:
        blocks, automatic = anthropic_blocks(body, self.counter.count_text)
        if path.rstrip("/").endswith("/count_tokens"):
            return 200, {}, iter([json.dumps({"input_tokens": sum(b.tokens for b in blocks)}).encode()])
        usage = self._bill(body, blocks, automatic, self._reject)
        reply = self.reply_for(body)
        content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
        for call in reply.tool_calls:
            arguments = call.arguments if isinstance(call.arguments, dict) else {"input": call.arguments}
            content.append(
                {
                    "type": "tool_use",
                    "id": call.id or f"toolu_{uuid4().hex[:20]}",
                    "name": call.name,
                    "input": arguments,
                }
            )
        stop = "tool_use" if reply.tool_calls else "end_turn"
        fields = {
            "input_tokens": usage.uncached,
            "cache_creation_input_tokens": usage.written + usage.written_long,
            "cache_read_input_tokens": usage.read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": usage.written,
                "ephemeral_1h_input_tokens": usage.written_long,
            },
        }
        output = self.output_tokens(reply)
        message = {
            "id": f"msg_{uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {**fields, "output_tokens": output},
        }
        if not body.get("stream"):
            return 200, {}, iter([json.dumps(message).encode()])
        events: list[tuple[str | None, dict[str, Any] | str]] = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {**message, "content": [], "stop_reason": None, "usage": {**fields, "output_tokens": 1}},
                },
            ),
        ]
        for index, block in enumerate(content):
            if block["type"] == "text":
                events += [
                    (
                        "content_block_start",
                        {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                    ),
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "text_delta", "text": block["text"]},
                        },
                    ),
                ]
            else:
                events += [
                    (
                        "content_block_start",
                        {"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}},
                    ),
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
                        },
                    ),
                ]
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        events += [
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": output},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        return 200, {"Content-Type": "text/event-stream"}, _sse(events)

    @staticmethod
    def _reject(kind: str, detail: Any) -> _Rejected:
        # the API's own wording for a prompt over the window (agno classifies it as a context overflow)
        message = f"prompt is too long: {detail[0]} tokens > {detail[1]} maximum" if kind == "too long" else str(detail)
        return _Rejected(400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}})


class OpenAIServer(ProviderServer):
    """``POST /v1/chat/completions`` as OpenAI answers it; pass ``url + "/v1"`` as the client's ``base_url``
    (agno: ``OpenAIChat(base_url=server.url + "/v1")``)."""

    provider = "openai"

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], Iterator[bytes]]:
        blocks = openai_blocks(body, self.counter.count_text)
        usage = self._bill(body, blocks, None, self._reject)
        reply = self.reply_for(body)
        calls = [
            {
                "id": call.id or f"call_{uuid4().hex[:20]}",
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments),
                },
            }
            for call in reply.tool_calls
        ]
        output = self.output_tokens(reply)
        details: dict[str, Any] = {"cached_tokens": usage.read, "audio_tokens": 0}
        if usage.written:
            details["cache_write_tokens"] = usage.written
        usage_fields = {
            "prompt_tokens": usage.prompt,
            "completion_tokens": output,
            "total_tokens": usage.prompt + output,
            "prompt_tokens_details": details,
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        }
        finish = "tool_calls" if calls else "stop"
        ident, created = f"chatcmpl-{uuid4().hex[:20]}", int(time.time())
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": reply.text}
            if calls:
                message["tool_calls"] = calls
            completion = {
                "id": ident,
                "object": "chat.completion",
                "created": created,
                "model": body.get("model"),
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage_fields,
            }
            return 200, {}, iter([json.dumps(completion).encode()])

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> tuple[None, dict[str, Any]]:
            return None, {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": body.get("model"),
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }

        events: list[tuple[str | None, dict[str, Any] | str]] = [chunk({"role": "assistant", "content": ""})]
        if reply.text:
            events.append(chunk({"content": reply.text}))
        for index, call in enumerate(calls):
            events.append(chunk({"tool_calls": [{"index": index, **call}]}))
        events.append(chunk({}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append(
                (
                    None,
                    {
                        "id": ident,
                        "object": "chat.completion.chunk",
                        "created": created,
                        "model": body.get("model"),
                        "choices": [],
                        "usage": usage_fields,
                    },
                )
            )
        events.append((None, "[DONE]"))
        return 200, {"Content-Type": "text/event-stream"}, _sse(events)

    @staticmethod
    def _reject(kind: str, detail: Any) -> _Rejected:
        error: dict[str, Any]
        if kind == "too long":
            error = {
                "message": f"This model's maximum context length is {detail[1]} tokens. However, your messages "
                f"resulted in {detail[0]} tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        else:
            error = {"message": str(detail), "type": "invalid_request_error", "param": None, "code": None}
        return _Rejected(400, {"error": error})
