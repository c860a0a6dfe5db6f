"""What a ``TokenCounter`` caches by: a message's cache key, its media tokens, and references by identity."""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Hashable
from typing import Any

from agno.models.message import Message

from ._images import image_size, image_tokens

AUDIO_TOKENS_PER_SECOND = 25
VIDEO_FRAME_TOKENS = 765
"""A video frame, counted as a 1024 x 1024 image at GPT-4o's rule (Gemini, which takes video, bills 258)."""


def media_tokens(message: Message, model: str | None = None) -> int:
    """Tokens for images, audio and video attached to ``message`` on ``model`` (no file or network access): each
    image by its provider's rule from its size where its bytes give it (``_images``)."""
    total = 0
    for image in message.images or []:
        data = getattr(image, "content", None)
        url = getattr(image, "url", None)
        data = data if data is not None else url if isinstance(url, str) and url.startswith("data:") else None
        total += image_tokens(model, image_size(data), getattr(image, "detail", None))
    if isinstance(message.content, list):
        for part in message.content:
            if isinstance(part, dict) and part.get("type") in ("image_url", "input_image", "image"):
                total += image_tokens(model, image_size(_part_data(part)), _part_detail(part))
    for audio in message.audio or []:
        total += int((getattr(audio, "duration", None) or 0) * AUDIO_TOKENS_PER_SECOND)
    for video in message.videos or []:
        frames = max(1, int((getattr(video, "duration", None) or 0) * (getattr(video, "fps", None) or 1.0)))
        total += frames * VIDEO_FRAME_TOKENS if getattr(video, "duration", None) else 0
    return total


def _part_data(part: dict[str, Any]) -> Any:
    """The image data of a content part: OpenAI's ``image_url`` (``{"url": ...}`` or the URL itself), Anthropic's
    ``source.data``."""
    url = part.get("image_url")
    url = url.get("url") if isinstance(url, dict) else url
    if isinstance(url, str) and url.startswith("data:"):
        return url
    source = part.get("source")
    return source.get("data") if isinstance(source, dict) else None


def _part_detail(part: dict[str, Any]) -> str | None:
    url = part.get("image_url")
    detail = url.get("detail") if isinstance(url, dict) else None
    return detail or part.get("detail")


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
