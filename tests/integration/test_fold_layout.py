"""What the folded context keeps, through real agno Agents: task, last batch, order, stable prefix, ledger."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.media import Audio, File, Image, Video
from agno.models.message import Message
from agno.tools.function import ToolResult

from agno_compression import CompressionManager, full_messages
from agno_compression._plan import PROGRESS, is_summary, summary_kind
from agno_compression.eval._scoring import cached_prefix, retention_at_end
from agno_compression.testing import RUN_MODES, Reply, ScriptedModel, ScriptInfo, ToolCall, run_agent, scripted_agent
from tests.checks import check_request

TASK = "Render every chart of the report and describe it."
STEPS = 10
SYSTEM = "You fix modules one by one."

MEDIA: dict[str, Any] = {
    "images": lambda i: [Image(content=b"\x89PNG fake chart %d" % i, format="png")],
    "audio": lambda i: [Audio(content=b"RIFF fake clip %d" % i, format="wav")],
    "videos": lambda i: [Video(content=b"fake video %d" % i, format="mp4")],
    "files": lambda i: [File(content=b"%%PDF fake page %d" % i, filename=f"page_{i}.pdf", mime_type="application/pdf")],
}


def media_agent(tmp_path: Path, kind: str, manager: CompressionManager) -> tuple[Agent, ScriptedModel]:
    def render_chart(index: int) -> ToolResult:
        """Render one chart of the report."""
        body = "\n".join(f"series {index}.{k}: " + "value " * 30 for k in range(12))
        return ToolResult(content=f"chart {index} rendered\n{body}", **{kind: MEDIA[kind](index)})

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        # The model always sees its task; a model that lost it would start over (call index 0 again).
        users = [m for m in messages if m.role == "user" and not is_summary(m) and not m.from_history]
        assert users and users[0].content == TASK, "the task is gone from the prompt"
        if info.call_index >= STEPS:
            return Reply(text="All charts described.")
        return Reply(
            text=f"Chart {info.call_index}.", tool_calls=[ToolCall("render_chart", {"index": info.call_index})]
        )

    db = SqliteDb(db_file=str(tmp_path / "media.db"))
    options = {"session_id": "media", "system_message": "You describe charts.", "send_media_to_model": True}
    return scripted_agent(script, render_chart, manager=manager, db=db, **options)


@pytest.mark.parametrize("mode", RUN_MODES)
@pytest.mark.parametrize("kind", list(MEDIA))
def test_media_outputs_keep_the_task_and_the_last_batch(tmp_path: Path, kind: str, mode: str) -> None:
    manager = CompressionManager(compress_at_tokens=1_500, search_tool=False)
    agent, model = media_agent(tmp_path, kind, manager)
    output = run_agent(agent, TASK, mode)
    assert output.content.endswith("All charts described.")
    assert manager.stats["folds"] >= 2
    assert len(model.requests) == STEPS + 1, "the agent started over"
    for request in model.requests:
        check_request(request, 1_500 + 600, user_text=None, system="You describe charts.")
        users = [m for m in request.messages if m.role == "user" and not is_summary(m)]
        assert users[0].content == TASK
    # the media message agno appends after a batch (agno 3.1 does it for images, video and files; a tool's audio
    # is not forwarded) travels with its batch: in the last request it follows the last batch
    carried = [m for r in model.requests for m in r.messages if m.role == "user" and getattr(m, kind)]
    last = model.requests[-1].messages
    if carried:
        assert last[-1].role == "user" and getattr(last[-1], kind), "the last batch's media message was folded"
        assert last[-2].role == "tool" and last[-3].tool_calls
    else:
        assert kind == "audio" and last[-1].role == "tool"
    stored = full_messages(agent.db, "media")
    assert sum(1 for m in stored if m.role == "tool") == STEPS


def modules_agent(tmp_path: Path, manager: CompressionManager, steps: int = 24) -> tuple[Agent, ScriptedModel]:
    def run_tests(path: str) -> str:
        """Run the tests of one file."""
        number = int(path.split("_")[-1].split(".")[0])
        log = "\n".join(f"tests/test_mod_{number}.py::test_case_{k} PASSED" for k in range(40))
        error = f"E   KeyError{number}Error: missing key\n" if number % 4 == 0 else ""
        return f"{log}\n{error}===== 40 passed in 0.{number}s =====\nexit code {number % 2}"

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index >= steps:
            return Reply(text="All modules tested.")
        path = f"tests/test_mod_{info.call_index}.py"
        text = f"Editing src/pkg/mod_{info.call_index}.py, then running test_feature_{info.call_index}."
        return Reply(text=text, tool_calls=[ToolCall("run_tests", {"path": path})])

    db = SqliteDb(db_file=str(tmp_path / "loop.db"))
    return scripted_agent(script, run_tests, manager=manager, db=db, session_id="loop", system_message=SYSTEM)


@pytest.mark.parametrize("mode", RUN_MODES)
def test_after_the_first_fold_the_prefix_stays_byte_identical(tmp_path: Path, mode: str) -> None:
    manager = CompressionManager(compress_at_tokens=4_000)
    agent, model = modules_agent(tmp_path, manager)
    run_agent(agent, "Test every module.", mode)
    folds = [i for i, r in enumerate(model.requests) if any(is_summary(m) for m in r.messages)]
    assert manager.stats["folds"] >= 3
    first = folds[0]
    prefix = model.requests[first].messages[:2]  # system, current user
    assert [m.role for m in prefix] == ["system", "user"] and prefix[1].content == "Test every module."
    for request in model.requests[first:]:
        sent = request.messages
        assert [(m.role, m.content) for m in sent[:2]] == [(m.role, m.content) for m in prefix]
        assert summary_kind(sent[2]) == PROGRESS, "the progress summary follows the current user message"
    for previous, current in zip(model.requests[first:], model.requests[first + 1 :], strict=False):
        assert cached_prefix(previous.messages, current.messages) >= 2, "a fold broke the cached prefix"


def test_the_ledger_survives_three_successive_folds(tmp_path: Path) -> None:
    manager = CompressionManager(compress_at_tokens=8_000, payback_calls=None)
    agent, model = modules_agent(tmp_path, manager, steps=45)
    run_agent(agent, "Test every module.", "sync")
    assert manager.stats["folds"] >= 3
    kept, total = retention_at_end([r.messages for r in model.requests])
    assert total >= 60 and kept == total, f"acted-on facts lost: {kept}/{total}"
    last = next(m for m in model.requests[-1].messages if is_summary(m)).get_content_string()
    assert "## Working state" in last
    for k in (0, 7, 15):  # files edited early are still named exactly
        assert f"src/pkg/mod_{k}.py" in last and f"tests/test_mod_{k}.py" in last and f"test_feature_{k}" in last
    assert "KeyError0Error" in last and "KeyError8Error" in last
    assert "40 passed" in last and "exit 1" in last, "command outcomes are kept"


def test_history_summary_before_the_question_and_progress_after_it(tmp_path: Path) -> None:
    """A second run with a folded first run: [system, history summary, question, progress summary, last batch]."""
    manager = CompressionManager(compress_at_tokens=4_000)
    agent, model = modules_agent(tmp_path, manager, steps=12)
    run_agent(agent, "Test every module.", "sync")
    model.requests.clear()
    run_agent(agent, "Now test them again.", "sync")
    kinds = [summary_kind(m) for m in model.requests[-1].messages]
    roles = [m.role for m in model.requests[-1].messages]
    question = next(
        i for i, m in enumerate(model.requests[-1].messages) if m.role == "user" and m.content == "Now test them again."
    )
    assert kinds[question + 1] == PROGRESS or roles[question + 1] == "assistant"
    assert all(k != PROGRESS for k in kinds[:question]), "progress of this run placed before its question"


def test_a_first_fold_keeps_its_steps_when_the_budget_allows(tmp_path: Path) -> None:
    manager = CompressionManager(compress_at_tokens=4_000)
    agent, _ = modules_agent(tmp_path, manager, steps=8)
    run_agent(agent, "Test every module.", "sync")
    first = manager.events[0].summary or ""
    steps = first.split("## Steps\n", 1)[1].split("\n## ", 1)[0]
    assert "- call run_tests(" in steps and "condensed away" not in steps, first
    assert all(
        not line.rstrip("…").endswith(tuple("abcdefghijklmnopqrstuvwxyz")) or not line.endswith("…")
        for line in first.splitlines()
    ), "a line ends in a cut word"


@pytest.mark.parametrize("ratio", [0.35, 0.5])
def test_a_verbatim_share_keeps_the_newest_outputs_under_the_budget(tmp_path: Path, ratio: float) -> None:
    plain = CompressionManager(compress_at_tokens=6_000)
    agent, model = modules_agent(tmp_path / "plain", plain)
    run_agent(agent, "Test every module.", "sync")
    wide = CompressionManager(compress_at_tokens=6_000, verbatim_ratio=ratio)
    agent, wide_model = modules_agent(tmp_path / "wide", wide)
    run_agent(agent, "Test every module.", "sync")
    assert wide.stats["folds"] >= 2 and all(r.prompt_tokens <= 6_000 for r in wide_model.requests)

    def outputs_right_after_folds(requests: list[Any]) -> list[int]:
        """Tool outputs in the prompt of each call a fold came before (its summaries differ from the last call's)."""
        out, before = [], None
        for r in requests:
            summaries = [m.get_content_string() for m in r.messages if is_summary(m)]
            if summaries and summaries != before:
                out.append(sum(m.role == "tool" for m in r.messages))
            before = summaries
        return out

    plain_kept, wide_kept = outputs_right_after_folds(model.requests), outputs_right_after_folds(wide_model.requests)
    assert plain_kept and wide_kept
    assert sum(wide_kept) / len(wide_kept) > sum(plain_kept) / len(plain_kept)
