"""What a ``TokenCounter`` caches by: a message's cache key, its media tokens, and references by identity."""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Hashable
from typing import Any

from agno.models.message import Message

IMAGE_TOKENS = 765
"""An image at ``auto``/``high`` detail whose size is unknown (1024x1024: 85 + 4 tiles x 170)."""
IMAGE_TOKENS_LOW = 85
"""An image at ``low`` detail."""
AUDIO_TOKENS_PER_SECOND = 25


def media_tokens(message: Message) -> int:
    """Tokens for images, audio and video attached to ``message`` (no file or network access)."""
    total = 0
    for image in message.images or []:
        total += IMAGE_TOKENS_LOW if getattr(image, "detail", None) == "low" else IMAGE_TOKENS
    if isinstance(message.content, list):
        for part in message.content:
            if isinstance(part, dict) and part.get("type") in ("image_url", "input_image", "image"):
                detail = part.get("image_url", {}).get("detail") if isinstance(part.get("image_url"), dict) else None
                total += IMAGE_TOKENS_LOW if (detail or part.get("detail")) == "low" else IMAGE_TOKENS
    for audio in message.audio or []:
        total += int((getattr(audio, "duration", None) or 0) * AUDIO_TOKENS_PER_SECOND)
    for video in message.videos or []:
        frames = max(1, int((getattr(video, "duration", None) or 0) * (getattr(video, "fps", None) or 1.0)))
        total += frames * IMAGE_TOKENS if getattr(video, "duration", None) else 0
    return total


def stable_hash(value: Any) -> int:
    """A hash of any JSON-like value (strings hash directly; Python caches their hash)."""
    if value is None or isinstance(value, str):
        return hash(value)
    return hash(json.dumps(value, sort_keys=True, default=str))


def _call_key(call: Any) -> Hashable:
    """Cache key of one tool call: its name and arguments (strings hash once, then Python caches it)."""
    fn = call.get("function", call) if isinstance(call, dict) else None
    if not isinstance(fn, dict):
        return hash(str(call))
    arguments = fn.get("arguments")
    return (fn.get("name"), arguments if arguments is None or isinstance(arguments, str) else stable_hash(arguments))


def message_key(message: Message) -> Hashable:
    """Cache key of a message: its id plus everything that changes what the provider sees.

    Strings enter as their hash, which Python computes once per string object, so the key of
    a message already seen costs about a microsecond however long its content is.
    """
    content = message.content
    role = message.role
    calls = message.tool_calls
    media = None
    if message.images or message.audio or message.videos:
        media = (len(message.images or ()), len(message.audio or ()), len(message.videos or ()))
    return (
        message.id,
        role,
        message.name,
        hash(content) if content is None or isinstance(content, str) else stable_hash(content),
        hash(message.compressed_content) if role == "tool" else None,
        tuple(_call_key(c) for c in calls) if calls else None,
        media,
    )


def forget_seen(seen: dict[int, tuple[Any, ...]], key: int, ref: weakref.ref[Any]) -> None:
    """A remembered message is gone: drop its entry (unless a newer message took the key already)."""
    entry = seen.get(key)
    if entry is not None and entry[0] is ref:
        seen.pop(key, None)


def reference(value: Any) -> Callable[[], Any]:
    """A weak reference to ``value``, or (a dict, a list) a strong one: called, it returns ``value`` or ``None``."""
    try:
        return weakref.ref(value)
    except TypeError:
        return lambda: value
