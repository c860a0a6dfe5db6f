"""No fault in bookkeeping costs a run anything: the restore of a run's messages comes first and alone.

After a run's model loop the manager puts every folded message back into the run agno stores, then counts usage,
accounts the model calls of observation policies and mirrors the session's totals. Each of those may fail (a bug, a
provider's odd usage, a price model of a user's own): the failure is counted in ``stats["bookkeeping_failures"]``
and logged once by its type, and the stored run is the same as a run without the fault.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from agno.db.sqlite import SqliteDb

from agno_compression import full_messages
from agno_compression._stats import Stats
from agno_compression.testing import RUN_MODES
from tests.reliability._agents import build

TASK = "Read every chunk of the build log."
SECRET = "session-text-7f3a"


def _stored(db: Any) -> list[tuple[str, str]]:
    return [(m.role, str(m.content)) for m in full_messages(db, "s1")]


def _boom(*_: Any, **__: Any) -> None:
    raise ValueError(f"usage field held {SECRET}")  # an error whose message quotes session text


@pytest.mark.parametrize("mode", RUN_MODES)
@pytest.mark.parametrize("step", ["count_usage", "mirror"])
def test_a_failing_bookkeeping_step_leaves_the_stored_run_as_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, mode: str, step: str
) -> None:
    clean = build(db=SqliteDb(db_file=str(tmp_path / "clean.db")), steps=12)
    clean.run(TASK, mode)
    expected = _stored(clean.agent.db)
    assert clean.summary_folds and len(expected) > 12

    if step == "count_usage":
        monkeypatch.setattr(Stats, "count_usage", _boom)
    else:
        monkeypatch.setattr("agno_compression._records.FoldRecorder.mirror", _boom)
    faulty = build(db=SqliteDb(db_file=str(tmp_path / "faulty.db")), steps=12)
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        out = faulty.run(TASK, mode)
        faulty.run(TASK, mode)  # a second run: the step fails again, said once
    assert str(out.content).endswith("all chunks read.")
    assert _stored(faulty.agent.db)[: len(expected)] == expected, "the stored run lost messages"
    assert faulty.manager.stats["bookkeeping_failures"] >= 2
    said = [r.getMessage() for r in caplog.records if "failed (ValueError)" in r.getMessage()]
    assert len(said) == 1, said
    assert not [r for r in caplog.records if SECRET in r.getMessage()], "a log line quoted session text"


def _table_ready(path: Path) -> None:
    from agno_compression import SQLAlchemyStore

    SQLAlchemyStore.from_url(f"sqlite:///{path}").ensure_table()


@pytest.mark.parametrize("fault", ["read-only", "locked"])
def test_a_read_only_or_locked_store_leaves_the_stored_run_as_without_it(tmp_path: Path, fault: str) -> None:
    """The records in a database of their own that cannot be written (opened read-only) or is locked by another
    writer for two seconds: the run's stored messages are those of a run without the fault; a locked store's
    records are all written once the lock goes."""
    import sqlite3
    import threading

    from agno_compression import SQLAlchemyStore

    clean = build(db=SqliteDb(db_file=str(tmp_path / "clean.db")), steps=12)
    clean.run(TASK)
    records = tmp_path / "records.db"
    _table_ready(records)
    if fault == "read-only":
        store = SQLAlchemyStore.from_url(f"sqlite:///file:{records}?mode=ro&uri=true")
    else:
        store = SQLAlchemyStore.from_url(f"sqlite:///{records}")
        holder = sqlite3.connect(records, check_same_thread=False)
        holder.execute("BEGIN EXCLUSIVE")
        threading.Timer(2.0, holder.rollback).start()
    faulty = build(db=SqliteDb(db_file=str(tmp_path / "faulty.db")), steps=12, store=store, store_cooldown=0)
    out = faulty.run(TASK)
    faulty.manager.flush_records()
    assert str(out.content).endswith("all chunks read.")
    assert _stored(faulty.agent.db) == _stored(clean.agent.db), "the stored run differs from a run without the fault"
    m = faulty.manager.stats
    if fault == "read-only":
        assert m["record_failures"] >= 1 and m["records_written"] == 0
    else:
        assert m["records_written"] == m["folds"] >= 1 and m["record_failures"] == 0, m
