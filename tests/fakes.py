"""Fakes at the boundary shared by the tests: a provider that rejects prompts over its context window."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agno.exceptions import ContextWindowExceededError
from agno.models.message import Message

from agno_compression.testing import Reply, ScriptedModel


@dataclass
class LimitedModel(ScriptedModel):
    """A scripted model whose provider rejects a prompt over ``limit`` tokens with its "prompt too long" error."""

    limit: int = 2_500
    rejected: int = 0

    def _reply(self, messages: list[Message], tools: list[dict[str, Any]] | None) -> tuple[Reply, int]:
        tokens = self.counter.count_prompt(messages, tools)
        if tokens > self.limit:
            self.rejected += 1
            raise ContextWindowExceededError(f"prompt is too long: {tokens} tokens > {self.limit} maximum")
        return super()._reply(messages, tools)


SIGNING = "k" * 40
"""The HS256 key the AgentOS apps of the authorization tests verify JWTs with."""


def bearer(sub: str | None, *scopes: str) -> dict[str, str]:
    """The ``Authorization`` header of a caller of an AgentOS app under JWT authorization (``SIGNING``)."""
    import time

    import jwt

    claims: dict[str, Any] = {"scopes": list(scopes), "exp": int(time.time()) + 600}
    if sub is not None:
        claims["sub"] = sub
    return {"Authorization": f"Bearer {jwt.encode(claims, SIGNING, algorithm='HS256')}"}


def read_file(path: str) -> str:
    """Read a source file."""
    return f"# {path}\n" + "\n".join(
        f"def handler_{path[:-3]}_{i}(request):\n    return request.value_{i}" for i in range(40)
    )


class FileLoop:
    """A loopback provider's model side: ``reads`` ``read_file`` calls, one file each, then an answer (and again for
    the next run). ``unique_ids``: call ids never repeat across runs (a provider that keeps earlier runs' blocks)."""

    def __init__(self, reads: int = 14, *, unique_ids: bool = False) -> None:
        self.reads = reads
        self.calls = 0
        self.unique_ids = unique_ids

    def __call__(self, body: Any = None) -> Reply:
        from uuid import uuid4

        from agno_compression.testing import ToolCall

        self.calls += 1
        if self.calls <= self.reads:
            call_id = f"toolu_{uuid4().hex[:12]}" if self.unique_ids else f"toolu_{self.calls:04d}"
            return Reply(
                text=f"Reading part {self.calls}.",
                tool_calls=[ToolCall("read_file", {"path": f"m{self.calls}.py"}, call_id)],
            )
        self.calls = 0
        return Reply(text="handler_m3_7 needs the fix.")
