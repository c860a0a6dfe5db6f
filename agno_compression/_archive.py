"""Searching the folded originals of one session: bounded, exact excerpts with their message ids."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agno.models.message import Message

from ._messages import called_tools, calls_by_id, message_text, tool_name_of

SEARCH_TOOL_NAME = "search_folded_history"
SEARCH_HINT = (
    f"To read the exact original of anything summarized here, call {SEARCH_TOOL_NAME}(query=..., tool_name=..., "
    "message_id=...)."
)


@dataclass(frozen=True)
class Hit:
    """One folded message that matched, with an exact excerpt of it."""

    message_id: str
    role: str
    tool_name: str | None
    excerpt: str
    chars: int


def search_messages(
    messages: Iterable[Message],
    *,
    query: str = "",
    tool_name: str = "",
    message_id: str = "",
    limit: int = 5,
    excerpt_chars: int = 1200,
) -> list[Hit]:
    """Messages matching every given criterion (all query words, case-insensitive), newest first."""
    pool: Sequence[Message] = list(messages)
    calls = calls_by_id(pool)
    words = [w.lower() for w in query.split() if w.strip()]
    hits: list[Hit] = []
    for m in reversed(pool):
        text = message_text(m, use_compressed_content=False)
        name = tool_name_of(m, calls) if m.role == "tool" else None
        called = called_tools(m)
        if message_id and m.id != message_id:
            continue
        if tool_name and tool_name != name and tool_name not in called:
            continue
        lower = text.lower()
        if words and not all(w in lower for w in words):
            continue
        hits.append(
            Hit(m.id, m.role, name, _excerpt(text, lower.find(words[0]) if words else 0, excerpt_chars), len(text))
        )
        if len(hits) >= limit:
            break
    return hits


def _excerpt(text: str, at: int, size: int) -> str:
    """Up to ``size`` characters of ``text`` around position ``at``, verbatim, with ellipses where cut."""
    if len(text) <= size:
        return text
    start = max(0, min(at - size // 3, len(text) - size))
    return ("…" if start else "") + text[start : start + size] + ("…" if start + size < len(text) else "")


def render_hits(hits: Sequence[Hit], searched: int) -> str:
    """The tool's answer: each hit with its id and exact excerpt."""
    if not hits:
        return f"No folded message matched (searched {searched} folded messages of this session)."
    parts = [f"{len(hits)} folded message(s) matched (of {searched} searched); excerpts are exact:"]
    for h in hits:
        label = f"{h.role}" + (f" from tool {h.tool_name}" if h.tool_name else "")
        parts.append(f"--- message {h.message_id} ({label}, {h.chars:,} chars) ---\n{h.excerpt}")
    return "\n".join(parts)
