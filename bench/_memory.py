"""Memory of one long session: what a manager adds to agno's own after N runs of one session in one process.

Each setting runs in a fresh process (``python bench/_memory.py --worker SETTING N1,N2,... WORKDIR TOOL_CALLS``): a
real agno ``Agent`` on a ``ScriptedModel``, ``add_history_to_context=True``, one session in a SQLite file. Each run
makes ``tool_calls`` reads of a 40-line log chunk (615 tokens) and then answers, with the last 3 runs as history;
with no tool calls (a chat) it answers at once with a 60-line report, the last 5 runs as history. The manager (when
the setting is not ``none``) folds at 4,000 tokens. ``tracemalloc`` runs from before the agent is built; after run
N of each point, a full ``gc.collect()`` and the traced bytes. What the manager adds is a setting's bytes minus
``none``'s at the same N: agno's own session, run objects and caches are in both.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SESSION_ID = "bench-memory"
BUDGET = 4_000
POINTS = (100, 1_000)
QUICK_POINTS = (20, 100)
SETTINGS = ("extractive", "mask")


@dataclass
class MemoryResult:
    """Traced bytes after each point, per setting (``none`` is agno alone), and each setting's wall seconds."""

    points: tuple[int, ...]
    traced: dict[str, dict[int, int]]
    seconds: dict[str, float]
    folds: dict[str, int]
    """Folds and masking passes of each setting."""
    tool_calls: int = 2

    def added(self, setting: str, n: int) -> int:
        """Bytes the manager of ``setting`` holds beyond agno's own after ``n`` runs."""
        return self.traced[setting][n] - self.traced["none"][n]

    def growth(self, setting: str) -> float:
        """``added`` at the last point over ``added`` at the first (1.0: levelled off)."""
        first = self.added(setting, self.points[0])
        return self.added(setting, self.points[-1]) / first if first > 0 else float("inf")


def session_memory(
    setting: str, points: Sequence[int], workdir: Path, tool_calls: int = 2, summarizer: Any = None
) -> tuple[dict[int, int], int]:
    """Run one session ``max(points)`` times in this process: traced bytes after each point (after a full gc), and
    the folds and masking passes made. ``summarizer`` (a ``Summarizer``) replaces the one ``setting`` names."""
    import gc
    import logging
    import tracemalloc

    logging.disable(logging.WARNING)  # tight budgets warn on purpose
    from agno.agent import Agent
    from agno.db.sqlite import SqliteDb

    from agno_compression import CompressionManager
    from agno_compression.testing import Reply, ScriptedModel, ToolCall, current_user, log_chunk

    tracemalloc.start()
    reads: dict[str, int] = {}

    def read_log(index: int) -> str:
        """Read one chunk of the build log."""
        return log_chunk(index, len(reads), lines=40)

    def script(messages: list, info: object) -> Reply:
        user = current_user(messages)
        k = reads[user] = reads.get(user, 0) + 1
        if not tool_calls:
            reads.pop(user)
            return Reply(text=f"Report for {user!r}:\n{log_chunk(k, len(reads), lines=60)}")
        if k > tool_calls:
            reads.pop(user)
            return Reply(text=f"Done with {user!r}: all chunks read.")
        return Reply(text=f"reading chunk {k}", tool_calls=[ToolCall("read_log", {"index": k})])

    class Unrecorded(list):
        """The scripted model's request log, kept empty: the bench measures the manager, not the model's record."""

        def append(self, item: object) -> None:
            pass

    model = ScriptedModel(script=script, requests=Unrecorded())
    db = SqliteDb(db_file=str(workdir / f"memory-{setting}.db"))
    agent = Agent(
        model=model,
        tools=[read_log] if tool_calls else [],
        db=db,
        session_id=SESSION_ID,
        add_history_to_context=True,
        num_history_runs=3 if tool_calls else 5,
        telemetry=False,
    )
    manager = None
    if setting != "none":
        manager = CompressionManager(compress_at_tokens=BUDGET, summarizer=summarizer or setting)
        manager.attach(agent)
    traced: dict[int, int] = {}
    for n in range(1, max(points) + 1):
        agent.run(f"Task {n}: read the build log.")
        if n in points:
            gc.collect()
            traced[n] = tracemalloc.get_traced_memory()[0]
    return traced, (manager.stats["folds"] + manager.stats["masks"]) if manager is not None else 0


