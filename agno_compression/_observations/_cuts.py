"""Cutting text without breaking it: at whole lines where possible, never inside a character sequence.

Shared by ``truncate_output``, its structure mode and the tiered policy. Lengths are counted in
characters (code points). Cuts never split a surrogate pair, a base character from its combining
marks, or a zero-width-joiner sequence (within a few characters of slack).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

from .._exceptions import ConfigError

MIN_MAX_CHARS = 100
"""The smallest ``max_chars`` that ``truncate_output`` accepts."""

_JSON_PARSE_LIMIT = 20_000_000  # longer outputs are not parsed as JSON (json.loads: ~0.1 s for 15 MB)
_LITERAL_PARSE_LIMIT = 2_000_000  # longer outputs are not parsed as Python literals (~0.8 s for 3 MB)
_MAX_DEPTH = 12  # deeper containers are rendered as a one-token summary
_MIN_CHILD = 8  # smallest budget worth giving one rendered item
_MIN_ENTRY = 16  # smallest budget worth giving one rendered ``key: value`` entry
_LINE_FILL = 0.5  # a whole-line cut must keep at least this share of its budget
_CUT_SLACK = 8  # how far a cut may move to avoid splitting a character sequence
_CSV_DELIMITERS = (",", "\t", ";", "|")
_CSV_SAMPLE = 20  # lines inspected to recognise a table
_ZWJ = 0x200D

Renderer = Callable[[int], tuple[str, bool]]


# --------------------------------------------------------------------------- validation


def _check_text(name: str, value: object) -> str:
    """Return ``value`` if it is a ``str``, else raise ``ConfigError``."""
    if not isinstance(value, str):
        raise ConfigError(f"{name} must be a str, got {type(value).__name__}: {value!r:.80}")
    return value


def _check_int(name: str, value: object, minimum: int) -> int:
    """Return ``value`` if it is an int (not bool) of at least ``minimum``, else raise ``ConfigError``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an int, got {value!r}")
    if value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {value!r}")
    return value


def _head_tail_budgets(max_chars: int, head_chars: int | None, tail_chars: int | None) -> tuple[int, int]:
    """Resolve the text-mode head and tail budgets of ``truncate_output`` and check they fit ``max_chars``."""
    half = max_chars // 2
    head = half if head_chars is None else _check_int("head_chars", head_chars, 0)
    tail = half if tail_chars is None else _check_int("tail_chars", tail_chars, 0)
    # the other side takes at most the rest, and nothing when one side alone is over max_chars (then rejected)
    if head_chars is not None and tail_chars is None:
        tail = max(0, min(half, max_chars - head))
    if tail_chars is not None and head_chars is None:
        head = max(0, min(half, max_chars - tail))
    if head + tail > max_chars or head + tail < 1:
        raise ConfigError(
            f"head_chars + tail_chars must be between 1 and max_chars ({max_chars}), "
            f"got head_chars={head_chars!r}, tail_chars={tail_chars!r} ({head} + {tail})"
        )
    return head, tail


# --------------------------------------------------------------------------- unicode-safe cuts


def _is_attached(char: str) -> bool:
    """True when ``char`` belongs to the character before it (mark, joiner, selector, modifier, low surrogate)."""
    code = ord(char)
    # variation selectors (U+FE00-FE0F, U+E0100-E01EF) are marks (Mn); skin-tone modifiers are symbols (Sk)
    return (
        unicodedata.category(char).startswith("M")
        or code == _ZWJ
        or 0xDC00 <= code <= 0xDFFF
        or 0x1F3FB <= code <= 0x1F3FF
    )


def _splits_cluster(text: str, index: int) -> bool:
    """True when cutting ``text`` at ``index`` would separate two code points that display as one."""
    if index <= 0 or index >= len(text):
        return False
    before = ord(text[index - 1])
    return _is_attached(text[index]) or before == _ZWJ or 0xD800 <= before <= 0xDBFF


def _cut_back(text: str, index: int) -> int:
    """Move a cut at ``index`` left (by at most a few characters) until it splits no character sequence."""
    for _ in range(_CUT_SLACK):
        if not _splits_cluster(text, index):
            break
        index -= 1
    return index


