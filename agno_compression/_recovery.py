"""Recovery from a provider's "prompt too long": recognise the error, fold harder, retry.

agno offers an overflow hook only for its own ``Compaction`` on an Agent, so the narrowest
wrapper is used instead: the four ``invoke`` methods of *one model instance* are wrapped.
When a call fails with a context-overflow error, the wrapper asks the manager to fold the
very message list it was given (the run's live list) with a smaller budget, then calls
again with the same arguments, at most ``retries`` times; then the provider's error is
raised as it was. Every other error passes through untouched. A stream is retried only
if it failed before its first chunk. A run of an agent whose own agno ``Compaction`` answers
overflow (see ``_compat``) is left to agno, also when its model instance is shared.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from agno.exceptions import ContextWindowExceededError, ModelProviderError

from ._compat import defers_overflow

_GUARD = "_agno_compression_overflow_guard"


def is_context_overflow(error: BaseException) -> bool:
    """True when ``error`` says the prompt is longer than the model accepts (Gemini, OpenAI, Anthropic, ...)."""
    if isinstance(error, ContextWindowExceededError):
        return True
    if isinstance(error, ModelProviderError):
        return isinstance(ModelProviderError.classify(error), ContextWindowExceededError)
    text = str(error).lower()
    return any(pattern in text for pattern in ModelProviderError.CONTEXT_WINDOW_PATTERNS)


def _call_parts(args: tuple[Any, ...], kwargs: dict[str, Any], manager: Any) -> tuple[Any, Any]:
    """The live message list and the run's metrics; no list when agno's own Compaction answers for this run."""
    messages = kwargs.get("messages", args[0] if args else None)
    run_response = kwargs.get("run_response")
    if defers_overflow(manager, run_response):
        return None, None  # the error goes on to agno's Compaction, as if the wrapper were not there
    return messages, getattr(run_response, "metrics", None)


def guard_overflow(model: Any, manager: Any, retries: int) -> Any:
    """Wrap ``model``'s invoke methods so a context overflow folds and retries (idempotent; returns ``model``)."""
    if retries <= 0 or getattr(model, _GUARD, None) is manager:
        return model
    for name in ("invoke", "ainvoke", "invoke_stream", "ainvoke_stream"):
        if getattr(type(model), name, None) is not None:
            setattr(model, name, _WRAPPERS[name](_dispatch(model, name), manager, retries))
    setattr(model, _GUARD, manager)
    return model


def _dispatch(model: Any, name: str) -> Callable[..., Any]:
    """The class's method, looked up at call time, so a later class change (fix_stream_usage) still applies."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(type(model), name)(model, *args, **kwargs)

    call.__name__ = name
    return call


def _fold_for(
    exc: Exception, call: tuple[tuple[Any, ...], dict[str, Any]], manager: Any, attempt: int, last: bool
) -> tuple[list[Any], int, Any] | None:
    """``(messages, attempt, metrics)`` to fold when ``exc`` is a context overflow worth retrying; else ``None``."""
    messages, metrics = _call_parts(*call, manager)
    if last or messages is None or not is_context_overflow(exc):
        return None
    return messages, attempt + 1, metrics


def _mark(wrapper: Any, original: Any) -> Any:
    functools.update_wrapper(wrapper, original)
    return wrapper


def _sync(original: Callable[..., Any], manager: Any, retries: int) -> Callable[..., Any]:
    def invoke(*args: Any, **kwargs: Any) -> Any:
        for attempt in range(retries + 1):
            try:
                return original(*args, **kwargs)
            except Exception as exc:
                fold = _fold_for(exc, (args, kwargs), manager, attempt, attempt == retries)
                if fold is None or not manager.recover_from_overflow(*fold):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    return _mark(invoke, original)


def _async(original: Callable[..., Any], manager: Any, retries: int) -> Callable[..., Any]:
    async def ainvoke(*args: Any, **kwargs: Any) -> Any:
        for attempt in range(retries + 1):
            try:
                return await original(*args, **kwargs)
            except Exception as exc:
                fold = _fold_for(exc, (args, kwargs), manager, attempt, attempt == retries)
                if fold is None or not await manager.arecover_from_overflow(*fold):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    return _mark(ainvoke, original)


def _stream(original: Callable[..., Iterator[Any]], manager: Any, retries: int) -> Callable[..., Iterator[Any]]:
    def invoke_stream(*args: Any, **kwargs: Any) -> Iterator[Any]:
        for attempt in range(retries + 1):
            started = False
            try:
                for chunk in original(*args, **kwargs):
                    started = True
                    yield chunk
                return
            except Exception as exc:
                fold = _fold_for(exc, (args, kwargs), manager, attempt, started or attempt == retries)
                if fold is None or not manager.recover_from_overflow(*fold):
                    raise

    return _mark(invoke_stream, original)


def _astream(
    original: Callable[..., AsyncIterator[Any]], manager: Any, retries: int
) -> Callable[..., AsyncIterator[Any]]:
    async def ainvoke_stream(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        for attempt in range(retries + 1):
            started = False
            try:
                async for chunk in original(*args, **kwargs):
                    started = True
                    yield chunk
                return
            except Exception as exc:
                fold = _fold_for(exc, (args, kwargs), manager, attempt, started or attempt == retries)
                if fold is None or not await manager.arecover_from_overflow(*fold):
                    raise

    return _mark(ainvoke_stream, original)


_WRAPPERS: dict[str, Callable[..., Any]] = {
    "invoke": _sync,
    "ainvoke": _async,
    "invoke_stream": _stream,
    "ainvoke_stream": _astream,
}
