"""Soak: one session, hundreds of runs, on SQLite and PostgreSQL. The budget holds on every call, forever.

A session of hundreds of runs folds history again and again; each new history summary absorbs the previous one.
Summaries condense their own older parts (the requests between the first and the newest, the least recently used
ledger entries, the oldest steps), so they stay within ``max_summary_tokens`` and no call goes over the budget.
Figures are printed (run with ``-s``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agno_compression import CompressionManager
from agno_compression._plan import is_summary
from agno_compression.testing import Reply, ScriptedModel, ScriptInfo, ToolCall, scripted_agent
from tests.helpers import db_target

MAX_SUMMARY = 1_500


def lookup(key: str) -> str:
    """Look up the records of one key."""
    return "\n".join(
        f"record {key}-{i}: value_{key}_{i} = {i * 37 % 101} status ok path /srv/data/{key}/{i}.json" for i in range(25)
    )


class Session:
    """One agent on one session; ``run`` plays one user turn with ``tools`` lookups, then a long answer."""

    def __init__(self, db: Any, budget: int, tools: int, answer_repeats: int) -> None:
        self.tools, self.answer_repeats, self.turn, self.step = tools, answer_repeats, 0, 0
        self.manager = CompressionManager(compress_at_tokens=budget, max_summary_tokens=MAX_SUMMARY)
        self.agent, self.model = scripted_agent(
            self.script,
            lookup,
            manager=self.manager,
            db=db,
            session_id="soak",
            add_history_to_context=True,
            system_message="You are an operations assistant.",
        )

    def script(self, messages: list[Any], info: ScriptInfo) -> Reply:
        self.step += 1
        if self.step <= self.tools:
            return Reply(
                text=f"Part {self.step}.", tool_calls=[ToolCall("lookup", {"key": f"r{self.turn}k{self.step}"})]
            )
        line = f"Run {self.turn}: order_{self.turn} reconciles with ledger L-{self.turn * 7}, region R{self.turn % 9}. "
        return Reply(text=line * self.answer_repeats)

    def run(self, turn: int) -> None:
        self.turn, self.step = turn, 0
        self.agent.run(
            f"Task {turn}: check order_{turn} and reconcile ledger L-{turn * 7} with the report of region R{turn % 9}."
        )


def soak(kind: str, tmp_path: Path, request: pytest.FixtureRequest, **shape: int) -> tuple[ScriptedModel, int]:
    """Play ``runs`` runs of one session; (the model with every request, the largest summary sent)."""
    runs = shape.pop("runs")
    db = db_target(kind, tmp_path, request, file="soak.db").open()
    session = Session(db, **shape)
    started = time.monotonic()
    for turn in range(runs):
        session.run(turn)
    counter = session.model.counter
    largest = max(
        (
            counter.count_text(m.get_content_string())
            for r in session.model.requests
            for m in r.messages
            if is_summary(m)
        ),
        default=0,
    )
    print(
        f"\n[soak] {kind} {runs} runs: {len(session.model.requests)} calls, max prompt "
        f"{max(r.prompt_tokens for r in session.model.requests):,}, largest summary {largest:,}, "
        f"folds {session.manager.stats['folds']}, {time.monotonic() - started:.1f} s"
    )
    return session.model, largest


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_three_hundred_chat_runs_stay_under_the_budget(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    model, largest = soak(kind, tmp_path, request, runs=300, budget=4_000, tools=0, answer_repeats=60)
    over = [r.prompt_tokens for r in model.requests if r.prompt_tokens > 4_000]
    assert over == [], f"{len(over)} of {len(model.requests)} calls over the budget (max {max(over):,})"
    assert largest <= 1.25 * MAX_SUMMARY


def test_nine_hundred_chat_runs_at_the_default_budget_stay_under_it(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    model, largest = soak("sqlite", tmp_path, request, runs=900, budget=16_000, tools=0, answer_repeats=160)
    over = [r.prompt_tokens for r in model.requests if r.prompt_tokens > 16_000]
    assert over == [], f"{len(over)} of {len(model.requests)} calls over the budget (max {max(over):,})"
    assert largest <= 1.25 * MAX_SUMMARY


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_hundred_and_twenty_tool_runs_keep_the_summary_near_its_cap(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    model, largest = soak(kind, tmp_path, request, runs=120, budget=4_000, tools=3, answer_repeats=3)
    assert max(r.prompt_tokens for r in model.requests) <= 4_000
    assert largest <= 1.25 * MAX_SUMMARY, f"largest summary {largest:,} tokens"


def test_the_history_summary_levels_off(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    db = db_target("sqlite", tmp_path, request, file="level.db").open()
    session = Session(db, budget=8_000, tools=3, answer_repeats=10)
    sizes: list[int] = []
    for turn in range(90):
        before = len(session.model.requests)
        session.run(turn)
        summaries = [m for r in session.model.requests[before:] for m in r.messages if is_summary(m)]
        sizes.append(max((session.model.counter.count_text(m.get_content_string()) for m in summaries), default=0))
    middle, last = max(sizes[30:60]), max(sizes[60:])
    assert last <= MAX_SUMMARY and last <= 1.1 * middle, f"runs 30-59: {middle:,}, runs 60-89: {last:,}"
