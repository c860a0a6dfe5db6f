"""Background summaries: the next fold's summary written while the run goes on (``background_summary_at``).

Once a prompt reaches the share of the budget and the call does not fold, the fold is planned as ``Folder.compress``
would plan it and its model summary starts on a daemon thread: a *job*, one per run at a time, keyed by its
``RunState``, covering a *span* (the folded messages by identity, the texts of the summaries it absorbs). The fold
uses it when the span is its own, or a prefix of it whose fold alone (``plan_fold(keep_from=)`` after it: later steps
stay verbatim) leaves the prompt within the budget with room for one more step like the recent ones; a running job is
waited for through the summarizer runner (its timeout and fallback), never longer than a synchronous summary. Else
the fold asks anew (a miss). A discarded job's usage goes into its run's metrics once finished (in the run's thread:
agno's metrics are not thread-safe), or, finished after the run, into ``stats["background_late_tokens"]``.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agno.models.message import Message

from ._fold import GROWTH_WINDOW, Folder, Prepared, account
from ._plan import FoldPlan, find_current_user, plan_fold
from ._runs import MAX_TRACKED_RUNS, RunState
from ._stats import Stats
from ._summarizers import LLMSummarizer, Summarizer, Summary, SummaryRequest

if TYPE_CHECKING:
    from ._keeping._names import Names
    from ._summarizers import Pipeline

log = logging.getLogger("agno_compression")

SAME, PREFIX, CHANGED = "same", "prefix", "changed"  # how a job's span stands to a fold's


def prepares(strategy: Pipeline) -> bool:
    """Whether folds of ``strategy`` get their summary in the background: an ``LLMSummarizer``, no masking first (a
    custom summarizer is user code that may not expect to run beside the agent: it is asked at the fold)."""
    return isinstance(strategy.summarizer, LLMSummarizer) and not strategy.mask


@dataclass(frozen=True)
class Span:
    """What a summary covers: the folded messages, by ``id()``, and the texts of the summaries it absorbs."""

    messages: tuple[int, ...]
    previous: tuple[str | None, ...]

    @classmethod
    def of(cls, plan: FoldPlan) -> Span:
        summaries = (plan.history_summary, plan.progress_summary)
        return cls(tuple(map(id, plan.folded)), tuple(m.get_content_string() if m else None for m in summaries))

    def against(self, fold: Span) -> str:
        """``SAME`` when ``fold`` covers just this span, ``PREFIX`` when it covers it and more, else ``CHANGED``."""
        if not self.messages or self.previous != fold.previous:
            return CHANGED
        if self.messages == fold.messages:
            return SAME
        n = len(self.messages)
        return PREFIX if len(fold.messages) > n and fold.messages[:n] == self.messages else CHANGED


@dataclass(eq=False)
class Job:
    """One summary written ahead of its fold, on a daemon thread."""

    span: Span
    folded: tuple[Message, ...]
    """The messages it summarizes (held: their ``id()`` stays theirs while the job lives)."""
    summarizer: Summarizer
    requests: list[tuple[str, SummaryRequest]]
    names: Names | None
    """The run's names in use once the span is folded (``RunState.names``)."""
    timeout: float
    name: str  # its summarizer's: the fold asks the job in its place, a fallback reads "<name>->extractive"
    future: Future[dict[str, Summary]] = field(default_factory=Future)
    metrics: Any = None  # where a discarded job's usage goes once it has finished, until its run ends
    ended: bool = False
    settled: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        def work() -> None:
            try:
                self.future.set_result({kind: self.summarizer.summarize(asked) for kind, asked in self.requests})
            except BaseException as exc:  # the fold asks anew, or falls back when it is waiting for this one
                log.warning("agno-compression: a background summary failed (%s); the fold asks anew", exc)
                self.future.set_exception(exc)

        self.future.set_running_or_notify_cancel()
        context = contextvars.copy_context()  # a trace's current span: the summarizer's call nests under the run's
        threading.Thread(target=context.run, args=(work,), name="agno-compression-background", daemon=True).start()

    def summarize(self, request: SummaryRequest) -> Summary:
        """The job's summary for ``request``, waited for on the runner's thread (under its timeout)."""
        kind = next(kind for kind, asked in self.requests if asked is request)
        return self.future.result(timeout=self.timeout)[kind]

    async def asummarize(self, request: SummaryRequest) -> Summary:  # the runner waits for others on a thread
        return self.summarize(request)

    def summaries(self) -> dict[str, Summary] | None:
        """The job's summaries if it has finished with usable ones, else ``None``."""
        if not self.future.done() or self.future.exception() is not None:
            return None
        done = self.future.result()
        usable = all(isinstance(s, Summary) and isinstance(s.text, str) and s.text.strip() for s in done.values())
        return done if usable else None

    def discard(self, metrics: Any, stats: Stats) -> None:
        """Not used (a model call under way cannot be stopped): its usage goes to ``metrics`` once it has finished
        (``settle`` in the run's thread) or, finishing after its run ended, to ``stats`` from its own thread."""
        self.metrics = metrics
        self.future.add_done_callback(lambda _: self.ended and self.settle(stats))

    def settle(self, stats: Stats) -> bool:
        """A discarded job that has finished: its usage into its run's metrics, or, the run over, into ``stats``."""
        with self.lock:
            if self.settled or not self.future.done():
                return self.settled
            self.settled, metrics, ended = True, self.metrics, self.ended
        for summary in (self.summaries() or {}).values():
            usage = getattr(summary.response, "response_usage", None)
            if not ended:
                account(summary.response, summary.model, metrics)
            elif usage is not None:
                stats.add("background_late_tokens", (usage.input_tokens or 0) + (usage.output_tokens or 0))
        return True


