"""Folds in OpenTelemetry traces: each fold is a span ``agno_compression.fold`` in the run's trace.

agno's tracing (``agno.tracing.setup_tracing(db)``: OpenTelemetry with the OpenInference agno instrumentation, spans
stored in agno's own database) or any tracer provider the application set shows runs, model calls and tool calls.
With a provider set, every fold the manager makes becomes a span there too, a child of the span that is current when
agno asks the manager to fold (the run's span: agno folds before the model call, whose span opens after), so it
sits in the run's trace right before the model call it precedes. The summarizer's own model call runs inside the
fold span and nests under it. Masking without a fold and outputs shortened without one are span events on the
current span; a fold's masking, shortening and overflow retry are events on its own span.

No cost without tracing: nothing here imports OpenTelemetry. A provider can only have been set through
``opentelemetry.trace``, so while that module is not loaded no provider exists and the manager does no tracing work
at all; with it loaded but no provider set (OpenTelemetry's proxy or no-op provider), the one check is made per
fold, never per model call.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from ._events import FoldEvent
from ._requested_fold import AGENT_TAG, REQUEST_TAG

if TYPE_CHECKING:
    from ._runs import RunState

log = logging.getLogger("agno_compression")

SPAN_NAME = "agno_compression.fold"
"""The name of every fold span."""
INSTRUMENTATION = "agno_compression"
"""The instrumentation scope fold spans are created under."""
NOTES = ("mask", "shorten")
"""Strategies of events that fold nothing: masking in place, or kept outputs shortened alone (span events)."""
ATTRIBUTES = {
    "openinference.span.kind": "CHAIN (OpenInference: a step that is not itself a model call)",
    "session.id": "the agno session id (OpenInference), when the run has one",
    "gen_ai.conversation.id": "the same session id (OpenTelemetry GenAI conventions)",
    "agno_compression.reason": "budget (the prompt was over it), early (the fold paid for the prompt cache it broke), "
    "tight (the system messages, tools and request leave no room under the budget), overflow (a retry after the "
    "provider rejected the prompt as too long), agent (the agent asked for it: fold_context) or request (folded on "
    "request between runs: fold_session)",
    "agno_compression.strategy": "what wrote the summary: extractive, llm, ..., <name>->extractive after a fallback; "
    "overflow:... for a retry, tight:... for a run with no room under the budget, agent:... when the agent asked, "
    "request:... for a fold on request",
    "agno_compression.fallback": "true when the configured summarizer failed and the extractive summary was used",
    "agno_compression.tokens.before": "prompt tokens before the fold",
    "agno_compression.tokens.after": "prompt tokens after the fold",
    "agno_compression.tokens.saved": "before minus after",
    "agno_compression.messages.folded": "messages the fold replaced with its summary (all kept in the database)",
    "agno_compression.messages.masked": "tool outputs masked in place by the same fold (summarizer='mask')",
    "agno_compression.outputs.shortened": "kept tool outputs shortened in context because they alone exceeded the "
    "budget",
    "agno_compression.summary.tokens": "tokens of the summary text sent in place of the folded messages",
    "agno_compression.budget": "the budget the fold kept to (compress_at_tokens, or less after an overflow)",
    "agno_compression.call_index": "which model call of the run (1-based) the fold came before",
    "agno_compression.run.id": "the agno run id, when known",
    "agno_compression.record.id": "the id of the fold's stored record (agno-compression inspect, the session page), "
    "when a store wrote it",
    "agno_compression.summarizer.model": "the model that wrote the summary, when a model did",
    "agno_compression.summarizer.input_tokens": "the summarizer call's input tokens, as its provider reported them",
    "agno_compression.summarizer.output_tokens": "the summarizer call's output tokens",
    "agno_compression.cache.caches": "whether the model's provider caches prompts (the price model's rule)",
    "agno_compression.cache.read_rate": "what a cached token costs there, as a share of the input price",
}
"""Every attribute a fold span may carry, and what it means (docs/observing.md shows this table)."""
EVENTS = {
    "agno_compression.mask": "tool outputs masked in place (attribute agno_compression.messages.masked)",
    "agno_compression.shorten": "kept tool outputs shortened in context (agno_compression.outputs.shortened)",
    "agno_compression.overflow_retry": "the provider rejected the prompt as too long; this fold is the retry "
    "(agno_compression.attempt, agno_compression.budget)",
}
"""Every span event, and what it means."""

_tracers: dict[int, tuple[Any, Any]] = {}
_ender: ThreadPoolExecutor | None = None
_ender_lock = threading.Lock()
MAX_ID_CHARS = 128
"""Longest session or run id a span carries (an id is caller input: a 100 KB id must not make a 200 KB span)."""

T = TypeVar("T")


def tracer() -> Any | None:
    """The tracer fold spans are made with, or ``None`` when no tracer provider is set (nothing is imported)."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:  # OpenTelemetry was never imported: no provider can have been set
        return None
    try:
        provider = trace.get_tracer_provider()
        if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
            return None
        cached = _tracers.get(id(provider))
        if cached is not None and cached[0] is provider:
            return cached[1]
        made = provider.get_tracer(INSTRUMENTATION, _version())
        _tracers[id(provider)] = (provider, made)
        return made
    except Exception as exc:  # tracing never breaks a run
        log.debug("agno-compression: no tracer: %s", exc)
        return None


