"""An attached Agent or Team inside an agno ``Workflow`` step: the reading tools and the CLI see the workflow session.

agno keeps the runs of a workflow's agents and teams inside each workflow run's ``step_executor_runs``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.models.message import Message
from agno.team import Team
from agno.workflow import Step, Workflow
from typer.testing import CliRunner

from agno_compression import CompressionManager, compressed_view, full_messages, load_snapshot, snapshot, stats
from agno_compression._cli import app
from agno_compression._plan import is_summary, pair_violations
from agno_compression._sessions import session_runs
from agno_compression._stores import agno_session
from agno_compression.testing import Reply, ScriptedModel, ScriptInfo, ToolCall, scripted_agent

runner = CliRunner()
CHUNKS = 10


def _reader(db: Any, produced: list[str], name: str = "reader") -> Agent:
    def read_chunk(index: int) -> str:
        """Read one chunk of a build log."""
        text = "\n".join(f"[{name}:{index:02d}:{line:02d}] compiling src/f{line}.c ok" for line in range(40))
        produced.append(text)
        return text

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        n = info.call_index
        if n >= CHUNKS:
            return Reply(text=f"{name}: all chunks read.")
        return Reply(text=f"{name}: chunk {n}.", tool_calls=[ToolCall("read_chunk", {"index": n})])

    # The step's agent gets the workflow's db, so its folds are recorded (agno does not hand it the workflow's).
    return scripted_agent(script, read_chunk, name=name, id=name, db=db)[0]


def _team(db: Any, produced: list[str]) -> Team:
    member = _reader(db, produced, name="member")
    rounds = {"n": 0}

    def leader(messages: list[Message], info: ScriptInfo) -> Reply:
        rounds["n"] += 1
        if rounds["n"] <= 6:
            args = {"member_id": "member", "task": f"read part {rounds['n']}"}
            return Reply(text=f"round {rounds['n']}", tool_calls=[ToolCall("delegate_task_to_member", args)])
        return Reply(text="team: everything delegated.")

    return Team(name="lead", id="lead", model=ScriptedModel(script=leader), members=[member], db=db, telemetry=False)


def _check_session(db: Any, manager: CompressionManager, produced: list[str], tmp_path: Path) -> None:
    stored = full_messages(db, "wf")
    tools = [m.content for m in stored if m.role == "tool" and m.tool_name == "read_chunk"]
    assert tools == produced, "every original tool output, in order"
    assert not any(is_summary(m) or m.from_history for m in stored)
    st = stats(db, "wf")
    assert st.folds == manager.stats["records_written"] == manager.stats["folds"] >= 1
    view = compressed_view(db, "wf")
    folded = {i for e in manager.events for i in e.folded_ids}
    assert [m for m in view if is_summary(m)] and not ({m.id for m in view} & folded)
    assert pair_violations(view) == [] and len(view) < len(stored)
    where = str(tmp_path / "wf.db")
    listing = runner.invoke(app, ["inspect", "--db", where, "--json"])
    assert listing.exit_code == 0, listing.output
    rows = {r["session_id"]: r for r in json.loads(listing.stdout)}
    assert list(rows) == ["wf"], "the workflow session, listed once"
    assert rows["wf"]["owner"].startswith("workflow") and rows["wf"]["folds"] == st.folds
    assert rows["wf"]["messages"] == len(stored)
    timeline = runner.invoke(app, ["inspect", "--db", where, "--session", "wf", "--json"])
    assert timeline.exit_code == 0, timeline.output
    runs = json.loads(timeline.stdout)["runs"]
    assert sum(len(r["folds"]) for r in runs) == st.folds
    text = runner.invoke(app, ["inspect", "--db", where, "--session", "wf"])
    assert text.exit_code == 0 and "model calls" in text.stdout
    exported = runner.invoke(app, ["export", "--db", where, "--session", "wf"])
    assert exported.exit_code == 0, exported.output
    example = json.loads(exported.stdout.splitlines()[0])
    session, _ = agno_session(db, "wf")
    step_runs = session_runs(session, top_level=True)  # the steps' own runs: no team member runs
    assert [m["id"] for m in example["messages"]] == [
        m.id for r in step_runs for m in r.messages or [] if not m.from_history
    ]
    assert {m["id"] for m in example["messages"]} <= {m.id for m in stored}
    page = tmp_path / "wf.html"
    report = runner.invoke(app, ["report", "--db", where, "--session", "wf", "--out", str(page)])
    assert report.exit_code == 0, report.output
    assert page.read_text(encoding="utf-8").count('<a class="fold-mark') == st.folds, "each fold on its lane"
    # a workflow session moves between databases like any other
    other = SqliteDb(db_file=str(tmp_path / "other.db"))
    assert load_snapshot(other, json.loads(json.dumps(snapshot(db, "wf")))) == st.folds
    assert [m.to_dict() for m in full_messages(other, "wf")] == [m.to_dict() for m in stored]


@pytest.mark.parametrize("owner", ["agent", "team"])
def test_step_in_a_workflow(tmp_path: Path, owner: str) -> None:
    """An attached Agent step, or a Team step whose member reads the chunks."""
    db = SqliteDb(db_file=str(tmp_path / "wf.db"))
    produced: list[str] = []
    manager = CompressionManager(compress_at_tokens=1_500)
    if owner == "agent":
        step = Step(name="read", agent=manager.attach(_reader(db, produced)))
    else:
        step = Step(name="delegate", team=manager.attach(_team(db, produced)))
    workflow = Workflow(name="wf", id=f"wf-{owner}", db=db, steps=[step], session_id="wf")
    out = workflow.run("read the log" if owner == "agent" else "read the logs")
    if owner == "agent":
        assert str(out.content).endswith("reader: all chunks read.")
        assert len(produced) == CHUNKS
    else:
        assert "everything delegated" in str(out.content)
        assert produced, "the member read chunks"
    _check_session(db, manager, produced, tmp_path)