@dataclass(eq=False)
class _Run:
    state: RunState  # held: no other state takes its id() while the run is tracked
    job: Job | None = None
    left: list[Job] = field(default_factory=list)  # discarded jobs whose usage is not accounted yet

    def drop(self, metrics: Any, stats: Stats) -> None:
        """The pending job is not used: accounted once it has finished."""
        if self.job is not None:
            self.job.discard(metrics, stats)
            self.left.append(self.job)
            self.job = None
        self.left = [job for job in self.left if not job.settle(stats)]


class Background:
    """The jobs of the runs a manager folds: the folder's ``ahead`` (``_fold.Ahead``)."""

    def __init__(self, share: float | None, timeout: float, stats: Stats) -> None:
        self.share, self.timeout, self.stats = share, timeout, stats
        self._lock = threading.Lock()
        self._runs: OrderedDict[int, _Run] = OrderedDict()

    def _run(self, state: RunState, create: bool = False) -> _Run | None:
        with self._lock:
            run = self._runs.get(id(state))
            if run is None and create:
                run = self._runs[id(state)] = _Run(state)
                while len(self._runs) > MAX_TRACKED_RUNS:  # a run whose post-hook never came
                    self._end(self._runs.popitem(last=False)[1])
            return run

    def after_check(self, folder: Folder, state: RunState, fold: bool) -> bool:
        """``should_compress``'s answer; a call that does not fold may start the next fold's summary."""
        if not fold and self.share is not None:
            try:
                self._start(folder, state)
            except Exception as exc:
                log.warning("agno-compression: could not start a background summary: %s", exc)
        return fold

    def _start(self, folder: Folder, state: RunState) -> None:
        share, strategy = self.share, folder.config.strategy  # a run with no room: no prefix would be enough
        if share is None or state.tight or not prepares(strategy) or state.prompt_tokens < share * folder.budget(state):
            return
        summarizer, run = strategy.summarizer, self._run(state, create=True)
        if run is None or run.job is not None or summarizer is None:
            return
        run.drop(None, self.stats)
        plan = folder.plan(state)
        if not plan.has_work:
            return
        held = folder._working_set(state, plan, folder.budget(state))
        names = state.names
        try:  # a span's names are the run's once it is folded: at the fold that uses the job
            requests = folder._requests(state, plan, summarizer=summarizer, held=held)
            after = state.names
        finally:
            state.names = names
        run.job = Job(Span.of(plan), plan.folded, summarizer, requests, after, self.timeout, summarizer.name)
        run.job.start()

    def take(self, folder: Folder, state: RunState, plan: FoldPlan, run_metrics: Any) -> Prepared | None:
        """At a fold planned as ``plan``: the job's plan and requests if it can be used, else ``None``."""
        run = self._run(state)
        if run is None or run.job is None:
            return None
        job = run.job
        fits = None if getattr(state, "asked", None) is not None else self._fits(folder, state, plan, job)
        if fits is None or (job.future.done() and job.summaries() is None):  # failed: asked anew
            self.stats.add("background_misses")
            run.drop(run_metrics, self.stats)
            return None
        self.stats.add("background_summaries")
        run.job, state.names = None, job.names
        run.drop(None, self.stats)  # accounts the jobs discarded before that have finished
        return Prepared(fits, job, job.requests)

    def _fits(self, folder: Folder, state: RunState, plan: FoldPlan, job: Job) -> FoldPlan | None:
        """The plan that folds just the job's span, when that span is the fold's or a prefix of it that is enough."""
        found = job.span.against(Span.of(plan))
        if found != PREFIX:
            return plan if found == SAME else None
        live = state.live
        keep_from = next((i + 1 for i, m in enumerate(live) if m is job.folded[-1]), None)
        current = next((i for i, m in enumerate(live) if m is state.current), None)
        current = current if current is not None else find_current_user(live)  # as ``Folder.plan`` finds it
        narrower = plan_fold(live, current=current, keep_from=keep_from) if keep_from is not None else None
        if narrower is None or Span.of(narrower) != job.span:
            return None
        count = folder.config.counter_for(state.model).count_text
        hint = count(folder._with_search_hint("")) if folder.config.search_tool else 0
        done = job.summaries()  # a running job's summary counts at its budget; 4: a message's own tokens
        sizes = [count(s.text) + 4 for s in done.values()] if done else [r.max_tokens for _, r in job.requests]
        after = folder.count(state, narrower.unchanged_view()) + sum(sizes) + hint
        recent = state.growth[-GROWTH_WINDOW:]
        room = sum(recent) // len(recent) if recent else 0  # one more step like the recent ones before a new fold
        return narrower if after + room <= folder.budget(state) else None

    def forget(self, state: RunState, metrics: Any) -> None:
        """At the run's end (post-hook or pause): a job never used is a miss, and accounted (``Job.settle``)."""
        with self._lock:
            run = self._runs.pop(id(state), None)
        if run is not None:
            if run.job is not None:
                self.stats.add("background_misses")
            run.drop(metrics, self.stats)
            self._end(run)

    def _end(self, run: _Run) -> None:
        run.drop(None, self.stats)
        for job in run.left:
            with job.lock:
                job.ended = True
            job.settle(self.stats)  # one that finished since the sweep; a running one settles when it finishes
