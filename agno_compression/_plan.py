"""The fold plan: which messages stay verbatim and which are folded into a summary.

Everything here is pure: it reads a message list and returns a plan; nothing is
mutated, nothing is counted, nothing is stored. The manager acts on the plan.

Layout after a fold (docs/design.md)::

    [system] [history summary] [current user message] [progress summary] [last tool batch and after]

- The current user message is the run's own input: the newest ``role="user"`` message that is
  not from history, not a summary and not a message agno appended after tool results to carry
  their media (images, audio, video, files) or retry guidance; those belong to the batch they follow.
- The history summary covers everything before the current user message (it absorbs an earlier
  history summary); the progress summary covers this run's earlier steps (it absorbs the previous
  progress summary). Nothing from after the current user message is ever placed before it, and a
  fold with no new history leaves ``[system, history summary, current user]`` untouched, so the
  provider's prompt cache keeps hitting.
- Kept verbatim: system messages, the current user message, the last tool batch of this run (the
  newest assistant message with ``tool_calls`` after the current user, with everything after it),
  and a tool call whose result has not arrived yet. With no tool batch after the current user, the
  messages after it are kept. Pairs are never split: a kept call keeps all of its results and a
  kept result keeps its call.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agno.models.message import Message

from ._messages import call_ids, result_ids

SUMMARY_MARKER = "agno_compression_summary"
"""Attribute set on the summary messages this package injects (never persisted by agno); its value is the kind."""

HISTORY = "history"
"""Kind of the summary placed before the current user message: the conversation before it."""
PROGRESS = "progress"
"""Kind of the summary placed after the current user message: this run's folded steps."""

SYSTEM_ROLES = frozenset({"system", "developer"})


def summary_kind(message: Message) -> str | None:
    """``"history"`` or ``"progress"`` for a summary injected by agno-compression, else ``None``."""
    # The marker is a pydantic "extra" field: read it there (getattr on a missing field is ~40x slower).
    extra = getattr(message, "__pydantic_extra__", None)
    kind = extra.get(SUMMARY_MARKER) if extra else None
    if not kind:
        return None
    return kind if kind in (HISTORY, PROGRESS) else HISTORY


def is_summary(message: Message) -> bool:
    """True for a summary message injected by agno-compression."""
    extra = getattr(message, "__pydantic_extra__", None)
    return bool(extra.get(SUMMARY_MARKER, False)) if extra else False


def make_summary_message(text: str, kind: str = HISTORY) -> Message:
    """The ``role="user"`` message that carries a summary; agno does not store it with the run."""
    if kind not in (HISTORY, PROGRESS):
        raise ValueError(f"summary kind must be {HISTORY!r} or {PROGRESS!r}, got {kind!r}")
    message = Message(role="user", content=text, add_to_agent_memory=False)
    setattr(message, SUMMARY_MARKER, kind)
    return message


