"""Running summarizers without ever breaking a run, and driving a fold's steps sync or async.

A fold is written once, as a generator that yields what it needs answered (a summary request, a
policy call) and receives the answer: ``drive`` answers with plain calls, ``adrive`` awaits them.
So ``compress``/``acompress`` and their kin share one body.

``SummarizerRunner`` answers summary requests: a summarizer other than the extractive one runs on
a daemon thread under ``timeout`` (an abandoned thread never holds up the run's end); a failure,
a timeout or an answer with no text falls back to the extractive summary with one warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

from ._exceptions import SummarizerError
from ._stats import Stats
from ._summarizers import ExtractiveSummarizer, LLMSummarizer, Summarizer, Summary, SummaryRequest

log = logging.getLogger("agno_compression")

Ask = TypeVar("Ask")
Answer = TypeVar("Answer")
Result = TypeVar("Result")
Steps = Generator[Ask, Answer, Result]


def drive(steps: Generator[Ask, Answer, Result], answer: Callable[[Ask], Answer]) -> Result:
    """Run ``steps`` to the end, answering each request with ``answer`` (its errors are thrown into ``steps``)."""
    try:
        ask = next(steps)
        while True:
            try:
                reply = answer(ask)
            except Exception as exc:  # the steps decide what a failed answer means
                ask = steps.throw(exc)
            else:
                ask = steps.send(reply)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


async def adrive(steps: Generator[Ask, Answer, Result], answer: Callable[[Ask], Awaitable[Answer]]) -> Result:
    """``drive`` with an async ``answer``."""
    try:
        ask = next(steps)
        while True:
            try:
                reply = await answer(ask)
            except Exception as exc:
                ask = steps.throw(exc)
            else:
                ask = steps.send(reply)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


def degrades(failure: str, default: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a hook (sync or async) so an error logs ``failure`` and returns ``default``: never breaks a run."""

    def decorate(hook: Callable[..., Any]) -> Callable[..., Any]:
        def failed(exc: Exception) -> Any:
            log.warning("agno-compression: %s: %s", failure, exc)
            return default

        if inspect.iscoroutinefunction(hook):

            async def ahooked(*args: Any, **kwargs: Any) -> Any:
                try:
                    return await hook(*args, **kwargs)
                except Exception as exc:
                    return failed(exc)

            return functools.wraps(hook)(ahooked)

        def hooked(*args: Any, **kwargs: Any) -> Any:
            try:
                return hook(*args, **kwargs)
            except Exception as exc:
                return failed(exc)

        return functools.wraps(hook)(hooked)

    return decorate


def _in_thread(
    summarizer: Summarizer, request: SummaryRequest, done: Callable[[Any, BaseException | None], None]
) -> None:
    """``summarizer.summarize(request)`` on a daemon thread; ``done(result, error)`` gets the outcome."""

    def work() -> None:
        try:
            result, error = summarizer.summarize(request), None
        except BaseException as exc:
            result, error = None, exc
        done(result, error)

    # the caller's context goes along (a trace's current span: the summarizer's model call nests under the fold)
    context = contextvars.copy_context()
    threading.Thread(target=context.run, args=(work,), name="agno-compression-summarizer", daemon=True).start()


class SummarizerRunner:
    """Answers summary requests with a summarizer, falling back to the extractive summary."""

    def __init__(self, *, timeout: float, stats: Stats) -> None:
        self.timeout = timeout
        self.stats = stats
        self.fallback = ExtractiveSummarizer()

    def run(self, summarizer: Summarizer, request: SummaryRequest) -> Summary:
        """The summary of ``request`` by ``summarizer``, or the extractive one if it fails."""
        if isinstance(summarizer, ExtractiveSummarizer):
            return summarizer.summarize(request)  # pure and fast: no thread needed
        finished = threading.Event()
        box: list[Any] = []

        def done(result: Any, error: BaseException | None) -> None:
            box.extend((result, error))
            finished.set()

        try:
            _in_thread(summarizer, request, done)
            if not finished.wait(self.timeout):
                raise SummarizerError(f"no summary after {self.timeout}s")
            if box[1] is not None:
                raise box[1]
            return self._checked(box[0], summarizer)
        except Exception as exc:
            return self._fall_back(request, summarizer, exc)

    async def arun(self, summarizer: Summarizer, request: SummaryRequest) -> Summary:
        """Async ``run``: an ``LLMSummarizer`` is awaited; any other runs on a thread while the loop waits."""
        if isinstance(summarizer, ExtractiveSummarizer):
            return summarizer.summarize(request)  # pure and fast
        try:
            if isinstance(summarizer, LLMSummarizer):
                result = await asyncio.wait_for(summarizer.asummarize(request), self.timeout)
            else:
                # Another summarizer's async code might block the event loop, which wait_for cannot interrupt:
                # its sync ``summarize`` runs in a daemon thread instead, and only the waiting is async.
                result = await asyncio.wait_for(self._future(summarizer, request), self.timeout)
            return self._checked(result, summarizer)
        except asyncio.TimeoutError:  # wait_for's own has no message: name the timeout, as ``run`` does
            return self._fall_back(request, summarizer, SummarizerError(f"no summary after {self.timeout}s"))
        except Exception as exc:
            return self._fall_back(request, summarizer, exc)

    @staticmethod
    def _future(summarizer: Summarizer, request: SummaryRequest) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()

        def settle(result: Any, error: BaseException | None) -> None:
            if not future.done():
                future.set_exception(error) if error is not None else future.set_result(result)

        def done(result: Any, error: BaseException | None) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is already closed: nobody waits any more
                loop.call_soon_threadsafe(settle, result, error)

        _in_thread(summarizer, request, done)
        return future

    @staticmethod
    def _checked(summary: Any, summarizer: Summarizer) -> Summary:
        if not isinstance(summary, Summary) or not isinstance(summary.text, str) or not summary.text.strip():
            raise SummarizerError(f"summarizer {summarizer.name!r} returned no usable text ({type(summary).__name__})")
        return summary

    def _fall_back(self, request: SummaryRequest, failed: Summarizer, exc: BaseException) -> Summary:
        log.warning("agno-compression: summarizer %r failed (%s); using the extractive summary", failed.name, exc)
        self.stats.add("summarizer_failures")
        result = self.fallback.summarize(request)
        return Summary(text=result.text, strategy=f"{failed.name}->extractive")
