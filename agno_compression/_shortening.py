"""Kept steps made to fit the budget: the largest kept tool outputs, then the long arguments of kept calls (a whole
file written), shortened in context only.

A fold keeps the last tool batch verbatim; when that alone exceeds the budget, the model gets it shortened. Tool
outputs carry their in-context text in agno's ``compressed_content`` (the stored message keeps every byte); a call's
arguments have no such field, so the message holds the shortened calls while the run lasts and
``RunState.call_originals`` puts the originals back before the run, a checkpoint or a paused run is stored.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agno.models.message import Message

from ._keeping._outline import GAP, indexed_outline
from ._keeping._working_set import is_file_read
from ._observations import shorten_text
from ._plan import SYSTEM_ROLES, FoldPlan, is_summary
from ._runs import RunState
from .tokens import TokenCounter

log = logging.getLogger("agno_compression")

Count = Callable[[Sequence[Message]], int]
"""Prompt tokens of a message list with the run's tool definitions."""


def shorten_kept(
    state: RunState,
    plan: FoldPlan,
    count: Count,
    counter: TokenCounter,
    limits: tuple[int, int],
    tool_kinds: Mapping[str, str | None] | None = None,
    slack: int = 0,
) -> list[str]:
    """Shorten the largest kept tool outputs, then kept call arguments, until the prompt fits ``limit`` (aiming
    at ``target``); the ids of the messages shortened. A whole file read is shortened to its outline (the lines
    with the most names, then the names of the rest: what the next step, writing code against it, spells), any
    other output to its beginning and end. Outputs keep ``MIN_OUTPUT`` tokens and arguments ``ARG_FLOOR``
    characters each; where that many outputs and arguments cannot fit at those floors (a run with room), they
    share what the rest of the prompt leaves, each down to ``MIN_SHARED`` tokens. Warns, naming the prompt's parts,
    when it still does not fit with ``slack`` tokens given way (a working set the caller renders again smaller)."""
    limit, target = limits
    total = count(state.live)
    if total <= limit:
        return []
    files = _file_reads(plan.kept, tool_kinds)
    shortened: list[str] = []
    outputs = [
        m for m in plan.kept if m.role == "tool" and (m.compressed_content is not None or isinstance(m.content, str))
    ]  # image or other parts: a text stand-in would change what the model receives
    sizes = {id(m): counter.count_message(m) for m in outputs}

    def cut_outputs(floor: int) -> None:
        nonlocal total
        # a batch of outputs too large together is cut like one output: the largest down to one common size, the
        # smaller ones whole (each keeps its head and tail, a file its outline); a second pass takes what is left
        cap = level(list(sizes.values()), total - int(target + BATCH_AIM * (limit - target)))
        if sum(1 for size in sizes.values() if size > cap) < 2:  # one output alone: cut to the fold's target
            cap = level(list(sizes.values()), total - target)
        for pass_cap in (cap, None):
            for m in sorted(outputs, key=lambda m: sizes[id(m)], reverse=True):
                if total <= limit and (pass_cap is None or sizes[id(m)] <= cap):
                    break  # the first pass cuts every output above the common size, the second only while over
                size = sizes[id(m)]
                allowed = max(floor, cap if pass_cap is not None else size - (total - target))
                if allowed >= size:
                    continue
                text = m.compressed_content if m.compressed_content is not None else m.get_content_string()
                chars = max(int(CHARS_PER_TOKEN * floor), int(len(text) * allowed / max(size, 1)))
                if len(text) <= chars:
                    continue
                short = indexed_outline(text, chars - len(OUTLINED)) if m.id in files else ""
                m.compressed_content = OUTLINED + short if short else shorten_text(text, chars)
                sizes[id(m)] = counter.count_message(m)
                total = count(state.live)
                if m.id not in shortened:
                    shortened.append(m.id)

    cut_outputs(MIN_OUTPUT)
    if total > limit:
        total = _shorten_calls(state, plan, count, counter, total, (limit, target), shortened)
    if total > limit + slack and not state.tight and outputs:  # too many for the floors: they share the rest
        room = limit - (total - sum(sizes.values()))
        cut_outputs(max(MIN_SHARED, min(MIN_OUTPUT - 1, room // len(outputs))))
        if total > limit:
            total = _shorten_calls(state, plan, count, counter, total, (limit, target), shortened, shared=True)
    if total > limit + slack and not state.tight:  # a run with no room was told so once (_fold)
        log.warning(
            "agno-compression: prompt still %d tokens after folding (budget %d); it holds %s",
            total,
            limit,
            parts(state, count, counter),
        )
    return shortened


BATCH_AIM = 0.5
"""A kept batch of several outputs too large together is cut to halfway between the fold's target and the budget
(one output alone to the target): what the next step reads first loses least, and the next batch still finds
room."""
MIN_OUTPUT = 120
"""Fewest tokens a kept output is shortened to (its head and tail still say what it was) while the outputs fit."""
MIN_SHARED = 40
"""Fewest tokens each output of a batch too many to keep ``MIN_OUTPUT`` each is shortened to (eighteen parallel
calls at an 8k budget): the budget is a ceiling, so the outputs share what the rest of the prompt leaves."""
CHARS_PER_TOKEN = 10 / 3
"""Characters kept per token of ``allowed`` at the floor (a cautious ratio: code and paths run denser than prose)."""


def level(sizes: Sequence[int], excess: int) -> int:
    """The size to cut every output above it down to so that ``excess`` tokens go: the largest first, all of them
    to one common size (water-filling); 0 when even that cannot free ``excess``."""
    if excess <= 0:
        return max(sizes, default=0)
    ordered = sorted(sizes, reverse=True)
    for k in range(1, len(ordered) + 1):
        floor = ordered[k] if k < len(ordered) else 0
        if sum(ordered[:k]) - k * floor >= excess:
            return max(floor, (sum(ordered[:k]) - excess) // k)
    return 0


OUTLINED = (
    f"[outline: the lines with the most names, {GAP} where lines are left out, then the names those lines use; "
    "read the file again for them]\n"
)
"""Heads a whole file read shortened to its outline."""


def _file_reads(kept: Sequence[Message], tool_kinds: Mapping[str, str | None] | None) -> set[str]:
    """Ids of the kept tool outputs that are whole files read (by the working set's rules for tools)."""
    reads = {
        str(call["id"])
        for m in kept
        if m.role == "assistant"
        for call in m.tool_calls or []
        if isinstance(call, dict) and call.get("id") and is_file_read(call, tool_kinds)
    }
    return {m.id for m in kept if m.role == "tool" and m.id and str(m.tool_call_id or "") in reads}


def _shorten_calls(
    state: RunState,
    plan: FoldPlan,
    count: Count,
    counter: TokenCounter,
    total: int,
    limits: tuple[int, int],
    shortened: list[str],
    shared: bool = False,
) -> int:
    """Shorten the long string arguments of kept calls, largest message first, until the prompt fits; the stored
    run keeps the originals (``RunState.call_originals``). Returns the new total. ``shared``: the arguments of a
    message share what it may keep under the budget, each down to ``MIN_SHARED`` tokens' worth of characters."""
    limit, target = limits
    callers = sorted((m for m in plan.kept if m.role == "assistant" and m.tool_calls), key=counter.count_message)
    for m in reversed(callers):
        if total <= limit:
            break
        size = counter.count_message(m)
        allowed = max(200, size - (total - target))
        floor = ARG_FLOOR
        if shared:
            long = sum(len(_long_strings(c, int(CHARS_PER_TOKEN * MIN_SHARED))) for c in m.tool_calls or [])
            room = int(CHARS_PER_TOKEN * max(0, size - (total - limit))) // max(1, long)
            floor, allowed = max(int(CHARS_PER_TOKEN * MIN_SHARED), min(ARG_FLOOR - 1, room)), size - (total - target)
        if allowed >= size:
            continue
        calls = [shorten_call(c, max(0.0, allowed / size), floor) for c in m.tool_calls or []]
        if calls == m.tool_calls:
            continue
        state.call_originals.setdefault(id(m), (m, list(m.tool_calls or [])))
        m.tool_calls = calls
        total = count(state.live)
        if m.id not in shortened:
            shortened.append(m.id)
    return total


ARG_FLOOR = 400
"""Characters a long string argument of a kept call keeps at least, while the call's arguments fit."""


def _arguments(call: Any) -> dict[str, Any] | None:
    """A tool call's JSON arguments as a dict (agno's dict form only), else ``None``."""
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        return None
    raw = call["function"].get("arguments")
    try:
        args = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    return args if isinstance(args, dict) else None


def _long_strings(call: Any, floor: int = ARG_FLOOR) -> list[str]:
    args = _arguments(call) or {}
    return [k for k, v in args.items() if isinstance(v, str) and len(v) > floor]


def shorten_call(call: Any, share: float, floor: int = ARG_FLOOR) -> Any:
    """A copy of one tool call whose string arguments over ``floor`` characters are cut to ``share`` of their
    length, never below ``floor`` (JSON arguments only; anything else is returned as it is)."""
    args = _arguments(call)
    if args is None:
        return call
    cut = {
        k: shorten_text(v, max(floor, int(len(v) * share))) if isinstance(v, str) and len(v) > floor else v
        for k, v in args.items()
    }
    if cut == args:
        return call
    return {**call, "function": {**call["function"], "arguments": json.dumps(cut, ensure_ascii=False)}}


def parts(state: RunState, count: Count, counter: TokenCounter) -> str:
    """What the live list is made of, largest first: which part keeps a prompt over its budget."""
    live = state.live
    system = [m for m in live if m.role in SYSTEM_ROLES]
    summaries = [m for m in live if is_summary(m)]
    current = [m for m in live if m is state.current]
    apart = {id(m) for m in (*system, *summaries, *current)}
    rest = [m for m in live if id(m) not in apart]
    sizes = {
        "system messages and tool definitions": count(system),
        "summaries": counter.count_messages(summaries) if summaries else 0,
        "the current user message": counter.count_messages(current) if current else 0,
        "the kept steps": counter.count_messages(rest) if rest else 0,
    }
    return ", ".join(f"{name} {size:,}" for name, size in sorted(sizes.items(), key=lambda kv: -kv[1]) if size)
