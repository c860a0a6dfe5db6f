"""Claude Code recordings: its session files and ``claude -p --output-format stream-json`` output, as raw messages.

Both are JSONL of records whose ``message`` is an Anthropic Messages API message: ``assistant`` records hold
``text``, ``thinking`` and ``tool_use`` blocks, ``user`` records a prompt or ``tool_result`` blocks. Claude Code
writes one record per content block of a model response, all with the response's ``message.id``, and each tool
result right after the block that asked for it; records of one response are merged back into one assistant
message here, its results after it.
"""

from __future__ import annotations

from typing import Any

from ._raw import Raw, Run, merge_consecutive_user, raw_message, text, tool_call, tool_result

_CONVERSATION = {"user", "assistant"}
"""Record types that are part of the conversation; the rest (summary, system, progress, file-history-snapshot,
queue-operation, result...) is the client's bookkeeping."""


def is_claude_code(data: Any) -> bool:
    """Whether parsed JSONL is Claude Code records: ``type`` user/assistant with an Anthropic ``message``."""
    if not isinstance(data, list) or not data or not all(isinstance(r, dict) for r in data):
        return False
    if any("role" in r for r in data):  # an OpenAI chat
        return False
    return any(r.get("type") in _CONVERSATION and isinstance(r.get("message"), dict) for r in data)


def _is_sidechain(record: Raw) -> bool:
    """A subagent's record: ``isSidechain`` in session files, ``parent_tool_use_id`` in stream-json."""
    return bool(record.get("isSidechain") or record.get("parent_tool_use_id"))


def _block_text(block: Any) -> str:
    """A content block a model reads as text; images and documents are described, not inlined."""
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return text(block)
    kind = block.get("type")
    if kind == "text":
        return text(block.get("text"))
    if kind in ("image", "document"):
        source = block.get("source") or {}
        detail = source.get("media_type") or source.get("type") or "attachment"
        return f"[{kind}: {detail}]"
    return text(block)


def _content_text(content: Any) -> str:
    """A message's or tool result's content (a string or a list of blocks) as text."""
    if isinstance(content, list):
        return "\n".join(part for part in (_block_text(b) for b in content) if part)
    return text(content)


def _assistant(record: Raw, messages: list[Raw], open_ids: dict[str, Raw]) -> None:
    """Add an assistant record's blocks to its response's message (a new one for a new ``message.id``)."""
    message = record["message"]
    texts = [
        text(b.get("text")) for b in message.get("content") or [] if isinstance(b, dict) and b.get("type") == "text"
    ]
    if isinstance(message.get("content"), str):
        texts = [message["content"]]
    calls = [
        tool_call(b.get("id"), b.get("name"), b.get("input"))
        for b in message.get("content") or []
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]
    # Thinking blocks are dropped: the model's own reasoning, which an agno Agent does not send back as context.
    response = message.get("id")
    target = open_ids.get(response) if response else None
    if target is None:
        if not texts and not calls:
            return  # a response of thinking alone
        target = raw_message("assistant", "\n".join(texts))
        if calls:
            target["tool_calls"] = calls
        messages.append(target)
        open_ids.clear()  # a new response: earlier ones are closed
        if response:
            open_ids[response] = target
        return
    if texts:
        target["content"] = "\n".join([target["content"], *texts]) if target["content"] else "\n".join(texts)
    if calls:
        target.setdefault("tool_calls", []).extend(calls)


def _user(record: Raw, messages: list[Raw], open_ids: dict[str, Raw]) -> None:
    """A user record: tool results (kept in order after their call) and any prompt text."""
    content = record["message"].get("content")
    if isinstance(content, str):
        blocks: list[Any] = [{"type": "text", "text": content}]
    else:
        blocks = list(content or [])
    prompt: list[str] = []
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            messages.append(
                tool_result(
                    block.get("tool_use_id"), _content_text(block.get("content")), error=bool(block.get("is_error"))
                )
            )
        elif part := _block_text(block):
            prompt.append(part)
    if prompt:
        messages.append(raw_message("user", "\n".join(prompt)))
        open_ids.clear()  # the user spoke: the next assistant record starts a new turn


def _messages(records: list[Raw]) -> list[Raw]:
    messages: list[Raw] = []
    open_ids: dict[str, Raw] = {}  # message.id -> the assistant message its records are merged into
    for record in records:
        kind = record.get("type")
        if kind not in _CONVERSATION or not isinstance(record.get("message"), dict):
            continue
        if record.get("isVisibleInTranscriptOnly"):
            continue  # shown to the user only, never sent to the model
        if kind == "assistant":
            _assistant(record, messages, open_ids)
        else:
            _user(record, messages, open_ids)
    return messages


def claude_code_runs(data: list[Raw]) -> list[Run]:
    """One run per file: the main agent's conversation, or a subagent's when the file holds only its records.

    Records of a subagent inside a main session file (``isSidechain``, or stream-json's ``parent_tool_use_id``)
    are left out: the main agent never saw them, only the ``Task`` tool's result. A file of subagent records alone
    (``agent-*.jsonl``) is that subagent's run.
    """
    main = [r for r in data if not _is_sidechain(r)]
    records = main if any(r.get("type") in _CONVERSATION for r in main) else data
    return [("0", merge_consecutive_user(_messages(records)))]
