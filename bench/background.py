"""Benchmark: background summaries (``background_summary_at``) against summaries written at the fold.

    python bench/background.py [--out FILE] [--agent-seconds 0.5] [--summarizer-seconds 2.0]

Long runs go through a real agno ``Agent`` whose model is a scripted agno model taking ``--agent-seconds`` per call,
with ``CompressionManager(summarizer=LLMSummarizer(model=...))`` whose model is a scripted agno model taking
``--summarizer-seconds`` per call, once with ``background_summary_at=None`` (the summary is written at the fold) and
once with 0.7 (opt-in), the same runs in one process. The runs: two synthetic coding-agent loops (file reads,
greps and test runs of varied sizes, 70 model calls each) and the recording of ``../shared/trajectories`` with the
most model calls (replayed by ``agno_compression.eval.prepare_replay``; skipped when the folder is missing).

Per setting: the folds, the latency the agent's model saw at a fold (from the previous model call's return to the
next call's start, a fold between them) and at the other calls, the background summaries used and missed, the
summarizer's model calls, the prompt tokens the agent's model was sent, and whether every fold's summary is the one
a synchronous call on its span writes: the summarizer's model answers with a deterministic function of its input
(the call ids of the span it folds, then ``_offline.digest`` of it), so each summary can be checked against the
messages its fold folded. Writes ``bench/background/RESULTS.md``. Offline: no connection but loopback.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _offline  # noqa: E402
from agno.agent import Agent  # noqa: E402
from agno.models.message import Message  # noqa: E402

from agno_compression import CompressionManager, FoldEvent, LLMSummarizer  # noqa: E402
from agno_compression.eval import iter_shared_trajectories, observations_as_tool_calls, prepare_replay  # noqa: E402
from agno_compression.testing import Reply, ScriptedModel, ScriptInfo, ToolCall, run_in_mode  # noqa: E402

OUT = HERE / "background" / "RESULTS.md"
TRAJECTORIES = HERE.parent.parent / "shared" / "trajectories"
BUDGET = 8_000
STEPS = 70
SETTINGS: dict[str, float | None] = {"at the fold": None, "background (0.7)": 0.7}
CONVERSATION = "Conversation to fold:\n"
CALL_ID = re.compile(r'call_id="([^"]*)"')


def fingerprint(call_ids: list[str]) -> str:
    return hashlib.sha1("\n".join(call_ids).encode()).hexdigest()[:16]


def summarizer_model(seconds: float) -> ScriptedModel:
    """A model that takes ``seconds`` per call and answers with a deterministic function of the span it folds."""

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        time.sleep(seconds)
        conversation = messages[-1].get_content_string().split(CONVERSATION, 1)[-1]
        span = fingerprint(CALL_ID.findall(conversation))
        return Reply(text=f"## Progress\nspan {span}\n{_offline.digest(conversation)}")

    return ScriptedModel(script=script, id="summarizer", name="SlowSummarizer")


@dataclass
class Timing:
    """When each of the agent's model calls started and returned, and before which calls a fold came."""

    calls: list[tuple[float, float]] = field(default_factory=list)
    folds: list[tuple[int, FoldEvent, list[Message]]] = field(default_factory=list)

    def timed(self, script: Callable[..., Any], seconds: float) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            start = time.monotonic()
            time.sleep(seconds)
            try:
                return script(*args)
            finally:
                self.calls.append((start, time.monotonic()))

        return call

    def on_fold(self, event: FoldEvent, folded: Any) -> None:
        self.folds.append((len(self.calls), event, list(folded)))

    def gaps(self) -> tuple[list[float], list[float]]:
        """Seconds from a model call's return to the next call's start: with a fold between, and without."""
        at = {n for n, _, _ in self.folds}
        gaps = [(n, self.calls[n][0] - self.calls[n - 1][1]) for n in range(1, len(self.calls))]
        return [g for n, g in gaps if n in at], [g for n, g in gaps if n not in at]


