"""Offline evaluation: replay recorded conversations with and without compression and compare.

Shared by the ``agno-compression eval`` command and the benchmarks.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agno.models.message import Message

from ._manager import CompressionManager, FoldEvent
from ._plan import pair_violations
from ._replay import observations_as_tool_calls, replay
from ._summarizers import extract_facts
from ._tokens import message_text
from ._trajectories import Trajectory


def fact_retention(folded: Sequence[Message], summary: str) -> tuple[int, int]:
    """(kept, total): how many identifiers, paths, numbers and error names of ``folded`` appear in ``summary``."""
    facts = extract_facts("\n".join(message_text(m, use_compressed_content=False) for m in folded))
    wanted = {f for kind in ("paths", "ids", "errors", "numbers", "exit_codes", "urls") for f in facts[kind]}
    return sum(1 for f in wanted if f in summary), len(wanted)


@dataclass
class EvalRow:
    """One recording replayed with one setting."""

    input: str
    setting: str
    budget: int
    model_calls: int
    peak_prompt: int
    cumulative_prompt: int
    peak_prompt_uncompressed: int
    cumulative_prompt_uncompressed: int
    folds: int = 0
    masks: int = 0
    summarizer_calls: int = 0
    pair_violations: int = 0
    calls_over_budget: int = 0
    facts_kept: int = 0
    facts_total: int = 0

    @property
    def fact_retention(self) -> float | None:
        return self.facts_kept / self.facts_total if self.facts_total else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "fact_retention": self.fact_retention}


@dataclass
class _Collector:
    kept: int = 0
    total: int = 0
    events: list[FoldEvent] = field(default_factory=list)

    def __call__(self, event: FoldEvent, folded: Sequence[Message]) -> None:
        self.events.append(event)
        if event.summary:
            k, t = fact_retention(folded, event.summary)
            self.kept += k
            self.total += t


def evaluate(
    trajectories: Iterable[Trajectory],
    *,
    settings: Sequence[str] = ("extractive",),
    budgets: Sequence[int] = (16_000,),
    progress: Callable[[str], None] | None = None,
) -> list[EvalRow]:
    """Replay every trajectory without compression, then with each setting at each budget."""
    rows: list[EvalRow] = []
    with tempfile.TemporaryDirectory(prefix="agno-compression-eval-") as tmp:
        from agno.db.sqlite import SqliteDb

        for n, trajectory in enumerate(trajectories):
            messages = observations_as_tool_calls(trajectory.messages)
            base = replay(messages, db=SqliteDb(db_file=str(Path(tmp, f"{n}-none.db"))))
            base_tokens = [r.prompt_tokens for r in base.requests]
            for budget in budgets:
                for setting in settings:
                    collector = _Collector()
                    manager = CompressionManager(compress_at_tokens=budget, summarizer=setting, on_fold=collector)
                    db = SqliteDb(db_file=str(Path(tmp, f"{n}-{setting}-{budget}.db")))
                    result = replay(messages, manager=manager, db=db)
                    tokens = [r.prompt_tokens for r in result.requests]
                    rows.append(
                        EvalRow(
                            input=trajectory.name,
                            setting=setting,
                            budget=budget,
                            model_calls=len(tokens),
                            peak_prompt=max(tokens, default=0),
                            cumulative_prompt=sum(tokens),
                            peak_prompt_uncompressed=max(base_tokens, default=0),
                            cumulative_prompt_uncompressed=sum(base_tokens),
                            folds=manager.stats.get("folds", 0),
                            masks=manager.stats.get("masks", 0),
                            summarizer_calls=manager.stats.get("summarizer_calls", 0),
                            pair_violations=sum(len(pair_violations(r.messages)) for r in result.requests),
                            calls_over_budget=sum(1 for t in tokens if t > budget),
                            facts_kept=collector.kept,
                            facts_total=collector.total,
                        )
                    )
            if progress is not None:
                progress(trajectory.name)
    return rows


def totals(rows: Sequence[EvalRow]) -> list[EvalRow]:
    """One summed row per (setting, budget)."""
    out: dict[tuple[str, int], EvalRow] = {}
    for r in rows:
        key = (r.setting, r.budget)
        if key not in out:
            out[key] = EvalRow(
                input="TOTAL",
                setting=r.setting,
                budget=r.budget,
                model_calls=0,
                peak_prompt=0,
                cumulative_prompt=0,
                peak_prompt_uncompressed=0,
                cumulative_prompt_uncompressed=0,
            )
        t = out[key]
        t.model_calls += r.model_calls
        t.peak_prompt = max(t.peak_prompt, r.peak_prompt)
        t.peak_prompt_uncompressed = max(t.peak_prompt_uncompressed, r.peak_prompt_uncompressed)
        for name in (
            "cumulative_prompt",
            "cumulative_prompt_uncompressed",
            "folds",
            "masks",
            "summarizer_calls",
            "pair_violations",
            "calls_over_budget",
            "facts_kept",
            "facts_total",
        ):
            setattr(t, name, getattr(t, name) + getattr(r, name))
    return list(out.values())
