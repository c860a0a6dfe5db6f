"""Where Anthropic cache breakpoints go in a request, and the request with them: pure planning, no I/O.

Anthropic writes a cache entry only where a request marks a block with ``cache_control`` (at most four per
request) and, for each marker, looks back 20 positions for an entry an earlier request wrote. A fold keeps
``[tools][system][history summary][current user]`` byte-identical for the rest of the run, so that is where a
breakpoint pays most: every later call reads it, fold calls included. The others follow the conversation:

1. **tail**, the newest block: the next call of the loop reads everything up to it (unless the request's own
   top-level ``cache_control`` already puts one there);
2. **stable**, the end of the current user message: what every call of the run, before and after its folds,
   shares; reading it also keeps the entry alive;
3. **bridge**, the previous call's tail, when the tail's lookback cannot reach it (a step added more than 20
   positions);
4. **system**, the end of the tools and system prompt: read when a fold rewrites the history summary.

Positions count blocks in cache order (tools, system blocks, then every content block of every message).
Markers the user set (``cache_tools``, ``cache_system_prompt``, system prompt blocks, blocks of their own) are
kept and counted; ours never duplicate one, never exceed the limit, and never put a 5-minute entry before a
1-hour one (they take the 1-hour lifetime when a later marker of the user's has it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

SHORT, LONG = "5m", "1h"
TOOL_RUNS = ("tool_use", "tool_result")


@dataclass(frozen=True, kw_only=True)
class Layout:
    """A request's blocks as positions in cache order."""

    kinds: tuple[str, ...]
    """The ``type`` of every block, in cache order (``"tool"`` for a tool definition)."""
    marks: Mapping[int, str]
    """Positions the request already marks, with their lifetime."""
    automatic: str | None = None
    """The lifetime of a top-level ``cache_control`` (automatic caching on the last markable block), if any."""
    messages_start: int = 0
    """The position of the first message block (after the tools and the system blocks)."""

    @property
    def last_markable(self) -> int | None:
        return next((i for i in range(len(self.kinds) - 1, -1, -1) if markable(self.kinds[i])), None)


def markable(kind: str) -> bool:
    """Whether a block of this type may carry ``cache_control`` (thinking blocks may not)."""
    return kind not in ("thinking", "redacted_thinking", "")


def reach(kinds: Sequence[str], start: int, lookback: int = 20) -> int:
    """The oldest position a breakpoint at ``start`` still finds an entry at (a run of ``tool_use`` or of
    ``tool_result`` blocks takes one position of the window)."""
    positions, j = 1, start
    while j > 0:
        same_run = kinds[j] in TOOL_RUNS and kinds[j - 1] == kinds[j]
        if not same_run:
            if positions >= lookback:
                break
            positions += 1
        j -= 1
    return j


def plan_breakpoints(
    layout: Layout,
    *,
    stable: int | None,
    previous_tail: int | None = None,
    system_end: int | None = None,
    tail: bool = True,
    limit: int = 4,
    lookback: int = 20,
) -> dict[int, str]:
    """Our breakpoints for one request: position -> lifetime, by the module's order of preference.

    ``stable`` is the last block of the current user message, ``previous_tail`` the newest block of the previous
    call of the run when nothing was folded since, ``system_end`` the last tool or system block.
    """
    taken = dict(layout.marks)
    last = layout.last_markable
    if layout.automatic is not None and last is not None and last not in taken:
        taken[last] = layout.automatic  # automatic caching uses one of the slots
    wanted: list[int | None] = []
    if tail and layout.automatic is None:
        wanted.append(last)
    wanted.append(stable)
    newest = last if last is not None else -1
    if previous_tail is not None and previous_tail < reach(layout.kinds, newest, lookback):
        wanted.append(previous_tail)
    wanted.append(system_end)
    ours: dict[int, str] = {}
    for position in wanted:
        if len(taken) + len(ours) >= limit:
            break
        if position is None or position < 0 or position in taken or position in ours:
            continue
        if not markable(layout.kinds[position]):
            continue
        ours[position] = SHORT
    # a 1-hour entry may not follow a 5-minute one: ours take 1 hour where a marker of the user's after them does
    for position in ours:
        if any(ttl == LONG and p > position for p, ttl in taken.items()):
            ours[position] = LONG
    return ours if ttl_order_holds({**taken, **ours}) else {}  # the user's own markers break it: leave them be


def ttl_order_holds(marks: Mapping[int, str]) -> bool:
    """Whether no 1-hour marker comes after a 5-minute one (the API rejects such a request)."""
    short_seen = False
    for position in sorted(marks):
        if marks[position] == LONG and short_seen:
            return False
        short_seen = short_seen or marks[position] == SHORT
    return True


def _with_mark(block: Any, ttl: str) -> dict[str, Any]:
    """A copy of ``block`` (a dict or an SDK model) with ``cache_control``; the original is left as it was."""
    data = block.model_dump(exclude_none=True) if hasattr(block, "model_dump") else dict(block)
    control: dict[str, str] = {"type": "ephemeral"}
    if ttl == LONG:
        control["ttl"] = LONG
    data["cache_control"] = control
    return data


def block_kind(block: Any) -> str:
    """A content block's ``type`` (dicts and SDK models alike)."""
    kind = block.get("type") if isinstance(block, Mapping) else getattr(block, "type", None)
    if kind == "text":
        text = block.get("text") if isinstance(block, Mapping) else getattr(block, "text", None)
        return "text" if text else ""
    return str(kind or "")


def block_mark(block: Any) -> str | None:
    control = block.get("cache_control") if isinstance(block, Mapping) else getattr(block, "cache_control", None)
    if isinstance(control, Mapping):
        return LONG if control.get("ttl") == LONG else SHORT
    return None


def content_blocks(message: Mapping[str, Any]) -> list[Any]:
    """The content blocks of a formatted message (a string is one text block)."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content or [])


def layout_of(
    tools: Sequence[Any] | None, system: Any, messages: Sequence[Mapping[str, Any]], automatic: Any = None
) -> Layout:
    """The layout of a request as the Anthropic SDK receives it (``tools``, ``system``, ``messages``)."""
    kinds: list[str] = []
    marks: dict[int, str] = {}

    def add(kind: str, mark: str | None) -> None:
        if mark is not None:
            marks[len(kinds)] = mark
        kinds.append(kind)

    for tool in tools or ():
        add("tool", block_mark(tool))
    system_blocks = [{"type": "text", "text": system}] if isinstance(system, str) and system else list(system or [])
    for block in system_blocks:
        add(block_kind(block) or "system", block_mark(block))
    start = len(kinds)
    for message in messages:
        for block in content_blocks(message):
            add(block_kind(block), block_mark(block))
    auto = (LONG if automatic.get("ttl") == LONG else SHORT) if isinstance(automatic, Mapping) else None
    return Layout(kinds=tuple(kinds), marks=marks, automatic=auto, messages_start=start)


def mark_messages(messages: Sequence[Mapping[str, Any]], marks: Mapping[int, str], start: int) -> list[Any]:
    """``messages`` with ``cache_control`` on the blocks at ``marks`` (positions counted from ``start``, the
    position of the first message block); marked blocks and their messages are copies, the rest is shared."""
    out: list[Any] = []
    position = start
    for message in messages:
        blocks = content_blocks(message)
        hits = {i: marks[position + i] for i in range(len(blocks)) if position + i in marks}
        if hits:
            new_blocks = [_with_mark(b, hits[i]) if i in hits else b for i, b in enumerate(blocks)]
            message = {**message, "content": new_blocks}
        out.append(message)
        position += len(blocks)
    return out
