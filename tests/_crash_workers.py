"""A child process that runs a real Agent until the parent kills it with SIGKILL (spawn-importable)."""

from __future__ import annotations

import time
from typing import Any

from tests.helpers import DbTarget

SYSTEM = "You read build logs."


def chunk(index: int) -> str:
    """The tool output for ``index``: the same text in every process, so runs can be compared."""
    lines = "\n".join(f"[{index:03d}:{line:03d}] compiling src/m{index}/f{line}.c ok" for line in range(40))
    return f"{lines}\nerror: ValueError in chunk {index}: exit code {index % 3}"


def run_until_killed(
    target: DbTarget, session_id: str, checkpoint: str, compress: bool, kill_at: int, task: str, ready: Any, **how: str
) -> None:
    """Run an Agent that reads chunk after chunk; at chunk ``kill_at`` signal ``ready`` and wait to be killed.

    ``kill_at=-1`` never blocks: the run ends normally after 12 chunks. ``how``: ``mode`` (one of agno's four
    model paths, ``RUN_MODES``; default ``sync``), ``owner`` (``agent``, the default, or ``team``) and ``run_id``
    (the run's own id, as agno's durable queue gives a job's every attempt; sync only).
    """
    from agno.agent import Agent

    from agno_compression import CompressionManager
    from agno_compression.testing import WHOLE_SESSION, Reply, ScriptedModel, ToolCall, run_agent

    calls = {"n": 0}
    managers: list[CompressionManager] = []

    def read_chunk(index: int) -> str:
        """Read one chunk of a build log."""
        if index == kill_at:
            for manager in managers:  # the folds so far are recorded (written behind, they could lag under load)
                manager.flush_records()
            ready.set()
            time.sleep(600)  # the parent kills the process here, mid-run, after ``kill_at`` tool batches
        return chunk(index)

    def script(messages: Any, info: Any) -> Reply:
        n = calls["n"]
        calls["n"] += 1
        if kill_at < 0 and n >= 12:
            return Reply(text=f"{task}: done.")
        return Reply(text=f"{task}: chunk {n}.", tool_calls=[ToolCall("read_chunk", {"index": n})])

    common: dict[str, Any] = {
        "model": ScriptedModel(script=script),
        "tools": [read_chunk],
        "db": target.open(),
        "session_id": session_id,
        "system_message": SYSTEM,
        "checkpoint": checkpoint,
        "telemetry": False,
        **WHOLE_SESSION,
    }
    if how.get("owner") == "team":  # a team leader reading chunks itself (its tool loop checkpoints like an agent's)
        from agno.team import Team

        idle = Agent(name="idle", id="idle", model=ScriptedModel(script=lambda m, i: "ok"), telemetry=False)
        agent: Any = Team(members=[idle], **common)
    else:
        agent = Agent(**common)
    if compress:
        managers.append(CompressionManager(compress_at_tokens=1_500))
        managers[0].attach(agent)
    if how.get("run_id"):
        agent.run(task, run_id=how["run_id"])
    else:
        run_agent(agent, task, how.get("mode", "sync"))
