"""A Team whose leader runs a long delegation loop: the leader's own context is folded mid-run.

python cookbook/team.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.models.message import Message
from agno.team import Team

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import answer_of, database_path, pick_model, print_answer, print_folds

from agno_compression import CompressionManager
from agno_compression.testing import Reply, ScriptInfo, ToolCall

MODULES = [f"module_{i:02d}" for i in range(12)]


def run_tests(module: str) -> str:
    """Run the test suite of one module."""
    lines = [f"tests/{module}/test_case_{i:03d}.py::test_{i} PASSED" for i in range(80)]
    return "\n".join([*lines, f"FAILED tests/{module}/test_edge.py::test_limit - AssertionError: 41 != 42"])


def tester_script(messages: list[Message], info: ScriptInfo) -> Reply:
    """The member: run the suite it was asked about, then report."""
    task = str([m for m in messages if m.role == "user"][-1].content)
    module = next((m for m in MODULES if m in task), MODULES[0])
    if not any(m.role == "tool" for m in messages):
        return Reply(tool_calls=[ToolCall("run_tests", {"module": module})])
    return Reply(text=f"{module}: 80 passed, 1 failed (test_limit: 41 != 42).\n" + str(messages[-1].content))


def leader_script(messages: list[Message], info: ScriptInfo) -> Reply:
    """The leader: delegate one module per call, then summarize."""
    if info.call_index < len(MODULES):
        module = MODULES[info.call_index]
        return Reply(
            text=f"Delegating {module}.",
            tool_calls=[
                ToolCall("delegate_task_to_member", {"member_id": "tester", "task": f"Run the tests of {module}."})
            ],
        )
    return Reply(text=f"All {len(MODULES)} modules tested: each has one failing edge case (41 != 42).")


def main() -> None:
    db_file = database_path("team")
    tester = Agent(name="Tester", id="tester", model=pick_model(tester_script), tools=[run_tests], telemetry=False)
    team = Team(
        name="QA lead",
        model=pick_model(leader_script),
        members=[tester],
        db=SqliteDb(db_file=str(db_file)),
        session_id="qa",
        telemetry=False,
    )
    manager = CompressionManager(compress_at_tokens=8_000)
    manager.attach(team)  # the leader and its members
    result = team.run("Test every module and tell me what fails.")
    print_answer("the team's answer", answer_of(result))
    print_folds(manager, db_file, "qa")


if __name__ == "__main__":
    main()
