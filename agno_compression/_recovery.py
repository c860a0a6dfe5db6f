"""Recovery from a provider's "prompt too long": recognise the error, fold harder, retry.

agno offers an overflow hook only for its own ``Compaction`` on an Agent, so the narrowest
wrapper is used instead: the four ``invoke`` methods of *one model instance* are wrapped.
When a call fails with a context-overflow error, the wrapper asks the manager to fold the
very message list it was given (the run's live list) with a smaller budget, then calls
again with the same arguments, at most ``retries`` times; then the provider's error is
raised as it was. Every other error passes through untouched. A stream is retried only
if it failed before its first chunk. A run of an agent whose own agno ``Compaction`` answers
overflow (see ``_compat``) is left to agno, also when its model instance is shared.

A model instance is wrapped once, whatever number of managers are attached to agents using it: each
call is answered by the manager folding that call's live list (the one agno asked ``should_compress``
about), with that manager's ``overflow_retries``. A manager replaced on an agent (``attach`` again) no
longer folds its lists, so it never acts there again.
"""

from __future__ import annotations

import functools
import threading
import weakref
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


_MANAGERS = "_agno_compression_overflow_managers"
_LOCK = threading.Lock()


def guard_overflow(model: Any, manager: Any) -> Any:
    """Wrap ``model``'s invoke methods once, and let ``manager`` answer overflows of the runs it folds there."""
    with _LOCK:
        linked = [ref for ref in getattr(model, _MANAGERS, ()) if ref() is not None and ref() is not manager]
        setattr(model, _MANAGERS, [weakref.ref(manager), *linked])
        if getattr(model, _GUARD, False):
            return model
        for name in ("invoke", "ainvoke", "invoke_stream", "ainvoke_stream"):
            if getattr(type(model), name, None) is not None:
                setattr(model, name, _WRAPPERS[name](_dispatch(model, name), model))
        setattr(model, _GUARD, True)
    return model


def managers_of(model: Any) -> list[Any]:
    """The managers attached with ``model`` that still exist, newest first."""
    return [manager for ref in getattr(model, _MANAGERS, ()) if (manager := ref()) is not None]


def manager_of(model: Any, messages: Any) -> Any:
    """The manager folding the live list ``messages`` among those attached with ``model``, or ``None``."""
    for ref in getattr(model, _MANAGERS, ()):
        manager = ref()
        if manager is not None and manager.folds(messages):
            return manager
    return None


def _dispatch(model: Any, name: str) -> Callable[..., Any]:
    """The class's method, looked up at call time, so a later class change (fix_stream_usage) still applies."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(type(model), name)(model, *args, **kwargs)

    call.__name__ = name
    return call


def _fold_for(
    exc: Exception, call: tuple[tuple[Any, ...], dict[str, Any]], model: Any, attempt: int, started: bool
) -> tuple[Any, tuple[list[Any], int, Any]] | None:
    """``(manager, (messages, attempt, metrics))`` when ``exc`` is a context overflow worth retrying; else ``None``."""
    args, kwargs = call
    messages = kwargs.get("messages", args[0] if args else None)
    if started or not isinstance(messages, list) or not is_context_overflow(exc):
        return None
    manager = manager_of(model, messages)
    run_response = kwargs.get("run_response")
    if manager is None or attempt >= manager.overflow_retries or defers_overflow(manager, run_response):
        return None  # the error goes on (to agno's Compaction, where it answers overflow for this run)
    return manager, (messages, attempt + 1, getattr(run_response, "metrics", None))


def _recovered(fold: tuple[Any, tuple[list[Any], int, Any]] | None) -> bool:
    """Fold harder for ``fold`` (from ``_fold_for``); True when the call is worth retrying."""
    return fold is not None and bool(fold[0].recover_from_overflow(*fold[1]))


async def _arecovered(fold: tuple[Any, tuple[list[Any], int, Any]] | None) -> bool:
    return fold is not None and bool(await fold[0].arecover_from_overflow(*fold[1]))


def _mark(wrapper: Any, original: Any) -> Any:
    functools.update_wrapper(wrapper, original)
    return wrapper


def _sync(original: Callable[..., Any], model: Any) -> Callable[..., Any]:
    def invoke(*args: Any, **kwargs: Any) -> Any:
        attempt = 0
        while True:
            try:
                return original(*args, **kwargs)
            except Exception as exc:
                if not _recovered(_fold_for(exc, (args, kwargs), model, attempt, False)):
                    raise
                attempt += 1

    return _mark(invoke, original)


def _async(original: Callable[..., Any], model: Any) -> Callable[..., Any]:
    async def ainvoke(*args: Any, **kwargs: Any) -> Any:
        attempt = 0
        while True:
            try:
                return await original(*args, **kwargs)
            except Exception as exc:
                if not await _arecovered(_fold_for(exc, (args, kwargs), model, attempt, False)):
                    raise
                attempt += 1

    return _mark(ainvoke, original)


def _stream(original: Callable[..., Iterator[Any]], model: Any) -> Callable[..., Iterator[Any]]:
    def invoke_stream(*args: Any, **kwargs: Any) -> Iterator[Any]:
        attempt = 0
        while True:
            started = False
            try:
                for chunk in original(*args, **kwargs):
                    started = True
                    yield chunk
                return
            except Exception as exc:
                if not _recovered(_fold_for(exc, (args, kwargs), model, attempt, started)):
                    raise
                attempt += 1

    return _mark(invoke_stream, original)


def _astream(original: Callable[..., AsyncIterator[Any]], model: Any) -> Callable[..., AsyncIterator[Any]]:
    async def ainvoke_stream(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        attempt = 0
        while True:
            started = False
            try:
                async for chunk in original(*args, **kwargs):
                    started = True
                    yield chunk
                return
            except Exception as exc:
                if not await _arecovered(_fold_for(exc, (args, kwargs), model, attempt, started)):
                    raise
                attempt += 1

    return _mark(ainvoke_stream, original)


_WRAPPERS: dict[str, Callable[..., Any]] = {
    "invoke": _sync,
    "ainvoke": _async,
    "invoke_stream": _stream,
    "ainvoke_stream": _astream,
}
