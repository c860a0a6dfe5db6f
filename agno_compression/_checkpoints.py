"""Mid-run checkpoints (``checkpoint="tool-batch"``) store every message of the run, not the folded view.

agno saves a running run after each tool batch: its ``after_tool_results`` callback copies the
live message list into ``run_output.messages`` and persists it. A fold shortened that list, so
each checkpoint would overwrite the previous one with fewer messages, and a process killed
mid-run would leave only the unfolded tail in the database. agno offers no per-instance
checkpoint hook, so the narrowest route is taken: the four ``response`` methods of *one model
instance* are wrapped, and the ``after_tool_results`` callback agno passes in is wrapped so
that, while it runs, the live list holds the run's full ledger (every message it ever held);
the folded view is put back right after. Nothing in agno is patched globally.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

_GUARD = "_agno_compression_checkpoint_guard"
_METHODS = ("response", "aresponse", "response_stream", "aresponse_stream")


def guard_checkpoints(model: Any, manager: Any) -> Any:
    """Wrap ``model``'s response methods so checkpoints store the full run (idempotent; returns ``model``)."""
    if model is None or getattr(model, _GUARD, None) is manager:
        return model
    for name in _METHODS:
        if getattr(type(model), name, None) is not None:
            setattr(model, name, _wrapper(model, name, manager))
    setattr(model, _GUARD, manager)
    return model


def _wrapper(model: Any, name: str, manager: Any) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        callback = kwargs.get("after_tool_results")
        messages = kwargs.get("messages", args[0] if args else None)
        if callback is not None and isinstance(messages, list):
            kwargs["after_tool_results"] = _full_view_during(callback, messages, manager)
        # Looked up on the class at call time, so a later class change (fix_stream_usage) still applies.
        return getattr(type(model), name)(model, *args, **kwargs)

    call.__name__ = name
    return call


def _full_view_during(callback: Callable[..., Any], live: list[Any], manager: Any) -> Callable[..., Any]:
    """``callback`` run while ``live`` holds every message of the run."""
    if inspect.iscoroutinefunction(callback):

        async def acheckpoint(model_response: Any) -> Any:
            with manager.checkpoint_view(live):
                return await callback(model_response)

        return acheckpoint

    def checkpoint(model_response: Any) -> Any:
        with manager.checkpoint_view(live):
            return callback(model_response)

    return checkpoint
