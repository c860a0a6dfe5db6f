"""The outline of a file too large to keep whole: the lines that carry the most names, in file order.

Pure: text in, text out. The working set (``_working_set``) outlines a file it cannot hold whole.
"""

from __future__ import annotations

import heapq
import re

from ._reading import identifiers_in

_DECLARATION = re.compile(
    r"^\s*(?:(?:export|pub|public|private|protected|static|async|abstract|final)\s+)*"
    r"(?:def|class|func|function|type|interface|struct|enum|const|var|let|fn|impl|trait|module|package|import|from)\b"
)
GAP = "⋮"
"""Marks lines of a file left out of its outline."""


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
