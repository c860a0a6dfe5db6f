"""A stored session as a timeline: lanes (the agent or team leader, each member), their runs and model calls, and
the folds at the calls they came before, with what they folded. What ``report`` and ``serve`` draw.

Each assistant message of a run is one model call; what it was sent is the prompt size the provider reported.
A fold record names the call of its run it came before (``call_index``); a record older than that field is placed
at the call whose reported prompt is nearest to what the fold left (marked estimated). "Without compression" is
each call's reported prompt plus what the folds before it, in the same context, removed: a fold's before minus
after, the figure ``stats()`` and ``inspect`` sum as ``tokens_saved``, so both lines are counted alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agno.models.message import Message

from .._archive import SEARCH_TOOL_NAME
from .._messages import message_text
from .._plan import PROGRESS, make_summary_message
from .._sessions import SessionStats, records_of_run, session_runs, stats_of
from .._stores import CompressionRecord
from .._summarizers import is_masked
from .._tracing import asked_reason
from ..pricing import GENERIC, PriceModel, price_model_for, provider_named, reported_usage
from ..tokens import TokenCounter

REASONS = {
    "budget": "over the budget",
    "early": "early: pays for the cache",
    "overflow": "overflow retry",
    "tight": "no room: the request fills the budget",
    "request": "on request",
    "agent": "the agent asked",
    "unknown": "not recorded",
}
"""Why a fold happened, as the page and ``inspect`` say it."""


def fold_reason(record: CompressionRecord, budget: int | None = None) -> str:
    """``"request"`` (``fold_session``: the CLI's ``fold``, the viewer's fold route, agno's ``/compact``),
    ``"agent"`` (the agent called ``fold_context``), ``"overflow"`` (a retry after the provider rejected the
    prompt), ``"tight"`` (the system messages, tools and request left no room under the budget: folds come seldom,
    prompts exceed it), ``"budget"`` (the prompt was over the budget), ``"early"`` (under it: the fold paid for the
    prompt cache it broke) or ``"unknown"`` (no budget known). The rule of ``_tracing.reason``."""
    asked = asked_reason(record.strategy)
    if asked is not None:
        return asked
    if record.strategy.startswith("overflow:"):
        return "overflow"
    if record.strategy.startswith("tight:"):
        return "tight"
    limit = record.budget if record.budget is not None else budget
    if limit is None:
        return "unknown"
    return "budget" if record.tokens_before > limit else "early"


@dataclass
class Call:
    """One model call: an assistant message of a stored run."""

    number: int
    """1-based, across the lane's runs (the chart's x)."""
    run: int
    """The lane's run (1-based) it belongs to."""
    index: int
    """1-based within its run (what a record's ``call_index`` counts)."""
    sent: int
    """Prompt tokens the provider reported for it: the whole prompt, cache reads and writes included."""
    message: Message
    without: int = 0
    """Prompt tokens it would have been sent with nothing folded (estimate, see the module's doc)."""
    read: int = 0
    written: int = 0
    """Of ``sent``, the tokens the provider reported read from and written to its prompt cache."""


@dataclass
class Run:
    """One stored run of a lane."""

    number: int
    run_id: str
    status: str
    request: str
    """The run's own input (its first user message), as text."""
    first_call: int
    """Lane number of its first call (its calls follow; a run without calls has none)."""
    messages: list[Message]
    source: Any = field(repr=False, default=None)
    """agno's stored run."""
    calls: list[Call] = field(default_factory=list)
    history: bool = False
    """Whether it loaded the session's earlier runs (then earlier folds still save tokens in it)."""


@dataclass
class Fold:
    """One fold record, placed on its lane."""

    number: int
    """1-based in session order: the order of ``inspect`` and ``stats()``."""
    record: CompressionRecord
    reason: str
    lane: int | None = None
    """Index in ``Timeline.lanes``; ``None`` when the run it belongs to was never stored."""
    run: int | None = None
    call: int | None = None
    """Lane number of the call it came before; ``None`` when that call was not stored (the run failed)."""
    after: int | None = None
    """A fold made between runs (on request: no run of its own): the lane's run it was made after (``run`` and
    ``call``: the next run and its first call, which loaded its summary; ``None`` while no run came since)."""
    estimated: bool = False
    """Placed by prompt size: the record predates ``call_index``."""
    folded: list[Message] = field(default_factory=list)
    """The originals it folded, found in the session's stored runs."""
    missing: int = 0
    """Folded ids not found among the stored runs."""

    @property
    def saved(self) -> int:
        return max(0, self.record.tokens_before - self.record.tokens_after)


