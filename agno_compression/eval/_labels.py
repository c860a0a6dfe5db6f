"""The ``eval`` table's input labels: what tells one input from the others, in the cells a terminal has for them.

An input is named ``source#session`` (a database's file stem and a session id, a recording's file stem and its
number) or by its source alone. A label puts the source first, whole where it fits, then the session in the cells
left. What is cut is what an input shares with the others, from the middle: a source keeps the start or end (a whole
word where there is room) that no other source has, a session the start or end that no other session of its source
has, and where two differ only in the middle, the window where they differ. Two inputs never share a label.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len

ELLIPSIS = "…"
_SEPARATORS = "_-/\\#.: "
_FOLDERS = "/\\"
MIN_KEPT = 4
"""The fewest characters a shortened session keeps on the side that tells it apart (``497a…``, ``…4595``)."""


def _head(text: str, cells: int) -> str:
    """The longest start of ``text`` at most ``cells`` wide."""
    width = 0
    for i, char in enumerate(text):
        width += cell_len(char)
        if width > cells:
            return text[:i]
    return text


def _tail(text: str, cells: int) -> str:
    """The longest end of ``text`` at most ``cells`` wide."""
    return _head(text[::-1], cells)[::-1]


def _shared(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` start with alike."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _word_end(text: str, at: int) -> int:
    """Where the word holding position ``at`` ends (the next separator after it, or the end of ``text``)."""
    return min((i for i in (text.find(c, at + 1) for c in _SEPARATORS) if i >= 0), default=len(text))


def _apart(text: str, others: Sequence[str], *, words: bool) -> tuple[int, int]:
    """How many characters of ``text``'s start, and of its end, tell it from every one of ``others`` (0 with none;
    more than ``len(text)`` when no start or end does). With ``words``, up to the end of the word where it differs."""
    if not others:
        return 0, 0
    reverse = text[::-1]
    head = 1 + max(_shared(text, o) for o in others)
    tail = 1 + max(_shared(reverse, o[::-1]) for o in others)
    if words:
        head = _word_end(text, head - 1) if head <= len(text) else head
        tail = _word_end(reverse, tail - 1) if tail <= len(text) else tail
    return head, tail


def _split(text: str, room: int, head_need: int, tail_need: int) -> str | None:
    """``text``'s start and end in ``room`` cells around an ellipsis, with its first ``head_need`` or last
    ``tail_need`` characters: half and half if that keeps them, else what keeps the side that needs fewer."""
    tail_first = room - cell_len(text[-tail_need:]) if tail_need else room
    tries = [room // 2, *sorted((tail_first, cell_len(text[:head_need])), reverse=tail_need < head_need)]
    for cells in (c for c in tries if 0 <= c <= room):
        head = _head(text, cells)
        tail = _tail(text, room - cell_len(head))
        if len(head) >= head_need or len(tail) >= tail_need:
            return head + ELLIPSIS + tail
    return None


def _window(text: str, at: int, width: int) -> str | None:
    """``width`` cells of ``text`` from the start of the word where position ``at`` is (the word before, where
    ``at`` is a separator), an ellipsis where it is cut; ``None`` when that is its start or would not reach ``at``."""
    if at >= len(text):
        return None
    word = len(text[:at].rstrip(_SEPARATORS)) if text[at] in _SEPARATORS else at
    start = max(text.rfind(c, 0, word) for c in _SEPARATORS) + 1
    inside = _head(text[start:], width - 2)
    if start == 0 or start + len(inside) <= at:
        return None
    return ELLIPSIS + _tail(text, width - 1) if start + len(inside) >= len(text) else ELLIPSIS + inside + ELLIPSIS


def shorten(text: str, width: int, others: Sequence[str] = ()) -> str:
    """``text`` in at most ``width`` cells: whole where it fits, else its start and end around an ellipsis, keeping
    a start or end that tells it from ``others`` (whole words where there is room), else the window where it differs
    from the nearest of them."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    head, tail = _apart(text, others, words=False)
    found = (
        _split(text, width - 1, *_apart(text, others, words=True))
        or _window(text, head - 1, width)
        or _split(text, width - 1, head, tail)
    )
    return found or _head(text, width - 1) + ELLIPSIS


def _least(text: str, others: Sequence[str]) -> int:
    """The fewest cells ``shorten`` shows ``text`` in and still tells it from ``others``: one (an ellipsis) with no
    others, else its start or end that differs, at least ``MIN_KEPT`` characters, and the ellipsis."""
    if not others:
        return min(cell_len(text), 1)
    head, tail = _apart(text, others, words=False)
    return min(cell_len(text), max(MIN_KEPT, min(head, tail)) + 1)


def _without_common_folders(sources: list[str]) -> dict[str, str]:
    """Each source without the folders every source in a folder starts with (``/tmp/out/a/run`` and
    ``/tmp/out/b/run``: ``a/run`` and ``b/run``; a file's stem has no folder)."""
    paths = [s for s in sources if any(c in s for c in _FOLDERS)]
    if len(paths) < 2:
        return {s: s for s in sources}
    start = min(_shared(paths[0], s) for s in paths[1:])
    cut = max(paths[0].rfind(c, 0, start) for c in _FOLDERS) + 1
    return {s: s[cut:] if s in paths else s for s in sources}


def distinct_labels(names: Sequence[str], width: int) -> dict[str, str]:
    """A label of at most ``width`` cells for each of ``names``: the source first, then the session; two different
    names never share one."""
    unique = list(dict.fromkeys(names))
    parts = {n: tuple(n.split("#", 1)) if "#" in n else (n,) for n in unique}
    core = _without_common_folders(list(dict.fromkeys(p[0] for p in parts.values())))
    sessions: dict[str, list[str]] = {}
    for part in parts.values():
        sessions.setdefault(part[0], []).extend(part[1:])
    shown: dict[str, str] = {}
    for source, own in sessions.items():  # a source's cells: all it needs, but room for each session to differ
        peers = [c for s, c in core.items() if s != source]
        least = max((_least(t, [o for o in own if o != t]) + 1 for t in own), default=0)
        cells = max(width - least, min(cell_len(core[source]), width // 2))
        shown[source] = shorten(core[source], cells, peers)
    labels = {}
    for n, (source, *session) in parts.items():
        if not session:
            labels[n] = shown[source]
            continue
        siblings = [o for o in sessions[source] if o != session[0]]
        labels[n] = f"{shown[source]}#{shorten(session[0], width - cell_len(shown[source]) - 1, siblings)}"
    taken: dict[str, int] = {}
    for n in unique:  # the last resort: number what is still the same
        k = taken[labels[n]] = taken.get(labels[n], 0) + 1
        if k > 1:
            labels[n] = _head(labels[n], width - len(str(k)) - 1) + f"~{k}"
    return labels
