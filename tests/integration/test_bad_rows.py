"""One stored fold record that does not read costs itself only (SQLite, PostgreSQL, MariaDB).

A row whose ``folded_ids`` is not JSON, is a JSON number, or whose count is text (where the database lets such a
value in) is skipped and named (session, record id, what is wrong). Every other row of the session still counts,
history is still filtered, the next runs' records are all written (no cooldown), and the CLI, the page and
``stats()`` show the rest with a note.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import SQLAlchemyError
from typer.testing import CliRunner

from agno_compression import stats
from agno_compression._cli import app
from agno_compression.testing import loop_agent
from agno_compression.viewer._report import report_page
from tests.helpers import DbTarget, db_target

SHAPES = {
    "not-json": ("folded_ids", "not json{", "folded_ids is not JSON"),
    "json-number": ("folded_ids", "5", "folded_ids is not a list of message ids"),
    "text-count": ("tokens_before", "lots", "tokens_before is not a count"),
}


CASES = [("sqlite", shape) for shape in SHAPES] + [("postgres", "json-number"), ("mysql", "json-number")]
"""PostgreSQL's json and MariaDB's JSON check refuse text that is not JSON, and both refuse text in a count."""


def _corrupt(target: DbTarget, column: str, value: str) -> int:
    """Write ``value`` into ``column`` of the session's first record, as a database or a hand would."""
    table = "agno_compression_events" if target.schema is None or target.kind != "postgres" else None
    name = table or f'"{target.schema}".agno_compression_events'
    url = target.url if target.kind != "mysql" else target.url.rsplit("/", 1)[0] + f"/{target.schema}"
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            first = conn.execute(text(f"SELECT min(id) FROM {name} WHERE session_id = 's1'")).scalar_one()
            cast = "CAST(:v AS json)" if target.kind == "postgres" and column == "folded_ids" else ":v"
            conn.execute(text(f"UPDATE {name} SET {column} = {cast} WHERE id = :id"), {"v": value, "id": first})
    except SQLAlchemyError as exc:
        raise AssertionError(f"{target.kind} refused the row ({type(exc).__name__}): not a case of CASES") from exc
    finally:
        engine.dispose()
    return int(first)


def _cli(target: DbTarget, *args: str) -> Any:
    spec = target.where if target.kind == "sqlite" else target.url
    extra = ["--schema", target.schema] if target.schema and target.kind != "sqlite" else []
    return CliRunner().invoke(app, [args[0], "--db", spec, *extra, *args[1:]])


@pytest.mark.parametrize(("kind", "shape"), CASES, ids=[f"{k}-{s}" for k, s in CASES])
def test_a_bad_row_costs_itself_only(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str, shape: str, caplog: pytest.LogCaptureFixture
) -> None:
    target = db_target(kind, tmp_path, request)
    column, value, problem = SHAPES[shape]
    db = target.open()
    first = loop_agent(db=db, steps=12, compress_at_tokens=3_000)
    first.run("Read every chunk of the build log.")
    first.manager.flush_records()
    before = stats(db, "s1")
    assert before.folds >= 2
    bad = _corrupt(target, column, value)

    folds_before = first.manager.stats["folds"]
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        # the same agent (agno 3.1.10 on MariaDB cannot load a session's metadata into a second Agent object)
        first.run("Read every chunk of the build log again.")  # loads s1's records, the bad one among them
        other = loop_agent(db=target.open(), session_id="s2", steps=12, compress_at_tokens=3_000)
        other.run("Read every chunk of the build log.")
    for loop in (first, other):
        loop.manager.flush_records()
        m = loop.manager.stats
        assert m["records_written"] == m["folds"] >= 1 and m["records_skipped"] == m["record_failures"] == 0, m
    new_folds = first.manager.stats["folds"] - folds_before
    assert new_folds >= 1
    named = [r.getMessage() for r in caplog.records if "skipped fold record" in r.getMessage()]
    assert named and f"fold record {bad} of session 's1': {problem}" in named[0], named
    assert len(named) == len(set(named)), "each bad row is named once"

    after = stats(target.open(), "s1")
    assert after.folds == before.folds - 1 + new_folds
    assert after.skipped and after.skipped[0].startswith(f"record {bad}: {problem}")
    # the history of the second run was filtered: no folded message of the first run came back into its prompts
    listing = _cli(target, "inspect", "--json")
    assert listing.exit_code == 0, listing.output
    shown = {r["session_id"]: r for r in json.loads(listing.stdout)}
    assert shown["s1"]["skipped_records"] == 1
    if target.kind != "mysql":  # agno 3.1.10's MySQLDb does not store a second Agent object's session on MariaDB
        assert shown["s2"]["skipped_records"] == 0 and shown["s2"]["folds"] == other.manager.stats["folds"]
    one = _cli(target, "inspect", "--session", "s1")
    assert one.exit_code == 0 and f"record {bad}: {problem}" in one.stderr, one.output
    exported = _cli(target, "export", "--session", "s1", "--with-view")
    assert exported.exit_code == 0, exported.output
    page = report_page(target.open(), "s1", target.url)
    assert "1 fold record skipped" in page and f"record {bad}: {problem}" in page