# --- the runs --------------------------------------------------------------------------------------------------


def synthetic(seed: int, agent_seconds: float, manager: CompressionManager, timing: Timing) -> ScriptedModel:
    """A coding agent's loop: reads, greps and test runs of varied sizes, ``STEPS`` model calls."""
    rng = random.Random(seed)
    plan = [rng.choice(("read_file", "read_file", "grep", "run_tests")) for _ in range(STEPS)]
    sizes = [rng.choice((6, 10, 14, 20, 30, 45)) for _ in range(STEPS)]

    def read_file(path: str) -> str:
        """Read a source file."""
        n = int(path.split("_")[1].split(".")[0])
        return "\n".join(
            f"def handler_{n}_{i}(request):\n    return request.value_{i} + {seed}" for i in range(sizes[n])
        )

    def grep(pattern: str) -> str:
        """Search the repository."""
        n = int(pattern.rsplit("_", 1)[1])
        return "\n".join(f"src/module_{n}/file_{i}.py:{10 * i}: {pattern}(x)" for i in range(sizes[n]))

    def run_tests(target: str) -> str:
        """Run the tests."""
        n = int(target.rsplit("_", 1)[1])
        lines = [f"tests/test_{n}.py::test_case_{i} PASSED" for i in range(sizes[n])]
        return "\n".join([*lines, f"FAILED tests/test_{n}.py::test_edge - ValueError: bad value {n}", "1 failed"])

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        i = info.call_index
        if i >= STEPS:
            return Reply(text="The handler is fixed.")
        tool = plan[i]
        args = {"read_file": {"path": f"src/module_{i}.py"}, "grep": {"pattern": f"handler_{i}"}}
        return Reply(text=f"Step {i}.", tool_calls=[ToolCall(tool, args.get(tool, {"target": f"module_{i}"}))])

    model = ScriptedModel(script=timing.timed(script, agent_seconds))
    agent = Agent(model=model, tools=[read_file, grep, run_tests], system_message="You fix bugs.", telemetry=False)
    manager.attach(agent)
    run_in_mode(agent, "Find and fix the failing handler.", "sync")
    return model


def longest_recording() -> Any:
    if not TRAJECTORIES.is_dir():
        return None
    found = [(sum(m.role == "assistant" for m in t.messages), t) for t in iter_shared_trajectories(TRAJECTORIES)]
    return max(found, key=lambda pair: pair[0])[1] if found else None


def recorded(trajectory: Any, agent_seconds: float, manager: CompressionManager, timing: Timing) -> ScriptedModel:
    prepared = prepare_replay(observations_as_tool_calls(trajectory.messages), manager=manager, session_id="bg")
    prepared.model.script = timing.timed(prepared.model.script, agent_seconds)
    prepared.run("sync")
    return prepared.model  # type: ignore[no-any-return]


# --- measuring -------------------------------------------------------------------------------------------------


@dataclass
class Row:
    setting: str
    run: str
    calls: int = 0
    folds: int = 0
    at_folds: list[float] = field(default_factory=list)
    others: list[float] = field(default_factory=list)
    used: int = 0
    misses: int = 0
    summarizer_calls: int = 0
    sent: int = 0
    matching: int = 0
    spans: list[tuple[tuple[str, ...], str]] = field(default_factory=list)


def measure(
    setting: str, share: float | None, name: str, run: Callable[..., ScriptedModel], seconds: tuple[float, float]
) -> Row:
    timing = Timing()
    summarizer = summarizer_model(seconds[1])
    manager = CompressionManager(
        compress_at_tokens=BUDGET,
        summarizer=LLMSummarizer(model=summarizer),
        background_summary_at=share,
        on_fold=timing.on_fold,
    )
    model = run(seconds[0], manager, timing)
    at, others = timing.gaps()
    row = Row(setting, name, len(timing.calls), len(timing.folds), at, others)
    row.used, row.misses = manager.stats["background_summaries"], manager.stats["background_misses"]
    row.summarizer_calls = len(summarizer.requests)
    row.sent = sum(r.prompt_tokens for r in model.requests)
    for _, event, folded in timing.folds:
        ids = [str(m.tool_call_id) for m in folded if m.role == "tool"]
        row.matching += f"span {fingerprint(ids)}" in (event.summary or "")
        row.spans.append((tuple(m.id or "" for m in folded), event.summary or ""))
    return row


