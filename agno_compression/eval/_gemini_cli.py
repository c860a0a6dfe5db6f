"""Gemini CLI recordings: its saved sessions (``~/.gemini/tmp/<project>/chats/session-*.json``), as raw messages.

A session is ``{sessionId, projectHash, startTime, lastUpdated, messages}``; each message has a ``type``:
``user`` (a prompt), ``gemini`` (the model's text, ``thoughts`` and ``toolCalls``, each call holding its own
``result``: Gemini ``functionResponse`` parts) or ``info`` / ``error`` / ``warning`` (notices the CLI showed,
never sent to the model). Newer versions append the session as JSONL instead: a header record, message records
(a message is re-appended as its tool calls finish: the last copy of an id wins) and ``{"$set": ...}`` updates
of the header.
"""

from __future__ import annotations

from typing import Any

from ._raw import Raw, Run, merge_consecutive_user, raw_message, text, tool_call, tool_result

_SPOKEN = {"user", "gemini"}
_NOTICES = {"info", "error", "warning"}


def _is_message(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") in _SPOKEN | _NOTICES and "role" not in item


def is_gemini_cli(data: Any) -> bool:
    """Whether parsed content is a Gemini CLI session: a JSON object or its JSONL records."""
    if isinstance(data, dict):
        messages = data.get("messages")
        return (
            isinstance(messages, list)
            and bool(messages)
            and all(_is_message(m) for m in messages)
            and any(m.get("type") == "gemini" for m in messages)
        )
    if isinstance(data, list) and data and all(isinstance(r, dict) for r in data):
        return "sessionId" in data[0] and "projectHash" in data[0] and any(_is_message(r) for r in data[1:])
    return False


def _session(data: Any) -> list[Raw]:
    """A session's messages, from the JSON object or the JSONL records (the last copy of an id wins)."""
    if isinstance(data, dict):
        return list(data["messages"])
    by_id: dict[str, Raw] = {}
    order: list[Raw] = []
    for record in data[1:]:
        if not _is_message(record):
            continue  # "$set" updates and other bookkeeping
        key = record.get("id")
        if key is not None and key in by_id:
            by_id[key].clear()
            by_id[key].update(record)  # replaced in place: keeps its first position
            continue
        copy = dict(record)
        order.append(copy)
        if key is not None:
            by_id[key] = copy
    return order


def _parts_text(parts: Any) -> str:
    """Gemini ``Part``s (``text``, ``inlineData``, ``fileData``...) or a plain string as text."""
    if isinstance(parts, str):
        return parts
    if isinstance(parts, dict):
        parts = [parts]
    if not isinstance(parts, list):
        return text(parts)
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict) and "text" in part:
            out.append(text(part["text"]))
        elif isinstance(part, dict) and ("inlineData" in part or "fileData" in part):
            data = part.get("inlineData") or part.get("fileData") or {}
            out.append(f"[{data.get('mimeType') or 'binary'} attachment]")  # an image or file the model was shown
        elif part:
            out.append(text(part))
    return "\n".join(p for p in out if p)


def _response_text(response: Any) -> str:
    """What a tool answered: its ``output`` (or ``error``, or ``llmContent``), else the whole response."""
    if isinstance(response, dict):
        for key in ("output", "error", "llmContent", "content"):
            if key in response:
                return _parts_text(response[key])
    return text(response)


def _call_result(call: Raw) -> tuple[str, bool]:
    """The text a tool call returned to the model and whether it failed."""
    error = call.get("status") not in (None, "success")
    pieces = []
    for part in call.get("result") or []:
        if isinstance(part, dict) and "functionResponse" in part:
            response = part["functionResponse"].get("response")
            error = error or (isinstance(response, dict) and "error" in response and "output" not in response)
            pieces.append(_response_text(response))
        elif part:
            pieces.append(_parts_text(part))  # parts sent beside the response (the content of a read image...)
    if not pieces and call.get("resultDisplay") is not None:
        pieces.append(text(call["resultDisplay"]))
    return "\n".join(p for p in pieces if p), error


def gemini_cli_runs(data: Any) -> list[Run]:
    """One run per session; ``thoughts`` (the model's reasoning) and the CLI's notices are left out."""
    messages: list[Raw] = []
    for item in _session(data):
        kind = item.get("type")
        if kind == "user":
            messages.append(raw_message("user", _parts_text(item.get("content"))))
        elif kind == "gemini":
            calls = item.get("toolCalls") or []
            assistant = raw_message("assistant", _parts_text(item.get("content")))
            if not calls and not assistant["content"]:
                continue  # a turn of thoughts alone
            if calls:
                assistant["tool_calls"] = [tool_call(c.get("id"), c.get("name"), c.get("args")) for c in calls]
            messages.append(assistant)
            for call in calls:
                output, error = _call_result(call)
                if call.get("result") is None and call.get("resultDisplay") is None:
                    continue  # never answered (cancelled before it ran)
                messages.append(tool_result(call.get("id"), output, call.get("name"), error=error))
    return [("0", merge_consecutive_user(messages))]
