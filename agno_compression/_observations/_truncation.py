"""Shortening of large tool outputs (observations) before they reach the model.

Two tools live here, both pure and deterministic:

``truncate_output``
    Type-aware truncation. An output that parses as a JSON or Python-literal
    list, tuple, set or dict is re-rendered with the first items, a count of the
    omitted ones and (for sequences) the last items; long inner values are
    shortened so the result stays within ``max_chars``. Any other text keeps its
    beginning and end, cut at whole lines when the text is made of lines, with a
    notice giving the total size and what was left out. CSV-like tables keep
    their header row and are cut at whole rows.

``shorten_text``
    A plain head + tail cut with a one-line notice, for callers that need a hard
    bound (the fold manager shortening a giant tool result it keeps).

Lengths are counted in characters (code points). Cuts never split a surrogate
pair, a base character from its combining marks, or a zero-width-joiner sequence
(within a few characters of slack).
"""

from __future__ import annotations

from ._cuts import (
    _LINE_FILL,
    MIN_MAX_CHARS,
    _check_int,
    _check_text,
    _cut_back,
    _cut_forward,
    _head_cut,
    _head_tail_budgets,
    _is_table,
    _join_around,
    _tail_cut,
    _text_notice,
)
from ._structure import _parse_structure, _Style, _truncate_structure

__all__ = ["MIN_MAX_CHARS", "shorten_text", "truncate_output"]


def _truncate_text(text: str, head_budget: int, tail_budget: int) -> str:
    """Keep the beginning and the end of ``text`` (whole lines or rows where possible) around a notice."""
    table = _is_table(text, head_budget)
    min_fill = 0.0 if table else _LINE_FILL
    head = _head_cut(text, head_budget, min_fill)
    tail = _tail_cut(text, tail_budget, min_fill)
    return _join_around(head[0], _text_notice(text, head, tail, table), tail[0])


# --------------------------------------------------------------------------- structure mode


def truncate_output(
    output: str,
    max_chars: int = 2000,
    *,
    list_items: int = 10,
    list_tail: int = 2,
    dict_items: int = 10,
    head_chars: int | None = None,
    tail_chars: int | None = None,
) -> str:
    """Shorten a tool or code-execution output to about ``max_chars`` characters, keeping its shape.

    * Output of at most ``max_chars`` characters is returned unchanged (so ``""`` gives ``""``).
    * Output that parses as a JSON or Python-literal list, tuple, set or dict is re-rendered under a
      header line naming its kind and size: lists show the first ``list_items`` items, a line counting
      the omitted ones and the last ``list_tail``; dicts show the first ``dict_items`` keys and a count
      of the rest. Long inner strings and containers are shortened too, so the result fits ``max_chars``.
    * Any other text keeps its first ``head_chars`` and last ``tail_chars`` characters (default
      ``max_chars // 2`` each; if only one is given the other takes at most the rest), cut at whole lines
      when that keeps at least half of each budget, around a notice with the total characters and lines
      and how much was omitted. CSV-like tables keep their header row and are cut at whole rows.

    The result is at most ``max_chars`` plus the notice (about 150 characters) long.

    Raises:
        ConfigError: ``output`` is not a ``str``, ``max_chars`` < 100, ``list_items`` or ``dict_items`` < 1,
            ``list_tail`` < 0, or ``head_chars + tail_chars`` (or the one given) is not between 1 and
            ``max_chars``.
    """
    _check_text("output", output)
    _check_int("max_chars", max_chars, MIN_MAX_CHARS)
    _check_int("list_items", list_items, 1)
    _check_int("list_tail", list_tail, 0)
    _check_int("dict_items", dict_items, 1)
    head_budget, tail_budget = _head_tail_budgets(max_chars, head_chars, tail_chars)
    if len(output) <= max_chars:
        return output
    parsed = _parse_structure(output)
    if parsed is not None:
        value, as_json = parsed
        style = _Style(list_items, list_tail, dict_items, as_json)
        return _truncate_structure(value, len(output), max_chars, style)
    return _truncate_text(output, head_budget, tail_budget)


def _shorten_notice(omitted: int, total: int) -> str:
    """The one-line notice of ``shorten_text``, with the newlines around it."""
    return f"\n[... {omitted:,} of {total:,} chars omitted ...]\n"


def shorten_text(text: str, max_chars: int) -> str:
    """Cut ``text`` to its beginning and end around a one-line notice; unchanged if it fits ``max_chars``.

    Plain character cut (no parsing, no line logic), deterministic, unicode-safe. The notice counts
    against ``max_chars``, so the result is at most ``max(max_chars, len(notice))`` characters; the head
    gets the extra character when the remaining budget is odd.

    Raises:
        ConfigError: ``text`` is not a ``str`` or ``max_chars`` is not an int >= 0.
    """
    _check_text("text", text)
    _check_int("max_chars", max_chars, 0)
    total = len(text)
    if total <= max_chars:
        return text
    budget = max(0, max_chars - len(_shorten_notice(total, total)))
    head_end = _cut_back(text, (budget + 1) // 2)
    tail_start = _cut_forward(text, total - budget // 2)
    return text[:head_end] + _shorten_notice(tail_start - head_end, total) + text[tail_start:]
