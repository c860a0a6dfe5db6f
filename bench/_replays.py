"""Replay recorded runs through real agno Agents with every context strategy, and measure each replay.

Every replay runs in sync mode in this process: a ``ScriptedModel`` plays the recorded assistant
turns, real agno tools return the recorded outputs, each recorded user message starts a run of one
SQLite-backed session (later runs load earlier ones as history).

Instrumentation (wrappers on the instances, and on two agno module functions for ``Compaction``)
adds up the time spent in each strategy's own hooks ("machinery") and, inside it, the time spent
in its summarizer; at every model call the machinery time since the previous call, minus the
summarizer time, is booked to that call. What a summary kept (fact retention) is computed after
the replay, from the folded messages and summaries the wrappers collected, so it costs nothing
inside the timed hooks.
"""

from __future__ import annotations

import functools
import gc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agno.models.message import Message

from agno_compression import CompressionManager
from agno_compression._keeping._reading import extract_facts
from agno_compression._messages import message_text
from agno_compression._plan import pair_violations, plan_fold
from agno_compression.eval import (
    Trajectory,
    acted_on_facts,
    cached_costs,
    fact_retention,
    grounding,
    last_prompt_text,
    needs_of,
    observations_as_tool_calls,
    prepare_replay,
)
from agno_compression.tokens import TokenCounter

SETTINGS = ("none", "agno-compress", "agno-compaction", "extractive", "extractive-verbatim", "mask", "pipeline", "llm")
"""``none``; agno's ``CompressionManager(compress_token_limit=T)`` and ``Compaction(compact_at_tokens=T)``;
this package's ``CompressionManager(compress_at_tokens=T, summarizer=...)``."""
OURS = ("extractive", "extractive-verbatim", "mask", "pipeline", "llm")
VARIANTS: dict[str, dict[str, Any]] = {"extractive-verbatim": {"summarizer": "extractive", "verbatim_ratio": 0.3}}
"""Settings that are one of ours with other options: ``extractive-verbatim`` trades cost for retention (the
newest steps that fit in 30% of the budget stay verbatim at each fold)."""
_COUNTER = TokenCounter("gpt-4o")


# --- instrumentation ------------------------------------------------------------------------------


