"""Applying observation policies to a run's new tool outputs, as they enter the context.

The model sees the policy's text (``compressed_content``); ``content`` keeps the full output for
storage. Model calls a policy makes are returned with its answer and kept on the run's state, so
each run accounts its own usage, however many runs share the policy.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Mapping
from typing import Any

from agno.models.message import Message

from ._observations import ObservationPolicy
from ._runs import RunState
from ._stats import Stats

log = logging.getLogger("agno_compression")

Observations = ObservationPolicy | Mapping[str, ObservationPolicy | None] | None
PolicyCall = tuple[ObservationPolicy, str, str | None]
"""``(policy, output text, tool name)``: one policy call to make."""
PolicyAnswer = tuple[str, list[Any]]
"""``(new text, model responses the call produced)``."""


def policy_for(observations: Observations, tool_name: str | None) -> ObservationPolicy | None:
    """The policy for ``tool_name``'s outputs: the one policy, its own entry, or the ``"*"`` entry."""
    if not isinstance(observations, Mapping):
        return observations
    if tool_name is not None and tool_name in observations:
        return observations[tool_name]
    return observations.get("*")


def apply_policy(call: PolicyCall) -> PolicyAnswer:
    """Answer a policy call (sync); a policy that reports its model usage says so through ``apply_counted``."""
    policy, text, tool_name = call
    counted = getattr(policy, "apply_counted", None)
    return counted(text, tool_name) if counted is not None else (policy.apply(text, tool_name), [])


async def aapply_policy(call: PolicyCall) -> PolicyAnswer:
    """Answer a policy call (async), through ``aapply_counted`` or ``aapply`` where the policy has them."""
    policy, text, tool_name = call
    counted = getattr(policy, "aapply_counted", None)
    if counted is not None:
        return await counted(text, tool_name)  # type: ignore[no-any-return]
    aapply = getattr(policy, "aapply", None)
    return (await aapply(text, tool_name) if aapply is not None else policy.apply(text, tool_name)), []


def police(
    observations: Observations, state: RunState, messages: list[Message], stats: Stats
) -> Generator[PolicyCall, PolicyAnswer, None]:
    """Yield one policy call per tool output of this run not seen before; rewrite what it shortens."""
    if observations is None:
        return
    for m in messages:
        if m.role != "tool" or m.from_history or id(m) in state.policed or m.content is None:
            continue
        state.policed.add(id(m))
        policy = policy_for(observations, m.tool_name)
        if policy is None or m.compressed_content is not None:
            continue
        text = m.get_content_string()
        try:
            new, responses = yield policy, text, m.tool_name
        except Exception as exc:
            log.warning("agno-compression: observation policy failed on %s, output kept: %s", m.tool_name, exc)
            continue
        model = getattr(policy, "model", None)
        state.policy_usage.extend((response, model) for response in responses if model is not None)
        if new != text:
            m.compressed_content = new  # what the model sees; ``content`` stays the full original
            stats.add("observations_rewritten")
            stats.add("observation_chars_saved", len(text) - len(new))
