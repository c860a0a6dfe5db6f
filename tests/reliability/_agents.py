"""The reliability tests' Agent: ``loop_agent`` (a real Agent reading long log chunks) at their budget."""

from __future__ import annotations

from typing import Any

from agno_compression.testing import LoopAgent, loop_agent

BUDGET = 3_000
SYSTEM = "You read build logs."


def build(*, user_id: str | None = None, agent_id: str | None = None, **kw: Any) -> LoopAgent:
    """``loop_agent`` folding at ``BUDGET`` unless told otherwise (``kw`` goes to it and to the manager)."""
    kw.setdefault("compress_at_tokens", BUDGET)
    return loop_agent(system=SYSTEM, agent_kw={"user_id": user_id, "id": agent_id}, **kw)