def _cut_forward(text: str, index: int) -> int:
    """Move a cut at ``index`` right (by at most a few characters) until it splits no character sequence."""
    for _ in range(_CUT_SLACK):
        if not _splits_cluster(text, index):
            break
        index += 1
    return index


# --------------------------------------------------------------------------- text mode


def _plural(count: int, noun: str) -> str:
    """``count`` with ``noun``, pluralised: ``1 key``, ``1,000 items``."""
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def _count_lines(text: str) -> int:
    """Number of lines in ``text`` (a final newline does not start a new line)."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _head_cut(text: str, budget: int, min_fill: float) -> tuple[str, bool]:
    """The start of ``text`` within ``budget`` (< ``len(text)``): whole lines if they fill ``min_fill`` of it, else
    characters.

    Returns the kept text and whether it ends at a line boundary.
    """
    if budget <= 0:
        return "", False
    newline = text.rfind("\n", 0, budget)
    if newline >= 0 and newline + 1 >= max(1.0, budget * min_fill):
        return text[: newline + 1], True
    return text[: _cut_back(text, budget)], False


def _tail_cut(text: str, budget: int, min_fill: float) -> tuple[str, bool]:
    """The end of ``text`` within ``budget`` (< ``len(text)``): whole lines if they fill ``min_fill`` of it, else
    characters.

    Returns the kept text and whether it starts at a line boundary.
    """
    if budget <= 0:
        return "", False
    start = len(text) - budget
    newline = text.find("\n", start - 1)
    if newline >= 0 and len(text) - (newline + 1) >= max(1.0, budget * min_fill):
        return text[newline + 1 :], True
    return text[_cut_forward(text, start) :], False


def _is_table(text: str, head_budget: int) -> bool:
    """True when ``text`` looks like a delimited table (CSV, TSV, ...) whose header row fits ``head_budget``."""
    first_newline = text.find("\n")
    if first_newline <= 0 or first_newline + 1 > head_budget:
        return False
    lines = [line.rstrip("\r") for line in text.split("\n", _CSV_SAMPLE)[:_CSV_SAMPLE]]
    lines = [line for line in lines if line]
    if len(lines) < 3:
        return False
    for delimiter in _CSV_DELIMITERS:
        columns = lines[0].count(delimiter)
        if columns == 0:
            continue
        matching = sum(1 for line in lines[1:] if line.count(delimiter) == columns)
        if matching >= 0.8 * (len(lines) - 1):
            return True
    return False


def _describe_side(part: str, whole_lines: bool, unit: str = "line") -> str:
    """How much of one side is shown, e.g. ``14 lines``, ``11 rows`` or ``1,000 chars``."""
    if whole_lines:
        return _plural(_count_lines(part), unit)
    return _plural(len(part), "char")


def _text_notice(text: str, head: tuple[str, bool], tail: tuple[str, bool], table: bool) -> str:
    """The one-line notice put between the kept head and tail of a truncated text."""
    total, lines = len(text), _count_lines(text)
    omitted = total - len(head[0]) - len(tail[0])
    omitted_lines = max(0, lines - _count_lines(head[0]) - _count_lines(tail[0]))
    if table:
        subject = f"table truncated: {_plural(total, 'char')}, a header and {_plural(lines - 1, 'row')}"
        # a table's header fits the head budget and its cut needs no minimum fill: the head is whole rows
        shown_head = f"the header and the first {_plural(_count_lines(head[0]) - 1, 'row')}"
        shown_tail = _describe_side(tail[0], tail[1], "row")
        unit = "whole row"
    else:
        subject = f"output truncated: {_plural(total, 'char')} in {_plural(lines, 'line')}"
        shown_head = "the first " + _describe_side(head[0], head[1])
        shown_tail = _describe_side(tail[0], tail[1])
        unit = "whole line"
    gap = _plural(omitted, "char") + (f" ({_plural(omitted_lines, unit)})" if omitted_lines else "")
    return f"[... {subject}; showing {shown_head} and the last {shown_tail}; omitted {gap} ...]"


def _join_around(head: str, notice: str, tail: str) -> str:
    """``head``, the notice on a line of its own, then ``tail``."""
    separator = "" if not head or head.endswith("\n") else "\n"
    return f"{head}{separator}{notice}\n{tail}"
