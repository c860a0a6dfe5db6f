"""Shared bits of the cookbook: the model (scripted offline, Gemini with GOOGLE_API_KEY) and printouts."""

from __future__ import annotations

import os
import textwrap
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


_announced: set[str] = set()


def _once(line: str) -> None:
    """Print ``line`` the first time only (a team picks a model per member)."""
    if line not in _announced:
        _announced.add(line)
        print(line)


def pick_model(script: Callable[[list[Message], ScriptInfo], Reply | str]) -> Any:
    """Gemini when GOOGLE_API_KEY is set, else a scripted model that plays ``script`` offline."""
    if os.environ.get("GOOGLE_API_KEY"):
        from agno.models.google import Gemini

        _once("Using Gemini (GOOGLE_API_KEY is set).")
        return Gemini(id=os.environ.get("GEMINI_MODEL", "gemini-2.5-flash"))
    _once("Offline: a scripted model drives the tools (set GOOGLE_API_KEY to use Gemini).")
    return ScriptedModel(script=script)


def answer_of(result: Any) -> str:
    """The run's answer: its last assistant message (``result.content`` runs every step's text together)."""
    for message in reversed(result.messages or []):
        if message.role == "assistant" and message.content and not message.from_history:
            return str(message.content)
    return str(result.content or "")


def plural(n: int, word: str) -> str:
    """``1 fold``, ``2 folds``."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def print_answer(title: str, text: str) -> None:
    """``text`` under a separator line, wrapped between words."""
    print(f"\n── {title} " + "─" * max(3, 76 - len(title)))
    for paragraph in text.splitlines() or [""]:
        print(textwrap.fill(paragraph, width=100, break_long_words=False, break_on_hyphens=False) or "")


def print_folds(manager: CompressionManager, db_file: Path, session_id: str | None = None) -> None:
    """What was folded, and where the full record is (and the command that shows the session's page)."""
    print(f"\n{plural(len(manager.events), 'compression event')}:")
    for n, event in enumerate(manager.events, 1):
        folded, masked = len(event.folded_ids), len(event.masked_ids)
        what = f"folded {plural(folded, 'message')}" if folded else f"masked {plural(masked, 'tool output')}"
        print(f"  {n}. {event.strategy}: {what}, prompt {event.tokens_before:,} -> {event.tokens_after:,} tokens")
    last = next((e.summary for e in reversed(manager.events) if e.summary), None)
    if last:
        print("\nNewest summary (first lines):")
        for line in last.splitlines()[:12]:
            print("  " + textwrap.shorten(line, width=110, placeholder=" …"))
    print(f"\nEvery original message is stored in {db_file}")
    if session_id is not None:
        print(f"See where each fold happened: agno-compression report --db {db_file} --session {session_id}")
