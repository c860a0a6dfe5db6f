"""Worker processes for the concurrency tests (importable under the spawn start method)."""

from __future__ import annotations

from typing import Any

from tests.helpers import DbTarget


def record_folds(target: DbTarget, session_id: str, worker: int, folds: int, barrier: Any) -> int:
    """Open the agent's agno db in this process and record ``folds`` folds as fast as possible."""
    from agno_compression import CompressionRecord
    from agno_compression._stores import store_for

    store = store_for(target.open())
    assert store is not None
    barrier.wait(timeout=60)
    for i in range(folds):
        store.record(
            CompressionRecord(
                session_id=session_id,
                folded_ids=[f"w{worker}-f{i}-m{j}" for j in range(4)],
                summary=f"summary of worker {worker} fold {i}",
                strategy="extractive",
                run_id=f"run-{worker}",
                tokens_before=4000,
                tokens_after=1500,
            )
        )
    return folds


def run_folding_agent(
    target: DbTarget, session_id: str, worker: int, min_folds: int, barrier: Any
) -> tuple[int, list[str], list[str]]:
    """Run a real Agent on the shared session until it has folded ``min_folds`` times.

    Returns the folds, the folded message ids and the tool outputs this process produced.
    """
    from agno_compression import CompressionManager
    from agno_compression.testing import Reply, ToolCall, scripted_agent

    db = target.open()
    produced: list[str] = []
    folded: list[str] = []

    def read_chunk(index: int) -> str:
        """Read one chunk of a build log."""
        text = "\n".join(f"[w{worker}:{index:03d}:{line:03d}] compiling src/f{line}.c ok" for line in range(40))
        produced.append(text)
        return text

    manager = CompressionManager(compress_at_tokens=1_500, on_fold=lambda e, _: folded.extend(e.folded_ids))

    def script(messages: Any, info: Any) -> Reply:
        if manager.stats.get("folds", 0) >= min_folds:
            return Reply(text=f"worker {worker} done")
        return Reply(tool_calls=[ToolCall("read_chunk", {"index": info.call_index})])

    agent, _ = scripted_agent(script, read_chunk, manager=manager, db=db, session_id=session_id)
    barrier.wait(timeout=60)
    agent.run(f"worker {worker}: read the log")
    return manager.stats.get("folds", 0), folded, produced


def run_slow_agent(target: DbTarget, session_id: str, reads: int, started: Any, release: Any) -> int:
    """One run of a real Agent on ``session_id`` whose first read waits for ``release``: a run going on in another
    process while the test folds the session on request. Returns how many tool outputs the run produced."""
    from agno_compression import CompressionManager
    from agno_compression.testing import WHOLE_SESSION, Reply, ToolCall, scripted_agent

    produced: list[str] = []

    def read_chunk(index: int) -> str:
        """Read one chunk of a build log."""
        if not produced:
            started.set()
            release.wait(60)
        produced.append(f"slow run chunk {index}: ok")
        return produced[-1]

    def script(messages: Any, info: Any) -> Reply:
        if info.call_index >= reads:
            return Reply(text="slow run done")
        return Reply(tool_calls=[ToolCall("read_chunk", {"index": info.call_index})])

    agent, _ = scripted_agent(
        script,
        read_chunk,
        manager=CompressionManager(compress_at_tokens=200_000),
        db=target.open(),
        session_id=session_id,
        **WHOLE_SESSION,
    )
    agent.run("the slow run: read the log")
    return len(produced)
