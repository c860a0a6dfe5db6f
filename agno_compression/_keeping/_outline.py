"""The outline of a file too large to keep whole: the lines that carry the most names, in file order, and the
names the lines left out use.

A name costs a few characters where the line that holds it costs a line: a file cut to a small share of its size
keeps its declarations as lines and the spelling of most of what it names (what the next step, writing code
against it, spells) as an index. Pure: text in, text out. The working set (``_working_set``) and the shortening of
kept outputs (``_shortening``) outline what they cannot hold whole.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable

from ._reading import identifiers_in

_DECLARATION = re.compile(
    r"^\s*(?:(?:export|pub|public|private|protected|static|async|abstract|final)\s+)*"
    r"(?:def|class|func|function|type|interface|struct|enum|const|var|let|fn|impl|trait|module|package|import|from)\b"
)
GAP = "⋮"
"""Marks lines of a file left out of its outline."""
INDEX = f"{GAP} names in the lines left out:"
"""Starts the line of an indexed outline that lists the names of the lines it left out."""
MAX_NAME = 60
"""Longest name the index lists (as the ledger's names: a longer one is more likely an instruction than a name)."""
LINES_SHARE = 0.2
"""Share of its size an indexed outline gives to lines; the index takes what it needs of the rest."""


def outline(text: str, max_chars: int) -> str:
    """The lines of ``text`` that carry the most distinct names per character, in file order, within
    ``max_chars``; each run of left-out lines is one ``⋮`` line. Signatures, declarations and imports carry many
    names in little text, so they come first; bodies that repeat names already kept go.

    Greedy: the line with the most names not yet kept per character (declarations count three times) is taken
    next, the first in the file on a tie. A line's value only falls as names are kept, so a line is rescored
    only when it reaches the top of the heap (lazy greedy): the same choice as rescoring every line each time.
    """
    lines = text.split("\n")
    names = [set(identifiers_in(line)) for line in lines]
    weight = [3.0 if _DECLARATION.match(line) else 1.0 for line in lines]
    seen: set[str] = set()

    def value(i: int) -> float:
        return weight[i] * len(names[i] - seen) / (len(lines[i].strip()) + 8)

    heap = [(-value(i), i) for i, found in enumerate(names) if found]
    heapq.heapify(heap)
    chosen: set[int] = set()
    used = 0
    while heap and used < max_chars:
        _, i = heapq.heappop(heap)
        now = value(i)
        if now <= 0:
            continue  # every name of this line is kept already
        if heap and (-now, i) > heap[0]:
            heapq.heappush(heap, (-now, i))  # another line is worth more now
            continue
        cost = len(lines[i]) + 1
        if used + cost > max_chars:
            continue
        chosen.add(i)
        seen |= names[i]
        used += cost
    return with_gaps(lines, chosen)


def indexed_outline(text: str, max_chars: int, lines: Callable[[str, int], str] | None = None) -> str:
    """``text`` within about ``max_chars``: its ``lines`` (``outline`` by default; prose passes its own cut, the
    beginning and end) in ``LINES_SHARE`` of them, then ``INDEX`` and the names of ``text`` the lines do not show,
    in order of first appearance (quoted, each at most ``MAX_NAME`` characters), as many as fit the rest. What the
    index does not need is left over for the caller (a working set gives it to the next file). ``""`` when nothing
    fits."""
    kept = (lines or outline)(text, int(max_chars * LINES_SHARE))
    shown = set(identifiers_in(kept))
    left = max_chars - len(kept) - len(INDEX) - 4
    rest: list[str] = []
    for name in identifiers_in(text):
        if name not in shown and len(name) < left and len(name) <= MAX_NAME:
            rest.append(name)
            left -= len(name) + 1
    # quoted like every name a summary takes from a tool output: data, not words addressed to the model
    index = f'{INDEX} "{" ".join(rest)}"' if rest else ""
    return "\n".join(part for part in (kept, index) if part)


def with_gaps(lines: list[str], chosen: set[int]) -> str:
    """The ``chosen`` lines in file order, each run of left-out lines one ``⋮`` line (``""`` when none is chosen)."""
    if not chosen:
        return ""
    out: list[str] = []
    for i, line in enumerate(lines):
        if i in chosen:
            out.append(line)
        elif not out or out[-1] != GAP:
            out.append(GAP)
    return "\n".join(out)
