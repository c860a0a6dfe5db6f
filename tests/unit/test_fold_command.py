"""``agno-compression fold`` on a real SQLite session written by a real agno Agent: a dry run says what would fold
and writes nothing, ``--apply`` writes one fold record that the next run loads in place of the folded messages,
session text reaches the terminal as text, and bad input exits 2 with one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.models.message import Message
from typer.testing import CliRunner

from agno_compression import CompressionManager
from agno_compression._cli import app
from agno_compression._stores import store_for
from agno_compression._stores._leases import RUN, leases_of
from agno_compression.testing import Reply, ScriptedModel, ScriptInfo, ToolCall

runner = CliRunner()
SESSION = "s1 \x1b[2J[bold]x[/bold]"
"""A session id an attacker chose: an escape that clears the screen, and rich markup."""
HOSTILE = "\x1b]0;owned\x07 \u202etxt.exe [red]Optional[bool][/red]"


def read(index: int) -> str:
    """Read a chunk of the build log."""
    return "\n".join(f"[{index}:{i}] src/mod_{index}/f{i}.c compiled, exit code 0" for i in range(60))


def _script(messages: list[Message], info: ScriptInfo) -> Reply:
    own = [m for m in messages if m.role == "tool" and not m.from_history]
    if len(own) < 3:
        return Reply(text="reading", tool_calls=[ToolCall("read", {"index": info.call_index + 1})])
    return Reply(text="done")


MANAGERS: list[CompressionManager] = []
"""Every manager ``_agent`` attached: a fixture waits for their writers before it copies the database file."""


def _agent(db: Any, model: ScriptedModel | None = None) -> Agent:
    agent = Agent(
        id="builder",
        model=model or ScriptedModel(script=_script),
        tools=[read],
        db=db,
        session_id=SESSION,
        add_history_to_context=True,
        telemetry=False,
    )
    manager = CompressionManager(compress_at_tokens=16_000, payback_calls=None)
    MANAGERS.append(manager)
    return manager.attach(agent)


@pytest.fixture(scope="module")
def session_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs of one session, nothing folded yet (well under the budget); the user's first request is hostile."""
    path = tmp_path_factory.mktemp("fold") / "agent.db"
    db = SqliteDb(db_file=str(path))
    agent = _agent(db)
    agent.run(f"Check the build. {HOSTILE}")
    agent.run("Check it again.")
    for manager in MANAGERS:  # a run's lease is released on the records' writer thread, after the run returned
        manager.flush_records()
    db.db_engine.dispose()
    return path


