"""The working set a fold holds (``_working_set``): the room its section gets in the folded prompt, the section
itself, and about how much of what a fold frees it would keep again (for the early fold).

A fold renders the section at the room ``working_set_ratio`` leaves it; when the fold then shortens kept outputs
down to its goal, the room they freed goes to the section too, rendered again. A summary the fold keeps gives its
section up: the new one is chosen from what that one carried and what the run did since.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from agno.models.message import Message

from . import _relevance, _working_set
from ._plan import HISTORY, FoldPlan, make_summary_message, summary_kind
from ._runs import RunState

IN_USE_RATIO = 0.85
"""What the request still asks for (``_relevance.pending``) and the files this run's writes were built from
(``_relevance.drawn_on``) may take the folded prompt up to this share of what a fold can free, past
``working_set_ratio``: the files the next steps work from, at the cost of folding sooner. A file only read has
shown no use yet: an agent reading many files is not folded more often for them."""


Rooms = tuple[int, int]
"""The section's room, and the room of the files in use (``IN_USE_RATIO``)."""


def room(fixed: int, limit: int, rest: int, ratio: float, cap: int) -> int:
    """Tokens the section may take beside ``rest`` (the rest of the folded prompt): the prompt may hold ``fixed``
    (the system messages and the request: a long plan leaves files room) plus ``ratio`` of the rest of ``limit``,
    the section at most ``cap``."""
    return min(fixed + int((limit - fixed) * ratio) - rest, cap)


def rooms(fixed: int, limit: int, rest: int, ratio: float, cap: int) -> Rooms:
    """``room`` at ``ratio``, and at ``IN_USE_RATIO`` for the files in use (never less)."""
    return room(fixed, limit, rest, ratio, cap), room(fixed, limit, rest, max(ratio, IN_USE_RATIO), cap)


def section(
    state: RunState,
    plan: FoldPlan,
    rooms: Rooms,
    count: Callable[[str], int],
    tool_kinds: Mapping[str, str | None] | None,
) -> str:
    """The section within ``rooms`` (the room, and the room of the files in use: what the request still asks for,
    what this run's writes were built from): the run's files, pages and reports (with those the summaries in context
    carry), what the request still asks for first, those the kept steps show verbatim left out."""
    summaries = [m for m in (plan.history_summary, plan.progress_summary) if m is not None]  # earlier runs' files
    carried = [a for m in summaries for a in _working_set.split(m.get_content_string())[1]]
    with state.original_calls():  # a write shortened in context wrote the whole file
        collected = _working_set.collect(full := state.full_run(state.live), carried, tool_kinds)
    artifacts = _relevance.in_this_run(collected, full, state.current)
    first = _relevance.pending(artifacts, full, state.current)  # a plan's pattern file first
    drawn = _relevance.drawn_on(artifacts, full, state.current, tool_kinds)  # what this run's writes drew on
    wide = frozenset(a.key for a in (*first, *drawn))
    visible = frozenset(m.id for m in (*plan.before, *plan.kept) if m.id)
    return _working_set.render(
        _relevance.put_first(first, artifacts), rooms[0], count, visible=visible, wide=(wide, rooms[1])
    )


def estimate(state: RunState, plan: FoldPlan, tool_kinds: Mapping[str, str | None] | None, max_tokens: int) -> int:
    """About how many tokens of what this fold would fold its section would keep (a quarter token per character
    of what the run holds and would no longer see verbatim), at most ``max_tokens``."""
    walk = state.walk = state.walk or _working_set.Walk(tool_kinds)  # walks only what came since
    with state.original_calls():
        walked = walk.artifacts(full := state.full_run(state.live))
    artifacts = _relevance.in_this_run(walked, full, state.current)
    visible = frozenset(m.id for m in (*plan.before, *plan.kept) if m.id)
    return min(sum(len(a.text) for a in artifacts if not a.sources <= visible) // 4, max_tokens)


def carried_tokens(plan: FoldPlan, count: Callable[[str], int]) -> int:
    """Tokens of the sections the summaries this fold keeps carry (they give them up: ``without_section``)."""
    return sum(_working_set.held_tokens(m.get_content_string(), count) for m in plan.kept_summaries())


def without_section(summary: Message | None) -> Message | None:
    """``summary`` without its working-set section (``summary`` itself when it has none)."""
    if summary is None:
        return None
    text = summary.get_content_string()
    rest = _working_set.split(text)[0]
    return summary if rest == text else make_summary_message(rest, summary_kind(summary) or HISTORY)
