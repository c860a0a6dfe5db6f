"""Child-process workers of the reliability tests (importable under the spawn start method)."""

from __future__ import annotations

import os
import signal
import time
from typing import Any


def _row(session: str, tag: str) -> Any:
    from agno_compression import CompressionRecord

    return CompressionRecord(
        session_id=session,
        folded_ids=[f"{tag}-m{j}" for j in range(4)],
        summary=f"summary of fold {tag}",
        strategy="extractive",
        tokens_before=4000,
        tokens_after=1500,
    )


def record_then_stall_in_transaction(url: str, schema: str | None, flag: str, before: int) -> None:
    """Record ``before`` folds, then stall inside the next INSERT's transaction (after the INSERT, before COMMIT)."""
    from sqlalchemy import event

    from agno_compression import SQLAlchemyStore

    store = SQLAlchemyStore.from_url(url, schema=schema)
    for i in range(before):
        store.record(_row("killed", f"f{i}"))

    def stall(conn: Any, clauseelement: Any, *args: Any) -> None:
        if "INSERT INTO" in str(clauseelement):
            with open(flag, "w") as fh:
                fh.write("inside")
            time.sleep(60)

    event.listen(store.engine, "after_execute", stall)
    store.record(_row("killed", f"f{before}"))


def record_forever(url: str, schema: str | None, acks: str, tag: str) -> None:
    """Record folds as fast as possible; append each fold's tag to ``acks`` once ``record`` returned."""
    from agno_compression import SQLAlchemyStore

    store = SQLAlchemyStore.from_url(url, schema=schema)
    i = 0
    with open(acks, "a") as fh:
        while True:
            name = f"{tag}x{i}"
            store.record(_row("killed", name))
            fh.write(name + "\n")
            fh.flush()
            i += 1


def agent_killed_before_record(path: str, survive: int) -> None:
    """A real Agent folding into ``path``; SIGKILLs itself after summary ``survive + 1``, before recording it."""
    from agno.db.sqlite import SqliteDb

    from agno_compression import SQLAlchemyStore
    from tests.reliability._agents import build

    db = SqliteDb(db_file=path)
    inner = SQLAlchemyStore.for_agno_db(db)

    class KillingStore:
        def __init__(self) -> None:
            self.calls = 0

        def record(self, row: Any) -> int:
            self.calls += 1
            if self.calls > survive:
                os.kill(os.getpid(), signal.SIGKILL)
            return inner.record(row)

        def load(self, session_id: str) -> Any:
            return inner.load(session_id)

        def events(self, session_id: str) -> Any:
            return inner.events(session_id)

    h = build(db=db, session_id="victim", steps=60, store=KillingStore())
    h.run("read until killed")


def load_sessions(target: Any, worker: int, folds: int, barrier: Any) -> tuple[int, float, list[str]]:
    """One writer of the load test: ``folds`` records into its own session (and a shared one), timed."""
    from agno_compression import SQLAlchemyStore

    db = target.open()
    store = SQLAlchemyStore.for_agno_db(db)
    barrier.wait(timeout=120)
    started = time.monotonic()
    ids: list[str] = []
    for i in range(folds):
        session = "shared" if i % 2 else f"w{worker}"
        row = _row(session, f"w{worker}f{i}")
        store.record(row)
        ids += row.folded_ids
    return folds, time.monotonic() - started, ids


def session_memory(with_manager: bool, points: tuple[int, ...], workdir: str) -> tuple[dict[int, int], int]:
    """``bench/_memory.session_memory`` of a tool-using session: agno alone, or with the default (extractive) manager,
    whose summaries condense their own older parts and so stay the same size however long the session runs."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import _memory

    return _memory.session_memory("extractive" if with_manager else "none", points, Path(workdir))
