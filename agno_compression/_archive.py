"""Searching the folded originals of one session: bounded, exact excerpts with their message ids."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agno.models.message import Message
from agno.run.base import RunContext  # resolved at run time: agno injects the run's context by this annotation

from ._messages import called_tools, calls_by_id, message_text, tool_name_of
from ._sessions import full_messages

log = logging.getLogger("agno_compression")

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


def searchable(messages: Iterable[Message]) -> list[Message]:
    """``messages`` without the search tool's own calls and answers.

    Those get folded like any other step, and they quote the query and the hits: left in, each search
    would match the previous ones first, and repeated searches would crowd the originals out of the hits.
    """
    pool = list(messages)
    calls = calls_by_id(pool)

    def own(m: Message) -> bool:
        if m.role == "tool":
            return tool_name_of(m, calls) == SEARCH_TOOL_NAME
        called = called_tools(m)
        return bool(called) and all(name == SEARCH_TOOL_NAME for name in called)

    return [m for m in pool if not own(m)]


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


def search_tool_function(search: Callable[..., str]) -> Callable[..., str]:
    """The ``search_folded_history`` tool agno offers the model; ``search(run_context, query=..., ...)`` answers."""

    def search_folded_history(
        run_context: RunContext,
        query: str = "",
        tool_name: str = "",
        message_id: str = "",
        limit: int = 5,
    ) -> str:
        """Search the original messages folded out of this conversation to save context.

        Returns exact excerpts with their message ids. Give words to find (all must appear), a tool name,
        or a message id quoted in the summary.

        Args:
            query: Words that must all appear in the message (case-insensitive).
            tool_name: Only results of (or calls to) this tool.
            message_id: Only the message with this id.
            limit: At most this many messages (1 to 20).
        """
        return search(run_context, query=query, tool_name=tool_name, message_id=message_id, limit=limit)

    return search_folded_history


def search_folded(
    run: Callable[[], Any], records: Any, *, query: str, tool_name: str, message_id: str, limit: int
) -> str:
    """What ``search_folded_history`` answers for the run ``run()`` finds (a ``RunState`` or ``None``), from its
    folded messages and, through ``records`` (the manager's ``FoldRecorder``), its session's earlier runs' ones."""
    try:
        state = run()
        if state is None:
            return "No folded history in this conversation yet."
        records.flush(state.context)
        folded = {i for event in state.events for i in event.folded_ids}
        pool: dict[str, Message] = {m.id: m for m in state.ledger}
        earlier = records.folded_ids(state.context)
        if earlier and state.context is not None and state.context.db is not None:
            for m in full_messages(state.context.db, state.context.session_id):
                pool.setdefault(m.id, m)
        folded |= earlier
        candidates = searchable(m for m in pool.values() if m.id in folded)
        hits = search_messages(
            candidates, query=query, tool_name=tool_name, message_id=message_id, limit=max(1, min(int(limit), 20))
        )
        return render_hits(hits, len(candidates))
    except Exception as exc:  # a tool error must not end the run; its type only: the message may quote session text
        log.warning("agno-compression: search of folded history failed (%s)", type(exc).__name__)
        return f"Search of folded history failed ({type(exc).__name__})."
