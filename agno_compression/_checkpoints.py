"""Mid-run checkpoints (``checkpoint="tool-batch"``) store every message of the run, not the folded view.

agno saves a running run after each tool batch: its ``after_tool_results`` callback copies the
live message list into ``run_output.messages`` and persists it. A fold shortened that list, so
each checkpoint would overwrite the previous one with fewer messages, and a process killed
mid-run would leave only the unfolded tail in the database. agno offers no per-instance
checkpoint hook, so the narrowest route is taken: the four ``response`` methods of *one model
instance* are wrapped, and the ``after_tool_results`` callback agno passes in is wrapped so
that, while it runs, the live list holds the run's full ledger (every message it ever held);
the folded view is put back right after. Nothing in agno is patched globally.

The same wrapper keeps a paused run whole. A run that pauses (a tool awaits confirmation, user input
or external execution) gets no post-hook: agno stores it from the live list as the model loop left
it, and ``continue_run`` resumes from those stored (or returned) messages. When a response method
returns on a pause, the manager puts every message of the run back into the live list first
(``CompressionManager.keep_paused_run``); the continuation folds again from the originals.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

log = logging.getLogger("agno_compression")

_GUARD = "_agno_compression_checkpoint_guard"
_METHODS = ("response", "aresponse", "response_stream", "aresponse_stream")


def guard_checkpoints(model: Any) -> Any:
    """Wrap ``model``'s response methods once (idempotent; returns ``model``).

    Each call is served by the manager agno passes it (``compression_manager=``, the one attached to the agent
    or team running): a model instance shared by agents with different managers serves each with its own, and
    a manager replaced by a later ``attach`` no longer acts.
    """
    if model is None or getattr(model, _GUARD, False):
        return model
    for name in _METHODS:
        if getattr(type(model), name, None) is not None:
            setattr(model, name, _wrapper(model, name))
    setattr(model, _GUARD, True)
    return model


def _wrapper(model: Any, name: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        # Looked up on the class at call time, so a later class change (fix_stream_usage) still applies.
        method = getattr(type(model), name)
        manager: Any = kwargs.get("compression_manager")
        messages = kwargs.get("messages", args[0] if args else None)
        if not hasattr(manager, "keep_paused_run") or not isinstance(messages, list):
            return method(model, *args, **kwargs)  # no manager of ours acts on this run
        callback = kwargs.get("after_tool_results")
        if callback is not None:
            kwargs["after_tool_results"] = _full_view_during(callback, messages, manager)
        result = method(model, *args, **kwargs)
        run_response = kwargs.get("run_response")
        return _THEN[name](result, lambda: manager.keep_paused_run(messages, run_response))

    call.__name__ = name
    call.__wrapped__ = getattr(type(model), name)  # type: ignore[attr-defined]
    return call


def _then(result: Any, done: Callable[[], None]) -> Any:
    done()
    return result


async def _athen(pending: Any, done: Callable[[], None]) -> Any:
    result = await pending
    done()
    return result


def _then_stream(stream: Iterator[Any], done: Callable[[], None]) -> Iterator[Any]:
    yield from stream
    done()


async def _athen_stream(stream: AsyncIterator[Any], done: Callable[[], None]) -> AsyncIterator[Any]:
    async for item in stream:
        yield item
    done()


_THEN: dict[str, Callable[[Any, Callable[[], None]], Any]] = {
    "response": _then,
    "aresponse": _athen,
    "response_stream": _then_stream,
    "aresponse_stream": _athen_stream,
}
"""What runs ``done`` once the model loop of each response method has finished (returned or exhausted)."""


def _full_view_during(callback: Callable[..., Any], live: list[Any], manager: Any) -> Callable[..., Any]:
    """``callback`` run while ``live`` holds every message of the run."""
    if inspect.iscoroutinefunction(callback):

        async def acheckpoint(model_response: Any) -> Any:
            with checkpoint_view(manager, live):
                return await callback(model_response)

        return acheckpoint

    def checkpoint(model_response: Any) -> Any:
        with checkpoint_view(manager, live):
            return callback(model_response)

    return checkpoint


@contextlib.contextmanager
def checkpoint_view(manager: Any, live: list[Any]) -> Iterator[None]:
    """While agno checkpoints a running run, ``live`` holds every message of the run, not the folded view.

    agno's ``after_tool_results`` callback stores the run from the live list; after a fold that list
    lacks the folded messages, so each checkpoint would overwrite the previous one with less.
    """
    folded_view: list[Any] | None = None
    originals: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    try:
        state = manager._runs.find(live)
        if state is not None:
            manager._records.flush(state.context)  # the stored run's folds are stored with it
            originals = state.original_calls()  # call arguments shortened in context are stored whole
            full = state.full_run(live[:])
            if len(full) != len(live) or any(a is not b for a, b in zip(full, live, strict=True)):
                folded_view = live[:]
                live[:] = full
    except Exception as exc:  # never break a run: the checkpoint then stores the folded view
        log.warning("agno-compression: could not restore folded messages for a checkpoint: %s", exc)
    try:
        with originals:
            yield
    finally:
        if folded_view is not None:
            live[:] = folded_view