@dataclass(frozen=True)
class FoldPlan:
    """What a fold does to one message list (every message is in exactly one part, or is a summary)."""

    system: tuple[Message, ...]
    """System (and developer) messages, kept first and verbatim."""
    history: tuple[Message, ...]
    """Messages before the current user message folded into the history summary, in order."""
    history_summary: Message | None
    """The history summary in context now: absorbed when ``history`` is not empty, else kept as is."""
    before: tuple[Message, ...]
    """Messages before the current user message kept verbatim (tool partners of kept messages)."""
    current: Message | None
    """The current user message (the run's own input), kept verbatim."""
    steps: tuple[Message, ...]
    """This run's messages folded into the progress summary, in order."""
    progress_summary: Message | None
    """The progress summary in context now: absorbed when ``steps`` is not empty, else kept as is."""
    kept: tuple[Message, ...]
    """Messages after the current user message kept verbatim: the last tool batch and after it."""

    @property
    def folded(self) -> tuple[Message, ...]:
        """Every message the fold removes from the context, in order."""
        return (*self.history, *self.steps)

    @property
    def has_work(self) -> bool:
        """True when folding would remove at least one message."""
        return bool(self.history or self.steps)

    @property
    def previous_summary(self) -> Message | None:
        """The newest summary in context (the progress summary if there is one)."""
        return self.progress_summary or self.history_summary

    def view(self, history_summary: Message | None = None, progress_summary: Message | None = None) -> list[Message]:
        """The message list the model sees with these summaries (``None`` leaves one out)."""
        head = [history_summary] if history_summary is not None else []
        current = [self.current] if self.current is not None else []
        progress = [progress_summary] if progress_summary is not None else []
        return [*self.system, *head, *self.before, *current, *progress, *self.kept]

    def fixed_view(self) -> list[Message]:
        """What no fold removes or shortens: the system messages and the current user message."""
        return [*self.system, *([self.current] if self.current is not None else [])]

    def kept_summaries(self) -> list[Message]:
        """The summaries in context this fold keeps (it absorbs the others into the ones it writes)."""
        kept = (self.history_summary if not self.history else None, self.progress_summary if not self.steps else None)
        return [m for m in kept if m is not None]

    def unchanged_view(self) -> list[Message]:
        """The view that keeps the summaries already in context and drops nothing else (the floor plus summaries)."""
        return self.view(
            self.history_summary if not self.history else None, self.progress_summary if not self.steps else None
        )


def _is_attachment(messages: Sequence[Message], i: int) -> bool:
    """A user message agno appended after tool results (media carrier, retry guidance): part of that batch."""
    if getattr(messages[i], "temporary", False):
        return True
    for j in range(i - 1, -1, -1):
        previous = messages[j]
        if is_summary(previous):
            continue
        if previous.from_history:  # the run's input follows history, whatever the history ends with
            return False
        if previous.role == "tool":  # agno appends a carrier right after its own run's results
            return True
        return previous.role == "user" and not previous.from_history and _is_attachment(messages, j)
    return False