@dataclass
class Lane:
    """The runs of one owner: the agent, the team leader, or one team member."""

    name: str
    kind: str
    """``"agent"`` or ``"team"``."""
    member: bool
    """A team member's runs (delegated by the leader)."""
    runs: list[Run] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    folds: list[Fold] = field(default_factory=list)
    price: PriceModel = GENERIC
    """What its model's provider bills (``pricing``: by the stored runs' ``model_provider`` and ``model``)."""


@dataclass
class Search:
    """A ``search_folded_history`` call the agent made."""

    lane: int
    call: Call
    arguments: str
    answer: str


@dataclass
class Shortened:
    """A tool output the model saw shortened or masked in context (stored in full)."""

    lane: int
    run: int
    message: Message
    masked: bool


@dataclass
class Timeline:
    """Everything the session page shows."""

    session_id: str
    owner: str
    lanes: list[Lane]
    folds: list[Fold]
    stats: SessionStats
    budget: int | None
    searches: list[Search] = field(default_factory=list)
    shortened: list[Shortened] = field(default_factory=list)
    cost_with: float = 0.0
    cost_without: float = 0.0
    """Input billed, in tokens at full price, with compression and without it (the provider's best plain caching)."""
    cost_reported: bool = False
    """Whether ``cost_with`` is what the providers reported (cache reads and writes per call), not an estimate."""

    @property
    def prices(self) -> list[PriceModel]:
        """The price models of the lanes, each once."""
        return list({id(lane.price): lane.price for lane in self.lanes}.values())

    @property
    def calls(self) -> int:
        return sum(len(lane.calls) for lane in self.lanes)

    @property
    def sent(self) -> int:
        return sum(c.sent for lane in self.lanes for c in lane.calls)

    @property
    def without(self) -> int:
        return sum(c.without for lane in self.lanes for c in lane.calls)


def _lane_key(run: Any) -> tuple[str, str, str]:
    """(key, kind, name) of the owner of ``run``."""
    team = getattr(run, "team_id", None)
    if team is not None and not getattr(run, "agent_id", None):
        return f"team:{team}", "team", str(getattr(run, "team_name", None) or team)
    agent = getattr(run, "agent_id", None) or "agent"
    return f"agent:{agent}", "agent", str(getattr(run, "agent_name", None) or agent)


def _status(run: Any) -> str:
    status = getattr(run, "status", None)
    return str(getattr(status, "value", status) or "")


def _price_of(run: Any) -> PriceModel:
    """What the provider of a stored run bills, by agno's ``model_provider`` and ``model`` (generic if unknown)."""
    model_id = str(getattr(run, "model", None) or "")
    provider = provider_named(getattr(run, "model_provider", None), model_id)
    return price_model_for(provider=provider, model_id=model_id) if provider else GENERIC


def _lanes(session: Any, counter: TokenCounter) -> list[Lane]:
    runs = session_runs(session)
    ids = {getattr(r, "run_id", None) for r in runs}
    lanes: dict[str, Lane] = {}
    ordered = sorted(range(len(runs)), key=lambda i: (getattr(runs[i], "created_at", 0) or 0, i))
    for i in ordered:
        run = runs[i]
        key, kind, name = _lane_key(run)
        member = getattr(run, "parent_run_id", None) in ids - {None}
        lane = lanes.setdefault(key + (":member" if member else ""), Lane(name=name, kind=kind, member=member))
        lane.price = _price_of(run)
        messages = [m for m in run.messages or [] if not m.from_history]
        request = next((message_text(m, False) for m in messages if m.role == "user"), "")
        stored = Run(len(lane.runs) + 1, str(run.run_id), _status(run), request, len(lane.calls) + 1, messages, run)
        for m in messages:
            if m.role == "assistant":
                usage = reported_usage(m.metrics, lane.price)
                number = len(lane.calls) + 1
                call = Call(number, stored.number, len(stored.calls) + 1, usage.prompt, m, 0, usage.read, usage.written)
                stored.calls.append(call)
                lane.calls.append(call)
        lane.runs.append(stored)
    out = sorted(lanes.values(), key=lambda lane: lane.member)  # leaders first, each group in order of first run
    for lane in out:
        _fill_unreported(lane, counter)
    return out


def _fill_unreported(lane: Lane, counter: TokenCounter) -> None:
    """A call whose provider reported no prompt size gets the counted size of its run's messages before it."""
    for run in lane.runs:
        seen: list[Message] = []
        for m in run.messages:
            if m.role == "assistant":
                call = next(c for c in run.calls if c.message is m)
                if not call.sent:
                    call.sent = counter.count_messages(seen)
            seen.append(m)


