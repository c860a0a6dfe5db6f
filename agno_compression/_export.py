"""Training-data export: a session's full original messages as OpenAI-chat JSONL.

Format (one JSON object per line)::

    {"format": "agno-compression-export/1", "session_id": "...", "run_id": "..." | null,
     "messages": [{"role": "system" | "user" | "assistant" | "tool", "content": "...",
                   "tool_calls": [{"id", "type": "function", "function": {"name", "arguments"}}],  # assistant
                   "tool_call_id": "...", "name": "<tool name>",                                    # tool
                   "id": "<agno message id>"}, ...],
     "compressed_view": [...same shape...]}      # only with --with-view: what the model sees now

``messages`` holds every original message in order, with tool outputs in full. The file is
read back by ``load_trajectories`` (and so by ``agno-compression eval``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from agno.models.message import Message

from ._sessions import compressed_view, session_runs
from ._stores import agno_session

EXPORT_FORMAT = "agno-compression-export/1"


def to_chat(message: Message, *, in_context: bool = False) -> dict[str, Any]:
    """One message as an OpenAI-chat dict; ``in_context`` uses the text the model saw (masked/shortened)."""
    content = message.get_content(use_compressed_content=in_context and message.role == "tool")
    out: dict[str, Any] = {"role": message.role, "content": content, "id": message.id}
    if message.tool_calls and message.role == "assistant":
        out["tool_calls"] = [
            {"id": c.get("id"), "type": "function", "function": dict(c.get("function", {}))} for c in message.tool_calls
        ]
    if message.role == "tool":
        out["tool_call_id"] = message.tool_call_id
        if message.tool_name:
            out["name"] = message.tool_name
    return out


def export_examples(db: Any, session_id: str, *, per: str = "session", with_view: bool = False) -> Iterator[dict]:
    """The training examples of one session: one per session or one per top-level run."""
    if per not in ("session", "run"):
        raise ValueError(f"per must be 'session' or 'run', got {per!r}")
    session, _ = agno_session(db, session_id)
    if session is None:
        return
    runs = session_runs(session, top_level=True)
    view = [to_chat(m, in_context=True) for m in compressed_view(db, session_id)] if with_view else None
    groups = (
        [(r.run_id, [m for m in r.messages or [] if not m.from_history]) for r in runs]
        if per == "run"
        else [(None, [m for r in runs for m in r.messages or [] if not m.from_history])]
    )
    for run_id, messages in groups:
        example: dict[str, Any] = {
            "format": EXPORT_FORMAT,
            "session_id": session_id,
            "run_id": run_id,
            "messages": [to_chat(m) for m in messages],
        }
        if view is not None:
            example["compressed_view"] = view
        yield example