def _version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agno-compression")
    except PackageNotFoundError:  # run from a checkout that is not installed
        return None


def asked_reason(strategy: str) -> str | None:
    """``"request"`` for a fold made on request (``fold_session``), ``"agent"`` for one the agent asked for, else
    ``None`` (a fold the budget or the cache called for)."""
    if strategy.startswith(REQUEST_TAG):
        return "request"
    if strategy.startswith(AGENT_TAG):
        return "agent"
    return None


def reason(event: FoldEvent) -> str:
    """Why a fold happened: ``request``, ``agent``, ``overflow``, ``tight``, ``budget`` or ``early`` (the page's and
    ``inspect``'s rule)."""
    asked = asked_reason(event.strategy)
    if asked is not None:
        return asked
    if event.strategy.startswith("overflow:"):
        return "overflow"
    if event.strategy.startswith("tight:"):
        return "tight"
    return "budget" if event.budget is None or event.tokens_before > event.budget else "early"


class FoldTrace:
    """The span of one ``compress`` or overflow ``recover`` call, opened only once it has something to show: when a
    summarizer is asked (so its model call nests under it) or when the call ends with a fold."""

    def __init__(self, tracer: Any, manager: Any, state: RunState, attempt: int | None = None) -> None:
        from opentelemetry import context

        self.tracer = tracer
        self.manager = manager
        self.state = state
        self.attempt = attempt
        self.parent = context.get_current()  # the run's span: agno folds before the model call's span opens
        self.start = time.time_ns()
        self.first = len(state.events)
        self.span: Any = None

    def _open(self) -> Any:
        if self.span is None:
            self.span = self.tracer.start_span(
                SPAN_NAME, context=self.parent, start_time=self.start, attributes={"openinference.span.kind": "CHAIN"}
            )
        return self.span

    def _try_open(self) -> Any:
        """The fold span, or ``None`` when the tracer or a span processor raised (said once, by type)."""
        try:
            return self._open()
        except Exception as exc:
            _failed("open a fold span", exc)
            return None

    def answer(self, summarize: Callable[[Any], T]) -> Callable[[Any], T]:
        """``summarize`` run inside the fold span: the summarizer's model call becomes its child."""
        from opentelemetry import trace

        def answered(ask: Any) -> T:
            span = self._try_open()
            if span is None:  # a failing tracer costs the trace, never the fold
                return summarize(ask)
            with trace.use_span(span, end_on_exit=False):
                return summarize(ask)

        return answered

    def aanswer(self, summarize: Callable[[Any], Awaitable[T]]) -> Callable[[Any], Awaitable[T]]:
        """Async ``answer``."""
        from opentelemetry import trace

        async def answered(ask: Any) -> T:
            span = self._try_open()
            if span is None:
                return await summarize(ask)
            with trace.use_span(span, end_on_exit=False):
                return await summarize(ask)

        return answered

    def finish(self, error: BaseException | None = None) -> None:
        """Describe what the call did: a fold span, or span events for masking and shortening without a fold."""
        new = self.state.events[self.first :]
        folds = [e for e in new if e.strategy not in NOTES]
        notes = [e for e in new if e.strategy in NOTES]
        if not folds:
            from opentelemetry import trace

            target = self.span if self.span is not None else trace.get_current_span()
            for note in notes:
                _note(target, note)
            if self.span is not None:  # a summarizer was asked but nothing was folded (an empty summary)
                self._end(error, None)
            return
        event = folds[-1]
        span = self._open()
        span.set_attributes(self._attributes(event))
        for note in notes:
            _note(span, note)
        if event.shortened_ids:
            span.add_event("agno_compression.shorten", {"agno_compression.outputs.shortened": len(event.shortened_ids)})
        if self.attempt is not None:  # the retry's budget: the lower one the rest of the run keeps to
            budget = self.state.limit or event.budget or 0
            span.set_attribute("agno_compression.budget", budget)
            span.add_event(
                "agno_compression.overflow_retry",
                {"agno_compression.attempt": self.attempt, "agno_compression.budget": budget},
            )
        self._end(error, event)

    def _attributes(self, event: FoldEvent) -> dict[str, Any]:
        state, manager = self.state, self.manager
        owner = state.context
        out: dict[str, Any] = {
            "agno_compression.reason": reason(event),
            "agno_compression.strategy": event.strategy,
            "agno_compression.fallback": "->" in event.strategy,
            "agno_compression.tokens.before": event.tokens_before,
            "agno_compression.tokens.after": event.tokens_after,
            "agno_compression.tokens.saved": max(0, event.tokens_before - event.tokens_after),
            "agno_compression.messages.folded": len(event.folded_ids),
            "agno_compression.messages.masked": sum(len(e.masked_ids) for e in state.events[self.first :]),
            "agno_compression.outputs.shortened": len(event.shortened_ids),
            "agno_compression.summary.tokens": (
                manager.counter_for(state.model).count_text(event.summary) if event.summary else 0
            ),
        }
        if event.budget is not None:
            out["agno_compression.budget"] = event.budget
        if event.call_index is not None:
            out["agno_compression.call_index"] = event.call_index
        if owner is not None:
            out["session.id"] = out["gen_ai.conversation.id"] = _bounded(owner.session_id)
            if owner.run_id:
                out["agno_compression.run.id"] = _bounded(owner.run_id)
        if event.summarizer_model:
            out["agno_compression.summarizer.model"] = event.summarizer_model
        usage = event.summarizer_usage or {}
        for ours, theirs in (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens")):
            if isinstance(usage.get(theirs), int):
                out[f"agno_compression.summarizer.{ours}"] = usage[theirs]
        with contextlib.suppress(Exception):  # a price model is known for every model; never fail a fold on it
            price = manager.price_for(state.model)
            out["agno_compression.cache.caches"] = bool(price.caches)
            if price.caches:
                out["agno_compression.cache.read_rate"] = float(price.read_rate)
        return out

    def _end(self, error: BaseException | None, event: FoldEvent | None) -> None:
        span, end = self.span, time.time_ns()
        if error is not None:
            from opentelemetry.trace import Status, StatusCode

            # the error's type only: its message may quote session text
            span.set_status(Status(StatusCode.ERROR, type(error).__name__))

        def close() -> None:
            try:
                if event is not None and event.record_id is not None:
                    span.set_attribute("agno_compression.record.id", event.record_id)
            finally:
                span.end(end_time=end)

        # The fold's record is written on the recorder's thread after the fold: the span waits for its id there
        # (ending at the fold's own end time). Ending a span runs the span processors, and a synchronous exporter
        # may take seconds: that happens on a thread of its own, which neither the run nor its post-hook waits for.
        if event is None or not self.manager._records.then(self.state.context, lambda: _later(close)):
            _later(close)


def _bounded(value: Any) -> str:
    text = str(value)
    return text if len(text) <= MAX_ID_CHARS else text[: MAX_ID_CHARS - 1] + "…"


_said: set[str] = set()


def _failed(what: str, exc: BaseException) -> None:
    """A tracing failure, logged once per kind and by type only (its message may quote session text)."""
    key = f"{what}:{type(exc).__name__}"
    if key not in _said:
        _said.add(key)
        log.warning(
            "agno-compression: could not %s (%s); folds go on untraced where it fails", what, type(exc).__name__
        )


def _later(action: Callable[[], None]) -> None:
    """Run ``action`` (ending a span) on the span thread: no run waits for an exporter."""
    global _ender
    with _ender_lock:
        if _ender is None:
            _ender = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agno-compression-spans")
        ender = _ender

    def guarded() -> None:
        try:
            action()
        except Exception as exc:
            _failed("end a fold span", exc)

    ender.submit(guarded)


def drain() -> None:
    """Wait until every fold span ended so far has gone through the span processors (``flush_records``)."""
    with _ender_lock:
        ender = _ender
    if ender is not None:
        ender.submit(lambda: None).result()


def _note(span: Any, event: FoldEvent) -> None:
    if event.strategy == "mask":
        span.add_event("agno_compression.mask", {"agno_compression.messages.masked": len(event.masked_ids)})
    elif event.shortened_ids:
        span.add_event("agno_compression.shorten", {"agno_compression.outputs.shortened": len(event.shortened_ids)})


@contextlib.contextmanager
def traced(manager: Any, state: RunState, attempt: int | None = None) -> Iterator[FoldTrace | None]:
    """A ``FoldTrace`` for one fold call, or ``None`` without a tracer provider; finished when the call ends."""
    found = tracer()
    if found is None:
        yield None
        return
    try:
        fold = FoldTrace(found, manager, state, attempt)
    except Exception as exc:  # tracing never breaks a fold
        _failed("start tracing a fold", exc)
        yield None
        return
    error: BaseException | None = None
    try:
        yield fold
    except BaseException as exc:
        error = exc
        raise
    finally:
        try:
            fold.finish(error)
        except Exception as exc:
            _failed("trace a fold", exc)