def _place(fold: Fold, run: Run, lane: Lane, after: int) -> None:
    """Put ``fold`` at the call of ``run`` it came before (by its record, else by prompt size)."""
    index = fold.record.call_index
    if index is not None:
        fold.call = run.calls[index - 1].number if 1 <= index <= len(run.calls) else None
        return
    ids = set(fold.record.folded_ids)
    position = {m.id: i for i, m in enumerate(run.messages)}
    last_folded = max((position[i] for i in ids if i in position), default=-1)
    candidates = [
        c for c in run.calls if c.number >= after and run.messages.index(c.message) > last_folded
    ] or run.calls[-1:]
    if candidates:
        target = fold.record.tokens_after
        best = min(candidates, key=lambda c: (abs(c.sent - target), c.number))
        fold.call, fold.estimated = best.number, True


def _owner_lane(lanes: Sequence[Lane], record: CompressionRecord) -> int | None:
    """The lane of the agent or team leader that owns ``record``'s session (the first leader's when none matches)."""
    leaders = [i for i, lane in enumerate(lanes) if not lane.member]
    field = "team_id" if record.owner_type == "team" else "agent_id"
    for i in leaders:
        if record.owner_id is not None and getattr(lanes[i].runs[0].source, field, None) == record.owner_id:
            return i
    return leaders[0] if leaders else None


def run_before(record: CompressionRecord, runs: Sequence[Any]) -> int | None:
    """Index in ``runs`` (stored runs, in order) of the run a fold made between runs (``run_id`` ``None``) came
    after: the newest holding a message it folded (it folds all history up to then), else the newest created before
    it; ``None`` when it came before them all."""
    ids = set(record.folded_ids)
    holding = [i for i, run in enumerate(runs) if any(m.id in ids for m in getattr(run, "messages", None) or [])]
    if holding:
        return holding[-1]
    created = [i for i, run in enumerate(runs) if (getattr(run, "created_at", 0) or 0) <= record.created_at]
    return created[-1] if created else None


def _between_runs(fold: Fold, lanes: Sequence[Lane]) -> None:
    """Place a fold made between runs on its owner's lane: after the run it followed, before the next run's first
    call (the call that loaded its summary)."""
    index = _owner_lane(lanes, fold.record)
    if index is None:
        return
    lane = lanes[index]
    before = run_before(fold.record, [run.source for run in lane.runs])
    fold.lane, fold.after = index, (before + 1 if before is not None else None)
    following = lane.runs[before + 1 if before is not None else 0 :]
    if following:
        fold.run = following[0].number
        fold.call = following[0].calls[0].number if following[0].calls else None
    lane.folds.append(fold)


def _history(lane: Lane, counter: TokenCounter) -> None:
    """Mark the runs that loaded the session's history: their first prompt holds more than their own messages."""
    extra: list[int] = []
    for run in lane.runs:
        if not run.calls:
            extra.append(0)
            continue
        first = run.messages.index(run.calls[0].message)
        extra.append(run.calls[0].sent - counter.count_messages(run.messages[:first]))
    base = min(extra, default=0)
    for run, more in zip(lane.runs, extra, strict=True):
        own = {m.id for m in run.messages}
        folded_history = any(i not in own for f in lane.folds if f.run == run.number for i in f.record.folded_ids)
        margin = max(24, 0.03 * run.calls[0].sent) if run.calls else 24  # a provider's count differs a little
        run.history = run.number > 1 and (folded_history or more - base > margin)


def _without(lane: Lane) -> None:
    """Each call's prompt without compression: what it was sent plus what earlier folds in its context removed."""
    carried = 0
    at: dict[int, int] = {}
    for fold in lane.folds:
        if fold.call is not None:
            at[fold.call] = at.get(fold.call, 0) + fold.saved
    for run in lane.runs:
        if not run.history:
            carried = 0
        for call in run.calls:
            carried += at.get(call.number, 0)
            call.without = call.sent + carried
        carried += sum(f.saved for f in lane.folds if f.run == run.number and f.call is None)


