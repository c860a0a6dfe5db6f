"""The steps of a fold on one run's live list: when to fold, what to ask the summarizer, how to rewrite.

``Folder.compress`` and ``Folder.recover`` are generators: they yield ``(summarizer, request)``
for each summary they need and receive the ``Summary``; the manager answers them sync or async
(``_runner.drive``/``adrive``). Planning itself is pure (``plan_fold``); this module measures,
asks and rewrites.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from agno.models.message import Message

from . import _held
from ._archive import SEARCH_HINT
from ._events import FoldEvent, keep_event
from ._keeping import _names, _working_set
from ._messages import calls_by_id, message_text
from ._plan import (
    HISTORY,
    PROGRESS,
    FoldPlan,
    find_current_user,
    make_summary_message,
    plan_fold,
    recent_start,
)
from ._records import FoldRecorder
from ._requested_fold import AGENT_TAG
from ._runs import RunState
from ._shortening import shorten_kept
from ._stats import Stats
from ._stores import usage_dict
from ._summarizers import (
    ExtractiveSummarizer,
    Summarizer,
    Summary,
    SummaryRequest,
    is_masked,
    mask_placeholder,
    strip_header,
)
from ._trigger import FoldConfig, Trigger
from .pricing import BREAKPOINTS

if TYPE_CHECKING:
    from agno.metrics import RunMetrics


log = logging.getLogger("agno_compression")

GROWTH_WINDOW = 12
"""Model calls whose prompt growth estimates the calls until the next fold (``_held.Pricing``)."""

SummaryAsk = tuple[Summarizer, SummaryRequest]
FoldSteps = Generator[SummaryAsk, Summary, None]


def account(response: Any, model: Any, run_metrics: RunMetrics | None) -> None:
    """Add a summarizer's or policy's model usage to the run, as compression-model usage."""
    if response is None or model is None or run_metrics is None:
        return
    from agno.metrics import ModelType, accumulate_model_metrics

    accumulate_model_metrics(response, model, ModelType.COMPRESSION_MODEL, run_metrics)


class Prepared(NamedTuple):
    """A fold's summary requests prepared before the fold (``_background``): the plan they cover, who answers them."""

    plan: FoldPlan
    summarizer: Summarizer
    requests: list[tuple[str, SummaryRequest]]


class Ahead(Protocol):
    """Where a fold finds a summary prepared before it (``_background.Background``)."""

    def take(self, folder: Folder, state: RunState, plan: FoldPlan, run_metrics: Any) -> Prepared | None: ...


