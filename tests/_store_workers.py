"""Worker processes for the concurrency tests (importable under the spawn start method)."""

from __future__ import annotations

from typing import Any


def record_folds(
    kind: str, where: str, schema: str | None, session_id: str, worker: int, folds: int, barrier: Any
) -> int:
    """Open the agent's agno db in this process and record ``folds`` folds as fast as possible."""
    from agno_compression import CompressionRecord, SQLAlchemyStore

    if kind == "sqlite":
        from agno.db.sqlite import SqliteDb

        db: Any = SqliteDb(db_file=where)
    else:
        from agno.db.postgres import PostgresDb

        db = PostgresDb(db_url=where, db_schema=schema)
    store = SQLAlchemyStore.for_agno_db(db)
    barrier.wait(timeout=60)
    for i in range(folds):
        store.record(
            CompressionRecord(
                session_id=session_id,
                folded_ids=[f"w{worker}-f{i}-m{j}" for j in range(4)],
                summary=f"summary of worker {worker} fold {i}",
                strategy="extractive",
                run_id=f"run-{worker}",
                tokens_before=4000,
                tokens_after=1500,
            )
        )
    return folds
