"""A run that pauses for a tool with ``requires_confirmation=True`` and is resumed with ``continue_run``: nothing is
lost across the pause and the continue, in every mode, with and without folds on either side.

agno runs no post-hook on a pause and no pre-hook on a continue. The check is what agno stores: the same script
runs once on plain agno and once with a manager attached, and the stored messages (at the pause and at the end)
must be the same. Real Agents on the scripted model, real SqliteDb files.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agno.agent import Agent
from agno.db.base import SessionType
from agno.db.sqlite import SqliteDb
from agno.models.message import Message
from agno.run.base import RunStatus
from agno.team import Team
from agno.tools import tool

from agno_compression import CompressionManager, full_messages, is_summary
from agno_compression import stats as fold_stats
from agno_compression._messages import called_tools
from agno_compression.testing import RUN_MODES, WHOLE_SESSION, Reply, ScriptedModel, ScriptInfo, ToolCall, log_chunk
from tests.helpers import open_db

CHUNKS = 12
BUDGET = 2_000
SESSION = "paused"


@dataclass
class Deploy:
    """An agent that reads ``before`` log chunks, asks to deploy (paused for confirmation), then reads the rest."""

    before: int
    read: list[str] = field(default_factory=list)
    deployed: list[str] = field(default_factory=list)

    def build(
        self, db: Any, manager: CompressionManager | None, team: bool = False, **agent_kw: Any
    ) -> tuple[Any, ScriptedModel]:
        """An Agent (or a Team leading one member) with the two tools, ``manager`` attached when given."""

        def read_chunk(index: int) -> str:
            """Read one long chunk of the build log."""
            self.read.append(log_chunk(index, len(self.read) + 1, tag="D"))
            return self.read[-1]

        @tool(requires_confirmation=True)
        def deploy(target: str) -> str:
            """Deploy the build to ``target``."""
            self.deployed.append(target)
            return f"deployed to {target}"

        model = ScriptedModel(script=self.script)
        options = {"model": model, "tools": [read_chunk, deploy], "db": db, "session_id": SESSION, **agent_kw}
        if team:
            writer = Agent(name="writer", model=ScriptedModel(script=lambda m, i: Reply(text="written")))
            agent: Any = Team(name="desk", members=[writer], telemetry=False, **options)
        else:
            agent = Agent(telemetry=False, **options)
        if manager is not None:
            manager.attach(agent)
        return agent, model

    def script(self, messages: list[Message], info: ScriptInfo) -> Reply:
        """Decides from what the tools did, never from what the (possibly folded) prompt shows."""
        del messages, info
        n = len(self.read)
        if n < self.before or (self.deployed and n < CHUNKS):
            return Reply(text=f"reading chunk {n + 1}", tool_calls=[ToolCall("read_chunk", {"index": n + 1})])
        if not self.deployed:
            return Reply(text="The build is read; deploying.", tool_calls=[ToolCall("deploy", {"target": "prod"})])
        return Reply(text=f"Deployed after reading {n} chunks.")


def run_and_pause(agent: Agent, mode: str) -> Any:
    stream = mode in ("stream", "async-stream")
    if mode.startswith("async"):

        async def go() -> Any:
            if not stream:
                return await agent.arun("Read the log, then deploy.")
            last = None
            async for event in agent.arun("Read the log, then deploy.", stream=True, yield_run_output=True):
                last = event
            return last

        return asyncio.run(go())
    if not stream:
        return agent.run("Read the log, then deploy.")
    return list(agent.run("Read the log, then deploy.", stream=True, yield_run_output=True))[-1]


def confirm_and_continue(agent: Agent, paused: Any, mode: str, by_id: bool) -> Any:
    for requirement in paused.active_requirements:
        requirement.confirm()
    where: dict[str, Any] = (
        {"run_id": paused.run_id, "session_id": SESSION, "requirements": paused.requirements}
        if by_id
        else {"run_response": paused}
    )
    stream = mode in ("stream", "async-stream")
    if mode.startswith("async"):

        async def go() -> Any:
            if not stream:
                return await agent.acontinue_run(**where)
            last = None
            async for event in agent.acontinue_run(**where, stream=True, yield_run_output=True):
                last = event
            return last

        return asyncio.run(go())
    if not stream:
        return agent.continue_run(**where)
    return list(agent.continue_run(**where, stream=True, yield_run_output=True))[-1]


def stored(path: Path, kind: SessionType = SessionType.AGENT) -> list[tuple[str, str, list[str]]]:
    """What agno stored for the session (read back through a new connection): role, content, tools called."""
    session = SqliteDb(db_file=str(path)).get_session(session_id=SESSION, session_type=kind)
    assert session is not None
    return [(m.role, str(m.content), called_tools(m)) for run in session.runs or [] for m in run.messages or []]


@dataclass
class Outcome:
    at_pause: list[tuple[str, str, list[str]]]
    folds_at_pause: int
    at_end: list[tuple[str, str, list[str]]]
    status: Any
    records: int
    """Fold records stored for the session."""
    model: ScriptedModel
    manager: CompressionManager | None


def play(
    tmp_path: Path,
    name: str,
    before: int,
    mode: str,
    by_id: bool,
    manager: CompressionManager | None,
    team: bool = False,
) -> Outcome:
    path = tmp_path / f"{name}.db"
    kind = SessionType.TEAM if team else SessionType.AGENT
    agent, model = Deploy(before).build(SqliteDb(db_file=str(path)), manager, team=team)
    paused = run_and_pause(agent, mode)
    assert paused.status == RunStatus.paused, paused.content
    at_pause = stored(path, kind)
    folds_at_pause = len(manager.events) if manager is not None else 0
    done = confirm_and_continue(agent, paused, mode, by_id)
    records = fold_stats(SqliteDb(db_file=str(path)), SESSION).folds
    return Outcome(at_pause, folds_at_pause, stored(path, kind), done.status, records, model, manager)


# (chunks read before the pause, budget, folds before the pause): one chunk fits the budget, so the first fold
# comes after the continue; nine do not; at 20_000 tokens nothing folds at all.
CASES = [(1, BUDGET, False), (9, BUDGET, True), (9, 20_000, False)]


@pytest.mark.parametrize("mode", RUN_MODES)
@pytest.mark.parametrize(("before", "budget", "fold_first"), CASES, ids=["fold-after", "fold-both", "no-fold"])
def test_pause_and_continue_store_what_plain_agno_stores(
    tmp_path: Path, mode: str, before: int, budget: int, fold_first: bool
) -> None:
    plain = play(tmp_path, "plain", before, mode, False, None)
    ours = play(tmp_path, "ours", before, mode, False, CompressionManager(compress_at_tokens=budget))
    assert ours.status == plain.status == RunStatus.completed
    assert ours.at_pause == plain.at_pause
    assert ours.at_end == plain.at_end
    assert sum(1 for role, content, _ in ours.at_end if role == "tool" and "[D" in content) == CHUNKS
    assert ours.manager is not None
    assert (ours.folds_at_pause > 0) == fold_first
    assert (len(ours.manager.events) > ours.folds_at_pause) == (budget == BUDGET)  # the continuation folds
    assert ours.records == len(ours.manager.events)  # the continuation's folds are recorded too
    assert max(r.prompt_tokens for r in ours.model.requests) <= budget


@pytest.mark.parametrize("mode", RUN_MODES)
def test_a_teams_pause_and_continue_store_what_plain_agno_stores(tmp_path: Path, mode: str) -> None:
    plain = play(tmp_path, "plain", 9, mode, False, None, team=True)
    ours = play(tmp_path, "ours", 9, mode, False, CompressionManager(compress_at_tokens=BUDGET), team=True)
    assert ours.status == plain.status == RunStatus.completed
    assert ours.at_pause == plain.at_pause and ours.at_end == plain.at_end
    assert ours.folds_at_pause > 0 and ours.records == len(ours.manager.events) > ours.folds_at_pause
    assert max(r.prompt_tokens for r in ours.model.requests) <= BUDGET


@pytest.mark.parametrize("mode", ["sync", "async-stream"])
def test_continue_by_run_id_from_the_database_loses_nothing(tmp_path: Path, mode: str) -> None:
    plain = play(tmp_path, "plain", 9, mode, True, None)
    ours = play(tmp_path, "ours", 9, mode, True, CompressionManager(compress_at_tokens=BUDGET))
    assert ours.at_pause == plain.at_pause and ours.at_end == plain.at_end
    assert ours.folds_at_pause > 0
    assert max(r.prompt_tokens for r in ours.model.requests) <= BUDGET


@pytest.mark.parametrize("kind", ["sqlite", "json"])
def test_every_chunk_is_stored_once_and_every_fold_recorded(tmp_path: Path, kind: str) -> None:
    where = str(tmp_path / ("s.db" if kind == "sqlite" else "json"))
    deploy, manager = Deploy(9), CompressionManager(compress_at_tokens=BUDGET)
    agent, _ = deploy.build(open_db(kind, where), manager)
    confirm_and_continue(agent, run_and_pause(agent, "sync"), "sync", False)
    tool_texts = [str(m.content) for m in full_messages(open_db(kind, where), SESSION) if m.role == "tool"]
    assert [t for t in tool_texts if t in deploy.read] == deploy.read
    recorded = fold_stats(open_db(kind, where), SESSION)
    assert recorded.folds == len(manager.events) >= 2
    assert recorded.folded_messages == len({i for e in manager.events for i in e.folded_ids})


def test_a_later_run_loads_the_continued_runs_folds(tmp_path: Path) -> None:
    deploy, manager = Deploy(9), CompressionManager(compress_at_tokens=BUDGET)
    agent, model = deploy.build(SqliteDb(db_file=str(tmp_path / "s.db")), manager, **WHOLE_SESSION)
    confirm_and_continue(agent, run_and_pause(agent, "sync"), "sync", False)
    folded_events = list(manager.events)
    folded = {i for e in folded_events for i in e.folded_ids}
    first = len(model.requests)
    agent.run("What did you deploy?")
    later = model.requests[first]
    assert later.prompt_tokens <= BUDGET
    assert any(is_summary(m) for m in later.messages)
    assert not folded & {m.id for m in later.messages}
    refolded = {i for e in manager.events[len(folded_events) :] for i in e.folded_ids} & folded
    assert not refolded  # the session's records already took them out of the loaded history
