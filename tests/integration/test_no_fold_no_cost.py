"""No fold, no cost: until a session folds, every prompt is byte-identical to plain agno's, tools included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agno.db.sqlite import SqliteDb
from agno.models.message import Message

from agno_compression import CompressionManager
from agno_compression._plan import is_summary
from agno_compression.testing import RUN_MODES, Reply, ScriptedModel, ScriptInfo, ToolCall, run_agent, scripted_agent

SEARCH = "search_folded_history"


def read_page(n: int) -> str:
    """Read one page of the build log."""
    return "\n".join(f"page {n} line {k}: compiling module_{n}_{k}.c ok" for k in range(60))


def script(messages: list[Message], info: ScriptInfo) -> Reply:
    if info.call_index < 8:
        return Reply(
            text=f"Page {info.call_index}.",
            tool_calls=[ToolCall("read_page", {"n": info.call_index}, f"call_{info.call_index}")],
        )
    if info.call_index == 8 and any(is_summary(m) for m in messages):
        return Reply(tool_calls=[ToolCall(SEARCH, {"query": "module_0_3.c"}, "call_search")])
    return Reply(text="Done: " + str(messages[-1].content)[:200])


def sent(request: Any) -> tuple[Any, ...]:
    messages = [
        (m.role, m.compressed_content or m.content, json.dumps(m.tool_calls), m.tool_call_id) for m in request.messages
    ]
    return (json.dumps(messages, default=str), json.dumps(request.tools, sort_keys=True, default=str))


def names(request: Any) -> list[str]:
    return [t.get("function", t)["name"] for t in request.tools]


def replay(tmp_path: Path, mode: str, manager: CompressionManager | None) -> ScriptedModel:
    db = SqliteDb(db_file=str(tmp_path / f"{mode}-{manager is not None}.db"))
    agent, model = scripted_agent(
        script, read_page, manager=manager, db=db, session_id="s", system_message="Read the log."
    )
    run_agent(agent, "Find the failing module.", mode)
    return model


@pytest.mark.parametrize("mode", RUN_MODES)
def test_below_the_budget_every_prompt_equals_plain_agnos(tmp_path: Path, mode: str) -> None:
    plain = replay(tmp_path, mode, None)
    ours = replay(tmp_path, mode, CompressionManager(compress_at_tokens=100_000))
    assert len(plain.requests) == len(ours.requests) == 9
    assert [sent(r) for r in ours.requests] == [sent(r) for r in plain.requests]
    assert all(SEARCH not in names(r) for r in ours.requests)


@pytest.mark.parametrize("mode", RUN_MODES)
def test_equal_until_the_first_fold_then_the_search_tool_is_sent_and_answers(tmp_path: Path, mode: str) -> None:
    plain = replay(tmp_path, mode, None)
    manager = CompressionManager(compress_at_tokens=3_000)
    ours = replay(tmp_path, mode, manager)
    first = next(i for i, r in enumerate(ours.requests) if any(is_summary(m) for m in r.messages))
    assert first >= 2 and manager.stats["folds"] >= 1
    assert [sent(r) for r in ours.requests[:first]] == [sent(r) for r in plain.requests[:first]]
    for r in ours.requests[first:]:
        assert names(r)[-1] == SEARCH, "appended after the agent's own tools from the fold on"
    answer = ours.requests[9].messages[-1]
    assert answer.role == "tool" and "module_0_3.c" in str(answer.content), answer.content


def test_a_later_run_of_a_folded_session_offers_the_tool_from_its_first_call(tmp_path: Path) -> None:
    manager = CompressionManager(compress_at_tokens=3_000)
    db = SqliteDb(db_file=str(tmp_path / "later.db"))
    agent, model = scripted_agent(
        script, read_page, manager=manager, db=db, session_id="s", add_history_to_context=True, system_message="Read."
    )
    agent.run("Find the failing module.")
    first_run = len(model.requests)
    model.script = lambda messages, info: Reply(text="ok")
    agent.run("And now?")
    assert SEARCH in names(model.requests[first_run])