def find_current_user(messages: Sequence[Message]) -> int | None:
    """Index of the current user message: the newest user message of this run that is not a batch attachment."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.role == "user" and not m.from_history and not is_summary(m) and not _is_attachment(messages, i):
            return i
    return None


Ids = Sequence[Collection[str]]
"""Per message, the call ids it makes (``call_ids``), or those it answers (``result_ids``): found once per plan."""


def _last_batch_index(messages: Sequence[Message], start: int, calls: Ids | None = None) -> int | None:
    calls = calls if calls is not None else [call_ids(m) for m in messages]
    for i in range(len(messages) - 1, start - 1, -1):
        if messages[i].role == "assistant" and calls[i]:
            return i
    return None


def _pair_closure(
    messages: Sequence[Message], kept: set[int], calls: Ids | None = None, answers: Ids | None = None
) -> set[int]:
    """Grow ``kept`` until no kept call lacks a kept result and no kept result lacks its call."""
    calls = calls if calls is not None else [call_ids(m) for m in messages]
    answers = answers if answers is not None else [result_ids(m) for m in messages]
    caller: dict[str, int] = {}
    results: dict[str, list[int]] = {}
    for i in range(len(messages)):
        for cid in calls[i]:
            caller.setdefault(cid, i)
        for cid in answers[i]:
            results.setdefault(cid, []).append(i)
    pending = list(kept)
    while pending:
        i = pending.pop()
        linked: list[int] = []
        for cid in calls[i]:
            linked += results.get(cid, [])
        for cid in answers[i]:
            if cid in caller:
                linked.append(caller[cid])
        for j in linked:
            if j not in kept:
                kept.add(j)
                pending.append(j)
    return kept


def _pending_calls(messages: Sequence[Message], calls: Ids | None = None, answers: Ids | None = None) -> set[int]:
    """The newest assistant message with calls, if one of its calls has no result yet.

    Only the newest caller can be waiting (human approval, external execution); an
    unanswered call further back is broken history and is folded, not sent.
    """
    calls = calls if calls is not None else [call_ids(m) for m in messages]
    answers = answers if answers is not None else [result_ids(m) for m in messages]
    last = _last_batch_index(messages, 0, calls)
    if last is None:
        return set()
    answered: set[str] = set()
    for ids in answers[last + 1 :]:
        answered.update(ids)
    return {last} if any(cid not in answered for cid in calls[last]) else set()


def _unanswered_calls(messages: Sequence[Message], start: int, calls: Ids, answers: Ids) -> set[int]:
    """Indices from ``start`` on of assistant messages with a call that no message answers, and their results."""
    answered = {cid for ids in answers for cid in ids}
    broken = {i for i in range(start, len(messages)) if any(cid not in answered for cid in calls[i])}
    cids = {cid for i in broken for cid in calls[i]}
    return broken | {i for i in range(start, len(messages)) if not cids.isdisjoint(answers[i])}


def _orphan_results(messages: Sequence[Message], calls: Ids | None = None, answers: Ids | None = None) -> set[int]:
    """Indices of tool messages none of whose call ids appear in any assistant message."""
    calls = calls if calls is not None else [call_ids(m) for m in messages]
    answers = answers if answers is not None else [result_ids(m) for m in messages]
    made: set[str] = set()
    for ids in calls:
        made.update(ids)
    return {i for i, m in enumerate(messages) if m.role == "tool" and made.isdisjoint(answers[i])}


_AUTO = -1


def plan_fold(messages: Sequence[Message], current: int | None = _AUTO, keep_from: int | None = None) -> FoldPlan:
    """Plan the fold of ``messages`` (see the module docstring for the rules).

    ``current`` is the index of the current user message when the caller knows it (the manager
    remembers the run's input message); by default it is found with ``find_current_user``.
    ``keep_from`` keeps every message from that index on verbatim as well (the recent steps the
    next step is likely to need; ``recent_start`` picks it): before the current user message it
    keeps the newest history there, after the summary that absorbs the older part.
    """
    if current == _AUTO:
        current = find_current_user(messages)
    elif current is not None and not (0 <= current < len(messages) and messages[current].role == "user"):
        raise ValueError(f"current must index a user message, got {current!r}")
    if keep_from is not None and not 0 <= keep_from <= len(messages):
        raise ValueError(f"keep_from must index the message list (0 to {len(messages)}), got {keep_from!r}")
    calls = [call_ids(m) for m in messages]  # each message's ids once: the rules below look at them again and again
    answers = [result_ids(m) for m in messages]
    system = {i for i, m in enumerate(messages) if m.role in SYSTEM_ROLES}
    summaries = [i for i, m in enumerate(messages) if is_summary(m)]
    kept: set[int] = set(range(keep_from, len(messages))) if keep_from is not None else set()
    if current is not None:
        kept.add(current)
        batch = _last_batch_index(messages, current + 1, calls)
        kept.update(range(batch if batch is not None else current + 1, len(messages)))
    else:
        batch = _last_batch_index(messages, 0, calls)
        if batch is not None:
            kept.update(range(batch, len(messages)))
    pending = _pending_calls(messages, calls, answers)
    if keep_from is not None:  # the window keeps no broken call (one without results that is not pending)
        kept -= _unanswered_calls(messages, keep_from, calls, answers) - pending
    kept |= pending
    kept -= set(summaries) | system
    # A tool result whose call is nowhere in the list can never be sent safely: fold it.
    kept -= _orphan_results(messages, calls, answers)
    kept = _pair_closure(messages, kept, calls, answers)
    # with no current user message everything kept counts as the tail after the (empty) fold point
    split = current if current is not None else -1
    history_end = current if current is not None else len(messages)
    before_summaries = [i for i in summaries if i < history_end]
    after_summaries = [i for i in summaries if i > history_end]
    skip = kept | system | set(summaries)
    return FoldPlan(
        system=tuple(messages[i] for i in sorted(system)),
        history=tuple(m for i, m in enumerate(messages[:history_end]) if i not in skip),
        history_summary=messages[before_summaries[-1]] if before_summaries else None,
        before=tuple(messages[i] for i in sorted(kept) if i < split),
        current=messages[current] if current is not None else None,
        steps=tuple(m for i, m in enumerate(messages) if i > history_end and i not in skip),
        progress_summary=messages[after_summaries[-1]] if after_summaries else None,
        kept=tuple(messages[i] for i in sorted(kept) if i > split),
    )


def recent_start(messages: Sequence[Message], sizes: Sequence[int], budget: int, current: int | None) -> int | None:
    """Where the recent steps that fit in ``budget`` tokens begin (``sizes[i]`` is message ``i``'s), or ``None``.

    Walks back from the newest message over whole steps: a step starts at an assistant message (its tool
    results follow it), or at a user message in the history. System messages, summaries and the current
    user message are kept anyway and cost nothing here; the walk stops at the first step that does not fit,
    so what is kept is contiguous and newest.
    """
    used = 0
    start: int | None = None
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.role in SYSTEM_ROLES or i == current or is_summary(m):
            if is_summary(m) and current is not None and i > current:
                break  # the progress summary: everything before it back to the current user message is kept
            continue
        used += sizes[i]
        if used > budget:
            break
        if m.role == "assistant" or (m.role == "user" and (current is None or i < current)):
            start = i
    return start


@dataclass(frozen=True)
class PairViolation:
    """One message that breaks tool-call pairing."""

    index: int
    kind: str
    """``"orphan_result"`` (a tool result before or without its call) or ``"missing_result"``."""
    call_id: str


def pair_violations(messages: Sequence[Message], *, allow_pending_last: bool = True) -> list[PairViolation]:
    """Tool-pair problems in a message list as a model would receive it.

    A tool result must follow the assistant message that made its call; every call must
    have its result, except the calls of the last assistant message with calls when
    ``allow_pending_last`` (a call still waiting for its result).
    """
    violations: list[PairViolation] = []
    made: set[str] = set()
    answered: set[str] = set()
    last_caller = max((i for i, m in enumerate(messages) if call_ids(m)), default=None)
    for i, m in enumerate(messages):
        made.update(call_ids(m))
        for cid in result_ids(m):
            if cid not in made:
                violations.append(PairViolation(i, "orphan_result", cid))
            answered.add(cid)
    for i, m in enumerate(messages):
        if allow_pending_last and i == last_caller:
            continue
        for cid in call_ids(m):
            if cid not in answered:
                violations.append(PairViolation(i, "missing_result", cid))
    return violations


def filter_folded(messages: Sequence[Message], folded_ids: Iterable[str], summary_text: str | None) -> list[Message]:
    """The live list of a new run with the session's earlier folds applied.

    Drops every ``from_history`` message whose id is in ``folded_ids``; a drop takes its
    tool-call partners with it (a call and all of its results go, or stay, together), so
    no orphan result and no call without results is left behind. Messages of the current
    run are never dropped unless they are tool-paired to a dropped history message.
    Summaries already in the list are removed; ``summary_text`` (if any) is inserted as
    a summary message right after the leading system messages. Pure: returns a new list.
    """
    folded = folded_ids if isinstance(folded_ids, (set, frozenset)) else set(folded_ids)
    # This runs on every load of a long session (10,000 messages, most of them folded), so a folded message
    # costs one look: it goes anyway, and matters only through the call ids it shares with the others.
    others: list[Message] = []
    folded_result_ids: list[Any] = []  # tool_call_id of each folded tool result
    folded_calls: list[Any] = []  # tool_calls of each folded assistant message
    folded_multi: list[Message] = []  # folded tool messages holding several results (Gemini)
    for m in messages:
        extra = m.__pydantic_extra__  # is_summary, inlined
        if extra and extra.get(SUMMARY_MARKER):
            continue
        if m.id not in folded or not m.from_history:
            others.append(m)
            continue
        role = m.role
        if role == "tool":
            folded_result_ids.append(m.tool_call_id)
            if m.tool_calls:
                folded_multi.append(m)
        elif role == "assistant":
            folded_calls.append(m.tool_calls)
    by_cid: dict[str, list[int]] = {}  # call id -> the others naming it (the call or a result)
    cids_of: dict[int, list[str] | set[str]] = {}
    for i, m in enumerate(others):
        cids = call_ids(m) or result_ids(m)  # by role, at most one of them is not empty
        if cids:
            cids_of[i] = cids
            for cid in cids:
                by_cid.setdefault(cid, []).append(i)
    kept = others
    if by_cid:
        # A drop takes every message linked to it through shared call ids (a call and all of its results).
        spread = [i for c in folded_result_ids if c and str(c) in by_cid for i in by_cid[str(c)]]
        for calls in folded_calls:
            for c in calls or ():
                if isinstance(c, dict) and c.get("id") and str(c["id"]) in by_cid:
                    spread += by_cid[str(c["id"])]
        spread += (i for m in folded_multi for cid in result_ids(m) if cid in by_cid for i in by_cid[cid])
        gone = set(spread)
        while spread:
            for cid in cids_of[spread.pop()]:
                for j in by_cid[cid]:
                    if j not in gone:
                        gone.add(j)
                        spread.append(j)
        if gone:
            kept = [m for i, m in enumerate(others) if i not in gone]
    if summary_text:
        head = 0
        while head < len(kept) and kept[head].role in SYSTEM_ROLES:
            head += 1
        kept.insert(head, make_summary_message(summary_text))
    return kept


# --- history hygiene: small pure passes applied to history loaded from earlier runs -------------------

_UNKNOWN_TOOL = ("does not exist or is not available", "not found")


def is_failed_result(message: Message) -> bool:
    """A tool result that reports a failure: an error flagged by agno, or a call to a tool that does not exist."""
    if message.role != "tool":
        return False
    if message.tool_call_error:
        return True
    text = message.get_content_string() if message.content is not None else ""
    head = text[:200].lower()
    return head.startswith("error") and any(marker in head for marker in _UNKNOWN_TOOL)


def drop_failed_calls(messages: Sequence[Message]) -> list[Message]:
    """History without failed or hallucinated tool calls: each failed call goes with its result, pair-safe.

    Only ``from_history`` messages are touched (the current run must see its own errors to recover).
    An assistant message keeps its other calls (as a copy; the stored original is untouched) and is
    dropped only when nothing is left of it.
    """
    failed = {cid for m in messages if m.from_history and is_failed_result(m) for cid in result_ids(m)}
    if not failed:
        return list(messages)
    out: list[Message] = []
    for m in messages:
        if not m.from_history:
            out.append(m)
        elif m.role == "tool" and result_ids(m) & failed:
            continue
        elif call_ids(m) and set(call_ids(m)) & failed:
            kept = [c for c in m.tool_calls or [] if not (isinstance(c, dict) and c.get("id") in failed)]
            if kept or m.content:
                out.append(m.model_copy(update={"tool_calls": kept or None}))
        else:
            out.append(m)
    return out


def retain_turns(messages: Sequence[Message], turns: int, *, keep_first: bool = True) -> list[Message]:
    """History trimmed to its last ``turns`` turns (a turn starts at a user message), plus the first user turn.

    System messages, summaries and the current run are always kept; a turn is dropped whole, so
    tool pairs stay intact. ``keep_first`` keeps the first history turn too (usually the task).
    """
    if turns < 0:
        raise ValueError(f"turns must be >= 0, got {turns}")
    starts = [i for i, m in enumerate(messages) if m.from_history and m.role == "user" and not is_summary(m)]
    if len(starts) <= turns + (1 if keep_first else 0):
        return list(messages)
    # turn k spans from starts[k] to the next start (or to the end of the history messages)
    history_end = max((i for i, m in enumerate(messages) if m.from_history), default=-1) + 1
    spans = [(starts[k], starts[k + 1] if k + 1 < len(starts) else history_end) for k in range(len(starts))]
    keep = set(range(len(spans) - turns, len(spans))) if turns else set()
    if keep_first:
        keep.add(0)
    dropped = {i for k, (a, b) in enumerate(spans) if k not in keep for i in range(a, b)}
    return [m for i, m in enumerate(messages) if i not in dropped or not m.from_history or m.role in SYSTEM_ROLES]
