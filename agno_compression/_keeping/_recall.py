"""The recall line: where a fold leaves a file or page out of the working set, the summary names it and how to
get it back (the tool that read it, or ``search_folded_history``), so a miss costs one call, not a wrong step."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from .._messages import one_line


class Left(Protocol):
    """What the line names of an artifact left out (``_working_set.Artifact`` is one)."""

    @property
    def key(self) -> str: ...

    @property
    def via(self) -> str: ...


RECALL = "Not held here (read again when the next step needs it, or search_folded_history):"
RECALL_LIMIT = 12
"""Most artifacts the recall line names (the newest used first)."""


def recall_line(left: Sequence[Left], room: int, count: Callable[[str], int]) -> str:
    """One line naming what the section leaves out and how to get it back, within ``room`` tokens ("" if none)."""
    named = [f"`{_bounded(a.key)}`" + (f" ({_bounded(a.via)})" if a.via else "") for a in left[:RECALL_LIMIT]]
    while named:
        more = len(left) - len(named)
        line = f"{RECALL} {', '.join(named)}" + (f" and {more} more" if more else "")
        if count(line) + 1 <= room:
            return line
        named.pop()
    return ""


def _bounded(text: str) -> str:
    """``text`` on one line without backticks, at most 120 characters: a name quoted as data."""
    return one_line(text.replace("`", "'"), 120)
