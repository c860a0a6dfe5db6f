"""The command line, run as a user runs it: through the console script's app and ``python -m``."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agno_compression._cli import app
from tests.scenarios import CORPUS_SESSION
from tests.scenarios import chat_file as _chat_file

runner = CliRunner()


def test_eval_json_compares_settings(tmp_path: Path) -> None:
    path = _chat_file(tmp_path)
    result = runner.invoke(app, ["eval", str(path), "-s", "extractive", "-s", "mask", "-b", "4000", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    rows = {r["setting"]: r for r in data["rows"]}
    assert set(rows) == {"extractive", "mask"}
    ext = rows["extractive"]
    assert ext["peak_prompt_uncompressed"] > 4000 >= ext["peak_prompt"]
    assert ext["folds"] >= 1 and ext["pair_violations"] == 0 and ext["calls_over_budget"] == 0
    assert ext["cumulative_prompt"] < ext["cumulative_prompt_uncompressed"]
    assert 0 < ext["fact_retention"] <= 1
    assert ext["grounding_total"] > 0 and 0 < ext["grounding"] <= 1, "next-step grounding beside acted-on facts"
    assert rows["mask"]["masks"] >= 1 and rows["mask"]["folds"] == 0


def test_eval_table(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", str(_chat_file(tmp_path)), "-b", "4000"])
    assert result.exit_code == 0, result.output
    assert "TOTAL" in result.stdout and "extractive" in result.stdout


def test_bad_input_exits_2_with_one_clear_line(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["eval", str(tmp_path / "nope.json")])
    assert missing.exit_code == 2 and "no such file" in missing.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    malformed = runner.invoke(app, ["eval", str(bad)])
    assert malformed.exit_code == 2
    assert str(bad) in malformed.stderr and len(malformed.stderr.strip().splitlines()) == 1
    unknown = runner.invoke(app, ["eval", str(_chat_file(tmp_path)), "-s", "llm"])
    assert unknown.exit_code == 2 and "not available offline" in unknown.stderr


def test_help_on_every_command_and_python_dash_m() -> None:
    assert runner.invoke(app, ["--help"]).exit_code == 0
    assert "Replay recorded conversations" in runner.invoke(app, ["eval", "--help"]).stdout
    done = subprocess.run(
        [sys.executable, "-m", "agno_compression", "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and done.stdout.strip()


# --- inspect / export / report on real session databases ---------------------------------------------

import pytest  # noqa: E402
from agno.agent import Agent  # noqa: E402
from agno.db.sqlite import SqliteDb  # noqa: E402

from agno_compression import CompressionManager, full_messages  # noqa: E402
from agno_compression.eval import load_trajectories  # noqa: E402
from agno_compression.testing import Reply, ScriptedModel, ToolCall  # noqa: E402
from tests.helpers import DbTarget  # noqa: E402


def _fill(db: object, session_id: str = "s1", runs: int = 2) -> None:
    """A session with folds in every run, written by a real Agent."""
    calls = {"n": 0}

    def read(index: int) -> str:
        """Read a chunk."""
        return "\n".join(f"[{index}:{i}] src/mod_{index}/f{i}.c compiled, exit code 0" for i in range(70))

    def script(messages: list, info: object) -> Reply:
        calls["n"] += 1
        if calls["n"] % 9 == 0:
            return Reply(text="done")
        return Reply(text="reading", tool_calls=[ToolCall("read", {"index": calls["n"]})])

    agent = Agent(
        model=ScriptedModel(script=script),
        tools=[read],
        db=db,
        session_id=session_id,
        add_history_to_context=True,
        telemetry=False,
    )
    manager = CompressionManager(compress_at_tokens=2_500)
    manager.attach(agent)
    for k in range(runs):
        agent.run(f"task {k}")
    manager.flush_records()  # each run's lease is released on the writer thread, after the run returned


@pytest.fixture(scope="module")
def session_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "agent.db"
    db = SqliteDb(db_file=str(path))
    _fill(db)
    db.db_engine.dispose()  # the writer is done: its WAL is checkpointed into the file and removed, as at rest
    assert not Path(f"{path}-wal").exists()
    return path


def _targets(session_db: Path, request: pytest.FixtureRequest) -> list[list[str]]:
    return [["--db", str(session_db)], ["--db", f"sqlite:///{session_db}"]]


def test_inspect_lists_sessions_and_a_timeline(session_db: Path, request: pytest.FixtureRequest) -> None:
    for db in _targets(session_db, request):
        listing = runner.invoke(app, ["inspect", *db, "--json"])
        assert listing.exit_code == 0, listing.output
        rows = json.loads(listing.stdout)
        assert [r["session_id"] for r in rows] == ["s1"] and rows[0]["runs"] == 2 and rows[0]["folds"] >= 2
        timeline = json.loads(runner.invoke(app, ["inspect", *db, "--session", "s1", "--json"]).stdout)
        folds = [f for r in timeline["runs"] for f in r["folds"]]
        assert len(folds) == rows[0]["folds"] and all(f["tokens_after"] < f["tokens_before"] for f in folds)
        table = runner.invoke(app, ["inspect", *db, "--session", "s1", "--ids"])
        assert table.exit_code == 0 and folds[0]["folded_ids"][0] in table.stdout.replace("\n", "")


def test_export_round_trips_the_full_record(session_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "train.jsonl"
    result = runner.invoke(app, ["export", "--db", str(session_db), "--out", str(out), "--per", "run", "--with-view"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 2 and all(e["format"] == "agno-compression-export/1" for e in lines)
    original = full_messages(SqliteDb(db_file=str(session_db)), "s1")
    exported = [m for e in lines for m in e["messages"]]
    assert [(m["id"], m["role"], m["content"]) for m in exported] == [(m.id, m.role, m.content) for m in original]
    assert len(lines[0]["compressed_view"]) < len(exported)
    # re-importable: the loader reads it back as two conversations with the same messages
    back = load_trajectories(out)
    assert [len(t.messages) for t in back] == [len(e["messages"]) for e in lines]
    assert [m.content for t in back for m in t.messages] == [m["content"] for m in exported]
    stdout = runner.invoke(app, ["export", "--db", str(session_db), "--session", "s1"])
    assert json.loads(stdout.stdout)["session_id"] == "s1"


def test_report_writes_one_self_contained_page(session_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = runner.invoke(app, ["report", "--db", str(session_db), "--session", "s1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and "<svg" in page and 'class="fold"' in page
    assert "<script" not in page and "http://" not in page and "https://" not in page  # nothing loaded from outside
    assert "budget 2,500" in page, "the budget line comes from the fold records, without --budget"


def test_eval_takes_a_folder_of_agno_databases_as_a_folder_of_recordings(session_db: Path, tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "out"
    (folder / "more").mkdir(parents=True)
    shutil.copy(session_db, folder / "first.db")
    shutil.copy(session_db, folder / "more" / "second.db")
    result = runner.invoke(app, ["eval", str(folder), "-b", "4000", "--json"])
    assert result.exit_code == 0, result.output
    inputs = {r["input"] for r in json.loads(result.stdout)["rows"] if r["input"] != "TOTAL"}
    assert any("first" in i for i in inputs) and any("second" in i for i in inputs), inputs


def test_report_without_out_writes_beside_the_database(session_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = session_db.parent / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # nothing lands in the folder the command runs from
    result = runner.invoke(app, ["report", "--db", str(session_db), "--session", "s1"])
    assert result.exit_code == 0, result.output
    assert (session_db.parent / f"{session_db.stem}-s1.html").is_file() and not any(elsewhere.iterdir())


def test_commands_work_on_postgresql_urls(postgres_db: DbTarget, tmp_path: Path) -> None:

    _fill(postgres_db.open(), "pg-s", runs=1)
    db = ["--db", postgres_db.url, "--schema", postgres_db.schema]
    rows = json.loads(runner.invoke(app, ["inspect", *db, "--json"]).stdout)
    assert rows[0]["session_id"] == "pg-s" and rows[0]["folds"] >= 1
    assert runner.invoke(app, ["export", *db, "--session", "pg-s"]).exit_code == 0
    out = tmp_path / "pg.html"
    assert runner.invoke(app, ["report", *db, "--session", "pg-s", "--out", str(out)]).exit_code == 0
    assert out.exists()
    missing = runner.invoke(app, ["inspect", "--db", postgres_db.url, "--schema", "no_such_schema"])
    assert missing.exit_code == 2 and "no agno tables" in missing.stderr


def test_bad_databases_exit_2_with_one_line(session_db: Path, tmp_path: Path) -> None:
    not_db = tmp_path / "notes.txt"
    not_db.write_text("hello")
    empty = tmp_path / "empty.db"
    import sqlite3

    sqlite3.connect(empty).execute("create table t (x)").connection.commit()
    cases = {
        ("inspect", "--db", str(tmp_path / "missing.db")): "no such file",
        ("inspect", "--db", str(not_db)): "not a SQLite database",
        ("inspect", "--db", str(empty)): "no agno tables",
        ("inspect", "--db", str(session_db), "--session", "nope"): "no session 'nope'",
        ("export", "--db", str(session_db), "--session", "nope"): "no session 'nope'",
        ("report", "--db", str(session_db), "--session", "nope"): "no session 'nope'",
        ("report", "--db", str(session_db), "--session", "s1", "--out", "x.png"): "must end in .html",
        ("inspect", "--db", "mongodb://u@h/db"): "no agno database for the URL scheme 'mongodb'",
    }
    for args, needle in cases.items():
        result = runner.invoke(app, list(args))
        assert result.exit_code == 2, (args, result.output)
        assert needle in result.stderr and len(result.stderr.strip().splitlines()) == 1, (args, result.stderr)


def test_inspect_opens_sqlite_read_only(session_db: Path) -> None:
    before = session_db.stat().st_mtime_ns
    runner.invoke(app, ["inspect", "--db", str(session_db), "--session", "s1"])
    runner.invoke(app, ["export", "--db", str(session_db)])
    assert session_db.stat().st_mtime_ns == before


def test_eval_replays_session_databases(session_db: Path) -> None:
    result = runner.invoke(app, ["eval", str(session_db), "-b", "2500", "--all", "--json"])
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)["rows"][0]
    assert row["input"].endswith("#s1") and row["model_calls"] >= 10 and row["calls_over_budget"] == 0


# --- damaged databases and bad options: one line, exit 2 ------------------------------------------------

import random  # noqa: E402
import shutil  # noqa: E402
import sqlite3  # noqa: E402


def _copy_checkpointed(session_db: Path, dest: Path) -> tuple[Path, int]:
    """A copy of the session database with everything in the main file (no WAL); returns it and its page size."""
    for suffix in ("", "-wal", "-shm"):
        src = Path(str(session_db) + suffix)
        if src.exists():
            shutil.copy(src, str(dest) + suffix)
    conn = sqlite3.connect(dest)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA journal_mode=DELETE")
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    return dest, page


def _damage(path: Path, page_size: int, page: int, kind: str) -> None:
    """Overwrite page ``page`` (1-based; never page 1, which holds the header) with zeros or random bytes."""
    assert page >= 2
    data = bytearray(path.read_bytes())
    start = (page - 1) * page_size
    noise = random.Random(page).randbytes(page_size)
    data[start : start + page_size] = bytes(page_size) if kind == "zeros" else noise
    path.write_bytes(bytes(data))


def _commands(db: Path, tmp_path: Path) -> list[list[str]]:
    return [
        ["inspect", "--db", str(db)],
        ["inspect", "--db", str(db), "--session", "s1"],
        ["export", "--db", str(db)],
        ["eval", str(db), "--all"],
        ["report", "--db", str(db), "--session", "s1", "--out", str(tmp_path / "r.html")],
    ]


def _one_line_exit_2(result: object, args: list[str]) -> None:
    stderr = result.stderr  # type: ignore[attr-defined]
    assert result.exit_code == 2, (args, result.exit_code, stderr[-600:])  # type: ignore[attr-defined]
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr, (args, stderr)


@pytest.mark.parametrize("kind", ["zeros", "random"])
@pytest.mark.parametrize("table", ["agno_sessions", "agno_runs"])
def test_damaged_page_exits_2_with_one_line_for_every_command(
    session_db: Path, tmp_path: Path, kind: str, table: str
) -> None:
    db, page_size = _copy_checkpointed(session_db, tmp_path / "damaged.db")
    with sqlite3.connect(db) as conn:
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    _damage(db, page_size, root, kind)
    assert db.read_bytes()[:16] == b"SQLite format 3\x00", "the header must stay intact"
    for args in _commands(db, tmp_path):
        result = runner.invoke(app, args)
        _one_line_exit_2(result, args)
        assert str(db) in result.stderr


@pytest.mark.parametrize("kind", ["zeros", "random"])
def test_any_damaged_page_never_gives_a_traceback(session_db: Path, tmp_path: Path, kind: str) -> None:
    db, page_size = _copy_checkpointed(session_db, tmp_path / "clean.db")
    pages = db.stat().st_size // page_size
    failed = 0
    for page in range(2, pages + 1, 3):
        damaged = tmp_path / f"p{page}.db"
        shutil.copy(db, damaged)
        _damage(damaged, page_size, page, kind)
        args = ["export", "--db", str(damaged)]
        result = runner.invoke(app, args)
        if result.exit_code != 0:
            _one_line_exit_2(result, args)
            failed += 1
    assert failed >= 3, "no page damage was ever noticed: the test proves nothing"


def test_bad_options_exit_2_with_one_clear_line(session_db: Path, tmp_path: Path) -> None:
    db = str(session_db)
    (tmp_path / "dir.html").mkdir()
    cases = {
        ("export", "--db", db, "--out", str(tmp_path)): "is a directory",
        ("export", "--db", db, "--out", str(tmp_path / "no" / "x.jsonl")): "does not exist",
        ("export", "--db", db, "--session", ""): "--session must not be empty",
        ("export", "--db", db, "--session", "  "): "--session must not be empty",
        ("inspect", "--db", db, "--session", ""): "--session must not be empty",
        ("inspect", "--db", db, "--schema", ""): "--schema must not be empty",
        ("report", "--db", db, "--session", "s1", "--budget", "-5"): "--budget must be at least 256",
        ("report", "--db", db, "--session", "s1", "--budget", "0"): "--budget must be at least 256",
        ("report", "--db", db, "--session", ""): "--session must not be empty",
        ("report", "--db", db, "--session", "s1", "--out", str(tmp_path / "dir.html")): "is a directory",
        ("report", "--db", db, "--session", "s1", "--out", str(tmp_path / "no" / "r.html")): "does not exist",
        ("eval", db, "-b", "-5"): "--budget must be at least 256",
        ("eval", ""): "PATH must not be empty",
        ("inspect", "--db", ""): "--db must not be empty",
    }
    for args, needle in cases.items():
        result = runner.invoke(app, list(args))
        _one_line_exit_2(result, list(args))
        assert needle in result.stderr, (args, result.stderr)
    assert not (tmp_path / "no").exists() and not list(tmp_path.glob("*.jsonl"))


# --- stdout that fails: one line (none for a closed pipe), exit 1, never a traceback ------------------------------


def _python_m(args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "agno_compression", *args], stderr=subprocess.PIPE, **kwargs)


@pytest.mark.parametrize(
    "args",
    [["export"], ["inspect", "--json"], ["inspect", "--session", "s1", "--json"]],
    ids=lambda a: " ".join(a),
)
def test_a_full_disk_on_stdout_ends_with_one_line(session_db: Path, args: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        done = _python_m([args[0], "--db", str(session_db), *args[1:]], stdout=full)
        _, stderr = done.communicate(timeout=120)
    text = stderr.decode()
    assert done.returncode == 1, text
    assert text.splitlines() == ["agno-compression: error: cannot write the output: No space left on device"], text


def test_eval_on_a_full_disk_ends_with_one_line(tmp_path: Path) -> None:
    with open("/dev/full", "wb") as full:
        done = _python_m(["eval", str(_chat_file(tmp_path)), "-b", "4000", "--json"], stdout=full)
        _, stderr = done.communicate(timeout=300)
    assert done.returncode == 1 and "Traceback" not in stderr.decode()
    assert stderr.decode().strip().splitlines()[-1].endswith("No space left on device")


@pytest.mark.parametrize(
    "args",
    [["export"], ["inspect", "--session", CORPUS_SESSION, "--full"], ["inspect", "--json"]],
    ids=["export", "inspect --session --full", "inspect --json"],
)
def test_a_closed_pipe_ends_quietly_with_exit_1(corpus_db: Path, args: list[str]) -> None:
    closed = _python_m([args[0], "--db", str(corpus_db), *args[1:]], stdout=subprocess.PIPE)
    assert closed.stdout is not None
    closed.stdout.close()  # the reader is gone before the first line, as `head -1` is once it has one
    _, stderr = closed.communicate(timeout=120)
    assert closed.returncode == 1 and stderr == b"", stderr.decode()[-2000:]


def test_piped_into_head_no_traceback(corpus_db: Path) -> None:
    session = shlex.quote(CORPUS_SESSION)
    command = f"{sys.executable} -m agno_compression inspect --db {corpus_db} --session {session} --full"
    done = subprocess.run(
        f"{command} 2>err.txt | head -1; cat err.txt",
        shell=True,
        capture_output=True,
        cwd=corpus_db.parent,
        check=False,
    )
    first, *rest = done.stdout.decode().splitlines()
    assert first.startswith("run ") and rest == [], done.stdout.decode()[-2000:]


def test_help_shows_no_type_after_a_flag() -> None:
    for command in ([], ["inspect"], ["export"], ["eval"], ["report"], ["serve"]):
        shown = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "120"})
        assert shown.exit_code == 0 and "--help" in shown.stdout
        assert "<bool>" not in shown.stdout, f"{command}: {shown.stdout}"
    inspect_help = runner.invoke(app, ["inspect", "--help"], env={"COLUMNS": "120"}).stdout
    assert re.search(r"--full\s+Print whole summaries", inspect_help), inspect_help


# --- a team session: member runs under the leader's run ---------------------------------------------------------------


@pytest.fixture(scope="module")
def team_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real Team session: the leader delegates three tasks to a Tester, whose runs fold, and one to a Writer."""
    from agno.team import Team

    from agno_compression.testing import current_user, log_chunk

    reads = [0]

    def run_tests(module: str) -> str:
        """Run the test suite of one module."""
        reads[0] += 1
        return log_chunk(len(module), reads[0], tag=module)

    calls: dict[str, int] = {}  # per task: a fold takes the run's earlier tool results out of its messages

    def tester(messages: list, info: object) -> Reply:
        task = current_user(messages)
        done = calls[task] = calls.get(task, -1) + 1
        if done < 6:
            return Reply(text="running", tool_calls=[ToolCall("run_tests", {"module": f"m{done}"})])
        return Reply(text=f"all passed: {task}")

    def leader(messages: list, info: Any) -> Reply:
        tasks = [("tester", "unit"), ("writer", "notes"), ("tester", "api"), ("tester", "cli")]
        if info.call_index < len(tasks):
            member, task = tasks[info.call_index]
            call = ToolCall("delegate_task_to_member", {"member_id": member, "task": f"Do the {task} work."})
            return Reply(text=f"Delegating {task}.", tool_calls=[call])
        return Reply(text="Everything is done.")

    path = tmp_path_factory.mktemp("team") / "team.db"
    db = SqliteDb(db_file=str(path))
    members = [
        Agent(
            name="Tester", id="tester", model=ScriptedModel(script=tester), tools=[run_tests], db=db, telemetry=False
        ),
        Agent(name="Writer", id="writer", model=ScriptedModel(script=lambda m, i: Reply(text="ok")), telemetry=False),
    ]
    team = Team(
        name="Lead", model=ScriptedModel(script=leader), members=members, db=db, session_id="t", telemetry=False
    )
    manager = CompressionManager(compress_at_tokens=2_000)
    manager.attach(team).run("Do every task.")
    manager.flush_records()
    db.db_engine.dispose()
    return path