def runs() -> list[tuple[str, Callable[[float, CompressionManager, Timing], ScriptedModel]]]:
    out: list[tuple[str, Callable[[float, CompressionManager, Timing], ScriptedModel]]] = [
        (f"synthetic loop, seed {seed}", lambda a, m, t, s=seed: synthetic(s, a, m, t)) for seed in (1, 2)
    ]
    trajectory = longest_recording()
    if trajectory is not None:
        out.append((f"{trajectory.source}: {trajectory.name[-40:]}", lambda a, m, t: recorded(trajectory, a, m, t)))
    return out


def ms(values: list[float], how: Callable[[list[float]], float]) -> str:
    return f"{how(values) * 1000:,.0f} ms" if values else "–"


def report(rows: list[Row], seconds: tuple[float, float], elapsed: float) -> str:
    off = {r.run: r for r in rows if SETTINGS[r.setting] is None}
    lines = [
        "# Background summaries: latency at folds",
        "",
        f"Written by `python bench/background.py` ({elapsed:,.0f} s). Budget {BUDGET:,} tokens; the agent's model "
        f"takes {seconds[0]} s per call, the `LLMSummarizer`'s model {seconds[1]} s. Latency: from a model call's "
        "return to the next call's start, with a fold between (at folds) or not (other calls). A summary matches "
        "its span when it is the one the summarizer writes for exactly the messages its fold folded (its model is "
        "a deterministic function of its input: that is the text a synchronous call on that span writes).",
        "",
        "| setting | model calls | folds | latency at folds, mean | max | other calls, mean | background used | misses "
        "| summarizer calls | summaries match their span | same span and text as at the fold | prompt tokens sent |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for setting in SETTINGS:
        mine = [r for r in rows if r.setting == setting]
        at = [g for r in mine for g in r.at_folds]
        others = [g for r in mine for g in r.others]
        folds = sum(r.folds for r in mine)
        same = sum(len(set(r.spans) & set(off[r.run].spans)) for r in mine)
        lines.append(
            f"| {setting} | {sum(r.calls for r in mine)} | {folds} | {ms(at, statistics.mean)} | {ms(at, max)} | "
            f"{ms(others, statistics.mean)} | {sum(r.used for r in mine)} | {sum(r.misses for r in mine)} | "
            f"{sum(r.summarizer_calls for r in mine)} | {sum(r.matching for r in mine)}/{folds} | {same}/{folds} | "
            f"{sum(r.sent for r in mine):,} |"
        )
    lines += [
        "",
        "Per run:",
        "",
        "| run | setting | model calls | folds | latency at folds, mean | max | used | misses |",
    ]
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        lines.append(
            f"| {r.run} | {r.setting} | {r.calls} | {r.folds} | {ms(r.at_folds, statistics.mean)} | "
            f"{ms(r.at_folds, max)} | {r.used} | {r.misses} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--agent-seconds", type=float, default=0.5)
    parser.add_argument("--summarizer-seconds", type=float, default=2.0)
    args = parser.parse_args(argv)
    _offline.forbid_network()
    seconds = (args.agent_seconds, args.summarizer_seconds)
    began = time.monotonic()
    rows = []
    for name, run in runs():
        for setting, share in SETTINGS.items():
            rows.append(measure(setting, share, name, run, seconds))
            print(f"{name} / {setting}: {rows[-1].folds} folds, at folds {ms(rows[-1].at_folds, statistics.mean)}")
    text = report(rows, seconds, time.monotonic() - began)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
