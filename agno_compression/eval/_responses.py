"""OpenAI Responses API items, bare or as OpenAI Codex CLI rollouts (``~/.codex/sessions/.../rollout-*.jsonl``).

Items are ``message`` (role user / assistant / developer / system, content parts ``input_text`` / ``output_text``),
``function_call`` / ``function_call_output`` and ``custom_tool_call`` / ``custom_tool_call_output`` (Codex's
``apply_patch``) paired by ``call_id``, ``local_shell_call`` (older Codex) and ``reasoning``. A Codex rollout wraps
each item as ``{"timestamp", "type": "response_item", "payload": item}`` beside its own bookkeeping (``session_meta``,
``turn_context``, ``event_msg``); older rollouts hold the bare items after a first ``{id, timestamp, instructions}``
line.
"""

from __future__ import annotations

import json
from typing import Any

from ._raw import Raw, Run, merge_consecutive_user, raw_message, text, tool_call, tool_result

_CALLS = {"function_call", "custom_tool_call", "local_shell_call"}
_OUTPUTS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}
_ITEMS = {"message", "reasoning", *_CALLS, *_OUTPUTS}
_ROLES = {"user": "user", "assistant": "assistant", "developer": "developer", "system": "system"}


def _item(record: Any) -> Raw | None:
    """The Responses item of a record: a rollout's ``response_item`` payload or a bare item; else ``None``."""
    if not isinstance(record, dict):
        return None
    if record.get("type") == "response_item" and isinstance(record.get("payload"), dict):
        record = record["payload"]
    return record if record.get("type") in _ITEMS else None


def is_responses(data: Any) -> bool:
    """Whether parsed content is Responses items (bare, as a rollout, or an object with an ``input`` list)."""
    if isinstance(data, dict) and isinstance(data.get("input"), list):
        data = data["input"]
    if not isinstance(data, list) or not data or not all(isinstance(r, dict) for r in data):
        return False
    items = [i for i in (_item(r) for r in data) if i is not None]
    return bool(items) and any(i.get("type") in _CALLS | _OUTPUTS or i.get("type") == "reasoning" for i in items)


def _parts(content: Any) -> str:
    """A message's content: ``input_text`` / ``output_text`` parts joined, images described."""
    if not isinstance(content, list):
        return text(content)
    out = []
    for part in content:
        if isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text", "refusal"):
            out.append(text(part.get("text") or part.get("refusal")))
        elif isinstance(part, dict) and part.get("type") in ("input_image", "input_file"):
            out.append(f"[{part['type'].removeprefix('input_')}]")
        else:
            out.append(text(part))
    return "\n".join(p for p in out if p)


def _output(item: Raw) -> str:
    """What a call returned; Codex stores shell results as JSON ``{"output": ..., "metadata": ...}``."""
    output = item.get("output")
    if isinstance(output, str):
        try:
            decoded = json.loads(output)
        except ValueError:
            return output
        return text(decoded["output"]) if isinstance(decoded, dict) and "output" in decoded else output
    if isinstance(output, list):
        return _parts(output)
    return text(output)


def _call(item: Raw) -> Raw:
    """A function, custom (``input`` text, e.g. an apply_patch) or local shell call as an OpenAI tool call."""
    call_id = item.get("call_id") or item.get("id")
    if item["type"] == "custom_tool_call":
        return tool_call(call_id, item.get("name"), {"input": text(item.get("input"))})
    if item["type"] == "local_shell_call":
        return tool_call(call_id, "local_shell", item.get("action") or {})
    return tool_call(call_id, item.get("name"), item.get("arguments"))


def responses_runs(data: Any) -> list[Run]:
    """One run: the items in order; the calls after a model message (or after a result) form one assistant turn."""
    if isinstance(data, dict):
        data = data["input"]
    messages: list[Raw] = []
    first = data[0] if data else {}
    meta = first.get("payload") if first.get("type") == "session_meta" else first
    if isinstance(meta, dict) and isinstance(meta.get("instructions"), str) and meta["instructions"]:
        messages.append(raw_message("system", meta["instructions"]))
    names: dict[str, str] = {}
    turn: Raw | None = None  # the assistant message the next calls join, until a result or a new message
    for item in filter(None, map(_item, data)):
        kind = item["type"]
        if kind == "message":
            role = _ROLES.get(str(item.get("role")), "user")
            messages.append(raw_message(role, _parts(item.get("content"))))
            turn = messages[-1] if role == "assistant" else None
        elif kind in _CALLS:
            call = _call(item)
            names[call["id"]] = call["function"]["name"]
            if turn is None:
                turn = raw_message("assistant", "")
                messages.append(turn)
            turn.setdefault("tool_calls", []).append(call)
        elif kind in _OUTPUTS:
            call_id = str(item.get("call_id") or item.get("id"))
            messages.append(tool_result(call_id, _output(item), names.get(call_id)))
            turn = None
        # reasoning items are the model's own (often encrypted) thoughts: left out
    return [("0", merge_consecutive_user(messages))]
