"""The raw messages every recording format converts to, before ``_loaders`` pairs them into agno messages.

A raw message is an OpenAI-shaped dict: role, ``str`` content, OpenAI ``tool_calls`` / ``tool_call_id`` /
``tool_name`` (and ``tool_call_error`` for a result the recording marks as an error).
"""

from __future__ import annotations

import json
import threading
from typing import Any

Raw = dict[str, Any]
"""An OpenAI-shaped message dict: role, content, and tool_calls / tool_call_id / tool_name."""
Run = tuple[str, list[Raw]]
"""A run id (unique within its file) and its messages."""

# Roles skipped while converting the current file (per thread): ``_loaders`` sets the counter and warns once per file.
skipped_roles = threading.local()


def text(value: Any) -> str:
    """Message content as ``str``: text parts are joined, other non-strings JSON-encoded."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(p, dict) and p.get("type") == "text" for p in value):
        return "\n".join(text(p.get("text")) for p in value)
    return json.dumps(value, ensure_ascii=False)


def tool_call(call_id: Any, name: Any, arguments: Any) -> Raw:
    """A tool call in OpenAI shape (arguments as a JSON string)."""
    if not call_id or not name:
        raise ValueError(f"tool call without id or name: {call_id!r} {name!r}")
    args = arguments if isinstance(arguments, str) else json.dumps(arguments if arguments is not None else {})
    return {"id": str(call_id), "type": "function", "function": {"name": str(name), "arguments": args}}


def raw_message(role: str, content: Any, **extra: Any) -> Raw:
    """A raw message with ``str`` content."""
    return {"role": role, "content": text(content), **extra}


def tool_result(call_id: Any, content: Any, tool_name: Any = None, error: bool = False) -> Raw:
    """A raw tool-result message; ``error`` marks a result the recording flags as a failed call."""
    extra = {"tool_call_error": True} if error else {}
    return raw_message("tool", content, tool_call_id=str(call_id), tool_name=tool_name, **extra)


def merge_consecutive_user(messages: list[Raw]) -> list[Raw]:
    """Consecutive user messages as one, as the client sent them in one request (a caveat and a command, an
    interrupt notice and the next prompt): replayed apart, each would start a run the model never answered."""
    out: list[Raw] = []
    for message in messages:
        previous = out[-1] if out else None
        if previous is not None and message["role"] == "user" and previous["role"] == "user" and len(message) == 2:
            previous["content"] = "\n\n".join(part for part in (previous["content"], message["content"]) if part)
            continue
        out.append(dict(message) if message["role"] == "user" else message)
    return out
