"""When a model call folds first: over the budget, at a fold that pays for itself, or, where the system messages
and the request leave no workable room, now and then (``Trigger``, the deciding half of ``_fold.Folder``)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from agno.models.message import Message

from . import _held
from ._keeping import _working_set
from ._plan import SYSTEM_ROLES, FoldPlan
from ._provider_compaction import WHY, provider_compaction
from ._runs import EARLY_FOLD_GAP, RunState
from ._shortening import parts
from ._stats import Stats
from ._summarizers import ExtractiveSummarizer
from .pricing import BREAKPOINTS, reported_usage

if TYPE_CHECKING:
    from agno.models.base import Model

    from ._events import FoldEvent
    from ._summarizers import Pipeline
    from .pricing import PriceModel
    from .tokens import TokenCounter

log = logging.getLogger("agno_compression")

MIN_ROOM_SHARE = 0.2
"""Less than this share of the budget left beside the system messages, tool definitions and the request is no
workable room: the run is told so once and folds at most every ``TIGHT_GAP`` calls."""
TIGHT_GAP = 5
"""Model calls at least between two folds of a run with no workable room (at most 20 folds per 100 calls)."""


class FoldConfig(Protocol):
    """The options a fold reads (``CompressionManager`` is one)."""

    compress_at_tokens: int
    target_ratio: float
    verbatim_ratio: float
    working_set_ratio: float
    max_working_set_tokens: int
    hold_by_price: bool
    tool_kinds: Mapping[str, str | None] | None
    max_summary_tokens: int
    ledger_ratio: float
    min_summary_tokens: int
    search_tool: bool
    payback_calls: int | None
    strategy: Pipeline
    on_fold: Callable[[FoldEvent, Sequence[Message]], None] | None
    events: list[FoldEvent]

    def counter_for(self, model: Model | None) -> TokenCounter: ...

    def price_for(self, model: Model | None) -> PriceModel: ...


class Trigger:
    """Decides, before each model call, whether the live list is folded first. ``_fold.Folder`` is one; it
    supplies the budget, the count and the plan."""

    config: FoldConfig
    stats: Stats

    def budget(self, state: RunState) -> int:
        raise NotImplementedError

    def target(self, state: RunState) -> int:
        raise NotImplementedError

    def count(self, state: RunState, messages: Sequence[Message]) -> int:
        raise NotImplementedError

    def plan(self, state: RunState, limit: int | None = None) -> FoldPlan:
        raise NotImplementedError

    def over_budget(self, state: RunState, messages: list[Message]) -> bool:
        """Count the prompt of this model call; True when it should be folded first."""
        state.calls += 1
        if self._left_to_provider(state):
            return False
        self._calibrate(state, messages)
        previous = state.sent_tokens
        state.prompt_tokens = state.sent_tokens = self.count(state, messages)
        if state.calls > 1:
            state.growth.append(max(0, state.prompt_tokens - previous))
        limit = self.budget(state)
        if state.asked is not None:  # the agent called fold_context: fold now, whatever the size
            return True
        if state.prompt_tokens > limit and (fixed := self._no_room(state, messages, limit)) is not None:
            # over the budget anyway: fold now and then, not at every call, unless a whole budget came in since
            floor = state.stuck_at if state.stuck_at is not None else max(fixed, limit)  # where the last fold left it
            if state.prompt_tokens - floor <= limit and state.calls - state.folded_at < TIGHT_GAP:
                return False  # the rule for a stuck fold below still applies: spacing comes on top of it
        if state.stuck_at is not None:
            # The last fold could not reach the budget: folding one more batch each call would loop. Fold again once
            # a newer tool batch lets a stuck one go, or the span that can be folded has grown by the target gap.
            newest = next((id(m) for m in reversed(messages) if m.role == "assistant" and m.tool_calls), None)
            same = state.stuck_on in (None, newest)  # stuck on the floor (None), or on a batch still the newest
            if same and state.prompt_tokens - state.stuck_at < limit - self.target(state):
                return False
            state.stuck_at = state.stuck_on = None
        return state.prompt_tokens > limit or self._pays_to_fold(state)

    def _left_to_provider(self, state: RunState) -> bool:
        """True when the call's model has its provider's server-side compaction on: the provider compacts that
        prompt, so it is neither counted nor folded here (two compactions of one prompt would fight; a fold would
        also drop the compaction block the next request must carry). Counted in ``stats["provider_compaction"]``,
        said once per model (docs/cost.md, "Provider compaction")."""
        kind = provider_compaction(state.model)
        if kind is None:
            return False
        self.stats.add("provider_compaction")
        told: set[tuple[str, str, str]] = self.__dict__.setdefault("_told_provider_compaction", set())
        key = (type(state.model).__name__, str(getattr(state.model, "id", "")), kind)
        if key not in told:  # by class and id: an agent built per request does not log each time
            told.add(key)
            log.info(
                "agno-compression: %s %s has %s on: its prompts are left to the provider, not folded at "
                "compress_at_tokens (no double compaction); remove that setting to fold here instead",
                key[0],
                key[1],
                WHY[kind],
            )
        return True

    def _no_room(self, state: RunState, messages: Sequence[Message], limit: int) -> int | None:
        """The tokens of the system messages, the tool definitions and the run's request when they leave less than
        ``MIN_ROOM_SHARE`` of the budget (said once per run), else ``None``: no fold can hold such a budget, so
        folds come at most every ``TIGHT_GAP`` calls."""
        fixed = self.count(state, [m for m in messages if m.role in SYSTEM_ROLES or m is state.current])
        if limit - fixed >= limit * MIN_ROOM_SHARE:
            return None
        if not state.tight:
            state.tight = True
            self.stats.add("budget_too_small")
            log.warning(
                "agno-compression: the system messages, tool definitions and the request take %d of the budget's "
                "%d tokens, leaving no room to fold into: prompts of this run will exceed the budget; folding at "
                "most every %d model calls (raise compress_at_tokens or shorten the request). The prompt holds %s",
                fixed,
                limit,
                TIGHT_GAP,
                parts(state, lambda m: self.count(state, m), self.config.counter_for(state.model)),
            )
        return fixed

    def _calibrate(self, state: RunState, messages: Sequence[Message]) -> None:
        """Correct an estimating counter with the prompt tokens the provider reported for the previous call (the
        whole prompt: where the provider reports cache reads and writes apart, they are added back)."""
        last = next((m for m in reversed(messages) if m.role == "assistant"), None)
        price = self.config.price_for(state.model)
        reported = reported_usage(last.metrics, price).prompt if last is not None and last.metrics else 0
        if last is None or not reported or not state.sent_tokens or last.id == state.calibrated_on:
            return
        state.calibrated_on = last.id
        self.config.counter_for(state.model).calibrate(state.sent_tokens, reported)

    def _pays_to_fold(self, state: RunState) -> bool:
        """True when folding now, under the budget, costs less than it saves within ``payback_calls`` calls.

        A fold rewrites everything after the part of the prompt it leaves untouched (system, history summary,
        current user message): the new summary and any kept step older than the newest batch are no longer read
        from the cache but sent anew, billed as a cache write (Anthropic, 1.25x) or in full (free cache writes),
        and a model-written summary costs its own prompt and answer. In return every later call sends ``freed``
        fewer tokens, each of which it would have read from the cache: the provider's read rate.
        """
        cfg = self.config
        if (
            cfg.payback_calls is None
            or cfg.strategy.summarizer is None
            or state.prompt_tokens < self.target(state)
            or state.calls - state.folded_at < EARLY_FOLD_GAP
        ):
            return False
        price = cfg.price_for(state.model)
        if not price.caches:
            return False  # nothing is cached: folding at the budget costs the same and keeps more
        plan = self.plan(state)
        if not plan.has_work:
            return False
        counter = cfg.counter_for(state.model)
        empty = counter.count_messages(())

        def size(*messages: Message | None) -> int:  # through the counter's identity cache: no re-hashing
            return counter.count_messages([m for m in messages if m is not None]) - empty

        folded = size(*plan.folded)
        previous = size(plan.history_summary, plan.progress_summary)
        # the working set is chosen anew at the fold and fills the same room again: it is not freed, it is resent
        kept = sum(
            _working_set.held_tokens(m.get_content_string(), counter.count_text)
            for m in (plan.history_summary, plan.progress_summary)
            if m is not None
        )
        summary = min(cfg.max_summary_tokens, previous - kept + folded // 10 + 50) + kept  # grows with what it absorbs
        freed = folded + previous - summary
        # the newest batch is new to the provider either way; kept steps before it (verbatim_ratio) are sent anew
        batch = max((i for i, m in enumerate(plan.kept) if m.role == "assistant" and m.tool_calls), default=0)
        # a new history summary: the current user message after it is sent anew too
        rewrite = summary + size(*plan.kept[:batch]) + (size(*plan.before, plan.current) if plan.history else 0)
        model_cost = 0 if isinstance(cfg.strategy.summarizer, ExtractiveSummarizer) else folded + 4 * summary
        fresh = max(price.write_rate, 1.0) if price.caching == BREAKPOINTS else 1.0
        cost = rewrite * (fresh - price.read_rate) + model_cost
        if freed <= 0 or cost > cfg.payback_calls * price.read_rate * freed:
            return False  # what the working set keeps only lowers what is freed: no need to estimate it
        if cfg.working_set_ratio > 0:  # what the working set would keep again is not freed
            cap = min(int(self.budget(state) * cfg.working_set_ratio), cfg.max_working_set_tokens)
            freed -= _held.estimate(state, plan, cfg.tool_kinds, cap)
        return freed > 0 and cost <= cfg.payback_calls * price.read_rate * freed
