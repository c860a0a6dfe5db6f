"""``truncate_output``'s structure mode: a JSON or Python-literal list, tuple, set or dict re-rendered
with its first items, a count of the omitted ones and (for sequences) its last items, within a budget.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ._cuts import (
    _JSON_PARSE_LIMIT,
    _LITERAL_PARSE_LIMIT,
    _MAX_DEPTH,
    _MIN_CHILD,
    _MIN_ENTRY,
    Renderer,
    _cut_back,
    _plural,
)


@dataclass(frozen=True)
class _Style:
    """How a parsed structure is rendered back to text."""

    list_items: int
    list_tail: int
    dict_items: int
    as_json: bool

    def scalar(self, value: Any) -> str:
        """The text of one scalar value in the source's own notation."""
        if self.as_json:
            return json.dumps(value, ensure_ascii=False)
        return repr(value)


@dataclass(frozen=True)
class _Shape:
    """The punctuation and counts of one rendered container."""

    opening: str
    closing: str
    separator: str
    noun: str
    head: int
    tail: int


@dataclass(frozen=True)
class _Rendered:
    """A rendered container: its text, whether a shown value was shortened, and how many entries were shown."""

    text: str
    shortened: bool
    head: int
    tail: int
    total: int

    @property
    def omitted(self) -> int:
        """How many entries the omission marker stands for."""
        return self.total - self.head - self.tail


def _parse_structure(output: str) -> tuple[Any, bool] | None:
    """Parse ``output`` as a JSON or Python-literal container; return ``(value, is_json)`` or ``None``."""
    source = output.strip()
    if not source or len(source) > _JSON_PARSE_LIMIT or source[0] not in "[{(":
        return None
    if source[0] in "[{":
        try:
            value = json.loads(source)
        except (ValueError, RecursionError):
            pass
        else:
            return value, True  # JSON that starts with [ or { is a list or a dict
    if len(source) > _LITERAL_PARSE_LIMIT:
        return None
    try:
        value = ast.literal_eval(source)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, OverflowError):
        return None
    return (value, False) if isinstance(value, (list, tuple, set, frozenset, dict)) else None


def _clip(text: str, budget: int) -> str:
    """``text`` cut to ``budget`` (at least 4; every caller gives 8 or more) characters, ending in ``...`` when cut."""
    if len(text) <= budget:
        return text
    return text[: _cut_back(text, budget - 3)] + "..."


def _summary_token(value: Any, budget: int) -> str:
    """A stand-in for a container too deep or too large to show, e.g. ``[... 500 items]`` or ``[...]``."""
    noun = "key" if isinstance(value, dict) else "item"
    opening, closing = ("(", ")") if isinstance(value, tuple) else ("[", "]")
    if isinstance(value, (dict, set, frozenset)):
        opening, closing = "{", "}"
    token = f"{opening}... {_plural(len(value), noun)}{closing}"
    return token if len(token) <= budget else _clip(f"{opening}...{closing}", budget)


def _render_string(value: str | bytes, budget: int, style: _Style) -> tuple[str, bool]:
    """A string or bytes literal, shortened to fit ``budget`` with a count of the omitted characters."""
    if len(value) + 2 <= budget:
        full = style.scalar(value)
        if len(full) <= budget:
            return full, False
    unit = "bytes" if isinstance(value, bytes) else "chars"
    keep = budget - len(f"...(+{len(value):,} {unit})") - 2
    while keep > 0:
        if isinstance(value, str):
            keep = _cut_back(value, keep)
        prefix = style.scalar(value[:keep])
        marker = f"...(+{len(value) - keep:,} {unit})"
        excess = len(prefix) + len(marker) - budget
        if excess <= 0:
            return prefix + marker, True
        keep -= excess
    return _clip(f"<{len(value):,} {unit}>", budget), True


def _allocate(renderers: Sequence[Renderer], budget: int) -> list[tuple[str, bool]]:
    """Render items within a shared ``budget``: equal shares first, then spare room goes to the shortened ones."""
    share = budget // len(renderers)
    rendered = [render(share) for render in renderers]
    shortened = [index for index, (_, cut) in enumerate(rendered) if cut]
    if len(renderers) == 1 or not shortened:
        return rendered
    # Shortened items may use their whole share again; only what the others left unused is spare.
    spare = budget - share * len(shortened) - sum(len(text) for text, cut in rendered if not cut)
    extra = spare // len(shortened)
    if extra > 0:
        for index in shortened:
            rendered[index] = renderers[index](share + extra)
    return rendered


def _fit_counts(shape: _Shape, total: int, budget: int, min_child: int) -> tuple[int, int] | None:
    """The shown head/tail counts, reduced until every shown entry gets at least ``min_child`` characters."""
    head, tail = shape.head, shape.tail
    while head + tail > 0:
        parts = head + tail + (1 if head + tail < total else 0)
        overhead = len(shape.opening) + len(shape.closing) + len(shape.separator) * (parts - 1)
        overhead += len(_omission_marker(total - head - tail, shape.noun))
        if (budget - overhead) // (head + tail) >= min_child:
            return head, tail
        if head > max(1, tail):
            head -= 1
        elif tail > 0:
            tail -= 1
        else:
            head -= 1
    return None


def _omission_marker(omitted: int, noun: str) -> str:
    """The entry standing for the items left out, e.g. ``... 488 more items ...``."""
    return f"... {_plural(omitted, 'more ' + noun)} ..." if omitted > 0 else ""


