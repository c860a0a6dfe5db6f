"""Every cookbook example runs offline, folds, and says where the full record is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

COOKBOOK = Path(__file__).resolve().parents[2] / "cookbook"
EXAMPLES = sorted(p.name for p in COOKBOOK.glob("*.py") if not p.name.startswith("_"))


def test_the_cookbook_has_the_promised_examples() -> None:
    assert {
        "long_tool_loop.py",
        "multi_run_session.py",
        "team.py",
        "export_training_data.py",
        "competitor_analysis.py",
        "file_agent.py",
        "agentos_viewer.py",
    } <= set(EXAMPLES)


def _run(example: str, out: Path) -> str:
    """What ``example`` prints, run offline with its databases under ``out``."""
    env = {k: v for k, v in os.environ.items() if k not in ("GOOGLE_API_KEY", "GEMINI_API_KEY")}
    env["AGNO_COMPRESSION_COOKBOOK_OUT"] = str(out)
    done = subprocess.run(
        [sys.executable, str(COOKBOOK / example)], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.parametrize("example", EXAMPLES)
def test_example_runs_offline(example: str, tmp_path: Path) -> None:
    stdout = _run(example, tmp_path)
    assert "Offline: a scripted model" in stdout
    assert "compression event" in stdout and "extractive: folded" in stdout
    assert f"Every original message is stored in {tmp_path}" in stdout
    assert list(tmp_path.glob("*.db"))


def _summary_lines_are_whole_words(stdout: str, db_file: Path) -> None:
    """The printed first lines of the newest summary are its lines, or their first words followed by " …"."""
    from agno.db.sqlite import SqliteDb

    from agno_compression import SQLAlchemyStore

    db = SqliteDb(db_file=str(db_file))
    sid = db.get_sessions()[0].session_id  # type: ignore[union-attr]
    summary = [r.summary for r in SQLAlchemyStore.for_agno_db(db).events(sid) if r.summary][-1]
    originals = [" ".join(line.split()) for line in summary.splitlines()]
    printed = stdout.split("Newest summary (first lines):\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert printed
    for line in printed:
        text = " ".join(line.split())
        if text in originals:
            continue
        assert text.endswith(" …"), f"cut mid-word: {line!r}"
        head = text[: -len(" …")]
        assert any(o.startswith(head + " ") for o in originals), f"not a start of a summary line at a word: {line!r}"


def test_team_prints_its_answer_whole_and_says_offline_once(tmp_path: Path) -> None:
    stdout = _run("team.py", tmp_path)
    assert stdout.count("Offline: a scripted model") == 1
    lines = stdout.splitlines()
    answer = lines.index(next(line for line in lines if line.startswith("── the team's answer"))) + 1
    assert lines[answer] == "All 12 modules tested: each has one failing edge case (41 != 42)."
    _summary_lines_are_whole_words(stdout, tmp_path / "team.db")


def test_multi_run_session_separates_the_answers_of_its_runs(tmp_path: Path) -> None:
    stdout = _run("multi_run_session.py", tmp_path)
    lines = stdout.splitlines()
    for n, service in enumerate(("billing", "search", "auth"), 1):
        header = next(i for i, line in enumerate(lines) if line.startswith(f"── run {n} ({service})"))
        assert lines[header + 1] == f"{service}: 3 timeouts a day, all upstream db-0..db-2."
        assert lines[header - 1] == "", "a blank line and a rule between answers"
    _summary_lines_are_whole_words(stdout, tmp_path / "multi_run_session.db")
    assert f"agno-compression report --db {tmp_path / 'multi_run_session.db'} --session ops-review" in stdout


def test_export_training_data_says_it_rebuilds_the_long_tool_loop_database(tmp_path: Path) -> None:
    stdout = _run("export_training_data.py", tmp_path)
    first = stdout.splitlines()[0]
    assert first.startswith(f"Rebuilding {tmp_path / 'long_tool_loop.db'}") and "replaces" in first


def test_file_agent_reads_whole_files_rewrites_one_and_runs_a_command_across_folds(tmp_path: Path) -> None:
    stdout = _run("file_agent.py", tmp_path)
    tools = next(line for line in stdout.splitlines() if line.startswith("Model calls: 12; tools: "))
    assert tools.split("tools: ")[1].split(", ") == [
        "list_files",
        *["read_file"] * 6,
        "search_content",
        "save_file",
        "run_shell_command",
        "save_file",
    ]
    assert 'shell.py: __all__ = ["ShellTools"]; NOTES.md written: True' in stdout
    assert "Working set of the newest fold: file " in stdout, "the fold kept files it read for the writes"

    from agno.db.sqlite import SqliteDb

    from agno_compression import SQLAlchemyStore

    db = SqliteDb(db_file=str(tmp_path / "file_agent.db"))
    session = db.get_sessions()[0]
    events = SQLAlchemyStore.for_agno_db(db).events(session.session_id)  # type: ignore[union-attr]
    assert events, "the whole-file reads fold before the agent writes"
    folded = {message_id for event in events for message_id in event.folded_ids}
    runs = session.runs or []  # type: ignore[union-attr]
    reads = [m.id for r in runs for m in r.messages or [] if m.role == "tool" and m.tool_name == "read_file"]
    assert set(reads) & folded, "some whole-file reads were folded"