class Folder(Trigger):
    """Folds live lists by the options of ``config``, recording each fold with ``recorder``."""

    ahead: Ahead | None = None
    """Summaries prepared while the run went on (``background_summary_at``); ``None``: asked at the fold."""

    def __init__(self, config: FoldConfig, recorder: FoldRecorder, stats: Stats) -> None:
        self.config = config
        self.recorder = recorder
        self.stats = stats

    @property
    def target_tokens(self) -> int:
        """The prompt size a fold aims for."""
        return int(self.config.compress_at_tokens * self.config.target_ratio)

    def budget(self, state: RunState) -> int:
        """This run's budget: ``compress_at_tokens``, or less after the provider rejected a prompt as too long."""
        limit = self.config.compress_at_tokens
        return min(limit, state.limit) if state.limit is not None else limit

    def target(self, state: RunState) -> int:
        """The prompt size a fold of this run aims for."""
        return int(self.budget(state) * self.config.target_ratio)

    def count(self, state: RunState, messages: Sequence[Message]) -> int:
        """Prompt tokens of ``messages`` with the run's tool definitions."""
        return self.config.counter_for(state.model).count_prompt(messages, state.tools)

    def plan(self, state: RunState, limit: int | None = None) -> FoldPlan:
        """The fold plan of the run's live list, around the run's own input message, keeping the recent steps
        that fit in ``verbatim_ratio`` of the budget (of ``limit`` when recovering from an overflow)."""
        messages = state.live
        current = next((i for i, m in enumerate(messages) if m is state.current), None)
        if current is None:
            current = find_current_user(messages)
        plan = plan_fold(messages, current=current)
        cfg = self.config
        if cfg.verbatim_ratio <= 0 or not plan.has_work:
            return plan
        limit = self.budget(state) if limit is None else limit
        # the window never pushes the folded prompt over the budget: the floor and a full summary come first
        room = limit - self.count(state, plan.view()) - cfg.max_summary_tokens
        budget = min(int(limit * cfg.verbatim_ratio), room)
        if budget <= 0:
            return plan
        counter = cfg.counter_for(state.model)
        keep_from = recent_start(messages, [counter.count_message(m) for m in messages], budget, current)
        return plan if keep_from is None else plan_fold(messages, current=current, keep_from=keep_from)

    # --- folding ------------------------------------------------------------------------------------

    def compress(self, state: RunState, run_metrics: RunMetrics | None, fallback: Summarizer) -> FoldSteps:
        """Mask, or summarize, the foldable span of the live list and rewrite it.

        Masking alone (``summarizer="mask"``) that cannot bring the prompt under the budget falls back to
        ``fallback`` (the extractive summary) for this fold, with a warning once per run: no strategy sends a
        call over the budget while something can still be folded or shortened.
        """
        plan = self.plan(state)
        if state.asked is None and self._mask_enough(state, plan):  # the agent asked for a summary: no mask only
            return
        summarizer, tag = self.config.strategy.summarizer, ""
        if summarizer is None:
            summarizer, tag = fallback, "mask->"
            if not state.mask_fell_back:
                state.mask_fell_back = True
                log.warning(
                    "agno-compression: masking alone leaves the prompt at %d tokens, over the budget (%d): "
                    "folding with the %s summary instead",
                    state.sent_tokens,
                    self.budget(state),
                    fallback.name,
                )
        summaries: dict[str, Summary] = {}
        ahead = self.ahead.take(self, state, plan, run_metrics) if self.ahead is not None else None
        plan = ahead.plan if ahead is not None else plan  # the span its summary covers: this fold's, or less
        held = self._working_set(state, plan, self.budget(state)) if plan.has_work else ""
        if ahead is not None:  # its summary was written while the run went on: waited for only if still running
            for kind, request in ahead.requests:
                summaries[kind] = yield ahead.summarizer, request
        elif plan.has_work:
            for kind, request in self._requests(state, plan, summarizer=summarizer, held=held):
                summaries[kind] = yield summarizer, request
        asked = AGENT_TAG if state.asked is not None else "tight:" if state.tight else ""
        state.asked = None  # asked once, folded once
        self._apply(state, plan, summaries, run_metrics, tag=asked + tag, held=held)

    def recover(
        self, state: RunState, attempt: int, run_metrics: Any, fallback: Summarizer
    ) -> Generator[SummaryAsk, Summary, bool]:
        """Fold harder after the provider rejected the prompt as too long; True when the prompt got smaller."""
        now = state.prompt_tokens = self.count(state, state.live)
        # the provider's real limit is below what we counted: aim lower with every attempt
        limit = max(256, int(min(now, self.budget(state)) * 0.6**attempt))
        target = int(limit * self.config.target_ratio)
        plan = self.plan(state, limit)
        # masking alone cannot answer an overflow: the extractive summary does then
        summarizer = self.config.strategy.summarizer or fallback
        summaries: dict[str, Summary] = {}
        held = self._working_set(state, plan, limit, target) if plan.has_work else ""
        if plan.has_work:
            for kind, request in self._requests(state, plan, target, summarizer, held=held):
                summaries[kind] = yield summarizer, request
        self._apply(state, plan, summaries, run_metrics, limits=(limit, target), tag="overflow:", held=held)
        after = state.sent_tokens  # _apply counted the rewritten list
        self.stats.add("overflow_retries")
        # the model's real window is below the budget: the rest of this run folds at the lower budget, so later
        # calls do not overflow once each before their retry
        state.limit = limit
        log.warning(
            "agno-compression: the provider rejected the prompt as too long; folded %d -> %d tokens, retry %d; "
            "this run's budget is now %d tokens (compress_at_tokens=%d)",
            now,
            after,
            attempt,
            limit,
            self.config.compress_at_tokens,
        )
        return after < now

    def _mask_enough(self, state: RunState, plan: FoldPlan) -> bool:
        """Mask old tool outputs in place; True when that alone is enough (under the target, or under the budget
        when masking is the whole strategy)."""
        strategy = self.config.strategy
        if not strategy.mask:
            return False
        calls = calls_by_id(state.live)
        masked: list[str] = []
        for m in plan.folded:
            if m.role == "tool" and not is_masked(m):
                m.compressed_content = mask_placeholder(m, calls)
                masked.append(m.id)
        after = state.sent_tokens = self.count(state, state.live)
        goal = self.target(state) if strategy.summarizer is not None else self.budget(state)
        if masked and (after <= goal or strategy.summarizer is None):
            self._record(state, FoldEvent("mask", [], masked, [], None, state.prompt_tokens, after), [])
        if strategy.summarizer is None:
            return after <= goal  # still over the budget: compress() folds with the fallback summary
        return bool(masked) and after <= goal

    def _summary_budget(self, state: RunState, plan: FoldPlan, target: int | None = None) -> int:
        cfg = self.config
        counter = cfg.counter_for(state.model)
        kept_tokens = self.count(state, plan.unchanged_view())
        goal = self.target(state) if target is None else target
        # Aim for the target, but do not starve the summary while there is room for one more batch like the
        # last one and then some: half of what is left after that goes to the summary.
        limit = self.budget(state) if target is None else int(target / cfg.target_ratio)
        batch = sum(counter.count_message(m) for m in plan.kept if m.role in ("assistant", "tool"))
        if kept_tokens > limit:  # the kept outputs get shortened down to the goal (shorten_kept): plan for that
            kept_tokens, batch = goal, min(batch, goal)
        headroom = (limit - kept_tokens - batch) // 2
        budget = min(cfg.max_summary_tokens, max(cfg.min_summary_tokens, goal - kept_tokens, headroom))
        if cfg.search_tool:  # the hint appended after the summarizer counts against the same cap
            budget = max(cfg.min_summary_tokens // 2, budget - counter.count_text(SEARCH_HINT) - 1)
        return budget

    def _requests(
        self,
        state: RunState,
        plan: FoldPlan,
        target: int | None = None,
        summarizer: Summarizer | None = None,
        held: str = "",
    ) -> list[tuple[str, SummaryRequest]]:
        """One request per summary the fold writes: the history summary, the progress summary, or both. A summarizer
        that writes one text per call (a model) gets one request covering both spans, its summary placed after the
        current user message where order allows it."""
        cfg = self.config
        counter = cfg.counter_for(state.model)
        budget = self._summary_budget(state, plan, target)
        summarizer = summarizer or cfg.strategy.summarizer

        def text(message: Message | None) -> str | None:
            # the working set is the fold's, not the summarizer's: it is chosen anew at every fold
            return _working_set.split(message.get_content_string())[0] if message is not None else None

        # rather than drop a file or test it acted on, a summary's ledger may take it past its budget up to the cap
        hint = counter.count_text(SEARCH_HINT) + 1 if cfg.search_tool else 0
        cap = max(cfg.max_summary_tokens, int(self.budget(state) * cfg.ledger_ratio)) - hint

        held = self._beside(state, plan, target, held)

        def request(
            messages: Sequence[Message], previous: str | None, kind: str, tokens: int, run_wide: bool = False
        ) -> SummaryRequest:
            names = None
            if run_wide:  # this run's steps: the names of its earlier folds stay known past what a summary shows
                before = state.names if state.names is not None else _names.Names.parse(previous)
                names = state.names = _names.build(messages, before=before)
            return SummaryRequest(
                messages=state.with_original_calls(messages),  # the ledger lists what a shortened write wrote
                previous=previous,
                max_tokens=tokens,
                count_tokens=counter.count_text,
                kind=kind,
                cap_tokens=max(tokens, cap),
                names=names,
                held=held,
                instructions=state.asked,
            )

        if plan.history and plan.steps and not isinstance(summarizer, ExtractiveSummarizer):
            previous = "\n\n".join(t for t in (text(plan.history_summary), text(plan.progress_summary)) if t) or None
            return [(PROGRESS, request(plan.folded, previous, PROGRESS, budget, run_wide=True))]
        out = []
        share = budget // 2 if plan.history and plan.steps else budget  # the history summary's part
        if plan.history:
            out.append((HISTORY, request(plan.history, text(plan.history_summary), HISTORY, share)))
        if plan.steps:
            rest = budget - share if plan.history else budget
            out.append((PROGRESS, request(plan.steps, text(plan.progress_summary), PROGRESS, rest, run_wide=True)))
        return out

    def _beside(self, state: RunState, plan: FoldPlan, target: int | None, held: str) -> str:
        """The text the fold keeps beside its summaries: the working set ``held`` and the messages it keeps verbatim,
        unless those are to be shortened. A name it holds is in the prompt already: the summary does not list it again
        (the next fold that folds those messages lists it from them)."""
        limit = self.budget(state) if target is None else int(target / self.config.target_ratio)
        if self.count(state, plan.unchanged_view()) > limit:  # the kept outputs get shortened (shorten_kept)
            return held
        kept = [message_text(m) for m in (*plan.before, *plan.kept)]  # as sent
        return "\n".join([held, *kept])

    def _with_search_hint(self, text: str) -> str:
        """Summaries say how to get the exact originals back when the search tool is on."""
        return f"{text}\n{SEARCH_HINT}" if self.config.search_tool and SEARCH_HINT not in text else text

    def _apply(
        self,
        state: RunState,
        plan: FoldPlan,
        summaries: Mapping[str, Summary],
        run_metrics: RunMetrics | None,
        limits: tuple[int, int] | None = None,
        tag: str = "",
        held: str = "",
    ) -> None:
        """Rewrite the live list (the working set ``held`` after the newest summary), shorten oversized kept
        outputs, account usage, record the event."""
        messages = state.live
        folded_ids: list[str] = []
        texts: list[str] = []
        limit, target = limits or (self.budget(state), self.target(state))
        counter, kinds = self.config.counter_for(state.model), self.config.tool_kinds

        def rewrite(held: str) -> list[str]:
            history, progress = summaries.get(HISTORY), summaries.get(PROGRESS)
            last = PROGRESS if progress is not None else HISTORY
            made = {  # an empty summary (the folded messages said nothing) is never sent
                kind: make_summary_message(self._with_search_hint(s.text) if kind == last else s.text, kind)
                for kind, s in summaries.items()
                if strip_header(s.text)
            }
            if held and last in made:
                made[last] = make_summary_message(self._with_search_hint(f"{summaries[last].text}\n\n{held}"), last)
            kept = _held.without_section  # a kept summary gives its section up: the fold chooses anew (_held)
            head = made.get(HISTORY) if history is not None else None if plan.history else kept(plan.history_summary)
            tail = made.get(PROGRESS) if progress is not None else None if plan.steps else kept(plan.progress_summary)
            messages[:] = plan.view(head, tail)
            return [m.get_content_string() for m in (head, tail) if m is not None]

        if summaries:
            texts, folded_ids = rewrite(held), [m.id for m in plan.folded]
            for summary in summaries.values():
                account(summary.response, summary.model, run_metrics)
        held_tokens = counter.count_text(held) if held else 0
        target = min(limit, target + held_tokens) if held else target  # kept outputs give it no room
        size = held_tokens if summaries else 0  # what the section can give way
        shortened = shorten_kept(state, plan, lambda m: self.count(state, m), counter, (limit, target), kinds, size)
        after = state.sent_tokens = self.count(state, messages)
        if size and after > limit:  # a ledger past its summary's budget: the working set gives way
            artifacts = _working_set.split(held)[1]
            room = size
            while after > limit and held:  # counts of a text in parts differ by a few tokens: until it fits
                room -= after - limit + 8
                held = _working_set.render(artifacts, room, counter.count_text) if room > 0 else ""
                texts = rewrite(held)
                after = state.sent_tokens = self.count(state, messages)
            if after > limit and summaries:  # without the section: the kept steps give way again
                again = shorten_kept(state, plan, lambda m: self.count(state, m), counter, (limit, target), kinds)
                shortened += [i for i in again if i not in shortened]
                after = state.sent_tokens = self.count(state, messages)
        elif (  # kept outputs shortened to the goal freed room the section was not given when it was chosen
            summaries
            and shortened
            and (rooms := self._held_room(state, plan, limit, after - size))[0] >= size + _working_set.MIN_PIECE
            and (grown := self._section(state, plan, rooms))
        ):
            texts = rewrite(grown)
            after = state.sent_tokens = self.count(state, messages)
        state.stuck_at = after if after > (limits[0] if limits else self.budget(state)) else None
        # stuck on a large kept batch (not on the system prompt or the user message): a newer batch lets it go
        steps = self.config.counter_for(state.model).count_messages(plan.kept) if state.stuck_at else 0
        movable = state.stuck_at is not None and state.stuck_at - steps <= self.target(state)
        state.stuck_on = next((id(m) for m in reversed(messages) if m.role == "assistant" and m.tool_calls), None)
        state.stuck_on = state.stuck_on if movable else None
        if not summaries and not shortened:
            return
        written = summaries.get(PROGRESS) or summaries.get(HISTORY)
        event = FoldEvent(
            strategy=tag + (written.strategy if written is not None else "shorten"),
            folded_ids=folded_ids,
            masked_ids=[],
            shortened_ids=shortened,
            # the whole session summary: what a later run loads in place of everything folded so far
            summary="\n\n".join(texts) if texts else None,
            tokens_before=state.prompt_tokens,
            tokens_after=after,
            summarizer_model=next((getattr(s.model, "id", None) for s in summaries.values() if s.model), None),
            summarizer_usage=next(
                (usage_dict(getattr(s.response, "response_usage", None)) for s in summaries.values() if s.response),
                None,
            ),
        )
        self._record(state, event, plan.folded if summaries else [])

    def _working_set(self, state: RunState, plan: FoldPlan, limit: int, target: int | None = None) -> str:
        """The working-set section for this fold (``_held``): what the run has in hand and no longer sees verbatim,
        filling ``working_set_ratio`` of what a fold can free (the files in use more, with room of their own even
        where the rest has none), at most ``max_working_set_tokens``."""
        if self.config.working_set_ratio <= 0:
            return ""
        count = self.config.counter_for(state.model).count_text
        unchanged = self.count(state, plan.unchanged_view()) - _held.carried_tokens(plan, count)
        whole = unchanged <= limit  # else kept outputs get shortened down to the goal, the section on top (_apply)
        kept = unchanged if whole else self.target(state) if target is None else target
        rooms = self._held_room(state, plan, limit, kept + self._summary_budget(state, plan, target), whole)
        return self._section(state, plan, rooms) if rooms[1] >= _working_set.MIN_PIECE else ""

    def _held_room(self, state: RunState, plan: FoldPlan, limit: int, rest: int, floor: bool = True) -> _held.Rooms:
        fixed = self.count(state, plan.fixed_view()) if floor else 0
        return _held.rooms(fixed, limit, rest, self.config.working_set_ratio, self.config.max_working_set_tokens)

    def _section(self, state: RunState, plan: FoldPlan, rooms: _held.Rooms) -> str:
        cfg = self.config
        count = cfg.counter_for(state.model).count_text
        return _held.section(state, plan, rooms, count, cfg.tool_kinds, self._pricing(state, plan))

    def _pricing(self, state: RunState, plan: FoldPlan) -> _held.Pricing | None:
        """What holding a file costs at this fold (``hold_by_price``): the provider's rates, the calls until the next
        fold (half the room the request leaves, over the prompt's recent growth per call) and the prompt a call that
        reads the file again sends."""
        if not self.config.hold_by_price:
            return None
        price = self.config.price_for(state.model)
        limit = self.budget(state)
        gap = max(0, limit - self.count(state, plan.fixed_view())) // 2
        recent = state.growth[-GROWTH_WINDOW:]
        growth = max(sum(recent) / len(recent) if recent else 0, limit / 100)
        fresh = max(price.write_rate, 1.0) if price.caching == BREAKPOINTS else 1.0
        read = price.read_rate if price.caches else 1.0
        return _held.Pricing(read, fresh, max(1.0, gap / growth), limit - gap // 2)

    def _record(self, state: RunState, event: FoldEvent, folded: Sequence[Message]) -> None:
        state.folded_at = event.call_index = state.calls
        event.budget = self.budget(state)
        state.events.append(event)
        keep_event(self.config.events, event, self.stats)
        kind = {"mask": "masks", "shorten": "shortened"}.get(event.strategy, "folds")
        if kind != "shortened":  # outputs shortened are counted one by one, whichever pass shortened them
            self.stats.add(kind)
        if event.strategy.startswith(AGENT_TAG):
            self.stats.add("agent_folds")
        self.stats.add("shortened", len(event.shortened_ids))
        self.stats.add("messages_folded", len(event.folded_ids))
        self.stats.add("tokens_saved", max(0, event.tokens_before - event.tokens_after))
        if event.summary is not None:
            self.stats.add("summarizer_calls")
        log.info(
            "agno-compression: %s folded %d, masked %d, shortened %d messages: %d -> %d tokens",
            event.strategy,
            len(event.folded_ids),
            len(event.masked_ids),
            len(event.shortened_ids),
            event.tokens_before,
            event.tokens_after,
        )
        if event.summary and event.folded_ids:
            self.recorder.record(state.context, event)
        if self.config.on_fold is not None:
            try:
                self.config.on_fold(event, folded)
            except Exception as exc:
                log.warning("agno-compression: on_fold callback failed: %s", exc)