def _render_entries(
    entries: Sequence[Any], render_entry: Callable[[Any, int], tuple[str, bool]], shape: _Shape, budget: int
) -> _Rendered | None:
    """Lay out the first/last entries of a container with an omission marker, within ``budget``."""
    min_child = _MIN_ENTRY if shape.noun == "key" else _MIN_CHILD
    fitted = _fit_counts(shape, len(entries), budget, min_child)
    if fitted is None:
        return None
    head, tail = fitted
    chosen = list(entries[:head]) + list(entries[len(entries) - tail :])
    marker = _omission_marker(len(entries) - head - tail, shape.noun)
    parts_count = len(chosen) + (1 if marker else 0)
    overhead = len(shape.opening) + len(shape.closing) + len(shape.separator) * (parts_count - 1) + len(marker)
    renderers = [_bind(render_entry, entry) for entry in chosen]
    rendered = _allocate(renderers, budget - overhead)
    texts = [text for text, _ in rendered]
    if marker:
        texts.insert(head, marker)
    text = shape.opening + shape.separator.join(texts) + shape.closing
    return _Rendered(text, any(cut for _, cut in rendered), head, tail, len(entries))


def _bind(render_entry: Callable[[Any, int], tuple[str, bool]], entry: Any) -> Renderer:
    """``render_entry`` with its entry fixed, leaving only the budget."""
    return lambda budget: render_entry(entry, budget)


def _ordered_items(value: list[Any] | tuple[Any, ...] | set[Any] | frozenset[Any]) -> list[Any]:
    """The items of a sequence in display order (sets sorted by their text, so output is deterministic)."""
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return list(value)


def _brackets(value: Any, style: _Style) -> tuple[str, str]:
    """Opening and closing brackets of a container in the source's notation."""
    if isinstance(value, dict):
        return "{", "}"
    if isinstance(value, tuple):
        return "(", ",)" if len(value) == 1 else ")"
    if isinstance(value, (set, frozenset)) and not style.as_json:
        return "{", "}"
    return "[", "]"


def _container_shape(value: Any, style: _Style, *, block: bool) -> _Shape:
    """The requested (not yet fitted) shape of a container, inline or one entry per line."""
    opening, closing = _brackets(value, style)
    if block:
        opening, closing = opening + "\n  ", "\n" + closing.lstrip(",")
    separator = ",\n  " if block else ", "
    if isinstance(value, dict):
        return _Shape(opening, closing, separator, "key", min(len(value), style.dict_items), 0)
    head = min(len(value), style.list_items)
    tail = min(style.list_tail, len(value) - head)
    return _Shape(opening, closing, separator, "item", head, tail)


def _render_container(value: Any, budget: int, style: _Style, depth: int, *, block: bool) -> _Rendered | None:
    """Render a list, tuple, set or dict within ``budget``; ``None`` when not even one entry fits."""
    shape = _container_shape(value, style, block=block)
    if isinstance(value, dict):
        entries: list[Any] = list(value.items())

        def render_entry(entry: Any, entry_budget: int) -> tuple[str, bool]:
            return _render_pair(entry, entry_budget, style, depth)

    else:
        entries = _ordered_items(value)

        def render_entry(entry: Any, entry_budget: int) -> tuple[str, bool]:
            return _render(entry, entry_budget, style, depth + 1)

    return _render_entries(entries, render_entry, shape, budget)


def _render_pair(pair: tuple[Any, Any], budget: int, style: _Style, depth: int) -> tuple[str, bool]:
    """One ``key: value`` entry of a dict within ``budget`` (the key gets at most half)."""
    key, key_cut = _render(pair[0], max(budget // 2, 3), style, depth + 1)
    value, value_cut = _render(pair[1], budget - len(key) - 2, style, depth + 1)
    return _clip(f"{key}: {value}", budget), key_cut or value_cut


def _render(value: Any, budget: int, style: _Style, depth: int) -> tuple[str, bool]:
    """Render any parsed value inline within ``budget``; returns the text and whether it was shortened."""
    if isinstance(value, (str, bytes)):
        return _render_string(value, budget, style)
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        if not value:
            return _clip(style.scalar(value), budget), False
        rendered = None if depth >= _MAX_DEPTH else _render_container(value, budget, style, depth, block=False)
        if rendered is None:
            return _summary_token(value, budget), True
        return rendered.text, rendered.shortened or rendered.omitted > 0
    text = style.scalar(value)
    return _clip(text, budget), len(text) > budget


def _structure_header(value: Any, source_chars: int, rendered: _Rendered | None) -> str:
    """The first line of a truncated structure: kind, size, and what is shown."""
    noun = "key" if isinstance(value, dict) else "item"
    parts = [f"{type(value).__name__} with {_plural(len(value), noun)} ({source_chars:,} chars)"]
    if rendered is not None and rendered.omitted > 0:
        shown = f"showing the first {rendered.head:,}"
        parts.append(shown + (f" and the last {rendered.tail:,}" if rendered.tail else ""))
    if rendered is None or rendered.shortened:
        parts.append("long values shortened")
    return "[" + "; ".join(parts) + "]"


def _truncate_structure(value: Any, source_chars: int, max_chars: int, style: _Style) -> str:
    """Render a parsed container within ``max_chars``, one top-level entry per line, under a header line."""
    count_digits = len(f"{len(value):,}")
    reserve = len(_structure_header(value, source_chars, None)) + len("; showing the first  and the last \n")
    reserve += 2 * count_digits
    rendered = _render_container(value, max_chars - reserve, style, 0, block=True)
    header = _structure_header(value, source_chars, rendered)
    body = rendered.text if rendered is not None else _summary_token(value, max_chars)
    return f"{header}\n{body}"


# --------------------------------------------------------------------------- public API
