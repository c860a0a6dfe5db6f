"""Request bodies as a provider's cache sees them: the ``Block``s of an Anthropic Messages request or an OpenAI
chat completion, in cache order (tools, system, messages), each with its tokens and its breakpoint.

Token counts come from the caller's ``count(text)`` (the package's o200k counter in the bench): not the
provider's own tokenizer, but the same for every setting compared. A block's identity is its content without
its ``cache_control`` marker (moving a breakpoint does not change the prompt), with the role of its message and
whether it opens the message, so the same blocks grouped into other messages are another prompt.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..tokens._images import image_size, image_tokens
from ._cache import LONG, SHORT, Block, chain

Count = Callable[[str], int]

DOCUMENT_TOKENS = 1_600
"""What a document block is counted as (about a megapixel image, Anthropic's own rule of thumb); an image block is
counted by Anthropic's rule for its size (``tokens._images``)."""
BLOCK_OVERHEAD = 3
"""Tokens of framing per block (type, role and separators) on top of its text."""


def ttl_of(cache_control: Any) -> str | None:
    """``"5m"``/``"1h"`` for a ``cache_control`` value, ``None`` for none."""
    if not isinstance(cache_control, Mapping):
        return None
    return LONG if cache_control.get("ttl") == LONG else SHORT


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _without_mark(block: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


def _text_of(value: Any) -> str:
    """The text a content value carries: a string, or the texts of its blocks (other blocks as JSON)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence):
        return "\n".join(_text_of(item) for item in value)
    if isinstance(value, Mapping):
        if value.get("type") == "text":
            return str(value.get("text", ""))
        if value.get("type") == "tool_result":
            return _text_of(value.get("content", ""))
        if value.get("type") == "tool_use":
            return f"{value.get('name', '')} {_canonical(value.get('input', {}))}"
        return _canonical(_without_mark(value))
    return str(value)


def _tokens(block: Mapping[str, Any], count: Count) -> int:
    kind = block.get("type")
    source = block.get("source")
    if kind == "image" and isinstance(source, Mapping):  # by Anthropic's rule, from its size when the data gives it
        return image_tokens("claude", image_size(source.get("data"))) + BLOCK_OVERHEAD
    if kind == "document" and isinstance(source, Mapping):
        return DOCUMENT_TOKENS + BLOCK_OVERHEAD
    return count(_text_of(block)) + BLOCK_OVERHEAD


def _markable(block: Mapping[str, Any]) -> bool:
    kind = block.get("type")
    if kind in ("thinking", "redacted_thinking"):
        return False
    return not (kind == "text" and not block.get("text"))


def anthropic_blocks(body: Mapping[str, Any], count: Count) -> tuple[list[Block], str | None]:
    """The blocks of an Anthropic Messages request body and its automatic-caching lifetime (top-level
    ``cache_control``), or ``None``."""
    blocks: list[Block] = []
    key = 0

    def add(block: Mapping[str, Any], where: str, tokens: int, markable: bool = True) -> None:
        nonlocal key
        key = chain(key, (where, _canonical(_without_mark(block))))
        kind = block.get("type")
        run = kind if kind in ("tool_use", "tool_result") else ""
        blocks.append(Block(key, tokens, ttl_of(block.get("cache_control")), markable, run))

    for tool in body.get("tools") or ():
        add(tool, "tool", count(_canonical(_without_mark(tool))) + BLOCK_OVERHEAD)
    system = body.get("system")
    if isinstance(system, str) and system:
        add({"type": "text", "text": system}, "system", count(system) + BLOCK_OVERHEAD)
    elif isinstance(system, Sequence):
        for block in system:
            add(block, "system", _tokens(block, count), _markable(block))
    for message in body.get("messages") or ():
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or ())
        for n, block in enumerate(parts):
            block = block if isinstance(block, Mapping) else {"type": "text", "text": str(block)}
            add(block, f"{message.get('role')}:{n == 0}", _tokens(block, count), _markable(block))
    return blocks, ttl_of(body.get("cache_control"))


def openai_blocks(body: Mapping[str, Any], count: Count) -> list[Block]:
    """The blocks of an OpenAI chat completion body: each tool definition, then each message whole."""
    blocks: list[Block] = []
    key = 0
    for tool in body.get("tools") or ():
        key = chain(key, ("tool", _canonical(tool)))
        blocks.append(Block(key, count(_canonical(tool)) + BLOCK_OVERHEAD))
    for message in body.get("messages") or ():
        key = chain(key, ("message", _canonical(message)))
        calls = message.get("tool_calls") or ()
        text = _text_of(message.get("content") or "") + "".join(_canonical(c.get("function", c)) for c in calls)
        blocks.append(Block(key, count(text) + BLOCK_OVERHEAD + 1))
    return blocks
