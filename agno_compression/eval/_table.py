"""The ``eval`` table: a few columns that fit a 100-column terminal by default, every column with ``--wide``,
and input labels short enough for the narrow layout yet never the same for two inputs."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich import box
from rich.table import Table
from rich.text import Text

from .._visible import data_text, visible_line
from ._scoring import EvalRow

LABEL_WIDTH = 24
"""How wide ``distinct_labels`` makes a label unless told."""
_SEPARATORS = "_-/#.: "


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _sent(r: EvalRow) -> float | None:
    return r.cumulative_prompt / r.cumulative_prompt_uncompressed if r.cumulative_prompt_uncompressed else None


Column = tuple[str, Callable[[EvalRow], str]]

NARROW: tuple[Column, ...] = (
    ("peak none → ours", lambda r: f"{r.peak_prompt_uncompressed:,} → {r.peak_prompt:,}"),
    ("sent", lambda r: _ratio(_sent(r))),
    ("cost 0.1×", lambda r: _ratio(r.cost_ratio(0.1))),
    ("facts", lambda r: _ratio(r.acted_retention)),
    ("grounding", lambda r: _ratio(r.grounding)),
    ("folds", lambda r: f"{r.folds:,}"),
)
"""The default columns after input, setting and budget (``NARROW_NOTE`` says what they are)."""

NARROW_NOTE = (
    "sent: prompt tokens sent, against no compression · cost 0.1×: input cost with prompt caching (cached prefix "
    "at 0.1×), against none · facts: acted-on facts still in the last prompt · grounding: next-step grounding · "
    "--wide: every column · --json: every measure"
)

WIDE: tuple[Column, ...] = (
    ("budget", lambda r: f"{r.budget:,}"),
    ("calls", lambda r: f"{r.model_calls:,}"),
    ("peak (none)", lambda r: f"{r.peak_prompt_uncompressed:,}"),
    ("peak", lambda r: f"{r.peak_prompt:,}"),
    ("cumulative vs none", lambda r: _ratio(_sent(r))),
    ("cost cached 0.1x vs none", lambda r: _ratio(r.cost_ratio(0.1))),
    ("cost cached 0.25x vs none", lambda r: _ratio(r.cost_ratio(0.25))),
    ("acted-on facts at end", lambda r: _ratio(r.acted_retention)),
    ("next-step grounding", lambda r: _ratio(r.grounding)),
    ("over budget", lambda r: str(r.calls_over_budget)),
    ("folds", lambda r: str(r.folds)),
    ("masks", lambda r: str(r.masks)),
    ("summarizer calls", lambda r: str(r.summarizer_calls)),
    ("pair violations", lambda r: str(r.pair_violations)),
    ("fact retention per summary", lambda r: _ratio(r.fact_retention)),
)
"""Every column (``--wide``)."""


def _common_start(texts: Sequence[str]) -> str:
    """The longest start every one of ``texts`` shares, character by character."""
    first, last = min(texts), max(texts)
    n = next((i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), min(len(first), len(last)))
    return first[:n]


def _trim_common(names: list[str]) -> list[str]:
    """``names`` without the start and end they all share (cut at a separator, never inside a word)."""
    if len(names) < 2:
        return names
    prefix = _common_start(names)
    start = max((prefix.rfind(c) for c in _SEPARATORS), default=-1) + 1 if prefix not in names else 0
    suffix = _common_start([n[::-1] for n in names])[::-1]
    end = max((suffix[::-1].rfind(c) for c in _SEPARATORS), default=-1) + 1 if suffix not in names else 0
    trimmed = [n[start : len(n) - end] for n in names]
    return trimmed if all(trimmed) and len(set(trimmed)) == len(names) else names


def _window(text: str, at: int, width: int) -> str:
    """``width`` characters of ``text`` from just before position ``at``, with an ellipsis where it was cut."""
    if len(text) <= width:
        return text
    inner = width - 2
    start = max(0, min(at - 3, len(text) - inner))  # a few characters before ``at``, then what differs
    if start == 0:
        return text[: width - 1] + "…"
    if start + inner >= len(text):
        return "…" + text[len(text) - width + 1 :]
    return "…" + text[start : start + inner] + "…"


def distinct_labels(names: Sequence[str], width: int = LABEL_WIDTH) -> dict[str, str]:
    """A label of at most ``width`` characters for each name; two different names never share one."""
    unique = list(dict.fromkeys(names))
    core = dict(zip(unique, _trim_common(unique), strict=True))
    labels = {n: _window(core[n], len(core[n]), width) for n in unique}  # the end: usually the distinct part
    by_label: dict[str, list[str]] = {}
    for n in unique:
        by_label.setdefault(labels[n], []).append(n)
    for group in (g for g in by_label.values() if len(g) > 1):
        for n in group:
            others = [core[o] for o in group if o != n]
            differ = min(len(_common_start([core[n], o])) for o in others)
            labels[n] = _window(core[n], differ, width)
    taken: dict[str, int] = {}
    for n in unique:  # the last resort: number what is still the same
        k = taken[labels[n]] = taken.get(labels[n], 0) + 1
        if k > 1:
            labels[n] = f"{labels[n][: width - len(str(k)) - 1]}#{k}"
    return labels


def eval_table(
    rows: Sequence[EvalRow], summary: Sequence[EvalRow], *, wide: bool, title: str | None, width: int = 100
) -> Table:
    """The table ``eval`` prints: ``NARROW`` columns and short labels fitting ``width``, or every column and whole
    names. A setting or budget shared by every row goes into the title instead of a column."""
    columns = list(WIDE if wide else NARROW)
    settings, budgets = {r.setting for r in rows}, {r.budget for r in rows}
    notes = []
    if not wide and len(budgets) == 1:
        notes.append(f"budget {next(iter(budgets)):,}")
    elif not wide:
        columns.insert(0, ("budget", lambda r: f"{r.budget:,}"))
    if not wide and len(settings) == 1:
        notes.append(next(iter(settings)))
    else:
        columns.insert(0, ("setting", lambda r: r.setting))
    title = " · ".join(t for t in [title, *notes] if t) or None

    def build(labels: dict[str, str]) -> Table:
        # an input's name comes from a file or a session id: shown as data, never as markup
        shown_title = data_text(title, line=True) if title else None
        table = Table(title=shown_title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
        table.add_column("input", no_wrap=True)
        for name, _ in columns:
            table.add_column(name, justify="left" if name == "setting" else "right", no_wrap=True)
        for r in [*rows, *summary]:
            table.add_row(data_text(labels.get(r.input, r.input), line=True), *(Text(cell(r)) for _, cell in columns))
        return table

    if wide:
        return build({})
    from rich.console import Console

    console = Console(width=10_000)
    rest = build({r.input: "" for r in rows}).__rich_measure__(console, console.options).maximum
    label_width = max(12, min(40, width - rest))
    shown = {r.input: visible_line(r.input) for r in rows}  # labels are made to fit as the terminal shows them
    labels = distinct_labels(list(shown.values()), label_width)
    return build({name: labels[text] for name, text in shown.items()})
