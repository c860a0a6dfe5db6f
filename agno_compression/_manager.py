"""``CompressionManager``: folds an agno run's context mid-run, before a model call that would exceed the budget.

agno calls ``should_compress`` and then ``compress`` before every model call of an Agent or Team
(sync, async, streaming), with the live message list. The manager counts the prompt; over
``compress_at_tokens`` it plans the fold and rewrites the live list to ``[system, history summary,
current user, progress summary, last tool batch]`` (``_fold``). Every message a fold removes stays in
the run's ledger (``_runs``) and a post-hook puts it back into the run's output before agno stores the
run, so the database keeps the full record. This module holds the options and agno's hooks only.

Compression never breaks a run: any failure degrades (model summary -> extractive -> no fold) with a logged warning.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from agno.compression.manager import CompressionManager as AgnoCompressionManager
from agno.models.message import Message

from ._archive import SEARCH_TOOL_NAME, search_folded, search_tool_function
from ._background import Background
from ._checkpoints import guard_checkpoints
from ._compat import (
    add_client_tool,
    add_guidance,
    check_attachable,
    compaction_handles_overflow,
    label,
    note_overflow_owner,
    release,
    route_compaction,
    take_withheld,
    walk,
    withhold_tool,
)
from ._config import check_options
from ._deletion import guard_deletes
from ._events import FoldEvent
from ._exceptions import ConfigError
from ._fold import Folder, account
from ._observations import ObservationPolicy
from ._plan import drop_failed_calls, find_current_user, is_summary, retain_turns
from ._policies import PolicyAnswer, PolicyCall, aapply_policy, apply_policy, police
from ._prompt_cache import PromptCaching, guard_prompt_cache
from ._records import FoldRecorder
from ._recovery import guard_overflow
from ._requested_fold import FOLD_TOOL_NAME, FoldResult, ask_fold, fold_session, fold_tool_function
from ._runner import SummarizerRunner, adrive, degrades, drive
from ._runs import RunRegistry, RunState
from ._stats import Stats
from ._stores import CompressionStore
from ._summarizers import LLMSummarizer, Pipeline, Summarizer, resolve_strategy
from ._tracing import drain as drain_spans
from ._tracing import traced
from .pricing import PriceModel, provider_of
from .tokens import TokenCounter

if TYPE_CHECKING:
    from collections.abc import Generator

    from agno.metrics import RunMetrics
    from agno.models.base import Model

log = logging.getLogger("agno_compression")

Tools = list[Any] | None
"""Tool definitions of a model call, as agno passes them (``response_format`` and other keywords are ignored)."""

__all__ = ["CompressionManager", "FoldEvent"]

SEARCH_FROM_START = True
"""Send the search tool from a run's first call where the provider caches; the bench turns it off to measure that."""