def _costs(lanes: Sequence[Lane], counter: TokenCounter) -> tuple[float, float, bool]:
    """Input billed with and without compression, and whether "with" is what the providers reported.

    With: each call's reported usage (uncached, cache reads, cache writes) at its provider's rates, where the
    provider is known and reported every call; else estimated like "without" (``eval.billed_costs``, with the
    breakpoints the manager places). Without: the same calls with nothing folded, under the provider's best plain
    caching (automatic caching on Anthropic), estimated.
    """
    from ..eval import billed_costs

    total_with = total_without = 0.0
    reported = bool(lanes)
    for lane in lanes:
        price = lane.price
        from_usage = price is not GENERIC and all(reported_usage(c.message.metrics, price).prompt for c in lane.calls)
        reported = reported and from_usage
        for run in lane.runs:
            sent: list[tuple[list[Message], int]] = []
            stable: list[int | None] = []
            full: list[tuple[list[Message], int]] = []
            folded: set[str] = set()
            summary: Message | None = None
            folds = {f.call: f for f in lane.folds if f.run == run.number and f.call is not None}
            for call in run.calls:
                fold = folds.get(call.number)
                if fold is not None:
                    folded |= set(fold.record.folded_ids)
                    summary = make_summary_message(fold.record.summary or "", PROGRESS)
                before = run.messages[: run.messages.index(call.message)]
                view = [m for m in before if m.id not in folded]
                user = next((i for i, m in enumerate(view) if m.role == "user"), len(view) - 1)
                if summary is not None:
                    view.insert(user + 1, summary)
                sent.append((view, call.sent))
                stable.append(user if user >= 0 else None)
                full.append((before, call.without))
            if from_usage:
                total_with += sum(reported_usage(c.message.metrics, price).billed(price) for c in run.calls)
            else:
                total_with += sum(u.billed(price) for u in billed_costs(sent, counter, price, stable=stable))
            total_without += sum(u.billed(price) for u in billed_costs(full, counter, price))
    return total_with, total_without, reported


def build_timeline(
    session: Any,
    records: Sequence[CompressionRecord],
    *,
    budget: int | None = None,
    counter: TokenCounter | None = None,
) -> Timeline:
    """The timeline of an agno session (``AgentSession``, ``TeamSession``, ``WorkflowSession``) and its records.

    ``budget`` is the line to draw (default: the newest one the records carry) and tells the reason of records
    that do not carry their own (older ones).
    """
    counter = counter or TokenCounter("gpt-4o")
    lanes = _lanes(session, counter)
    folds = [Fold(n, r, fold_reason(r, budget)) for n, r in enumerate(records, 1)]
    if budget is None:  # the line: the budget given, else the newest one the records carry
        budget = next((r.budget for r in reversed(records) if r.budget is not None), None)
    by_id = {m.id: m for lane in lanes for run in lane.runs for m in run.messages}
    claimed: set[int] = set()
    for li, lane in enumerate(lanes):
        for run in lane.runs:
            after = run.first_call
            mine = records_of_run(records, run.source)
            for fold in folds:
                if fold.number in claimed or not any(fold.record is r for r in mine):
                    continue
                claimed.add(fold.number)
                fold.lane, fold.run = li, run.number
                _place(fold, run, lane, after)
                after = fold.call if fold.call is not None else after
                lane.folds.append(fold)
    for fold in folds:
        if fold.number not in claimed and fold.record.run_id is None:
            _between_runs(fold, lanes)
    for lane in lanes:
        lane.folds.sort(key=lambda f: f.number)
    for fold in folds:
        found = [by_id[i] for i in fold.record.folded_ids if i in by_id]
        fold.folded, fold.missing = found, len(fold.record.folded_ids) - len(found)
    for lane in lanes:
        _history(lane, counter)
        _without(lane)
    timeline = Timeline(
        session_id=str(session.session_id),
        owner=_owner_label(session),
        lanes=lanes,
        folds=folds,
        stats=stats_of(str(session.session_id), records),
        budget=budget,
    )
    _extras(timeline)
    timeline.cost_with, timeline.cost_without, timeline.cost_reported = _costs(lanes, counter)
    return timeline


def _owner_label(session: Any) -> str:
    for kind in ("workflow", "team", "agent"):
        value = getattr(session, f"{kind}_id", None)
        if value:
            return f"{kind} {value}"
    return ""


def _extras(timeline: Timeline) -> None:
    """Uses of ``search_folded_history`` and tool outputs shortened or masked in context."""
    for li, lane in enumerate(timeline.lanes):
        for run in lane.runs:
            results = {m.tool_call_id: m for m in run.messages if m.role == "tool"}
            for call in run.calls:
                for tool_call in call.message.tool_calls or []:
                    function = tool_call.get("function", {}) if isinstance(tool_call, dict) else {}
                    if function.get("name") == SEARCH_TOOL_NAME:
                        answer = results.get(tool_call.get("id"))
                        text = message_text(answer, False) if answer is not None else ""
                        timeline.searches.append(Search(li, call, str(function.get("arguments") or ""), text))
            for m in run.messages:
                if m.role == "tool" and m.compressed_content is not None and m.compressed_content != m.content:
                    timeline.shortened.append(Shortened(li, run.number, m, is_masked(m)))
