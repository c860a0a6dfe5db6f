"""``--db``: every database the library writes fold records to, read through agno's own classes, read-only; errors
that name the real problem in one line, and never a password."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agno_compression import full_messages
from agno_compression._cli import app
from agno_compression._databases import close_db, open_db
from agno_compression.testing import loop_agent
from tests.helpers import DbTarget, db_target

runner = CliRunner()
SECRET = "s3cret-pw"


def _write(target: DbTarget) -> dict[str, int]:
    """A session with folds, written by a real Agent with the manager into ``target``; the manager's stats."""
    loop = loop_agent(steps=6, db=target.open(), session_id="kept", compress_at_tokens=3_000)
    loop.run("Read the build log. [red]x[/red]")
    loop.manager.flush_records()
    return dict(loop.manager.stats)


def _args(target: DbTarget) -> list[str]:
    if target.kind in ("sqlite", "json"):
        return ["--db", target.where]
    return ["--db", target.url, "--schema", str(target.schema)]


def _state(target: DbTarget) -> Any:
    """Everything a reader could have changed: the files of a folder, the keys of a Redis prefix."""
    if target.kind == "json":
        return sorted((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in Path(target.where).iterdir())
    if target.kind == "redis":
        import redis

        client = redis.Redis.from_url(target.where)
        keys = sorted(client.scan_iter(match=f"{target.schema}:*", count=1000))
        state = [(k, client.dump(k)) for k in keys]
        client.close()
        return state
    return None


@pytest.mark.parametrize("kind", ["sqlite", "json", "postgres", "mysql", "redis"])
def test_inspect_export_report_and_eval_read_what_the_manager_wrote(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    target = db_target(kind, tmp_path, request)
    stats = _write(target)
    assert stats["folds"] >= 1
    args = _args(target)
    before = _state(target)
    listed = runner.invoke(app, ["inspect", *args, "--json"])
    assert listed.exit_code == 0, listed.output[-1500:]
    rows = json.loads(listed.stdout)
    assert [(r["session_id"], r["folds"]) for r in rows] == [("kept", stats["folds"])]
    timeline = json.loads(runner.invoke(app, ["inspect", *args, "--session", "kept", "--json"]).stdout)
    assert sum(len(run["folds"]) for run in timeline["runs"]) == stats["folds"]
    shown = runner.invoke(app, ["inspect", *args, "--session", "kept"], env={"COLUMNS": "100"})
    assert shown.exit_code == 0 and "fold 1 · before call" in shown.stdout
    exported = runner.invoke(app, ["export", *args, "--session", "kept"])
    assert exported.exit_code == 0, exported.output[-1500:]
    messages = json.loads(exported.stdout)["messages"]
    assert [m["content"] for m in messages] == [m.content for m in full_messages(target.open(), "kept")]
    page = tmp_path / "kept.html"
    report = runner.invoke(app, ["report", *args, "--session", "kept", "--out", str(page)])
    assert report.exit_code == 0, report.output[-1500:]
    assert page.read_text(encoding="utf-8").count('class="fold"') == stats["folds"]
    if kind == "json":  # eval reads a JsonDb folder as the database it is, not as a folder of recordings
        replayed = runner.invoke(app, ["eval", args[1], "--all", "-b", "3000", "--json"])
        assert replayed.exit_code == 0, replayed.output[-1500:]
        assert json.loads(replayed.stdout)["rows"][0]["input"] == "json#kept"
    assert _state(target) == before, "reading wrote nothing"


def test_sql_servers_are_read_in_read_only_transactions(mysql_db: DbTarget, tmp_path: Path) -> None:
    from sqlalchemy import text
    from sqlalchemy.exc import SQLAlchemyError

    _write(mysql_db)
    db = open_db(mysql_db.url, schema=mysql_db.schema)
    try:
        with db.db_engine.connect() as conn, pytest.raises(SQLAlchemyError, match="READ ONLY"):
            conn.execute(text(f"DELETE FROM `{mysql_db.schema}`.agno_sessions"))
    finally:
        close_db(db)
    assert json.loads(runner.invoke(app, ["inspect", *_args(mysql_db), "--json"]).stdout)[0]["session_id"] == "kept"


def _one_line(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, (args, result.output[-1500:])
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr, result.stderr
    return result.stderr


def test_errors_name_the_real_problem(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    assert "a directory without agno_sessions.json" in _one_line(["inspect", "--db", str(folder)])
    assert "a directory, not a SQLite file" in _one_line(["inspect", "--db", f"sqlite:///{folder}"])
    unknown = _one_line(["inspect", "--db", "mongodb://user@127.0.0.1/agno"])
    assert "URL scheme 'mongodb'" in unknown
    assert all(f"{s}://" in unknown for s in ("sqlite", "postgresql", "mysql", "mariadb", "redis", "rediss"))
    fake = tmp_path / "notsqlite.db"
    fake.write_text("hello, not a database\n")
    assert "not a SQLite database" in _one_line(["eval", str(fake)])
    assert "not a SQLite database" in _one_line(["inspect", "--db", str(fake)])
    out_dir = tmp_path / "pages"
    out_dir.mkdir()
    error = _one_line(["report", "--db", str(fake), "--session", "s", "--out", str(out_dir)])
    assert "is a directory" in error and ".html" not in error
    assert "no such file or directory" in _one_line(["inspect", "--db", str(tmp_path / "missing.db")])


@pytest.mark.parametrize("kind", ["postgres", "mysql", "redis"])
def test_no_password_in_a_connection_error(kind: str) -> None:
    scheme = {"postgres": "postgresql+psycopg", "mysql": "mysql+pymysql", "redis": "redis"}[kind]
    user = {"postgres": "postgres", "mysql": "root", "redis": ""}[kind]
    url = f"{scheme}://{user}:{SECRET}@127.0.0.1:1/{'0' if kind == 'redis' else 'test'}"
    error = _one_line(["inspect", "--db", url])
    assert SECRET not in error and "***" in error, error
    assert "(Background on" not in error and "cannot" in error, error
    assert error.rstrip().endswith(")"), f"the driver's message is whole: {error}"


def test_no_password_where_a_working_url_is_named(postgres_db: DbTarget, tmp_path: Path) -> None:
    _write(postgres_db)
    with_secret = postgres_db.url.replace("postgres@", f"postgres:{SECRET}@")  # trust auth: any password works
    assert with_secret != postgres_db.url
    args = ["--db", with_secret, "--schema", str(postgres_db.schema)]
    listing = runner.invoke(app, ["inspect", *args])
    assert listing.exit_code == 0 and "1 session in" in listing.stdout and "***" in listing.stdout
    page = tmp_path / "p.html"
    runner.invoke(app, ["report", *args, "--session", "kept", "--out", str(page)])
    missing = runner.invoke(app, ["inspect", *args, "--session", "nope"])
    for text in (listing.stdout, page.read_text(encoding="utf-8"), missing.stderr):
        assert SECRET not in text
    assert "no session 'nope'" in missing.stderr
