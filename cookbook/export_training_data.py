"""Training-data export: the full original record, whatever was folded in context.

Runs the long tool loop example, then writes the session as OpenAI-chat JSONL (the same
format as ``agno-compression export``), with the compressed view the model saw beside it.

    python cookbook/export_training_data.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import long_tool_loop
from _common import OUT

from agno_compression import export_examples, full_messages


def main() -> None:
    print(f"Rebuilding {OUT / 'long_tool_loop.db'}: running long_tool_loop.py first (it replaces that file).\n")
    long_tool_loop.main()
    from agno.db.sqlite import SqliteDb

    db = SqliteDb(db_file=str(OUT / "long_tool_loop.db"))
    session_id = db.get_sessions()[0].session_id  # type: ignore[union-attr]
    out = OUT / "training_data.jsonl"
    with out.open("w", encoding="utf-8") as fh:
        for example in export_examples(db, session_id, per="run", with_view=True):
            fh.write(json.dumps(example, ensure_ascii=False) + "\n")
            chars = sum(len(str(m["content"] or "")) for m in example["messages"])
            view = sum(len(str(m["content"] or "")) for m in example["compressed_view"])
            print(
                f"\nexported run {example['run_id']}: {len(example['messages'])} messages, {chars:,} chars in full; "
                f"the model now sees {len(example['compressed_view'])} messages, {view:,} chars"
            )
    print(f"{len(full_messages(db, session_id))} original messages written to {out}")
    print(f"CLI equivalent: agno-compression export --db {OUT / 'long_tool_loop.db'} --per run --with-view")


if __name__ == "__main__":
    main()
