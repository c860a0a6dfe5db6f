"""The command line in a terminal: whole ids, tables that fit, labels that differ, hints, plurals, one budget rule,
and nothing left beside a database it only reads."""

from __future__ import annotations

import json
import re
import threading
import urllib.request
from pathlib import Path

import pytest
from agno.db.sqlite import SqliteDb
from typer.testing import CliRunner

from agno_compression._cli import app
from agno_compression.testing import Reply, ScriptedModel
from tests.scenarios import Scenario, chat_file
from tests.terminal import in_terminal

runner = CliRunner()


@pytest.fixture(scope="module")
def uuid_sessions(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A database with two sessions under agno's own ids (36-character uuids)."""
    from agno.agent import Agent

    path = tmp_path_factory.mktemp("uuid") / "agent.db"
    db = SqliteDb(db_file=str(path))
    for k in range(2):
        Agent(model=ScriptedModel(script=lambda m, i: Reply(text="ok")), db=db, telemetry=False).run(f"hello {k}")
    db.db_engine.dispose()
    return path, [s.session_id for s in SqliteDb(db_file=str(path)).get_sessions()]  # type: ignore[union-attr]


@pytest.fixture
def multi(multi_scenario: Scenario) -> tuple[str, str]:
    return multi_scenario.db_file, multi_scenario.session_id


@pytest.mark.parametrize("columns", [80, 60, 120])
def test_inspect_never_cuts_a_session_id(uuid_sessions: tuple[Path, list[str]], columns: int) -> None:
    path, ids = uuid_sessions
    shown = in_terminal(["inspect", "--db", str(path)], columns)
    lines = shown.splitlines()
    for session_id in ids:
        assert any(session_id in line for line in lines), f"{session_id} is not whole on one line:\n{shown}"
    assert "2 sessions in" in shown


def test_inspect_timeline_keeps_folded_ids_whole_at_80_columns(multi: tuple[str, str]) -> None:
    db, session_id = multi
    timeline = json.loads(runner.invoke(app, ["inspect", "--db", db, "--session", session_id, "--json"]).stdout)
    ids = [i for run in timeline["runs"] for f in run["folds"] for i in f["folded_ids"]]
    shown = in_terminal(["inspect", "--db", db, "--session", session_id, "--ids"], 80)
    assert ids and all(i in shown for i in ids)
    assert "before call" in shown and "over the budget" in shown


def _long_named_inputs(tmp_path: Path) -> list[Path]:
    """Three recordings whose names end alike (the last 48 characters) and two files of the same name."""
    tail = "__install_from_source__marshmallow-code__marshmallow-1867"
    return [
        chat_file(tmp_path, name=f"replay__default_sys-env_window100{tail}.json"),
        chat_file(tmp_path, name=f"replay__function_calling_replace{tail}.json"),
        chat_file(tmp_path / "a", name="run.json"),
        chat_file(tmp_path / "b", name="run.json"),
    ]


def test_eval_fits_100_columns_with_a_distinct_label_for_each_input(tmp_path: Path) -> None:
    _long_named_inputs(tmp_path)
    shown = in_terminal(["eval", str(tmp_path), "-b", "4000", "-s", "extractive", "-s", "mask"], 100)
    printed = shown[shown.index("conversations replayed") :].splitlines()  # after the progress bar
    assert all(len(line) <= 100 for line in printed)
    rows = _table_rows(shown)
    assert len(rows) == 8
    cells = [re.split(r"\s{2,}", line.strip()) for line in rows]
    assert all("…" not in cell for row in cells for cell in row[1:]), f"a number or setting is cut:\n{shown}"
    labels = {(row[0], row[1]) for row in cells}
    assert len(labels) == 8, f"two inputs share a label:\n{shown}"


def _table_rows(shown: str) -> list[str]:
    """The eval table's rows as a terminal shows them: after the header (one or two lines) and its rule."""
    lines = shown[: shown.index("TOTAL")].splitlines()
    rule = max(i for i, line in enumerate(lines) if line.strip() and set(line.strip()) == {"─"})
    return [line for line in lines[rule + 1 :] if line.strip()]


KINDS = ("deploy", "release", "rollback")
"""What tells apart the databases of ``review_dbs``: the rest of their names is the same."""


@pytest.fixture(scope="module")
def review_dbs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of agno databases as a team keeps them: long names alike but for one word, each with two sessions
    under agno's own ids and one named alike in every database."""
    from agno.agent import Agent

    folder = tmp_path_factory.mktemp("reviews")
    for kind in KINDS:
        db = SqliteDb(db_file=str(folder / f"support-agent-2024-06-{kind}-review.db"))
        for session_id in (None, None, f"ops-review-2024-06-{len(kind):02d}-night-shift"):
            agent = Agent(model=ScriptedModel(script=lambda m, i: Reply(text="ok")), db=db, telemetry=False)
            agent.run(f"review {kind}", session_id=session_id)
        db.db_engine.dispose()
    return folder


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_eval_labels_a_folder_of_databases_by_file_then_session(review_dbs: Path, columns: int) -> None:
    args = ["eval", str(review_dbs), "--all", "-b", "4000"]
    inputs = [r["input"] for r in json.loads(runner.invoke(app, [*args, "--json"]).stdout)["rows"]]
    assert len(inputs) == 9 and len(set(inputs)) == 9
    shown = in_terminal(args, columns)
    printed = shown[shown.index("conversations replayed") :].splitlines()  # after the progress bar
    assert all(len(line) <= columns for line in printed), f"wider than {columns}:\n{shown}"
    labels = [line.split("  ")[0] for line in _table_rows(shown)][:9]  # the rows, in the order of the JSON's
    assert len(set(labels)) == 9, f"two inputs share a label:\n{shown}"
    for name, label in zip(inputs, labels, strict=True):
        kind = next(k for k in KINDS if f"-{k}-" in name)
        assert f"{kind}-review#" in label, f"{label!r} does not say which database {name!r} is:\n{shown}"
        assert _cut_from(label, Path(name).name), f"{label!r} is not {name!r} shortened:\n{shown}"
        assert label.split("#", 1)[1].strip("…"), f"{label!r} shows nothing of the session of {name!r}"


def _cut_from(label: str, name: str) -> bool:
    """Whether ``label`` is ``name`` with parts of it left out where it shows an ellipsis (and only there)."""
    pattern = ".+".join(re.escape(piece) for piece in label.split("…"))
    return re.fullmatch(pattern, name) is not None


def test_eval_wide_and_json_have_every_column(tmp_path: Path) -> None:
    path = chat_file(tmp_path)
    wide = runner.invoke(app, ["eval", str(path), "-b", "4000", "--wide"])
    assert wide.exit_code == 0 and "pair violations" in wide.stdout and "summarizer calls" in wide.stdout
    narrow = runner.invoke(app, ["eval", str(path), "-b", "4000"])
    assert "pair violations" not in narrow.stdout and "--wide" in narrow.stdout


def test_eval_says_why_the_table_is_empty_and_mentions_all(tmp_path: Path) -> None:
    path = chat_file(tmp_path, steps=3)
    result = runner.invoke(app, ["eval", str(path), "-b", "60000"])
    assert result.exit_code == 0
    assert "1 conversation replayed" in result.stdout and "--all" in result.stdout
    assert "over the budget (60,000 tokens)" in result.stdout


def test_plurals_are_right_for_one(tmp_path: Path, uuid_sessions: tuple[Path, list[str]]) -> None:
    path = chat_file(tmp_path)
    assert "1 conversation replayed" in runner.invoke(app, ["eval", str(path), "-b", "4000"]).stdout
    one = tmp_path / "one.db"
    db = SqliteDb(db_file=str(one))
    from agno.agent import Agent

    Agent(model=ScriptedModel(script=lambda m, i: Reply(text="ok")), db=db, session_id="s", telemetry=False).run("x")
    db.db_engine.dispose()
    assert "1 session in" in runner.invoke(app, ["inspect", "--db", str(one)]).stdout
    out = runner.invoke(app, ["export", "--db", str(one), "--out", str(tmp_path / "x.jsonl")])
    assert "wrote 1 example to" in out.stderr


def test_one_budget_rule_for_every_command_with_its_default_in_help(tmp_path: Path, multi: tuple[str, str]) -> None:
    db, session_id = multi
    path = chat_file(tmp_path)
    for args in (
        ["eval", str(path), "--budget", "100"],
        ["report", "--db", db, "--session", session_id, "--budget", "100", "--out", str(tmp_path / "r.html")],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and "--budget must be at least 256 tokens" in result.stderr, args
    assert (
        runner.invoke(
            app, ["report", "--db", db, "--session", session_id, "--budget", "256", "--out", str(tmp_path / "r.html")]
        ).exit_code
        == 0
    )
    eval_help = " ".join(runner.invoke(app, ["eval", "--help"], env={"COLUMNS": "200"}).stdout.split())
    report_help = " ".join(runner.invoke(app, ["report", "--help"], env={"COLUMNS": "200"}).stdout.split())
    assert "default: 16000" in eval_help and "at least 256" in eval_help
    assert "default:" in report_help and "the compress_at_tokens stored with the session's folds" in report_help


def _side_files(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name != path.name and p.name.startswith(path.name))


def test_reading_a_database_leaves_nothing_beside_it(multi: tuple[str, str], tmp_path: Path) -> None:
    import shutil

    db = tmp_path / "copy.db"
    shutil.copy(multi[0], db)
    assert _side_files(db) == []
    before = db.stat().st_mtime_ns
    for args in (
        ["inspect", "--db", str(db)],
        ["inspect", "--db", str(db), "--session", multi[1], "--ids"],
        ["export", "--db", str(db), "--out", str(tmp_path / "x.jsonl")],
        ["report", "--db", str(db), "--session", multi[1], "--out", str(tmp_path / "r.html")],
        ["eval", str(db), "--all"],
    ):
        assert runner.invoke(app, args).exit_code == 0, args
        assert _side_files(db) == [], args
    from agno_compression.viewer._serve import make_server

    server = make_server(str(db), port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        for page in ("/", f"/session/{multi[1]}"):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{page}", timeout=30) as answer:
                assert answer.status == 200
        assert _side_files(db) == []
    finally:
        server.shutdown()
        server.server_close()
    assert db.stat().st_mtime_ns == before


# --- session text that would drive a terminal: shown, never interpreted, at every width ------------------------------

from rich.cells import cell_len  # noqa: E402

from agno_compression import full_messages  # noqa: E402
from agno_compression._visible import visible_line  # noqa: E402
from tests.scenarios import CORPUS_SESSION  # noqa: E402
from tests.unit.test_visible import ACTED_ON  # noqa: E402

WIDTHS = (60, 80, 100, 120, 160, 250)
SGR = re.compile(r"\x1b\[[0-9;]*m")
"""rich's own colours in a real terminal: the only escape sequences the command line may write there."""


def _clean(text: str, width: int | None, where: str) -> None:
    """Nothing a terminal would act on, and no line wider than ``width``."""
    found = ACTED_ON.search(text)
    assert found is None, (
        f"{where}: raw {found.group()!r} at {found.start()}: {text[max(0, found.start() - 60) :][:120]!r}"
    )
    if width is not None:
        wide = [line for line in text.splitlines() if cell_len(line) > width]
        assert not wide, f"{where}: {len(wide)} lines wider than {width}: {wide[0]!r}"


def _flat(text: str) -> str:
    return "".join(text.split())


def test_inspect_shows_session_text_as_text_at_every_width(corpus_db: Path) -> None:
    db = ["--db", str(corpus_db)]
    session = ["--session", CORPUS_SESSION]
    for width in WIDTHS:
        env = {"COLUMNS": str(width)}
        for extra in ([], [*session], [*session, "--full"], [*session, "--ids"], [*session, "--full", "--ids"]):
            result = runner.invoke(app, ["inspect", *db, *extra], env=env)
            assert result.exit_code == 0, (extra, result.output[-2000:])
            _clean(result.stdout, width, f"inspect {extra} at {width}")
            _clean(result.stderr, None, f"inspect {extra}'s stderr")
            if not extra:  # the id is whole on one line, markup and escape shown as typed: it pastes back
                assert any(visible_line(CORPUS_SESSION) in line for line in result.stdout.splitlines()), result.stdout
                assert "[red]x[/red]" in _flat(result.stdout), "the agent's name, markup included"
            if "--full" in extra:
                for literal in ("[red]x[/red]", "Optional[bool]=None", "additional_metrics[k]=v", "\\x1b[2J"):
                    assert literal in _flat(result.stdout), (literal, width)
        listed = runner.invoke(app, ["inspect", *db, "--json"], env=env)
        _clean(listed.stdout, None, "inspect --json")
        assert json.loads(listed.stdout)[0]["session_id"] == CORPUS_SESSION, "JSON stays exact"
    timeline = runner.invoke(app, ["inspect", *db, *session, "--json"])
    _clean(timeline.stdout, None, "inspect --session --json")
    assert json.loads(timeline.stdout)["session_id"] == CORPUS_SESSION


def test_export_and_eval_write_session_text_exactly_and_safely(corpus_db: Path) -> None:
    exported = runner.invoke(app, ["export", "--db", str(corpus_db)])
    assert exported.exit_code == 0, exported.output[-2000:]
    _clean(exported.stdout.replace("\n", ""), None, "export")
    messages = [m for line in exported.stdout.splitlines() for m in json.loads(line)["messages"]]
    stored = full_messages(SqliteDb(db_file=str(corpus_db)), CORPUS_SESSION)
    assert [m["content"] for m in messages] == [m.content for m in stored], "every byte back, lone surrogates too"
    assert any("\ud800" in str(m["content"]) for m in messages) and max(len(str(m["content"])) for m in messages) > 2e6
    table = runner.invoke(app, ["eval", str(corpus_db), "--all", "-b", "3000"], env={"COLUMNS": "60"})
    assert table.exit_code == 0, table.output[-2000:]
    _clean(table.stdout, 60, "eval")
    _clean(table.stderr + exported.stderr, None, "eval's and export's stderr")
    rows = json.loads(runner.invoke(app, ["eval", str(corpus_db), "--all", "-b", "3000", "--json"]).stdout)["rows"]
    assert rows[0]["input"] == f"corpus#{CORPUS_SESSION}"


def test_an_error_naming_session_text_shows_it_as_text(corpus_db: Path) -> None:
    result = runner.invoke(app, ["inspect", "--db", str(corpus_db), "--session", CORPUS_SESSION + "\x07?"])
    assert result.exit_code == 2
    _clean(result.stderr, None, "error")
    assert "no session" in result.stderr and "\\x1b[31m" in result.stderr and len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("columns", [80, 120])
def test_inspect_in_a_real_terminal_writes_only_its_own_colours(corpus_db: Path, columns: int) -> None:
    from tests.terminal import raw_terminal

    shown = raw_terminal(["inspect", "--db", str(corpus_db), "--session", CORPUS_SESSION, "--full", "--ids"], columns)
    text = SGR.sub("", shown).replace("\r\n", "\n")
    _clean(text, columns, f"a {columns}-column terminal")
    assert "[red]x[/red]" in _flat(text) and "fold 1 · before call" in text


def test_a_team_session_at_80_columns_groups_member_runs_and_hangs_wrapped_lines(team_scenario: Scenario) -> None:
    db, session = team_scenario.db_file, team_scenario.session_id
    runs = json.loads(runner.invoke(app, ["inspect", "--db", db, "--session", session, "--json"]).stdout)["runs"]
    (lead,) = [r["run_id"] for r in runs if r["member_of"] is None]
    members = [r for r in runs if r["member_of"] == lead]
    assert len(members) == 10 == len(runs) - 1
    shown = in_terminal(["inspect", "--db", db, "--session", session], 80)
    lines = shown.splitlines()
    heads = [line for line in lines if line.lstrip().startswith("run ")]
    assert len(heads) == 1 and lead in heads[0], "a dozen member runs are one line, not a dozen headers"
    assert "members: 10 runs · 0 folds · 0 tokens saved · Tester: 10 runs" in " ".join(shown.split())
    for i, line in enumerate(lines):  # a wrapped line starts under its field's text, never at column 0
        assert line.startswith(("run ", "fold ", " ")) or not line.strip(), f"line {i} at column 0: {line!r}"
        if line.startswith("fold ") and not lines[i + 1].startswith("  [Progress so far"):  # the head wrapped
            assert re.match(" " * len(line.split("·")[0] + "· ") + r"\S", lines[i + 1]), lines[i : i + 2]
    assert all(len(line) <= 80 for line in lines)
    expanded = in_terminal(["inspect", "--db", db, "--session", session, "--members"], 80)
    assert all(f"    run {r['run_id']} · completed · member run of Tester" in expanded for r in members)
