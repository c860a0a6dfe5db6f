"""Three simple context strategies, computed from the uncompressed replay's requests call by call.

The scripted model answers call *k* with the same recorded reply whatever it is sent, so a strategy that
only changes what each call sends can be computed by transforming the uncompressed prompts; its rows go
through ``_replays.measured`` like every other setting (cost with prompt caching, acted-on facts, next-step
grounding, pair violations).

- ``sliding-window``: the system messages, the first user message (the task), the current user message
  and the newest whole steps that fit under the threshold (at least the newest step).
- ``chunked-window``: no summary; when a call's prompt would exceed the threshold, the oldest steps after
  the task are dropped until it is at most half the threshold (at least the newest step stays); the drop
  point then stays put until the next call over the threshold, so the prompt prefix stays cacheable.
- ``observation-masking``: every tool output except the newest five is replaced in context by a one-line
  placeholder (its call stays); always on, whatever the threshold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from _replays import Replayed, measured
from agno.models.message import Message

from agno_compression.eval import Trajectory
from agno_compression.tokens import TokenCounter

BASELINES = ("sliding-window", "chunked-window", "observation-masking")
KEEP_OUTPUTS = 5
"""Newest tool outputs ``observation-masking`` keeps whole."""
_COUNTER = TokenCounter("gpt-4o")


def _split(messages: Sequence[Message]) -> tuple[list[Message], Message | None, list[list[Message]]]:
    """(system + the task, the current user message, the steps after the task): a step is an assistant message
    with the tool results that follow it, or a user message."""
    head: list[Message] = [m for m in messages if m.role in ("system", "developer")]
    rest = [m for m in messages if m.role not in ("system", "developer")]
    first = next((i for i, m in enumerate(rest) if m.role == "user"), None)
    if first is not None:
        head.append(rest[first])
        rest = rest[first + 1 :]
    steps: list[list[Message]] = []
    for m in rest:
        if m.role in ("tool", "function") and steps:
            steps[-1].append(m)
        else:
            steps.append([m])
    current = next((s[0] for s in reversed(steps) if s[0].role == "user"), None)
    return head, current, steps


def _view(head: list[Message], current: Message | None, steps: Sequence[list[Message]]) -> list[Message]:
    kept = [m for s in steps for m in s]
    if current is not None and not any(m is current for m in kept):
        # the current user message stays where it was: before the kept steps that follow it
        return [*head, current, *kept]
    return [*head, *kept]


def sliding_window(requests: Sequence[Any], threshold: int) -> list[list[Message]]:
    out = []
    for r in requests:
        head, current, steps = _split(r.messages)
        keep = 1
        while (
            keep < len(steps) and _COUNTER.count_prompt(_view(head, current, steps[-keep - 1 :]), r.tools) <= threshold
        ):
            keep += 1
        out.append(_view(head, current, steps[-keep:] if steps else []))
    return out


def chunked_window(requests: Sequence[Any], threshold: int) -> list[list[Message]]:
    out = []
    drop = 0
    for r in requests:
        head, current, steps = _split(r.messages)
        view = _view(head, current, steps[drop:])
        if _COUNTER.count_prompt(view, r.tools) > threshold:
            while drop < len(steps) - 1 and _COUNTER.count_prompt(view, r.tools) > threshold // 2:
                drop += 1
                view = _view(head, current, steps[drop:])
        out.append(view)
    return out


def observation_masking(requests: Sequence[Any], threshold: int) -> list[list[Message]]:
    masked: dict[str, Message] = {}  # one placeholder copy per output, the same in every later call
    out = []
    for r in requests:
        outputs = [m for m in r.messages if m.role in ("tool", "function")]
        old = {id(m) for m in outputs[:-KEEP_OUTPUTS]} if len(outputs) > KEEP_OUTPUTS else set()
        view = []
        for m in r.messages:
            if id(m) in old:
                if m.id not in masked:
                    text = m.get_content_string()
                    masked[m.id] = m.model_copy(update={"compressed_content": f"[output omitted: {len(text)} chars]"})
                m = masked[m.id]
            view.append(m)
        out.append(view)
    return out


_BUILDERS = {
    "sliding-window": sliding_window,
    "chunked-window": chunked_window,
    "observation-masking": observation_masking,
}


def rows(trajectory: Trajectory, requests: Sequence[Any], threshold: int) -> list[Replayed]:
    """One row per baseline for ``trajectory`` at ``threshold``, from its uncompressed replay's ``requests``."""
    out = []
    for name, build in _BUILDERS.items():
        prompts = build(requests, threshold)
        tokens = [_COUNTER.count_prompt(p, r.tools) for p, r in zip(prompts, requests, strict=True)]
        out.append(measured(trajectory, name, threshold, prompts, tokens, [], wall=0.0, cpu=0.0))
    return out