@dataclass(kw_only=True)
class CompressionManager(AgnoCompressionManager):
    """Keeps every model call of an agno Agent or Team under ``compress_at_tokens`` by folding mid-run."""

    compress_at_tokens: int = 16_000
    """Fold before a model call whose prompt (messages plus tool definitions) would exceed this."""
    summarizer: str | Summarizer | Pipeline = "extractive"
    """``"extractive"``, ``"llm"``, ``"mask"``, ``"pipeline"``, a ``Summarizer`` or a ``Pipeline``."""
    target_ratio: float = 0.4
    """After a fold the prompt should sit at or below this share of ``compress_at_tokens``."""
    verbatim_ratio: float = 0.0
    """Share of ``compress_at_tokens`` kept verbatim at a fold: the newest whole steps that fit stay as they were
    (besides the last tool batch, always kept). Higher keeps more of what the next step reads, at more tokens."""
    working_set_ratio: float = 0.6
    """A fold keeps the files (pages, reports) the run read or wrote and still works with, verbatim, until the folded
    prompt holds the system messages and request plus this share of the rest of the budget (0: off)."""
    max_working_set_tokens: int = 4_000
    """At most this many tokens of working set, whatever the budget (more costs each fold more than it keeps)."""
    hold_by_price: bool = True
    """Hold an idle file only while that costs less, on this provider, than reading it again (the rest is named)."""
    tool_kinds: Mapping[str, str | None] | None = None
    """What your own tools are to the working set: ``{"open_doc": "read", "save_doc": "write"}``; kinds are
    ``read``, ``write``, ``edit``, ``fetch``, ``delegate``; ``None`` leaves a tool out. Known toolkits (agno's,
    Claude Code, Gemini CLI, Codex, OpenHands) and tools shaped like them are recognized without it."""
    max_summary_tokens: int = 1_300
    """Upper bound on a summary's size (the working set comes on top), past which only its ledger may grow."""
    ledger_ratio: float = 0.1
    """Rather than drop a file or test the agent acted on, a summary's ledger may take it past ``max_summary_tokens``
    up to this share of ``compress_at_tokens`` (0: ``max_summary_tokens`` is a hard bound)."""
    min_summary_tokens: int = 200
    """Smallest budget a summary gets, even when the kept messages are large."""
    token_counter: TokenCounter | None = None
    """Counts prompts; default: exact tiktoken counts for the agent's model, offline."""
    summarizer_timeout: float = 120.0
    """Seconds a summarizer may take before the fold falls back to the extractive summary."""
    background_summary_at: float | None = None
    """With an ``LLMSummarizer``: at this share of ``compress_at_tokens`` (0.7 is a good start) the next fold's summary
    starts in the background, so the fold need not wait for it (``_background``); ``None``: written at the fold."""
    on_fold: Callable[[FoldEvent, Sequence[Message]], None] | None = None
    """Called after each fold with the event and the folded original messages."""
    store: CompressionStore | None = None
    """Where fold records go; default: a table in the agent's (or team's) own SQL ``db``."""
    persist: bool = True
    """Record folds and filter folded history across runs (needs a store or a SQL ``db``)."""
    store_cooldown: float = 30.0
    """Seconds a store that just failed is left alone, so a dead database costs one timeout, not one per fold."""
    observations: ObservationPolicy | Mapping[str, ObservationPolicy | None] | None = None
    """Policy applied to each tool output as it enters the context; a dict maps tool names (``"*"`` = any other)
    to policies, ``None`` opts a tool out. The stored message keeps the full output."""
    drop_failed_calls: bool = False
    """Leave failed and hallucinated tool calls (with their error results) out of later runs' history."""
    retained_turns: int | None = None
    """Keep only the last N turns of loaded history (plus the first, usually the task); ``None`` keeps all."""
    output_guidance: bool = False
    """Add ``OUTPUT_GUIDANCE`` (print sizes and samples, not whole collections) to the agent's instructions."""
    overflow_retries: int = 2
    """When the provider rejects a prompt as too long: fold harder and retry this many times (0: off)."""
    search_tool: bool = True
    """Give the agent ``search_folded_history`` to read the exact originals of what was folded."""
    fold_tool: bool = False
    """Give the agent ``fold_context(keep)``: it folds its context before its next step, at a boundary it chooses
    (a subtask done), the summary keeping first what it names."""
    payback_calls: int | None = 3
    """Fold before the budget is reached when the fold pays for the prompt cache it breaks (and for the
    summarizer's own tokens) within this many model calls; ``None`` folds only when the budget is exceeded."""
    prompt_caching: bool = True
    """Help the provider's prompt cache: breakpoints on agno's Claude classes where a fold keeps the prompt stable,
    ``prompt_cache_key`` (the session id) on ``OpenAIChat``/``OpenAIResponses``; ``False`` sends what agno sends."""
    price_model: PriceModel | None = None
    """The provider's prices and cache rules (``agno_compression.pricing``); default: the table's row for each
    model, chosen from its agno class and id. Decides early folds and where breakpoints pay."""
    cache_rate: float | None = None
    """Deprecated (use ``price_model``): a cached token's price as a share of the input price, for every model."""

    def __post_init__(self) -> None:
        check_options(self)  # every field's type and range: a ConfigError naming the option and the value
        self.strategy = resolve_strategy(self.summarizer, self.model)
        # agno's own knobs: folding is driven by our threshold, never by agno's count trigger.
        self.compress_tool_results = True
        self.compress_tool_results_limit = None
        self.compress_token_limit = self.compress_at_tokens
        self.stats: Stats = Stats(self.stats)  # every documented counter exists from the start, at 0
        self.events: list[FoldEvent] = []
        self._runs = RunRegistry()
        self._runner = SummarizerRunner(timeout=self.summarizer_timeout, stats=self.stats)
        self._records = FoldRecorder(store=self.store, cooldown=self.store_cooldown, stats=self.stats)
        self._folder = Folder(self, self._records, self.stats)
        self._background = Background(self.background_summary_at, self.summarizer_timeout, self.stats)
        self._folder.ahead = self._background  # the next fold's summary, written while the run goes on
        self._caching = PromptCaching(enabled=self.prompt_caching, price_model=self.price_model)
        self._counters: dict[str, TokenCounter] = {}
        self._compaction_agents: set[str] = set()  # ids of agents whose agno Compaction handles overflow
        self._search_tool = search_tool_function(self.search_folded)  # offered to each run by prepare_run
        self._fold_tool = fold_tool_function(lambda ctx, keep: ask_fold(self._runs.find(ctx.messages), keep))

    # --- wiring --------------------------------------------------------------------------------------

    def attach(self, target: Any, *, include_members: bool = True) -> Any:
        """Wire this manager into an agno ``Agent`` or ``Team`` (and its members) and return it."""
        from agno.agent import Agent
        from agno.team import Team

        if not isinstance(target, (Agent, Team)):
            raise ConfigError(f"attach() takes an agno Agent or Team, got {type(target).__name__}")
        check_attachable(self, target, include_members)  # raises before anything is changed
        for node, _ in walk(target, include_members):
            self._wire(node)
        return target

    def _wire(self, target: Any) -> None:
        release(target, self)  # a manager attached before: its hooks go, its model wrappers serve this one
        route_compaction()  # agno's compact() (AgentOS's .../compact route) folds with the manager it finds attached
        target.compression_manager = self
        target.compress_tool_results = True
        if target.model is not None:
            if compaction_handles_overflow(target):
                log.info(
                    "agno-compression: %s has agno's Compaction(on_context_overflow=True): agno's compaction answers "
                    "'prompt too long' there; agno-compression only folds before model calls",
                    label(target),
                )
                note_overflow_owner(self, target)  # also for a first run that is a continue_run (no pre-hook)
            # One layer per model instance, whatever is attached; each call is served by its own run's manager
            # (overflow_retries=0 and agents whose Compaction answers overflow pass errors through).
            guard_overflow(target.model, self)
            guard_checkpoints(target.model)
            guard_prompt_cache(target.model)  # breakpoints / prompt_cache_key, served by each run's own manager
            self._caching.announce(target.model, label(target))
            # no fold, no cost: the search tool's definition is sent from the first fold on
            withhold_tool(target.model, SEARCH_TOOL_NAME)
        if self.persist:  # agno's delete_session on this db object deletes the session's fold records too
            guard_deletes(target.db, self._records.store_for(target))
        # search_folded_history is offered per run by prepare_run, not kept in target.tools: to_dict/from_dict
        # (AgentOS, saved configs) then need no registry entry for it
        if self.output_guidance:
            add_guidance(target)
        target.post_hooks = _with(target.post_hooks, self.restore_run_messages)
        target.pre_hooks = _with(target.pre_hooks, self.register_run, self.prepare_run)
        if isinstance(self.strategy.summarizer, LLMSummarizer) and self.strategy.summarizer.model is None:
            self.strategy.summarizer.model = self.model or target.model
        from ._metrics import fix_known_stream_usage

        # Streamed usage counted once, for the agent's and the summarizer's models (members' via walk()).
        fix_known_stream_usage(target.model, self.model, getattr(self.strategy.summarizer, "model", None))

    def counter_for(self, model: Model | None) -> TokenCounter:
        """The token counter used for ``model``'s prompts."""
        if self.token_counter is not None:
            return self.token_counter
        key = getattr(model, "id", None) or ""
        counter = self._counters.get(key)
        if counter is None:  # two threads may both build one: the same counts, the last one kept
            counter = self._counters[key] = TokenCounter(key or None)
        return counter

    def folds(self, live: Any) -> bool:
        """True when ``live`` is the live message list of a run this manager is folding."""
        return self._runs.find(live) is not None

    def flush_records(self) -> None:
        """Wait until the record of every fold so far is written (each run's post-hook waits for its own) and its
        trace span has gone through the span processors (no run waits for those)."""
        self._records.drain()
        drain_spans()

    def fold_session(
        self,
        target: Any,
        session_id: str,
        instructions: str | None = None,
        *,
        apply: bool = True,
        wait: float = 0.0,
        user_id: str | None = None,
    ) -> FoldResult:
        """Fold a stored session's history now, as its next run's history fold would, into one summary that keeps
        ``instructions`` first (``target``: the agent, team or agno db holding it). ``apply=False`` is a dry run.
        While a run of the session is going it waits up to ``wait`` seconds, then answers ``busy``
        (``docs/sessions.md``)."""
        return fold_session(self, target, session_id, instructions, apply=apply, wait=wait, user_id=user_id)

    def price_for(self, model: Model | None) -> PriceModel:
        """What ``model``'s provider bills (``price_model``, else the table's row), ``cache_rate`` applied."""
        price = self._caching.price_for(model)
        return replace(price, read_rate=self.cache_rate) if self.cache_rate is not None else price

    @property
    def target_tokens(self) -> int:
        """The prompt size a fold aims for."""
        return self._folder.target_tokens

    # --- agno's hooks: before and after a run --------------------------------------------------------

    def register_run(self, run_context: Any = None, agent: Any = None, team: Any = None, session: Any = None) -> None:
        """Pre-hook: remember the run's context, owner and session; ``run_context.messages`` later is the live list."""
        if run_context is not None and self.persist:
            self._runs.register(run_context, team if team is not None else agent, session)

    def prepare_run(self, run_context: Any = None, agent: Any = None) -> None:
        """Pre-hook: give this run ``search_folded_history`` (run-scoped, never saved in the config); note an
        agent whose agno Compaction answers overflow, so a model shared with other agents defers for it."""
        if self.search_tool:
            add_client_tool(run_context, self._search_tool, SEARCH_TOOL_NAME)
        if self.fold_tool:
            add_client_tool(run_context, self._fold_tool, FOLD_TOOL_NAME)
        note_overflow_owner(self, agent)

    def restore_run_messages(
        self, run_output: Any, run_context: Any = None, session: Any = None, agent: Any = None, team: Any = None
    ) -> None:
        """Post-hook: put every message folded during the run back into ``run_output.messages``.

        agno builds the stored run from the live list, which a fold shortened; the ledger has every message
        that list ever held, in order. Model calls of observation policies are added to the run's metrics; the
        session's totals are mirrored into ``session.session_data["agno_compression"]`` before agno saves it.
        A run continued after a pause (no pre-hook) records its folds here.
        """
        try:  # first and alone: nothing else the hook does can cost the stored run its messages
            messages = list(run_output.messages or [])
            state = self._runs.pop(getattr(run_context, "messages", None), messages)
            if state is None:
                return
            state.observe()
            state.restore_calls()
            run_output.messages = state.full_run(messages, memory_only=True)
        except Exception as exc:  # never break a run; the error's type only: its message may quote session text
            log.warning(
                "agno-compression: could not restore folded messages into the run output (%s)", type(exc).__name__
            )
            return
        if state.context is None and self.persist and state.events and run_context is not None:
            owner = team if team is not None else agent
            self.stats.guard(
                "recording a continued run's folds", lambda: self._record_late(state, run_context, owner, session)
            )
        self._settle(state, getattr(run_output, "metrics", None), session)

    def _record_late(self, state: RunState, run_context: Any, owner: Any, session: Any) -> None:
        state.context = self._records.owner(run_context, owner, session)
        self._records.record_late(state.context, state.events)

    def _settle(self, state: RunState, metrics: Any, session: Any) -> None:
        """After the restore, each on its own: usage counted, policy usage accounted, session totals mirrored."""
        self.stats.guard("counting usage", lambda: self._count_usage(state))
        for response, model in state.policy_usage:
            self.stats.guard("accounting policy usage", functools.partial(account, response, model, metrics))
        self.stats.guard("mirroring session totals", lambda: self._records.mirror(state.context, session))
        self.stats.guard("settling background summaries", lambda: self._background.forget(state, metrics))

    def keep_paused_run(self, live: list[Message], run_response: Any) -> None:
        """After a model loop: if the run paused, put every message it ever held back into ``live``.

        A paused run (a tool awaits confirmation, user input or external execution) gets no post-hook; agno
        stores it from ``live`` and ``continue_run`` resumes from what it stored, in a new live list. So the
        paused run is stored whole, its records and policy usage settled as the post-hook would, and the
        continuation starts from the originals (it folds again when they are over the budget).
        """
        try:
            requirements = getattr(run_response, "requirements", None) or []
            if all(requirement.is_resolved() for requirement in requirements):
                return
            state = self._runs.pop(live, ())
            if state is None:
                return
            state.observe()
            state.restore_calls()
            live[:] = state.full_run(live)
        except Exception as exc:  # never break a run: the paused run is then stored as folded
            log.warning(
                "agno-compression: could not restore folded messages into a paused run (%s)", type(exc).__name__
            )
            return
        session = state.context.session if state.context is not None else None
        self._settle(state, getattr(run_response, "metrics", None), session)

    def _count_usage(self, state: RunState) -> None:
        """Add what the provider reported for this run's model calls to ``stats`` (``Stats.count_usage``)."""
        self.stats.count_usage(state.ledger, self.price_for(state.model))

    # --- agno's hooks: before each model call --------------------------------------------------------

    @degrades("token count failed, not folding this call", False)
    def should_compress(
        self, messages: list[Message], tools: Tools = None, model: Model | None = None, **_: Any
    ) -> bool:
        return drive(self._checks(messages, tools, model), apply_policy)

    @degrades("token count failed, not folding this call", False)
    async def ashould_compress(
        self, messages: list[Message], tools: Tools = None, model: Model | None = None, **_: Any
    ) -> bool:
        return await adrive(self._checks(messages, tools, model), aapply_policy)

    def _checks(
        self, messages: list[Message], tools: list[Any] | None, model: Model | None
    ) -> Generator[PolicyCall, PolicyAnswer, bool]:
        """Both ``should_compress``: observation policies on new tool outputs, then the budget."""
        state = self._runs.state(messages)
        if not state.prepared:
            self._prepare(state, messages)
        state.model = model
        self._hold_search_tool(state, messages, tools)
        state.observe()
        yield from police(self.observations, state, messages, self.stats)
        return self._background.after_check(self._folder, state, self._folder.over_budget(state, messages))

    def _hold_search_tool(self, state: RunState, messages: list[Message], tools: list[Any] | None) -> None:
        """Keep the search tool out of this loop's prompt (and count) until the session has folded, unless the
        provider caches the prompt: then it is sent from the first call (see ``search_from_start``)."""
        entry = take_withheld(state.model, tools)
        if entry is not None:
            state.withheld = entry
        if state.withheld is not None and (
            state.events or any(is_summary(m) for m in messages) or self.search_from_start(state.model)
        ):
            self._reveal_search_tool(state)
        held = state.withheld is not None and tools is not None
        state.tools = [t for t in tools or () if getattr(t, "name", None) != SEARCH_TOOL_NAME] if held else tools

    def search_from_start(self, model: Model | None) -> bool:
        """Whether the search tool is sent from a run's first call: with ``prompt_caching`` on a provider that caches
        the prompt. Tools come first in every provider's cache order, so revealing the tool at the first fold would
        re-bill the whole prompt there; a definition sent from the start costs a cached read per call
        (bench/RESULTS.md measures both). Elsewhere a run that never folds sends exactly what agno sends."""
        return (
            self.search_tool
            and self.prompt_caching
            and SEARCH_FROM_START
            and provider_of(model) is not None
            and self.price_for(model).caches
        )

    def _reveal_search_tool(self, state: RunState) -> None:
        """Append the held-back definition to the list agno sends for the rest of the loop (tools before it keep
        their cached prefix) and count it from now on."""
        if state.withheld is None:
            return
        sent, definition = state.withheld
        sent.append(definition)
        state.withheld = None
        state.tools = [*(state.tools or ()), definition]  # counted as sent

    def _prepare(self, state: RunState, messages: list[Message]) -> None:
        """First sight of a live list: clean the loaded history (earlier folds, failed calls, old turns)."""
        state.prepared = True
        state.observe()  # history dropped below stays in the ledger: agno still stores it with the run
        history = list(messages)
        if self.persist:
            try:
                entry = self._runs.take_context(messages)  # run_context.messages is the live list itself
                state.context = self._records.owner(*entry) if entry is not None else None
            except Exception as exc:
                log.warning("agno-compression: could not tell which session this run belongs to: %s", exc)
            history = self._records.without_earlier_folds(state.context, history, fresh=entry is not None)
        if self.drop_failed_calls:
            history = drop_failed_calls(history)
        if self.retained_turns is not None:
            history = retain_turns(history, self.retained_turns)
        messages[:] = history
        current = find_current_user(messages)  # before the model answers: the run's own input is the newest user
        state.current = messages[current] if current is not None else None

    @degrades("fold failed, the model call goes ahead unfolded", None)
    def compress(self, messages: list[Message], run_metrics: RunMetrics | None = None) -> None:
        state = self._runs.state(messages)
        self._reveal_search_tool(state)  # the summary about to be written points to it
        with traced(self, state) as span:  # None without a tracer provider: no tracing work at all
            answer = self._summarize if span is None else span.answer(self._summarize)
            drive(self._folder.compress(state, run_metrics, self._runner.fallback), answer)

    @degrades("fold failed, the model call goes ahead unfolded", None)
    async def acompress(self, messages: list[Message], run_metrics: RunMetrics | None = None) -> None:
        state = self._runs.state(messages)
        self._reveal_search_tool(state)
        with traced(self, state) as span:
            answer = self._asummarize if span is None else span.aanswer(self._asummarize)
            await adrive(self._folder.compress(state, run_metrics, self._runner.fallback), answer)

    @degrades("could not fold after a context overflow", False)
    def recover_from_overflow(self, messages: list[Message], attempt: int = 1, run_metrics: Any = None) -> bool:
        """Fold ``messages`` harder after a context-overflow error; True when the prompt got smaller."""
        state = self._runs.state(messages)
        with traced(self, state, attempt) as span:
            answer = self._summarize if span is None else span.answer(self._summarize)
            return drive(self._folder.recover(state, attempt, run_metrics, self._runner.fallback), answer)

    @degrades("could not fold after a context overflow", False)
    async def arecover_from_overflow(self, messages: list[Message], attempt: int = 1, run_metrics: Any = None) -> bool:
        """Async ``recover_from_overflow``."""
        state = self._runs.state(messages)
        with traced(self, state, attempt) as span:
            answer = self._asummarize if span is None else span.aanswer(self._asummarize)
            return await adrive(self._folder.recover(state, attempt, run_metrics, self._runner.fallback), answer)

    def _summarize(self, ask: tuple[Summarizer, Any]) -> Any:
        return self._runner.run(*ask)

    async def _asummarize(self, ask: tuple[Summarizer, Any]) -> Any:
        return await self._runner.arun(*ask)

    def search_folded(
        self, run_context: Any, *, query: str = "", tool_name: str = "", message_id: str = "", limit: int = 5
    ) -> str:
        """What ``search_folded_history`` answers: folded originals of the run's own session only."""
        run = lambda: self._runs.find(getattr(run_context, "messages", None))  # noqa: E731
        return search_folded(run, self._records, query=query, tool_name=tool_name, message_id=message_id, limit=limit)


def _with(hooks: list[Any] | None, *added: Callable[..., Any]) -> list[Any]:
    """``hooks`` with each of ``added`` appended unless already there."""
    out = list(hooks or [])
    out.extend(hook for hook in added if hook not in out)
    return out
