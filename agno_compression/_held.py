"""The working set a fold holds (``_working_set``): the room its section gets in the folded prompt, the section
itself, and about how much of what a fold frees it would keep again (for the early fold).

A fold renders the section at the room ``working_set_ratio`` leaves it; when the fold then shortens kept outputs
down to its goal, the room they freed goes to the section too, rendered again. A summary the fold keeps gives its
section up: the new one is chosen from what that one carried and what the run did since.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from agno.models.message import Message

from ._keeping import _relevance, _working_set
from ._plan import HISTORY, FoldPlan, make_summary_message, summary_kind
from ._runs import RunState

IN_USE_RATIO = 0.85
"""What the request still asks for (``_relevance.pending``) and the files this run's writes were built from
(``_relevance.drawn_on``) may take the folded prompt up to this share of what a fold can free, past
``working_set_ratio``: the files the next steps work from, at the cost of folding sooner. A file only read has
shown no use yet: an agent reading many files is not folded more often for them."""


RECENT_CALLS = 8
"""A file used within this many model calls is in use (held while the room lasts, as the files the request asks for
and those this run's writes drew on)."""
HALF_LIFE = 16
"""Model calls after which a file not used since is half as likely to be used before the next fold."""


@dataclass(frozen=True)
class Pricing:
    """What holding a file until the next fold costs, against reading it again (``pays``)."""

    read: float
    """A cached token's price, as a share of an input token's."""
    fresh: float
    """A token sent anew (a cache write where the provider bills one)."""
    calls: float
    """Model calls until the next fold, expected."""
    prompt: int
    """Tokens of the prompt a call that reads the file again sends (read from the cache)."""

    def pays(self, tokens: int, chance: float) -> bool:
        """Holding ``tokens`` costs them at every call until the next fold and once written anew; a miss, with
        ``chance`` that the agent needs them, costs one call more (its prompt read from the cache) and the output
        written once. Hold what costs less than its expected miss."""
        keep = tokens * (self.calls * self.read + self.fresh)
        miss = self.prompt * self.read + tokens * self.fresh
        return chance * miss >= keep


def use_chance(idle_calls: int) -> float:
    """How likely a file not in use is used before the next fold: halving every ``HALF_LIFE`` calls it was not used
    (after ``RECENT_CALLS``)."""
    return 0.5 ** (max(0, idle_calls - RECENT_CALLS) / HALF_LIFE)


def caps(
    artifacts: Sequence[_working_set.Artifact],
    messages: Sequence[Message],
    in_use: frozenset[str],
    pricing: Pricing | None,
) -> dict[str, int | None]:
    """Per artifact key not in use, at most how many tokens of it pay to hold (``None``: whole, 0: none): whole, else
    as an outline (``OUTLINE_SHARE`` of it), else nothing. A file in use (``in_use``, or used within
    ``RECENT_CALLS`` calls) is held while the room lasts."""
    if pricing is None:
        return {}
    after = [0] * (len(messages) + 1)  # model calls after each position
    for i in range(len(messages) - 1, -1, -1):
        after[i] = after[i + 1] + (messages[i].role == "assistant")
    out: dict[str, int | None] = {}
    for a in artifacts:
        idle = after[min(max(a.used, 0) + 1, len(messages))]
        if a.key in in_use or idle <= RECENT_CALLS:
            continue  # in use: held while the room lasts
        chance = use_chance(idle)
        tokens = len(a.text) // 4 + 1
        outline = int(tokens * _working_set.OUTLINE_SHARE)
        out[a.key] = None if pricing.pays(tokens, chance) else outline if pricing.pays(outline, chance) else 0
    return out


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
    pricing: Pricing | None = None,
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
        _relevance.put_first(first, artifacts),
        rooms[0],
        count,
        visible=visible,
        wide=(wide, rooms[1]),
        caps=caps(artifacts, full, wide, pricing),
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
