"""``CompressionManager``: folds an agno run's context mid-run, before a model call that would exceed the budget.

agno calls ``should_compress`` and then ``compress`` before every model call of an
Agent or Team (sync, async, streaming), with the live message list. The manager counts
the prompt; when it is over ``compress_at_tokens`` it plans the fold (``plan_fold``),
masks and/or summarizes the foldable span, and rewrites the live list to
``[system, summary, current user, last tool batch]``. Every message it removes from the
live list is remembered in a per-run ledger and put back into the run's output by a
post-hook before agno stores the run, so the database keeps the full record.

Compression never breaks a run: any failure degrades (LLM summary -> extractive ->
no fold) with a logged warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agno.compression.manager import CompressionManager as AgnoCompressionManager
from agno.models.message import Message
from agno.run.base import RunContext

from ._archive import SEARCH_HINT, SEARCH_TOOL_NAME, render_hits, search_messages
from ._checkpoints import guard_checkpoints
from ._compat import add_client_tool, check_attachable, compaction_handles_overflow, label, note_overflow_owner, walk
from ._config import check_options
from ._exceptions import ConfigError, SummarizerError
from ._observations import OUTPUT_GUIDANCE, ObservationPolicy, shorten_text
from ._plan import (
    HISTORY,
    PROGRESS,
    FoldPlan,
    calls_by_id,
    drop_failed_calls,
    filter_folded,
    find_current_user,
    is_summary,
    make_summary_message,
    plan_fold,
    retain_turns,
)
from ._recovery import guard_overflow
from ._session_store import SessionDataStore
from ._store import (
    CompressionRecord,
    CompressionStore,
    full_messages,
    load_counted,
    store_for,
    stored_ids_of,
    usage_dict,
)
from ._summarizers import (
    ExtractiveSummarizer,
    LLMSummarizer,
    Pipeline,
    Summarizer,
    Summary,
    SummaryRequest,
    is_masked,
    mask_placeholder,
    resolve_strategy,
    strip_header,
)
from ._tokens import TokenCounter

if TYPE_CHECKING:
    from agno.metrics import RunMetrics
    from agno.models.base import Model

log = logging.getLogger("agno_compression")

_MAX_TRACKED_RUNS = 256
EARLY_FOLD_GAP = 4
"""Model calls at least between a fold and an early (under budget) one: the agent keeps a few steps verbatim."""

STATS_KEYS: tuple[str, ...] = (
    "folds",
    "masks",
    "shortened",
    "messages_folded",
    "tokens_saved",
    "summarizer_calls",
    "summarizer_failures",
    "overflow_retries",
    "observations_rewritten",
    "observation_chars_saved",
    "records_written",
    "records_skipped",
    "record_failures",
)
"""The counters of ``CompressionManager.stats`` (documented in the README), all present from construction."""


@dataclass
class FoldEvent:
    """One fold (or masking pass) done during a run."""

    strategy: str
    """What acted: ``"mask"``, a summarizer's name, or ``"<name>->extractive"`` after a fallback."""
    folded_ids: list[str]
    """Ids of the messages folded away (empty for a masking pass)."""
    masked_ids: list[str]
    """Ids of tool results masked in place."""
    shortened_ids: list[str]
    """Ids of kept tool results shortened in context because they alone exceeded the budget."""
    summary: str | None
    """The summary text injected, if any."""
    tokens_before: int
    """Prompt tokens before the fold."""
    tokens_after: int
    """Prompt tokens after the fold."""
    created_at: float = field(default_factory=time.time)
    """Unix time of the fold."""
    summarizer_model: str | None = None
    """Id of the model that wrote the summary, if a model did."""
    summarizer_usage: dict[str, Any] | None = None
    """Token usage of the summarizer call, if a model wrote the summary."""
    record_id: int | None = None
    """Id of the stored compression record, once written."""


@dataclass
class _RunContext:
    """Who a live list belongs to: enough to load and record the session's compression state."""

    session_id: str
    run_id: str | None
    owner_type: str
    owner_id: str | None
    store: CompressionStore | None
    history: bool
    db: Any = None
    session: Any = None
    """agno's session object for the run, with the runs it loaded (``None`` when unknown)."""


@dataclass
class _RunState:
    """What the manager remembers about one live message list (one run's model loop)."""

    live: list[Message]
    ledger: list[Message] = field(default_factory=list)
    seen: set[int] = field(default_factory=set)
    tools: Sequence[Any] | None = None
    model: Model | None = None
    prompt_tokens: int = 0
    events: list[FoldEvent] = field(default_factory=list)
    prepared: bool = False
    context: _RunContext | None = None
    sent_tokens: int = 0
    calibrated_on: str | None = None
    stuck_at: int | None = None
    """Prompt tokens after a fold that could not get under the budget (the kept messages alone exceed it)."""
    policed: set[int] = field(default_factory=set)
    """``id()`` of tool messages the observation policy has already seen."""
    current: Message | None = None
    """The run's own input message (the current user message), found when the live list is first seen."""
    calls: int = 0
    """Model calls of this live list seen so far."""
    folded_at: int = -EARLY_FOLD_GAP
    """``calls`` at the newest fold of this live list."""

    def observe(self) -> None:
        """Append messages not seen before to the ledger, in order of first appearance."""
        for m in self.live:
            if id(m) not in self.seen and not is_summary(m):
                self.seen.add(id(m))
                self.ledger.append(m)


