"""Shared bits of the cookbook: the model (scripted offline, Gemini with GOOGLE_API_KEY) and printouts."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agno.models.message import Message

from agno_compression import CompressionManager
from agno_compression.testing import Reply, ScriptedModel, ScriptInfo

OUT = Path(os.environ.get("AGNO_COMPRESSION_COOKBOOK_OUT") or Path(__file__).resolve().parent / "out")


def database_path(name: str) -> Path:
    """A fresh SQLite file under cookbook/out/."""
    OUT.mkdir(exist_ok=True)
    path = OUT / f"{name}.db"
    path.unlink(missing_ok=True)
    return path


def pick_model(script: Callable[[list[Message], ScriptInfo], Reply | str]) -> Any:
    """Gemini when GOOGLE_API_KEY is set, else a scripted model that plays ``script`` offline."""
    if os.environ.get("GOOGLE_API_KEY"):
        from agno.models.google import Gemini

        print("Using Gemini (GOOGLE_API_KEY is set).")
        return Gemini(id=os.environ.get("GEMINI_MODEL", "gemini-2.5-flash"))
    print("Offline: a scripted model drives the tools (set GOOGLE_API_KEY to use Gemini).")
    return ScriptedModel(script=script)


def print_folds(manager: CompressionManager, db_file: Path) -> None:
    """What was folded, and where the full record is."""
    print(f"\n{len(manager.events)} compression events:")
    for n, event in enumerate(manager.events, 1):
        what = f"folded {len(event.folded_ids)} messages" if event.folded_ids else f"masked {len(event.masked_ids)}"
        print(f"  {n}. {event.strategy}: {what}, prompt {event.tokens_before:,} -> {event.tokens_after:,} tokens")
    last = next((e.summary for e in reversed(manager.events) if e.summary), None)
    if last:
        print("\nNewest summary (first lines):")
        for line in last.splitlines()[:12]:
            print("  " + line[:110])
    print(f"\nEvery original message is stored in {db_file}")