def measure(
    workdir: Path,
    settings: Sequence[str] = SETTINGS,
    points: Sequence[int] = POINTS,
    *,
    parallel: int = 1,
    tool_calls: int = 2,
) -> MemoryResult:
    """Every setting and ``none`` in fresh processes (``parallel`` at a time); traced bytes after each point."""
    order = ["none", *settings]
    traced: dict[str, dict[int, int]] = {}
    seconds: dict[str, float] = {}
    folds: dict[str, int] = {}
    spec = ",".join(map(str, sorted(points)))
    for i in range(0, len(order), max(1, parallel)):
        batch = order[i : i + max(1, parallel)]
        started = {s: time.perf_counter() for s in batch}
        procs = {
            s: subprocess.Popen(
                [sys.executable, __file__, "--worker", s, spec, str(workdir), str(tool_calls)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for s in batch
        }
        for s, proc in procs.items():
            out, err = proc.communicate(timeout=3_600)
            if proc.returncode != 0:
                raise RuntimeError(f"memory worker {s} failed: {err[-2000:]}")
            seconds[s] = time.perf_counter() - started[s]
            answer = json.loads(out.strip().splitlines()[-1])
            traced[s], folds[s] = {int(k): v for k, v in answer["traced"].items()}, answer["folds"]
    return MemoryResult(tuple(sorted(points)), traced, seconds, folds, tool_calls)


def section(result: MemoryResult) -> list[str]:
    """The RESULTS.md section: agno's own memory and what each manager adds, at each point."""
    first, last = result.points[0], result.points[-1]
    scenario = (
        f"{result.tool_calls} tool calls (a 615-token log chunk each) and an answer per run, the last 3 runs as history"
        if result.tool_calls
        else "a 900-token answer per run (a chat), the last 5 runs as history"
    )
    mb = 1e6
    lines = [
        f"## Memory of one long session ({', '.join(f'{n:,}' for n in result.points)} runs)",
        "",
        f"One agent session in one process: a real Agent on a scripted model, {scenario}, SQLite, the manager "
        f"folding at {BUDGET:,} tokens. Python heap traced by "
        "`tracemalloc` from before the agent is built, after a full `gc.collect()`; each setting in a fresh "
        "process. \"added\" is the setting's heap minus agno's alone at the same run (`bench/_memory.py`).",
        "",
        "| setting | "
        + " | ".join(f"heap after {n:,} runs MB" for n in result.points)
        + " | "
        + " | ".join(f"added after {n:,} runs MB" for n in result.points)
        + f" | added {last:,} ÷ {first:,} | folds | wall s |",
        "|---|" + "---|" * (2 * len(result.points) + 3),
    ]
    for setting, traced in result.traced.items():
        heap = " | ".join(f"{traced[n] / mb:.1f}" for n in result.points)
        if setting == "none":
            added, ratio = " | ".join("-" for _ in result.points), "-"
        else:
            added = " | ".join(f"{result.added(setting, n) / mb:.2f}" for n in result.points)
            ratio = f"{result.growth(setting):.2f}x"
        label = "agno alone (none)" if setting == "none" else setting
        lines.append(
            f"| {label} | {heap} | {added} | {ratio} | {result.folds[setting]:,} | {result.seconds[setting]:.0f} |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """``python bench/_memory.py [--quick]``: the memory part of ``bench/run.py`` alone, as its table on stdout."""
    import argparse
    import tempfile

    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--worker"]:
        setting, spec, workdir, calls = args[1], args[2], Path(args[3]), int(args[4])
        traced, folds = session_memory(setting, [int(n) for n in spec.split(",")], workdir, calls)
        print(json.dumps({"traced": traced, "folds": folds}))
        return 0
    parser = argparse.ArgumentParser(description="memory of one long session: agno alone versus with a manager")
    parser.add_argument("--quick", action="store_true", help=f"runs {QUICK_POINTS} instead of {POINTS}")
    parser.add_argument("--points", type=int, nargs="+", help="after how many runs to measure")
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS))
    parser.add_argument("--parallel", type=int, default=1, help="processes at a time")
    ns = parser.parse_args(args)
    points = ns.points or (QUICK_POINTS if ns.quick else POINTS)
    with tempfile.TemporaryDirectory(prefix="agno-compression-memory-") as tmp:
        result = measure(Path(tmp), ns.settings, points, parallel=ns.parallel)
    print("\n".join(section(result)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
