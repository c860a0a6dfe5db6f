"""Replays the shared real agent runs through a real Agent with the CompressionManager attached.

Every run whose conversation is longer than the budget is replayed: each model call must
stay under budget, send no orphan tool message, and keep system + current user + last
tool batch verbatim; folds must be far fewer than model calls; the stored session keeps
every recorded tool output.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from agno.db.base import SessionType
from agno.db.sqlite import SqliteDb

from agno_compression import CompressionManager
from agno_compression.eval import (
    END_OF_RECORDING,
    Trajectory,
    iter_shared_trajectories,
    observations_as_tool_calls,
    replay,
    split_turns,
)
from agno_compression.tokens import TokenCounter
from tests.checks import check_request

BUDGET = 16_000
_COUNTER = TokenCounter("gpt-4o")


def _long_runs(root: Path, budget: int) -> list[Trajectory]:
    runs = []
    for t in iter_shared_trajectories(root):
        messages = observations_as_tool_calls(t.messages)
        if _COUNTER.count_messages(messages) > budget:
            runs.append(Trajectory(source=t.source, name=t.name, messages=messages))
    return runs


@pytest.fixture(scope="module")
def long_runs(trajectories_dir: Path) -> list[Trajectory]:
    runs = _long_runs(trajectories_dir, BUDGET)
    assert runs, "no shared trajectory is longer than the budget"
    return runs


def _replay_and_check(run: Trajectory, tmp_path: Path, *, mode: str, summarizer: str) -> CompressionManager:
    manager = CompressionManager(compress_at_tokens=BUDGET, summarizer=summarizer)
    db = SqliteDb(db_file=str(tmp_path / f"{abs(hash(run.name))}.db"))
    result = replay(run.messages, manager=manager, db=db, mode=mode)
    system, turns, _ = split_turns(run.messages)
    users = iter(t.user for t in turns)
    user = None
    for request in result.requests:
        # a new run starts when the newest non-history user message changes
        newest = [m for m in request.messages if m.role == "user" and not m.from_history][-1:]
        if user is None or (
            newest and newest[0].content != user and not getattr(newest[0], "agno_compression_summary", False)
        ):
            user = next(users)
        check_request(request, BUDGET, user_text=user, system=system)
    folds = manager.stats.get("folds", 0)
    # at least four model calls between folds: at most one per four calls, the first included
    assert folds <= -(-len(result.requests) // 4), (run.name, manager.stats, len(result.requests))
    # nothing lost: every recorded tool output is stored, in full
    session = db.get_session(session_id=result.session_id, session_type=SessionType.AGENT)
    stored = [m.content for r in session.runs for m in r.messages if m.role == "tool"]  # type: ignore[union-attr]
    recorded = [m.content for m in run.messages if m.role == "tool"]
    assert [s for s in stored if s in recorded] == recorded[: len([s for s in stored if s in recorded])]
    assert set(recorded) <= set(stored)
    assert session.runs[-1].messages[-1].content == END_OF_RECORDING  # type: ignore[union-attr]
    return manager


@pytest.mark.parametrize("mode", ["sync", "async", "stream", "async-stream"])
def test_every_long_run_stays_under_budget_extractive(long_runs: list[Trajectory], tmp_path: Path, mode: str) -> None:
    folded = 0
    for run in long_runs:
        folded += _replay_and_check(run, tmp_path, mode=mode, summarizer="extractive").stats.get("folds", 0)
    assert folded >= len(long_runs)


def test_every_long_run_stays_under_budget_pipeline(long_runs: list[Trajectory], tmp_path: Path) -> None:
    for run in long_runs:
        _replay_and_check(run, tmp_path, mode="sync", summarizer="pipeline")


def test_multi_swe_bench_runs_are_replayed(trajectories_dir: Path, tmp_path: Path) -> None:
    path = trajectories_dir / "openhands" / "evaluation__benchmarks__multi_swe_bench__examples__output.jsonl"
    names = {t.name for t in _long_runs(trajectories_dir, BUDGET)}
    assert any(path.stem in n for n in names)


@pytest.mark.parametrize("mode", ["sync", "async", "stream", "async-stream"])
def test_team_leader_delegation_loop_over_real_outputs(trajectories_dir: Path, tmp_path: Path, mode: str) -> None:
    """A Team leader delegates 40 times; its member answers with real recorded tool outputs."""
    from agno.agent import Agent
    from agno.team import Team

    from agno_compression.eval import load_trajectories, run_in_mode
    from agno_compression.testing import Reply, ScriptedModel, ToolCall

    path = trajectories_dir / "openhands" / "evaluation__benchmarks__multi_swe_bench__examples__output.jsonl"
    outputs = [str(m.content) for t in load_trajectories(path) for m in t.messages if m.role == "tool"]
    answers = iter(outputs)
    member = Agent(
        name="Builder", id="builder", model=ScriptedModel(script=lambda m, i: next(answers)), telemetry=False
    )
    rounds = 40

    def leader(messages: list, info: object) -> Reply:
        n = info.call_index  # type: ignore[attr-defined]
        if n < rounds:
            return Reply(
                text=f"Round {n}.",
                tool_calls=[ToolCall("delegate_task_to_member", {"member_id": "builder", "task": f"step {n}"})],
            )
        return Reply(text="done")

    leader_model = ScriptedModel(script=leader)
    db = SqliteDb(db_file=str(tmp_path / "team.db"))
    team = Team(name="Lead", model=leader_model, members=[member], db=db, session_id="team", telemetry=False)
    manager = CompressionManager(compress_at_tokens=BUDGET)
    manager.attach(team)
    run_in_mode(team, "Fix the bug.", mode)
    assert len(leader_model.requests) == rounds + 1
    for request in leader_model.requests:
        check_request(request, BUDGET, user_text="Fix the bug.", system=None)
    assert 1 <= manager.stats["folds"] <= rounds // 5
    session = db.get_session(session_id="team", session_type=SessionType.TEAM)
    delegated = [m for r in session.runs for m in r.messages if m.role == "tool"]  # type: ignore[union-attr]
    assert len(delegated) == rounds


@pytest.mark.parametrize("policy_name", ["truncate", "tiered", "summary"])
def test_observation_policies_on_real_outputs_keep_every_original(
    trajectories_dir: Path, tmp_path: Path, policy_name: str
) -> None:
    """Per source, the longest recorded run: the model sees shortened outputs, full_messages has every original."""
    from agno_compression import ObservationSummaryPolicy, TieredOutputPolicy, TruncatePolicy, full_messages

    policy = {
        "truncate": TruncatePolicy(),
        "tiered": TieredOutputPolicy(),
        "summary": ObservationSummaryPolicy(count_tokens=_COUNTER.count_text),
    }[policy_name]
    longest: dict[str, Trajectory] = {}
    for t in iter_shared_trajectories(trajectories_dir):
        tools = sum(len(str(m.content)) for m in t.messages if m.role == "tool")
        best = longest.get(t.source)
        if tools and (best is None or tools > sum(len(str(m.content)) for m in best.messages if m.role == "tool")):
            longest[t.source] = t
    for source, run in longest.items():
        manager = CompressionManager(compress_at_tokens=200_000, observations=policy)
        db = SqliteDb(db_file=str(tmp_path / f"{policy_name}-{source}.db"))
        result = replay(run.messages, manager=manager, db=db)
        recorded = [m.content for m in run.messages if m.role == "tool"]
        stored = [m.content for m in full_messages(db, result.session_id) if m.role == "tool"]
        assert set(recorded) <= set(stored), source
        # outputs over 4,000 chars: every policy shortens those (the tiered one adds a tip line to 2-4k ones)
        sent = [m for r in result.requests for m in r.messages if m.role == "tool" and len(str(m.content)) >= 4000]
        seen = sum(_COUNTER.count_message(m) for m in sent)
        full = sum(_COUNTER.count_message(m.model_copy(update={"compressed_content": None})) for m in sent)
        assert not sent or seen < full, (source, seen, full)