@pytest.fixture
def db_copy(session_db: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "agent.db"
    shutil.copy(session_db, copy)
    return copy


def _fold(db: Path, *args: str) -> Any:
    return runner.invoke(app, ["fold", "--db", str(db), "--session", SESSION, *args], env={"COLUMNS": "120"})


def _folds(db: Path) -> list[dict[str, Any]]:
    shown = runner.invoke(app, ["inspect", "--db", str(db), "--session", SESSION, "--json"])
    assert shown.exit_code == 0, shown.output
    return [f for run in json.loads(shown.stdout)["runs"] for f in run["folds"]]


def test_a_dry_run_says_what_would_fold_and_writes_nothing(db_copy: Path) -> None:
    before = db_copy.stat().st_mtime_ns
    result = _fold(db_copy)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("session s1 \\x1b[2J[bold]x[/bold]: would fold ") and " of its history, " in lines[0]
    assert lines[1].startswith("summary (") and "--json prints all of it" in lines[1]
    assert lines[2].startswith("  [Summary of earlier conversation")
    assert lines[-1] == "nothing written; add --apply to write it"
    assert db_copy.stat().st_mtime_ns == before and not list(db_copy.parent.glob("agent.db-*")), "opened read-only"
    assert _folds(db_copy) == []
    data = json.loads(_fold(db_copy, "--json").stdout)
    assert data["status"] == "dry_run" and data["record_id"] is None and not data["folded"]
    assert data["folded_messages"] > 6 and data["tokens_before"] > data["tokens_after"] > 0
    assert f"{data['tokens_before']:,} -> {data['tokens_after']:,} tokens" in lines[0]


def test_apply_writes_one_fold_the_next_run_loads_instead_of_the_folded_messages(db_copy: Path) -> None:
    dry = json.loads(_fold(db_copy, "--json").stdout)
    result = _fold(db_copy, "--apply")
    assert result.exit_code == 0, result.output
    assert "folded " in result.stdout.splitlines()[0] and result.stdout.splitlines()[-1].startswith("wrote fold record")
    (fold,) = _folds(db_copy)
    assert fold["strategy"] == "request:extractive" and fold["reason"] == "request" and fold["before_call"] is None
    assert (fold["tokens_before"], fold["tokens_after"], fold["folded"]) == (
        dry["tokens_before"],
        dry["tokens_after"],
        dry["folded_messages"],
    ), "the dry run said what --apply did"
    assert fold["budget"] == 16_000
    listed = json.loads(runner.invoke(app, ["inspect", "--db", str(db_copy), "--json"]).stdout)
    assert listed[0]["folds"] == 1 and listed[0]["tokens_saved"] == fold["tokens_before"] - fold["tokens_after"]

    again = _fold(db_copy, "--apply")
    assert again.exit_code == 0 and "nothing to fold" in again.stdout and len(_folds(db_copy)) == 1

    db = SqliteDb(db_file=str(db_copy))
    model = ScriptedModel(script=lambda messages, info: Reply(text="ok"))
    _agent(db, model).run("What is next?")
    sent = model.requests[0].messages
    texts = [str(m.content) for m in sent]
    assert any(t.startswith("[Summary of earlier conversation") for t in texts), "the summary is loaded"
    folded = set(fold["folded_ids"])
    assert not [m for m in sent if m.id in folded], "no folded message comes back"
    assert not any("[1:0] src/mod_1/f0.c compiled" in t for t in texts)
    assert texts[-1] == "What is next?"


def test_instructions_steer_the_summary(db_copy: Path) -> None:
    result = _fold(db_copy, "--json", "--instructions", "keep src/mod_2/f7.c first")
    summary = json.loads(result.stdout)["summary"]
    assert "keep src/mod_2/f7.c first" in summary


def test_session_text_is_shown_as_text(db_copy: Path) -> None:
    result = _fold(db_copy)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    assert "\\x1b]0;owned\\x07 <U+202E>txt.exe [red]Optional[bool][/red]" in out, "marked, and no markup read"
    data = _fold(db_copy, "--json").stdout
    assert "\x1b" not in data and json.loads(data)["session_id"] == SESSION, "exact JSON, escaped"


def test_a_run_going_on_makes_it_wait_then_refuse_with_exit_1(db_copy: Path) -> None:
    db = SqliteDb(db_file=str(db_copy))
    leases = leases_of(store_for(db))
    assert leases.take(SESSION, "a-run", RUN, 60)
    try:
        result = _fold(db_copy, "--apply", "--wait", "0.3")
        assert result.exit_code == 1, result.output
        assert result.stderr.strip().splitlines() == [
            "agno-compression: 1 run of this session is going; fold when it ends"
        ]
        assert _folds(db_copy) == []
        dry = _fold(db_copy)
        assert dry.exit_code == 0 and "would fold" in dry.stdout, "a dry run writes nothing: it needs no lease"
    finally:
        leases.release(SESSION, "a-run")
    assert _fold(db_copy, "--apply").exit_code == 0 and len(_folds(db_copy)) == 1


def test_bad_input_exits_2_with_one_line(db_copy: Path, tmp_path: Path) -> None:
    db = str(db_copy)
    cases = {
        ("--db", db, "--session", "nope"): "no session 'nope'",
        ("--db", db, "--session", ""): "--session must not be empty",
        ("--db", db, "--session", SESSION, "--instructions", " "): "--instructions must not be empty",
        ("--db", db, "--session", SESSION, "--budget", "100"): "--budget must be at least 256",
        ("--db", db, "--session", SESSION, "--summarizer", "llm"): "not available offline",
        ("--db", db, "--session", SESSION, "--wait", "-1"): "--wait must be a number of seconds >= 0",
        ("--db", str(tmp_path / "missing.db"), "--session", SESSION, "--apply"): "no such file",
        ("--db", "mongodb://u@h/db", "--session", SESSION): "no agno database for the URL scheme",
    }
    for args, needle in cases.items():
        result = runner.invoke(app, ["fold", *args])
        assert result.exit_code == 2, (args, result.output)
        assert needle in result.stderr and len(result.stderr.strip().splitlines()) == 1, (args, result.stderr)
    assert not (tmp_path / "missing.db").exists(), "--apply creates no database"
    assert _folds(db_copy) == []