@dataclass(kw_only=True)
class CompressionManager(AgnoCompressionManager):
    """Keeps every model call of an agno Agent or Team under ``compress_at_tokens`` by folding mid-run."""

    compress_at_tokens: int = 16_000
    """Fold before a model call whose prompt (messages plus tool definitions) would exceed this."""
    summarizer: str | Summarizer | Pipeline = "extractive"
    """``"extractive"``, ``"llm"``, ``"mask"``, ``"pipeline"``, a ``Summarizer`` or a ``Pipeline``."""
    target_ratio: float = 0.4
    """After a fold the prompt should sit at or below this share of ``compress_at_tokens``."""
    max_summary_tokens: int = 1_500
    """Upper bound on a summary's size."""
    min_summary_tokens: int = 200
    """Smallest budget a summary gets, even when the kept messages are large."""
    token_counter: TokenCounter | None = None
    """Counts prompts; default: exact tiktoken counts for the agent's model, offline."""
    summarizer_timeout: float = 120.0
    """Seconds a summarizer may take before the fold falls back to the extractive summary."""
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
    cache_rate: float = 0.1
    """What the provider bills a cached prompt prefix at, as a share of its normal input price (0.1 for OpenAI,
    Anthropic and Gemini); used to decide when folding before the budget is reached pays off."""
    payback_calls: int | None = 3
    """Fold before the budget is reached when the fold pays for the prompt cache it breaks (and for the
    summarizer's own tokens) within this many model calls; ``None`` folds only when the budget is exceeded."""

    def __post_init__(self) -> None:
        check_options(self)  # every field's type and range: a ConfigError naming the option and the value
        self.strategy = resolve_strategy(self.summarizer, self.model)
        # agno's own knobs: folding is driven by our threshold, never by agno's count trigger.
        self.compress_tool_results = True
        self.compress_tool_results_limit = None
        self.compress_token_limit = self.compress_at_tokens
        for key in STATS_KEYS:  # every documented counter exists from the start, at 0
            self.stats.setdefault(key, 0)
        self._fallback = ExtractiveSummarizer()
        self._runs: OrderedDict[int, _RunState] = OrderedDict()
        self._counters: dict[str, TokenCounter] = {}
        self._lock = threading.Lock()
        self.events: list[FoldEvent] = []
        self._contexts: OrderedDict[int, tuple[Any, Any, Any]] = OrderedDict()
        self._stores: dict[int, tuple[Any, CompressionStore | None]] = {}
        self._store_down_until: dict[int, float] = {}
        self._compaction_agents: set[str] = set()  # ids of agents whose agno Compaction handles overflow
        self._search_tool = self._search_function()  # offered to each run by prepare_run

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
        target.compression_manager = self
        target.compress_tool_results = True
        if target.model is not None:
            if compaction_handles_overflow(target):
                log.info(
                    "agno-compression: %s has agno's Compaction(on_context_overflow=True): agno's compaction answers "
                    "'prompt too long' there; agno-compression only folds before model calls",
                    label(target),
                )
            else:
                guard_overflow(target.model, self, self.overflow_retries)
            guard_checkpoints(target.model, self)
        # search_folded_history is offered per run by prepare_run, not kept in target.tools: to_dict/from_dict
        # (AgentOS, saved configs) then need no registry entry for it
        if self.output_guidance:
            self._add_guidance(target)
        hooks = list(target.post_hooks or [])
        if self.restore_run_messages not in hooks:
            hooks.append(self.restore_run_messages)
        target.post_hooks = hooks
        pre = list(target.pre_hooks or [])
        for hook in (self.register_run, self.prepare_run):
            if hook not in pre:
                pre.append(hook)
        target.pre_hooks = pre
        if isinstance(self.strategy.summarizer, LLMSummarizer) and self.strategy.summarizer.model is None:
            self.strategy.summarizer.model = self.model or target.model
        from ._metrics import fix_known_stream_usage

        # Streamed usage counted once, for the agent's and the summarizer's models (members' via walk()).
        fix_known_stream_usage(target.model, self.model, getattr(self.strategy.summarizer, "model", None))

    def prepare_run(self, run_context: Any = None, agent: Any = None) -> None:
        """Pre-hook: give this run ``search_folded_history`` (run-scoped, never saved in the config); note an
        agent whose agno Compaction answers overflow, so a model shared with other agents defers for it."""
        if self.search_tool:
            add_client_tool(run_context, self._search_tool, SEARCH_TOOL_NAME)
        note_overflow_owner(self, agent)

    @staticmethod
    def _add_guidance(target: Any) -> None:
        instructions = target.instructions
        if instructions is None:
            target.instructions = [OUTPUT_GUIDANCE]
        elif isinstance(instructions, str):
            target.instructions = (
                [instructions, OUTPUT_GUIDANCE] if OUTPUT_GUIDANCE not in instructions else instructions
            )
        elif isinstance(instructions, list) and OUTPUT_GUIDANCE not in instructions:
            target.instructions = [*instructions, OUTPUT_GUIDANCE]

    def register_run(self, run_context: Any = None, agent: Any = None, team: Any = None, session: Any = None) -> None:
        """Pre-hook: remember the run's context, owner and session; ``run_context.messages`` later is the live list."""
        if run_context is None or not self.persist:
            return
        with self._lock:
            self._contexts[id(run_context)] = (run_context, team if team is not None else agent, session)
            while len(self._contexts) > _MAX_TRACKED_RUNS:
                self._contexts.popitem(last=False)

    def _context_for(self, messages: list[Message]) -> _RunContext | None:
        """The registered run whose live list is ``messages`` (and forget it), as a ``_RunContext``."""
        with self._lock:
            found = None
            for key, (ctx, owner, session) in list(self._contexts.items()):
                if getattr(ctx, "messages", None) is messages:
                    found = (ctx, owner, session)
                    del self._contexts[key]
                    break
        if found is None:
            return None
        ctx, owner, session = found
        session_id = getattr(ctx, "session_id", None)
        if not session_id:
            return None
        from agno.team import Team

        store = self._store_for(owner)
        saves_own_session = getattr(owner, "team_id", None) is None and getattr(owner, "workflow_id", None) is None
        if isinstance(store, SessionDataStore) and saves_own_session and getattr(session, "session_id", None):
            # Folds go into the session object agno saves with this run's messages (a team member's folds
            # join its team's, which is bound under the same session id).
            store.bind(session)
        return _RunContext(
            session_id=str(session_id),
            run_id=getattr(ctx, "run_id", None),
            owner_type="team" if isinstance(owner, Team) else "agent",
            owner_id=getattr(owner, "id", None),
            store=store,
            history=bool(getattr(owner, "add_history_to_context", False)),
            db=getattr(owner, "db", None),
            session=session,
        )

    def _store_for(self, owner: Any) -> CompressionStore | None:
        if self.store is not None:
            return self.store
        db = getattr(owner, "db", None)
        if db is None:
            return None
        with self._lock:
            cached = self._stores.get(id(db))
            if cached is not None and cached[0] is db:
                return cached[1]
        try:
            store: CompressionStore | None = store_for(db)
        except Exception as exc:
            log.warning("agno-compression: compression records disabled for %s: %s", type(db).__name__, exc)
            store = None
        with self._lock:
            self._stores[id(db)] = (db, store)
        return store

    def _prepare(self, state: _RunState, messages: list[Message]) -> None:
        """First sight of a live list: clean the loaded history (earlier folds, failed calls, old turns)."""
        state.prepared = True
        state.observe()  # history dropped below stays in the ledger: agno still stores it with the run
        history = list(messages)
        if self.persist:
            try:
                state.context = self._context_for(messages)  # run_context.messages is the live list itself
            except Exception as exc:
                log.warning("agno-compression: could not tell which session this run belongs to: %s", exc)
            history = self._apply_earlier_folds(state, history)
        if self.drop_failed_calls:
            history = drop_failed_calls(history)
        if self.retained_turns is not None:
            history = retain_turns(history, self.retained_turns)
        messages[:] = history
        current = find_current_user(messages)  # before the model answers: the run's own input is the newest user
        state.current = messages[current] if current is not None else None

    def _apply_earlier_folds(self, state: _RunState, messages: list[Message]) -> list[Message]:
        """Drop history the session folded before and put its newest summary in its place."""
        try:
            ctx = state.context
            if ctx is None or not self._store_usable(ctx.store):
                return messages
            assert ctx.store is not None
            try:
                # A fold counts only if its run or the messages it folded were stored (a run killed before agno
                # saved it leaves records behind): checked against the ids agno already loaded with the session.
                loaded = load_counted(ctx.store, ctx.session_id, stored_ids_of(ctx.session, messages))
            except Exception:
                self._store_failed(ctx.store)
                raise
            if not loaded.folds:
                return messages
            return filter_folded(messages, loaded.folded_ids, loaded.summary if ctx.history else None)
        except Exception as exc:
            log.warning("agno-compression: could not load the session's compression records: %s", exc)
            return messages

    def _policy_for(self, tool_name: str | None) -> ObservationPolicy | None:
        if not isinstance(self.observations, Mapping):
            return self.observations
        if tool_name is not None and tool_name in self.observations:
            return self.observations[tool_name]
        return self.observations.get("*")

    def _new_outputs(self, state: _RunState, messages: list[Message]) -> list[tuple[Message, ObservationPolicy]]:
        """This run's tool outputs the observation policy has not seen yet, with their policy."""
        if self.observations is None:
            return []
        out = []
        for m in messages:
            if m.role == "tool" and not m.from_history and id(m) not in state.policed and m.content is not None:
                state.policed.add(id(m))
                policy = self._policy_for(m.tool_name)
                if policy is not None and m.compressed_content is None:
                    out.append((m, policy))
        return out

    def _rewrite_output(self, message: Message, text: str, new: str) -> None:
        if new != text:
            message.compressed_content = new  # what the model sees; ``content`` stays the full original
            self.stats["observations_rewritten"] = self.stats.get("observations_rewritten", 0) + 1
            self.stats["observation_chars_saved"] = self.stats.get("observation_chars_saved", 0) + len(text) - len(new)

    def _police(self, state: _RunState, messages: list[Message]) -> None:
        for m, policy in self._new_outputs(state, messages):
            text = m.get_content_string()
            try:
                self._rewrite_output(m, text, policy.apply(text, m.tool_name))
            except Exception as exc:
                log.warning("agno-compression: observation policy failed on %s, output kept: %s", m.tool_name, exc)

    async def _apolice(self, state: _RunState, messages: list[Message]) -> None:
        for m, policy in self._new_outputs(state, messages):
            text = m.get_content_string()
            try:
                aapply = getattr(policy, "aapply", None)
                new = await aapply(text, m.tool_name) if aapply is not None else policy.apply(text, m.tool_name)
                self._rewrite_output(m, text, new)
            except Exception as exc:
                log.warning("agno-compression: observation policy failed on %s, output kept: %s", m.tool_name, exc)

    def restore_run_messages(self, run_output: Any, run_context: Any = None, session: Any = None) -> None:
        """Post-hook: put every message folded during the run back into ``run_output.messages``.

        agno builds the stored run from the live list, which a fold shortened; the ledger has
        every message that list ever held, in order. The session's totals are mirrored into
        ``session.session_data["agno_compression"]`` before agno saves the session.
        """
        try:
            state = self._pop_state(run_output, run_context)
            if state is None:
                return
            state.observe()
            run_output.messages = self._full_run(state, list(run_output.messages or []), memory_only=True)
            self._account_policies(getattr(run_output, "metrics", None))
            self._bookkeep(state, session)
        except Exception as exc:  # never break a run
            log.warning("agno-compression: could not restore folded messages into the run output: %s", exc)

    @staticmethod
    def _full_run(state: _RunState, current: list[Message], memory_only: bool = False) -> list[Message]:
        """Every message the run's live list ever held (ledger order), then any of ``current`` not seen yet."""
        known = {id(m) for m in state.ledger}
        full = [m for m in state.ledger if m.add_to_agent_memory or not memory_only]
        return full + [m for m in current if id(m) not in known and not is_summary(m)]

    @contextlib.contextmanager
    def checkpoint_view(self, live: list[Message]) -> Iterator[None]:
        """While agno checkpoints a running run, ``live`` holds every message of the run, not the folded view.

        agno's ``after_tool_results`` callback stores the run from the live list; after a fold that list
        lacks the folded messages, so each checkpoint would overwrite the previous one with less.
        """
        folded_view: list[Message] | None = None
        try:
            with self._lock:
                state = self._runs.get(id(live))
            if state is not None and state.live is live:
                full = self._full_run(state, live[:])
                if len(full) != len(live) or any(a is not b for a, b in zip(full, live, strict=True)):
                    folded_view = live[:]
                    live[:] = full
        except Exception as exc:  # never break a run: the checkpoint then stores the folded view
            log.warning("agno-compression: could not restore folded messages for a checkpoint: %s", exc)
        try:
            yield
        finally:
            if folded_view is not None:
                live[:] = folded_view

    def _pop_state(self, run_output: Any, run_context: Any) -> _RunState | None:
        live = getattr(run_context, "messages", None)
        with self._lock:
            if live is not None and id(live) in self._runs and self._runs[id(live)].live is live:
                return self._runs.pop(id(live))
            ids = {id(m) for m in run_output.messages or []}
            for key, state in list(self._runs.items()):
                if ids & state.seen:
                    return self._runs.pop(key)
        return None

    def _state(self, messages: list[Message]) -> _RunState:
        with self._lock:
            state = self._runs.get(id(messages))
            if state is None or state.live is not messages:
                state = _RunState(live=messages)
                self._runs[id(messages)] = state
                while len(self._runs) > _MAX_TRACKED_RUNS:
                    self._runs.popitem(last=False)
            return state

    def counter_for(self, model: Model | None) -> TokenCounter:
        """The token counter used for ``model``'s prompts."""
        if self.token_counter is not None:
            return self.token_counter
        key = getattr(model, "id", None) or ""
        with self._lock:
            if key not in self._counters:
                self._counters[key] = TokenCounter(key or None)
            return self._counters[key]

    # --- agno's entry points -------------------------------------------------------------------------

    def should_compress(
        self,
        messages: list[Message],
        tools: list[Any] | None = None,
        model: Model | None = None,
        response_format: Any = None,
    ) -> bool:
        try:
            state = self._begin(messages, tools, model)
            self._police(state, messages)
            return self._over_budget(state, messages)
        except Exception as exc:
            log.warning("agno-compression: token count failed, not folding this call: %s", exc)
            return False

    async def ashould_compress(
        self,
        messages: list[Message],
        tools: list[Any] | None = None,
        model: Model | None = None,
        response_format: Any = None,
    ) -> bool:
        try:
            state = self._begin(messages, tools, model)
            await self._apolice(state, messages)
            return self._over_budget(state, messages)
        except Exception as exc:
            log.warning("agno-compression: token count failed, not folding this call: %s", exc)
            return False

    def _begin(self, messages: list[Message], tools: list[Any] | None, model: Model | None) -> _RunState:
        state = self._state(messages)
        if not state.prepared:
            self._prepare(state, messages)
        state.tools, state.model = tools, model
        state.observe()
        return state

    def _over_budget(self, state: _RunState, messages: list[Message]) -> bool:
        state.calls += 1
        self._calibrate(state, messages)
        state.prompt_tokens = state.sent_tokens = self._count(state, messages)
        if state.stuck_at is not None:
            # The last fold could not reach the budget: folding one more batch each call would loop. Fold again
            # only once the span that can be folded has grown by the target gap.
            if state.prompt_tokens - state.stuck_at < self.compress_at_tokens - self.target_tokens:
                return False
            state.stuck_at = None
        if state.prompt_tokens > self.compress_at_tokens:
            return True
        return self._pays_to_fold(state)

    def _pays_to_fold(self, state: _RunState) -> bool:
        """True when folding now, under the budget, costs less than it saves within ``payback_calls`` calls.

        A fold rewrites everything after the part of the prompt it leaves untouched (system, history
        summary, current user message): the new summaries are billed uncached once, and a model-written
        summary costs its own prompt and answer. In return every later call sends ``freed`` fewer tokens,
        each saving ``cache_rate`` of their price (they would have been cache hits).
        """
        if (
            self.payback_calls is None
            or self.strategy.summarizer is None
            or state.prompt_tokens < self.target_tokens
            or state.calls - state.folded_at < EARLY_FOLD_GAP
        ):
            return False
        plan = self._plan(state)
        if not plan.has_work:
            return False
        size = self.counter_for(state.model).count_message
        folded = sum(size(m) for m in plan.folded)
        previous = sum(size(m) for m in (plan.history_summary, plan.progress_summary) if m)
        summary = min(self.max_summary_tokens, previous + folded // 10 + 50)  # grows with what it absorbs
        freed = folded + previous - summary
        # new history summary: the current user message after it is no longer a cache hit either
        rewrite = summary + (sum(size(m) for m in (*plan.before, plan.current) if m) if plan.history else 0)
        model_cost = 0 if isinstance(self.strategy.summarizer, ExtractiveSummarizer) else folded + 4 * summary
        gain = self.payback_calls * self.cache_rate * freed
        return freed > 0 and rewrite * (1 - self.cache_rate) + model_cost <= gain

    def compress(self, messages: list[Message], run_metrics: RunMetrics | None = None) -> None:
        try:
            state = self._state(messages)
            plan = self._plan(state)
            if self._mask_enough(state, plan):
                return
            summaries: dict[str, Summary] = {}
            if self.strategy.summarizer is not None and plan.has_work:
                for kind, request in self._requests(state, plan):
                    summaries[kind] = self._summarize_sync(request)
            self._apply(state, plan, summaries, run_metrics)
        except Exception as exc:
            log.warning("agno-compression: fold failed, the model call goes ahead unfolded: %s", exc)

    async def acompress(self, messages: list[Message], run_metrics: RunMetrics | None = None) -> None:
        try:
            state = self._state(messages)
            plan = self._plan(state)
            if self._mask_enough(state, plan):
                return
            summaries: dict[str, Summary] = {}
            if self.strategy.summarizer is not None and plan.has_work:
                for kind, request in self._requests(state, plan):
                    summaries[kind] = await self._summarize_async(request)
            self._apply(state, plan, summaries, run_metrics)
        except Exception as exc:
            log.warning("agno-compression: fold failed, the model call goes ahead unfolded: %s", exc)

    def _plan(self, state: _RunState) -> FoldPlan:
        """The fold plan of the run's live list, around the run's own input message."""
        messages = state.live
        if state.current is not None:
            for i, m in enumerate(messages):
                if m is state.current:
                    return plan_fold(messages, current=i)
        return plan_fold(messages)

    # --- the steps of a fold (each small and overridable) --------------------------------------------

    def _calibrate(self, state: _RunState, messages: Sequence[Message]) -> None:
        """Correct an estimating counter with the prompt tokens the provider reported for the previous call."""
        last = next((m for m in reversed(messages) if m.role == "assistant"), None)
        reported = getattr(getattr(last, "metrics", None), "input_tokens", 0) if last is not None else 0
        if last is None or not reported or not state.sent_tokens or last.id == state.calibrated_on:
            return
        state.calibrated_on = last.id
        self.counter_for(state.model).calibrate(state.sent_tokens, reported)

    def _count(self, state: _RunState, messages: Sequence[Message]) -> int:
        return self.counter_for(state.model).count_prompt(messages, state.tools)

    @property
    def target_tokens(self) -> int:
        """The prompt size a fold aims for."""
        return int(self.compress_at_tokens * self.target_ratio)

    def _mask_enough(self, state: _RunState, plan: FoldPlan) -> bool:
        """Mask old tool outputs in place; True when that alone brought the prompt under target."""
        if not self.strategy.mask:
            return False
        calls = calls_by_id(state.live)
        masked: list[str] = []
        for m in plan.folded:
            if m.role == "tool" and not is_masked(m):
                m.compressed_content = mask_placeholder(m, calls)
                masked.append(m.id)
        after = state.sent_tokens = self._count(state, state.live)
        goal = self.target_tokens if self.strategy.summarizer is not None else self.compress_at_tokens
        if masked and (after <= goal or self.strategy.summarizer is None):
            self._record(state, FoldEvent("mask", [], masked, [], None, state.prompt_tokens, after), [])
            return True
        if self.strategy.summarizer is None:
            if not masked:
                log.debug("agno-compression: nothing left to mask")
            return True
        return False

    def _summary_budget(self, state: _RunState, plan: FoldPlan, target: int | None = None) -> int:
        counter = self.counter_for(state.model)
        kept_tokens = self._count(state, plan.unchanged_view())
        goal = self.target_tokens if target is None else target
        # Aim for the target, but do not starve the summary while there is room for one more batch like the
        # last one and then some: half of what is left after that goes to the summary.
        limit = self.compress_at_tokens if target is None else int(target / self.target_ratio)
        batch = sum(counter.count_message(m) for m in plan.kept if m.role in ("assistant", "tool"))
        headroom = (limit - kept_tokens - batch) // 2
        budget = min(self.max_summary_tokens, max(self.min_summary_tokens, goal - kept_tokens, headroom))
        if self.search_tool:  # the hint appended after the summarizer counts against the same cap
            budget = max(self.min_summary_tokens // 2, budget - counter.count_text(SEARCH_HINT) - 1)
        return budget

    def _requests(
        self, state: _RunState, plan: FoldPlan, target: int | None = None, overflow: bool = False
    ) -> list[tuple[str, SummaryRequest]]:
        """One request per summary the fold writes: the history summary, the progress summary, or both.

        A summarizer that writes one text per call (a model) gets one request covering both spans when a
        fold has both; its summary then goes after the current user message, where order allows it.
        """
        counter = self.counter_for(state.model)
        budget = self._summary_budget(state, plan, target)
        summarizer = self.strategy.summarizer or (self._fallback if overflow else None)

        def text(message: Message | None) -> str | None:
            return message.get_content_string() if message is not None else None

        def request(messages: Sequence[Message], previous: str | None, kind: str, tokens: int) -> SummaryRequest:
            return SummaryRequest(
                messages=messages, previous=previous, max_tokens=tokens, count_tokens=counter.count_text, kind=kind
            )

        if plan.history and plan.steps and not isinstance(summarizer, ExtractiveSummarizer):
            previous = "\n\n".join(t for t in (text(plan.history_summary), text(plan.progress_summary)) if t) or None
            return [(PROGRESS, request(plan.folded, previous, PROGRESS, budget))]
        out = []
        share = budget // 2 if plan.history and plan.steps else budget
        if plan.history:
            out.append((HISTORY, request(plan.history, text(plan.history_summary), HISTORY, share)))
        if plan.steps:
            out.append((PROGRESS, request(plan.steps, text(plan.progress_summary), PROGRESS, budget - share)))
        return out

    def _checked(self, summary: Any, summarizer: Summarizer) -> Summary:
        if not isinstance(summary, Summary) or not isinstance(summary.text, str) or not summary.text.strip():
            raise SummarizerError(f"summarizer {summarizer.name!r} returned no usable text ({type(summary).__name__})")
        return summary

    def _fallback_summary(self, request: SummaryRequest, failed: Summarizer, exc: BaseException) -> Summary:
        log.warning("agno-compression: summarizer %r failed (%s); using the extractive summary", failed.name, exc)
        self.stats["summarizer_failures"] = self.stats.get("summarizer_failures", 0) + 1
        result = self._fallback.summarize(request)
        return Summary(text=result.text, strategy=f"{failed.name}->extractive")

    def _summarize_sync(self, request: SummaryRequest, overflow: bool = False) -> Summary:
        # masking alone cannot answer an overflow: fall back to the extractive summary then
        summarizer = self.strategy.summarizer or (self._fallback if overflow else None)
        assert summarizer is not None
        if isinstance(summarizer, ExtractiveSummarizer):
            return summarizer.summarize(request)  # pure and fast: no thread needed
        box: dict[str, Any] = {}

        def work() -> None:
            try:
                box["result"] = summarizer.summarize(request)
            except BaseException as exc:
                box["error"] = exc

        worker = threading.Thread(target=work, name="agno-compression-summarizer", daemon=True)
        worker.start()
        worker.join(self.summarizer_timeout)
        try:
            if worker.is_alive():
                raise SummarizerError(f"no summary after {self.summarizer_timeout}s")
            if "error" in box:
                raise box["error"]
            return self._checked(box.get("result"), summarizer)
        except Exception as exc:
            return self._fallback_summary(request, summarizer, exc)

    async def _summarize_async(self, request: SummaryRequest, overflow: bool = False) -> Summary:
        summarizer = self.strategy.summarizer or (self._fallback if overflow else None)
        assert summarizer is not None
        if isinstance(summarizer, ExtractiveSummarizer):
            return summarizer.summarize(request)  # pure and fast
        try:
            if isinstance(summarizer, LLMSummarizer):
                result = await asyncio.wait_for(summarizer.asummarize(request), self.summarizer_timeout)
            else:
                # Another summarizer's async code might block the event loop, which wait_for cannot interrupt:
                # its sync ``summarize`` runs in a daemon thread instead, and only the waiting is async.
                result = await asyncio.wait_for(self._in_thread(summarizer, request), self.summarizer_timeout)
            return self._checked(result, summarizer)
        except asyncio.TimeoutError as exc:  # wait_for's own has no message: name the timeout, as the sync path does
            reason = SummarizerError(str(exc) or f"no summary after {self.summarizer_timeout}s")
            return self._fallback_summary(request, summarizer, reason)
        except Exception as exc:
            return self._fallback_summary(request, summarizer, exc)

    @staticmethod
    def _in_thread(summarizer: Summarizer, request: SummaryRequest) -> asyncio.Future[Any]:
        """``summarizer.summarize(request)`` on a daemon thread (an abandoned one never holds up the run's end)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()

        def settle(result: Any, error: BaseException | None) -> None:
            if not future.done():
                future.set_exception(error) if error is not None else future.set_result(result)

        def work() -> None:
            try:
                result, error = summarizer.summarize(request), None
            except BaseException as exc:
                result, error = None, exc
            with contextlib.suppress(RuntimeError):  # the loop is already closed: nobody waits any more
                loop.call_soon_threadsafe(settle, result, error)

        threading.Thread(target=work, name="agno-compression-summarizer", daemon=True).start()
        return future

    def _apply(
        self,
        state: _RunState,
        plan: FoldPlan,
        summaries: Mapping[str, Summary],
        run_metrics: RunMetrics | None,
        limits: tuple[int, int] | None = None,
        tag: str = "",
    ) -> None:
        """Rewrite the live list, shorten oversized kept outputs, account usage, record the event."""
        messages = state.live
        folded_ids: list[str] = []
        texts: list[str] = []
        if summaries:
            history, progress = summaries.get(HISTORY), summaries.get(PROGRESS)
            last = PROGRESS if progress is not None else HISTORY
            made = {  # an empty summary (the folded messages said nothing) is never sent
                kind: make_summary_message(self._with_search_hint(s.text) if kind == last else s.text, kind)
                for kind, s in summaries.items()
                if strip_header(s.text)
            }
            head = made.get(HISTORY) if history is not None else (plan.history_summary if not plan.history else None)
            tail = made.get(PROGRESS) if progress is not None else (plan.progress_summary if not plan.steps else None)
            messages[:] = plan.view(head, tail)
            folded_ids = [m.id for m in plan.folded]
            texts = [m.get_content_string() for m in (head, tail) if m is not None]
            for summary in summaries.values():
                self._account(summary, run_metrics)
        shortened = self._shorten_kept(state, plan, *(limits or ()))
        after = state.sent_tokens = self._count(state, messages)
        state.stuck_at = after if after > (limits[0] if limits else self.compress_at_tokens) else None
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

    def _shorten_kept(
        self, state: _RunState, plan: FoldPlan, limit: int | None = None, target: int | None = None
    ) -> list[str]:
        """Shorten the largest kept tool outputs (in context only) until the prompt fits the budget."""
        limit = self.compress_at_tokens if limit is None else limit
        target = self.target_tokens if target is None else target
        counter = self.counter_for(state.model)
        total = self._count(state, state.live)
        if total <= limit:
            return []
        shortened: list[str] = []
        tools = sorted((m for m in plan.kept if m.role == "tool"), key=counter.count_message, reverse=True)
        for m in tools:
            if total <= limit:
                break
            if m.compressed_content is None and not isinstance(m.content, str):
                continue  # image or other parts: a text stand-in would change what the model receives
            size = counter.count_message(m)
            text = m.compressed_content if m.compressed_content is not None else m.get_content_string()
            allowed = max(200, size - (total - target))
            if allowed >= size:
                continue
            chars = max(400, int(len(text) * allowed / max(size, 1)))
            if len(text) <= chars:
                continue
            m.compressed_content = shorten_text(text, chars)
            total = self._count(state, state.live)
            shortened.append(m.id)
        if total > limit:
            log.warning(
                "agno-compression: prompt still %d tokens after folding (budget %d): the kept messages alone exceed it",
                total,
                limit,
            )
        return shortened

    def _account(self, summary: Summary, run_metrics: RunMetrics | None) -> None:
        """Add a model-written summary's usage to the run, as compression-model usage."""
        if summary.response is None or summary.model is None or run_metrics is None:
            return
        from agno.metrics import ModelType, accumulate_model_metrics

        accumulate_model_metrics(summary.response, summary.model, ModelType.COMPRESSION_MODEL, run_metrics)

    def _record(self, state: _RunState, event: FoldEvent, folded: Sequence[Message]) -> None:
        state.folded_at = state.calls
        state.events.append(event)
        self.events.append(event)
        del self.events[:-1000]
        key = {"mask": "masks", "shorten": "shortened"}.get(event.strategy, "folds")
        self.stats[key] = self.stats.get(key, 0) + 1
        self.stats["messages_folded"] = self.stats.get("messages_folded", 0) + len(event.folded_ids)
        self.stats["tokens_saved"] = self.stats.get("tokens_saved", 0) + max(
            0, event.tokens_before - event.tokens_after
        )
        if event.summary is not None:
            self.stats["summarizer_calls"] = self.stats.get("summarizer_calls", 0) + 1
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
            self._persist(state, event)
        if self.on_fold is not None:
            try:
                self.on_fold(event, folded)
            except Exception as exc:
                log.warning("agno-compression: on_fold callback failed: %s", exc)

    def _persist(self, state: _RunState, event: FoldEvent) -> None:
        """Write the fold (folded ids and summary in one row, one transaction); a failure only warns."""
        ctx = state.context
        if ctx is None or ctx.store is None:
            return
        if not self._store_usable(ctx.store):
            self.stats["records_skipped"] = self.stats.get("records_skipped", 0) + 1
            return
        row = CompressionRecord(
            session_id=ctx.session_id,
            folded_ids=list(event.folded_ids),
            summary=event.summary,
            strategy=event.strategy,
            owner_type=ctx.owner_type,
            owner_id=ctx.owner_id,
            run_id=ctx.run_id,
            tokens_before=event.tokens_before,
            tokens_after=event.tokens_after,
            summarizer_model=event.summarizer_model,
            summarizer_usage=event.summarizer_usage,
            created_at=event.created_at,
        )
        try:
            event.record_id = ctx.store.record(row)
            self.stats["records_written"] = self.stats.get("records_written", 0) + 1
        except Exception as exc:
            self._store_failed(ctx.store)
            self.stats["record_failures"] = self.stats.get("record_failures", 0) + 1
            log.warning(
                "agno-compression: could not record the fold of session %r (the run goes on): %s", ctx.session_id, exc
            )

    def _account_policies(self, run_metrics: Any) -> None:
        """Model calls made by observation policies count as compression-model usage of the run."""
        policies = self.observations.values() if isinstance(self.observations, Mapping) else [self.observations]
        for policy in policies:
            responses = getattr(policy, "responses", None)
            model = getattr(policy, "model", None)
            while responses:
                response = responses.pop(0)
                if model is not None:
                    self._account(Summary(text="", strategy="observation", response=response, model=model), run_metrics)

    def _store_usable(self, store: CompressionStore | None) -> bool:
        return store is not None and time.monotonic() >= self._store_down_until.get(id(store), 0.0)

    def _store_failed(self, store: CompressionStore) -> None:
        self._store_down_until[id(store)] = time.monotonic() + self.store_cooldown

    def _bookkeep(self, state: _RunState, session: Any) -> None:
        """Mirror the session's compression totals into ``session_data``, readable without our table."""
        ctx = state.context
        if ctx is None or session is None or not self._store_usable(ctx.store):
            return
        assert ctx.store is not None
        try:
            loaded = ctx.store.load(ctx.session_id)
        except Exception as exc:
            self._store_failed(ctx.store)
            log.warning("agno-compression: could not read the session's compression records: %s", exc)
            return
        if not loaded.folds:
            return
        data = session.session_data if isinstance(session.session_data, dict) else {}
        data["agno_compression"] = {
            "folds": loaded.folds,
            "folded_messages": len(loaded.folded_ids),
            "tokens_saved": loaded.tokens_saved,
            "newest_record_id": loaded.newest_id,
        }
        session.session_data = data

    # --- recovery from a provider's "prompt too long" -------------------------------------------------

    def _overflow_plan(self, messages: list[Message], attempt: int) -> tuple[_RunState, FoldPlan, int, int, int]:
        state = self._state(messages)
        now = state.prompt_tokens = self._count(state, messages)
        # the provider's real limit is below what we counted: aim lower with every attempt
        limit = max(256, int(min(now, self.compress_at_tokens) * 0.6**attempt))
        return state, self._plan(state), now, limit, int(limit * self.target_ratio)

    def _overflow_done(self, state: _RunState, now: int, attempt: int) -> bool:
        after = self._count(state, state.live)
        self.stats["overflow_retries"] = self.stats.get("overflow_retries", 0) + 1
        log.warning(
            "agno-compression: the provider rejected the prompt as too long; folded %d -> %d tokens, retry %d",
            now,
            after,
            attempt,
        )
        return after < now

    def recover_from_overflow(self, messages: list[Message], attempt: int = 1, run_metrics: Any = None) -> bool:
        """Fold ``messages`` harder after a context-overflow error; True when the prompt got smaller."""
        try:
            state, plan, now, limit, target = self._overflow_plan(messages, attempt)
            summaries = {}
            if plan.has_work:
                for kind, request in self._requests(state, plan, target, overflow=True):
                    summaries[kind] = self._summarize_sync(request, overflow=True)
            self._apply(state, plan, summaries, run_metrics, limits=(limit, target), tag="overflow:")
            return self._overflow_done(state, now, attempt)
        except Exception as exc:
            log.warning("agno-compression: could not fold after a context overflow: %s", exc)
            return False

    async def arecover_from_overflow(self, messages: list[Message], attempt: int = 1, run_metrics: Any = None) -> bool:
        """Async ``recover_from_overflow``."""
        try:
            state, plan, now, limit, target = self._overflow_plan(messages, attempt)
            summaries = {}
            if plan.has_work:
                for kind, request in self._requests(state, plan, target, overflow=True):
                    summaries[kind] = await self._summarize_async(request, overflow=True)
            self._apply(state, plan, summaries, run_metrics, limits=(limit, target), tag="overflow:")
            return self._overflow_done(state, now, attempt)
        except Exception as exc:
            log.warning("agno-compression: could not fold after a context overflow: %s", exc)
            return False

    # --- searching what was folded --------------------------------------------------------------------

    def _with_search_hint(self, text: str) -> str:
        """Summaries say how to get the exact originals back when the search tool is on."""
        return f"{text}\n{SEARCH_HINT}" if self.search_tool and SEARCH_HINT not in text else text

    def _search_function(self) -> Callable[..., str]:
        manager = self

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
            return manager.search_folded(
                run_context, query=query, tool_name=tool_name, message_id=message_id, limit=limit
            )

        return search_folded_history

    def search_folded(
        self, run_context: Any, *, query: str = "", tool_name: str = "", message_id: str = "", limit: int = 5
    ) -> str:
        """What ``search_folded_history`` answers: folded originals of the run's own session only."""
        try:
            live = getattr(run_context, "messages", None)
            with self._lock:
                state = self._runs.get(id(live)) if live is not None else None
            if state is None or state.live is not live:
                return "No folded history in this conversation yet."
            folded = {i for event in state.events for i in event.folded_ids}
            pool: dict[str, Message] = {m.id: m for m in state.ledger}
            ctx = state.context
            if ctx is not None and ctx.store is not None and self._store_usable(ctx.store):
                folded |= ctx.store.load(ctx.session_id).folded_ids
                if ctx.db is not None:
                    for m in full_messages(ctx.db, ctx.session_id):
                        pool.setdefault(m.id, m)
            candidates = [m for m in pool.values() if m.id in folded]
            hits = search_messages(
                candidates, query=query, tool_name=tool_name, message_id=message_id, limit=max(1, min(int(limit), 20))
            )
            return render_hits(hits, len(candidates))
        except Exception as exc:  # a tool error must not end the run
            log.warning("agno-compression: search of folded history failed: %s", exc)
            return f"Search of folded history failed: {exc}"
