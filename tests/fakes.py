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
