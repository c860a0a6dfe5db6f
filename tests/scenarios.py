"""Sessions with known fold positions, written by real agno Agents and Teams on scripted models.

Each scenario records, for every fold, how many model requests its model had received before it: the fold came
before the next one. The session pages and ``inspect`` must place the folds there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.models.message import Message
from agno.team import Team

from agno_compression import CompressionManager, FoldEvent, is_summary
from agno_compression.testing import Reply, ScriptedModel, ScriptInfo, ToolCall, current_user, loop_agent

HOSTILE = (
    '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
    "</pre></details><h1 id=injected>INJECTED</h1>&amp; {{ }} ${x}"
)
"""Stored text that would run or break the page if it were not escaped."""


@dataclass
class Scenario:
    """A stored session and where its folds came (model requests before each, per model)."""

    db_file: str
    session_id: str
    requests_before: list[int] = field(default_factory=list)
    """For each fold, in order: the requests its model had received before it."""
    events: list[FoldEvent] = field(default_factory=list)

    def manager(self, model: ScriptedModel, **options: Any) -> CompressionManager:
        """A manager that notes, for each fold, how many requests ``model`` had received before it."""

        def on_fold(event: FoldEvent, folded: Any) -> None:
            self.requests_before.append(len(model.requests))
            self.events.append(event)

        return CompressionManager(on_fold=on_fold, **options)

    def finish(self, manager: CompressionManager, db: SqliteDb) -> Scenario:
        """Wait for the fold records, close the database (its WAL checkpointed into the file, as at rest)."""
        manager.flush_records()
        db.db_engine.dispose()
        return self


def multi_run_session(db_file: str, session_id: str = "ops-review", runs: int = 3) -> Scenario:
    """One agent, ``runs`` runs on one session with its history in context; folds mid-run and at run starts."""
    db = SqliteDb(db_file=db_file)
    loop = loop_agent(steps=5, db=db, session_id=session_id, compress_at_tokens=3_000, tool_text=_log)
    for k in range(runs):
        loop.run(f"Review day {k + 1} of the billing logs.")
    scenario = Scenario(db_file, session_id, [n for n, _, _ in loop.folds], [e for _, e, _ in loop.folds])
    return scenario.finish(loop.manager, db)


def _log(index: int, n: int) -> str:
    lines = [f"2026-11-{index:02d}T{h:02d}:00:00 billing request ok latency={40 + h}ms" for h in range(24)]
    return "\n".join([*lines, f"2026-11-{index:02d}T09:30:00 billing ERROR timeout upstream=db-{n % 3}"] * 2)


def team_session(db_file: str, session_id: str = "qa", modules: int = 10) -> Scenario:
    """A Team leader delegating one module's tests per call to a member; the leader's loop folds."""
    names = [f"module_{i:02d}" for i in range(modules)]

    def run_tests(module: str) -> str:
        """Run the test suite of one module."""
        lines = [f"tests/{module}/test_case_{i:03d}.py::test_{i} PASSED" for i in range(60)]
        return "\n".join([*lines, f"FAILED tests/{module}/test_edge.py::test_limit - AssertionError: 41 != 42"])

    def tester(messages: list[Message], info: ScriptInfo) -> Reply:
        task = current_user(messages)
        module = next((m for m in names if m in task), names[0])
        if not any(m.role == "tool" for m in messages):
            return Reply(tool_calls=[ToolCall("run_tests", {"module": module})])
        return Reply(text=f"{module}: 60 passed, 1 failed.\n" + str(messages[-1].content))

    def leader(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index < len(names):
            module = names[info.call_index]
            task = {"member_id": "tester", "task": f"Run the tests of {module}."}
            return Reply(text=f"Delegating {module}.", tool_calls=[ToolCall("delegate_task_to_member", task)])
        return Reply(text=f"All {len(names)} modules tested.")

    scenario = Scenario(db_file, session_id)
    leader_model = ScriptedModel(script=leader)
    member = Agent(name="Tester", id="tester", model=ScriptedModel(script=tester), tools=[run_tests], telemetry=False)
    db = SqliteDb(db_file=db_file)
    team = Team(name="QA lead", model=leader_model, members=[member], db=db, session_id=session_id, telemetry=False)
    manager = scenario.manager(leader_model, compress_at_tokens=6_000)
    manager.attach(team)
    team.run("Test every module and tell me what fails.")
    return scenario.finish(manager, db)


def hostile_session(db_file: str, session_id: str = 'evil "<b>id</b>"') -> Scenario:
    """Tool outputs holding HTML and script, one output too large for the budget (shortened in context), and a
    search of the folded history after the first fold."""

    def fetch(page: int) -> str:
        """Fetch one page of a web site."""
        body = "\n".join(f"row {page}.{i}: value {i * page} ok" for i in range(80))
        if page == 5:
            body = "\n".join(f"huge row {i}: " + "x" * 60 for i in range(700))
        return f"{HOSTILE}\n{body}"

    done = {"fetched": 0, "searched": False}

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if any(is_summary(m) for m in messages) and not done["searched"]:
            done["searched"] = True
            return Reply(tool_calls=[ToolCall("search_folded_history", {"query": "row 1.7"})])
        if done["fetched"] < 7:
            done["fetched"] += 1
            page = done["fetched"]
            return Reply(text=f"Fetching page {page}.", tool_calls=[ToolCall("fetch", {"page": page})])
        return Reply(text=f"Done. {HOSTILE}")

    scenario = Scenario(db_file, session_id)
    model = ScriptedModel(script=script)
    db = SqliteDb(db_file=db_file)
    manager = scenario.manager(model, compress_at_tokens=3_000)
    agent = manager.attach(Agent(model=model, tools=[fetch], db=db, session_id=session_id, telemetry=False))
    agent.run(f"Read the site. {HOSTILE}")
    return scenario.finish(manager, db)


def chat_file(tmp_path: Path, steps: int = 12, name: str = "run.json") -> Path:
    """An OpenAI-chat-format conversation with long tool outputs, written to ``tmp_path / name``."""
    messages = [{"role": "system", "content": "You debug."}, {"role": "user", "content": "Find the failing test."}]
    for i in range(steps):
        messages.append(
            {
                "role": "assistant",
                "content": f"step {i}",
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {
                            "name": "run_tests",
                            "arguments": json.dumps({"k": i, "after": f"tests/test_mod_{i - 1}.py"}),
                        },
                    }
                ],
            }
        )
        body = "\n".join(f"tests/test_mod_{i}.py::test_{j} PASSED" for j in range(120))
        messages.append(
            {
                "role": "tool",
                "tool_call_id": f"c{i}",
                "name": "run_tests",
                "content": body + f"\nFAILED tests/test_mod_{i}.py::test_edge - AssertionError: 41 != 42",
            }
        )
    messages.append({"role": "assistant", "content": "test_edge fails."})
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"messages": messages}))
    return path


CORPUS = (
    "clear\x1b[2Jscreen",
    "title\x1b]0;pwned\x07",
    "\x1b]8;;http://evil.example/\x1b\\a link\x1b]8;;\x1b\\",
    "exe.\u202etxt",
    "isolate\u2066x\u2069 mark\u200f",
    "nul\x00 bel\x07 del\x7f",
    "c1 csi\x9b31m nel\x85",
    "cr\rhidden",
    "[red]x[/red]",
    "Optional[bool] = None",
    "additional_metrics[k] = v",
    "[link=http://evil.example]y[/link] :smile:",
)
"""Text a terminal, rich or a page would act on: escape sequences (CSI, OSC title, OSC-8 link), bidi controls, NUL,
BEL, DEL, C1 controls, a carriage return, and rich markup and emoji codes."""
HOSTILE_TEXT = " ".join(CORPUS)
LONE_SURROGATES = "lone \ud800 and \udfff"
"""What no UTF-8 stream can carry as it is (JSON stores it escaped; a tool may return it)."""
HUGE_LINE = 2_000_000
"""Characters of the one line without a break a tool returns."""
CORPUS_SESSION = "s-[bold]b[/bold]-\x1b[31m-\u202e-end"
"""A session id that would be markup, colour and reversed text if it were not shown as data."""


def corpus_session(db: Any, session_id: str = CORPUS_SESSION, *, huge: bool = True) -> Scenario:
    """A folded session whose agent name, user message, model text and tool outputs carry ``CORPUS`` (a 2 MB line
    and lone surrogates too with ``huge``), written by a real Agent into ``db`` (any agno db)."""

    def fetch(page: int) -> str:
        """Fetch one page of a web site."""
        body = "\n".join(f"row {page}.{i}: {CORPUS[i % len(CORPUS)]} value {i}" for i in range(60))
        if huge and page == 3:
            body += "\n" + "y" * HUGE_LINE
        if huge and page == 4:
            body += "\n" + LONE_SURROGATES
        return f"{HOSTILE_TEXT}\n{body}"

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index < 6:
            page = info.call_index + 1
            return Reply(text=f"Fetching page {page}. {HOSTILE_TEXT}", tool_calls=[ToolCall("fetch", {"page": page})])
        return Reply(text=f"Done. {HOSTILE_TEXT}")

    model = ScriptedModel(script=script)
    scenario = Scenario(getattr(db, "db_file", None) or "", session_id)
    manager = scenario.manager(model, compress_at_tokens=3_000)
    name = f"agent {HOSTILE_TEXT}"
    agent = Agent(name=name, model=model, tools=[fetch], db=db, session_id=session_id, telemetry=False)
    manager.attach(agent).run(f"Read the site. {HOSTILE_TEXT}")
    manager.flush_records()
    engine = getattr(db, "db_engine", None)
    if engine is not None:
        engine.dispose()
    return scenario