def test_inspect_groups_member_runs_under_the_leaders_run(team_db: Path) -> None:
    db = ["inspect", "--db", str(team_db), "--session", "t"]
    runs = json.loads(runner.invoke(app, [*db, "--json"]).stdout)["runs"]
    leaders = [r for r in runs if r["member_of"] is None]
    assert len(runs) == 5 and len(leaders) == 1, "--json keeps every run"
    lead = leaders[0]["run_id"]
    members = [r for r in runs if r is not leaders[0]]
    assert all(r["member_of"] == lead for r in members), "each member run names its leader's run (parent_run_id)"
    folds = [f for r in members for f in r["folds"]]
    saved = sum(max(0, f["tokens_before"] - f["tokens_after"]) for f in folds)
    assert folds and saved > 0, "the Tester's runs fold"

    collapsed = runner.invoke(app, db, env={"COLUMNS": "200"})
    assert collapsed.exit_code == 0, collapsed.output
    heads = [line for line in collapsed.stdout.splitlines() if re.match(r"\s*run ", line)]
    assert heads == [heads[0]] and lead in heads[0], f"only the leader's run, not its members':\n{collapsed.stdout}"
    summary = f"members: 4 runs · {len(folds)} folds · {saved:,} tokens saved · Tester: 3 runs, {len(folds)} folds"
    assert summary in collapsed.stdout and "Writer: 1 run" in collapsed.stdout and "--members" in collapsed.stdout
    assert not any(r["run_id"] in collapsed.stdout for r in members)

    expanded = runner.invoke(app, [*db, "--members"], env={"COLUMNS": "80"}).stdout
    lines = expanded.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"run {lead}"))
    for r in members:
        (at,) = [i for i, line in enumerate(lines) if r["run_id"] in line]
        assert at > start and lines[at].startswith(f"    run {r['run_id']} · completed · member run of "), lines[at]
    member_folds = [line for line in lines if line.startswith("    fold ")]
    assert len(member_folds) == len(folds) and "--members" not in expanded, expanded


def test_a_zero_columns_setting_gives_the_usual_width(session_db: Path) -> None:
    for command in (["inspect", "--db", str(session_db)], ["inspect", "--db", str(session_db), "--session", "s1"]):
        zero = runner.invoke(app, command, env={"COLUMNS": "0"})
        assert zero.exit_code == 0 and zero.stdout == runner.invoke(app, command, env={"COLUMNS": ""}).stdout
        assert "s1" in zero.stdout or "run " in zero.stdout