class Meter:
    """Time spent in a strategy's hooks and, within it, in its summarizer; booked per model call."""

    def __init__(self) -> None:
        self.machinery = 0.0
        self.summarizer = 0.0
        self.summarizer_calls = 0
        self.per_call: list[float] = []
        self._booked = 0.0
        self._depth = 0
        self.pairs: list[tuple[Sequence[Message], str]] = []
        """(folded originals, summary) of every summary written, for fact retention."""
        self.folds = 0
        self.fold_calls: list[int] = []
        """Index of the model call each fold came before (masks and shortenings alone are not folds)."""

    def machinery_wrapper(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if self._depth:  # nested hook: already timed by the outer one
                return fn(*args, **kwargs)
            self._depth += 1
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.machinery += time.perf_counter() - started
                self._depth -= 1

        return timed

    def summarizer_wrapper(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.summarizer += time.perf_counter() - started
                self.summarizer_calls += 1

        return timed

    def wrap(self, obj: Any, names: Sequence[str], *, summarizer: bool = False) -> None:
        """Replace ``obj.<name>`` by a timed wrapper (on the instance only)."""
        for name in names:
            fn = getattr(obj, name)
            object.__setattr__(obj, name, self.summarizer_wrapper(fn) if summarizer else self.machinery_wrapper(fn))

    def book_call(self) -> None:
        """A model call is about to be served: book the net machinery time since the previous call to it."""
        net = self.machinery - self.summarizer
        self.per_call.append(net - self._booked)
        self._booked = net

    def close(self) -> None:
        """Book what ran after the last model call (the last run's post-hooks) to the last call."""
        net = self.machinery - self.summarizer
        if self.per_call:
            self.per_call[-1] += net - self._booked
        self._booked = net


_ACTIVE: list[Meter] = []
"""The meter of the replay running now (agno's compaction hooks are module functions)."""


def _install_compaction_probes() -> None:
    """Time agno's compaction steps, which are module functions of ``agno.agent._messages``."""
    from agno.agent import _messages

    if getattr(_messages, "_bench_probed", False):
        return

    def probe(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if not _ACTIVE:
                return fn(*args, **kwargs)
            return _ACTIVE[-1].machinery_wrapper(fn)(*args, **kwargs)

        return timed

    for name in ("apply_compaction", "_stored_compaction"):
        setattr(_messages, name, probe(getattr(_messages, name)))
    _messages._bench_probed = True  # type: ignore[attr-defined]


# --- one replay -----------------------------------------------------------------------------------


@dataclass
class Replayed:
    """One recording replayed with one setting at one threshold."""

    source: str
    name: str
    setting: str
    threshold: int
    messages: int
    tokens: list[int]
    violations: int
    wall: float
    per_call: list[float] = field(default_factory=list)
    folds: int = 0
    masks: int = 0
    summarizer_calls: int = 0
    summarizer_prompt_tokens: int = 0
    facts_kept: int = 0
    facts_total: int = 0
    max_summary_tokens: int = 0
    floors: list[int] = field(default_factory=list)
    floor_costs: list[float] = field(default_factory=list)
    """Cost with caching (0.1×, 0.25×) had every call sent only its floor (system, current user, last tool batch):
    below it no setting that keeps those verbatim can go (computed for ``none``)."""
    fixed_peak: int = 0
    """Largest system + current user message (+ tool definitions) of any call: what nothing can shrink."""
    fixed: list[int] = field(default_factory=list)
    """Per model call, its system + current user message (+ tool definitions) (computed for ``none``)."""
    fold_calls: list[int] = field(default_factory=list)
    """Index of each model call a fold came before (``Meter.fold_calls``)."""
    errors: int = 0
    no_room: int = 0
    """Runs of the recording whose system messages, tool definitions and request left no workable room
    (``stats["budget_too_small"]``: warned once, folds now and then, calls over the budget expected)."""
    cpu: float = 0.0
    """Process CPU seconds of the replay (less sensitive than wall time to other processes on the machine)."""
    wall_none: float = 0.0
    cpu_none: float = 0.0
    """The same recording uncompressed, timed next to this replay (medians when repeated)."""
    machinery: float = 0.0
    summarizer: float = 0.0
    """Seconds inside the strategy's hooks (summarizer included) and inside its summarizer."""
    fact_tokens: list[int] = field(default_factory=list)
    """Per summary: o200k tokens of every fact of what it replaced, listed once, comma-separated."""
    facts_by_kind: dict[str, list[int]] = field(default_factory=dict)
    """Fact kind -> [kept, total] over every summary."""
    costs: list[float] = field(default_factory=list)
    """Input cost with prompt caching, in token units, at each rate of ``agno_compression.eval.CACHE_RATES``."""
    acted: frozenset[str] = frozenset()
    """Acted-on facts of everything the model was sent (``agno_compression.eval.acted_on_facts``)."""
    final_text: str = ""
    """The text of the last model call's prompt, as sent."""
    grounded: int = 0
    grounding_total: int = 0
    """Next-step grounding: identifiers the next recorded action used that the call's prompt held, and all of
    them (``agno_compression.eval.grounding``)."""
    requests: list[Any] = field(default_factory=list, repr=False)
    """What each call was sent (kept for ``none``, whose requests the simple baselines are computed from, and with
    ``keep_requests``)."""
    composition: dict[str, int] = field(default_factory=dict)
    """Prompt tokens summed over the calls: ``floor`` (system, current user, last batch, tools), ``summary``
    (this package's summary message) and ``rest`` (everything else: history and batches not folded yet)."""


def _agno_compress(threshold: int, meter: Meter, summarizer: Any) -> dict[str, Any]:
    from agno.compression.manager import CompressionManager as AgnoCompressionManager

    manager = AgnoCompressionManager(model=summarizer, compress_token_limit=threshold)
    original = manager._compress_tool_result

    def compress_one(tool_result: Message, run_metrics: Any = None) -> str | None:
        result = original(tool_result, run_metrics=run_metrics)
        if result:
            meter.pairs.append(([tool_result], result))
        return result

    object.__setattr__(manager, "_compress_tool_result", compress_one)
    meter.wrap(manager, ["_compress_tool_result"], summarizer=True)
    original_compress = manager.compress

    def compress(messages: list[Message], run_metrics: Any = None) -> None:
        before = manager.stats.get("tool_results_compressed", 0)
        original_compress(messages, run_metrics=run_metrics)
        if manager.stats.get("tool_results_compressed", 0) > before:
            meter.folds += 1

    object.__setattr__(manager, "compress", compress)
    meter.wrap(manager, ["should_compress", "compress"])
    return {"compression_manager": manager, "compress_tool_results": True}


def _agno_compaction(threshold: int, meter: Meter, summarizer: Any) -> dict[str, Any]:
    from agno.compaction import Compaction

    _install_compaction_probes()
    compaction = Compaction(model=summarizer, compact_at_tokens=threshold)
    original = compaction._summarize

    def summarize(
        messages: list[Message], previous: str | None, run_metrics: Any = None, archived: bool = False
    ) -> str | None:
        text = original(messages, previous, run_metrics, archived)
        if text:
            meter.pairs.append((list(messages), text))
            meter.folds += 1
        return text

    object.__setattr__(compaction, "_summarize", summarize)
    meter.wrap(compaction, ["_summarize"], summarizer=True)
    return {"compaction": compaction}


def _ours(
    setting: str, threshold: int, meter: Meter, summarizer: Any, target_ratio: float | None
) -> CompressionManager:
    def on_fold(event: Any, folded: Sequence[Message]) -> None:
        if event.strategy not in ("mask", "shorten"):  # as stats["folds"] counts them
            meter.fold_calls.append(len(meter.per_call))  # the fold comes before the call about to be booked
        if event.summary and folded:
            meter.pairs.append((list(folded), event.summary))

    options: dict[str, Any] = VARIANTS.get(setting, {"summarizer": setting})
    manager = CompressionManager(
        compress_at_tokens=threshold,
        model=summarizer if setting == "llm" else None,
        on_fold=on_fold,
        **options,
        **({"target_ratio": target_ratio} if target_ratio is not None else {}),
    )
    inner = manager.strategy.summarizer
    if inner is not None:
        meter.wrap(inner, ["summarize"], summarizer=True)
    meter.wrap(manager, ["should_compress", "compress", "register_run", "restore_run_messages"])
    return manager


_NEEDS: dict[str, list[frozenset[str]]] = {}


def needs_for(trajectory: Trajectory) -> list[frozenset[str]]:
    """What each model call's next action needs (``agno_compression.eval.needs_of``), once per recording."""
    key = f"{trajectory.source}/{trajectory.name}"
    if key not in _NEEDS:
        _NEEDS[key] = needs_of(observations_as_tool_calls(trajectory.messages))
    return _NEEDS[key]


FACT_KINDS = ("paths", "ids", "errors", "numbers", "exit_codes", "urls")


def facts_by_kind(pairs: Sequence[tuple[Sequence[Message], str]]) -> tuple[dict[str, list[int]], list[int]]:
    """``fact_retention`` split by fact kind (a fact found under two kinds counts under each), and per summary
    the tokens it would take just to list every fact of what it replaced."""
    out = {kind: [0, 0] for kind in FACT_KINDS}
    need = []
    for folded, summary in pairs:
        facts = extract_facts("\n".join(message_text(m, use_compressed_content=False) for m in folded))
        every: set[str] = set()
        for kind in FACT_KINDS:
            wanted = set(facts[kind])
            every |= wanted
            out[kind][0] += sum(1 for f in wanted if f in summary)
            out[kind][1] += len(wanted)
        need.append(_COUNTER.count_text(", ".join(sorted(every))))
    return out, need


def composition(requests: Sequence[Any]) -> dict[str, int]:
    """Where the prompt tokens of ``requests`` go (see ``Replayed.composition``)."""
    out = {"floor": 0, "summary": 0, "rest": 0}
    for r in requests:
        plan = plan_fold(r.messages)
        floor = _COUNTER.count_prompt(plan.view(), r.tools)
        summary = sum(_COUNTER.count_message(m) for m in (plan.history_summary, plan.progress_summary) if m)
        out["floor"] += floor
        out["summary"] += summary
        out["rest"] += max(0, r.prompt_tokens - floor - summary)
    return out


def floors(requests: Sequence[Any]) -> tuple[list[int], list[int], list[float]]:
    """Per model call, tokens of system + current user + last tool batch only (plus the tool definitions); per
    model call, system + current user (+ tool definitions); and what the floors cost with caching."""
    out = []
    views = []
    fixed = []
    for r in requests:
        plan = plan_fold(r.messages)
        views.append(plan.view())
        out.append(_COUNTER.count_prompt(views[-1], r.tools))
        users = [plan.current] if plan.current is not None else []
        fixed.append(_COUNTER.count_prompt([*plan.system, *users], r.tools))
    return out, fixed, cached_costs(list(zip(views, out, strict=True)), _COUNTER)


def measured(
    trajectory: Trajectory,
    setting: str,
    threshold: int,
    prompts: Sequence[Sequence[Message]],
    tokens: list[int],
    pairs: Sequence[tuple[Sequence[Message], str]],
    *,
    analyse: bool = True,
    **fields: Any,
) -> Replayed:
    """The row of one replay, from what its model was sent (``prompts``, their sizes ``tokens``) and the summaries
    it wrote (``pairs`` of folded originals and summary); ``fields`` fills the rest (timings, fold counts...).

    Our replays and the peers' are measured here alike. ``analyse=False`` skips violations, cost and acted-on
    facts (replays that only repeat a timing).
    """
    kept = total = biggest = 0
    for folded, summary in pairs:
        k, t = fact_retention(folded, summary)
        kept, total = kept + k, total + t
        biggest = max(biggest, _COUNTER.count_text(summary))
    by_kind, fact_tokens = facts_by_kind(pairs)
    grounded, grounding_total = grounding(prompts, needs_for(trajectory)) if analyse else (0, 0)
    return Replayed(
        source=trajectory.source,
        name=trajectory.name,
        setting=setting,
        threshold=threshold,
        messages=len(observations_as_tool_calls(trajectory.messages)),
        tokens=tokens,
        violations=sum(len(pair_violations(p)) for p in prompts) if analyse else 0,
        facts_kept=kept,
        facts_total=total,
        max_summary_tokens=biggest,
        facts_by_kind=by_kind,
        fact_tokens=fact_tokens,
        costs=cached_costs(list(zip(prompts, tokens, strict=True)), _COUNTER) if analyse else [],
        acted=frozenset(acted_on_facts(m for p in prompts for m in p)) if analyse else frozenset(),
        final_text=last_prompt_text(prompts) if analyse else "",
        grounded=grounded,
        grounding_total=grounding_total,
        **fields,
    )


def replay_one(
    trajectory: Trajectory,
    setting: str,
    threshold: int,
    workdir: Path,
    *,
    summarizer_factory: Callable[[], Any],
    analyse: bool = True,
    target_ratio: float | None = None,
    keep_requests: bool = False,
) -> Replayed:
    """Replay ``trajectory`` with ``setting`` (a name in ``SETTINGS``) at ``threshold`` tokens.

    ``analyse=False`` skips what is computed after the replay (violations, fact retention, floors,
    token composition): for replays that only repeat a timing. ``keep_requests`` keeps what each call was sent
    (``Replayed.requests``) for any setting, not only ``none``.
    """
    from agno.db.sqlite import SqliteDb
    from agno.run.base import RunStatus

    meter = Meter()
    summarizer = summarizer_factory()
    messages = observations_as_tool_calls(trajectory.messages)
    db_file = workdir / f"replay-{time.monotonic_ns()}.db"
    db = SqliteDb(db_file=str(db_file))
    manager = None
    options: dict[str, Any] = {}
    if setting == "agno-compress":
        options = _agno_compress(threshold, meter, summarizer)
    elif setting == "agno-compaction":
        options = _agno_compaction(threshold, meter, summarizer)
    elif setting in OURS:
        manager = _ours(setting, threshold, meter, summarizer, target_ratio)
    elif setting != "none":
        raise ValueError(f"unknown setting {setting!r}; expected one of {', '.join(SETTINGS)}")
    prepared = prepare_replay(messages, manager=manager, db=db, session_id="bench", **options)
    model = prepared.model
    serve = model._reply

    def reply(msgs: list[Message], tools: Any) -> Any:
        meter.book_call()
        return serve(msgs, tools)

    object.__setattr__(model, "_reply", reply)
    _ACTIVE.append(meter)
    gc.collect()  # garbage of earlier replays is not this replay's cost
    try:
        started, cpu_started = time.perf_counter(), time.process_time()
        outputs = prepared.run()
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    finally:
        _ACTIVE.pop()
    meter.close()
    requests = model.requests
    if not analyse:
        meter.pairs = []
    floor_counts, fixed, floor_costs = floors(requests) if setting == "none" and analyse else ([], [], [])
    if manager is not None:  # one summary written per fold (two for the extractive one when it covers both spans)
        meter.summarizer_calls = (
            manager.stats.get("summarizer_calls", 0) if setting != "llm" else len(getattr(summarizer, "requests", []))
        )
    errors = sum(1 for out in outputs if getattr(out, "status", None) == RunStatus.error)
    stats = manager.stats if manager is not None else {}
    row = measured(
        trajectory,
        setting,
        threshold,
        [r.messages for r in requests],
        [r.prompt_tokens for r in requests],
        meter.pairs,
        analyse=analyse,
        wall=wall,
        per_call=meter.per_call if setting != "none" else [],
        folds=stats.get("folds", 0) if manager is not None else meter.folds,
        masks=stats.get("masks", 0),
        summarizer_calls=meter.summarizer_calls,
        summarizer_prompt_tokens=sum(r.prompt_tokens for r in getattr(summarizer, "requests", [])),
        floors=floor_counts,
        floor_costs=floor_costs,
        fixed_peak=max(fixed, default=0),
        fixed=fixed,
        fold_calls=meter.fold_calls,
        errors=errors,
        no_room=stats.get("budget_too_small", 0),
        cpu=cpu,
        machinery=meter.machinery,
        summarizer=meter.summarizer,
        composition=composition(requests) if analyse else {},
    )
    if setting == "none" or keep_requests:
        row.requests = requests
    db.db_engine.dispose()
    db_file.unlink(missing_ok=True)
    return row
