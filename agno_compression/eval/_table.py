"""The ``eval`` table: a few columns that fit the terminal (80 columns and up) by default, every column with
``--wide``; input labels (``_labels``) take the cells the numbers leave, never the same for two inputs."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich import box
from rich.cells import cell_len
from rich.console import Console, JustifyMethod
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from .._visible import data_text, visible_line
from ._labels import distinct_labels
from ._scoring import EvalRow

LABEL_MIN = 12
"""The fewest cells an input's label gets, however narrow the terminal."""


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


def eval_table(
    rows: Sequence[EvalRow], summary: Sequence[EvalRow], *, wide: bool, title: str | None, width: int = 100
) -> Padding:
    """The table ``eval`` prints, a blank line under it: ``NARROW`` columns and labels (``distinct_labels``) fitting
    ``width``, or every column and whole names. A setting or budget shared by every row goes into the title instead
    of a column."""
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

    values = [[cell(r) for r in [*rows, *summary]] for _, cell in columns]

    def build(labels: dict[str, str], *, label_width: int | None = None, tight: bool = False) -> Table:
        """The table; ``tight``: each number column as wide as its widest value or its header on two lines."""
        # an input's name comes from a file or a session id: shown as data, never as markup
        shown_title = data_text(title, line=True) if title else None
        table = Table(title=shown_title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
        table.add_column("input", no_wrap=True, overflow="ellipsis", max_width=label_width)
        for (name, _), cells in zip(columns, values, strict=True):
            fixed = max([_two_lines(name), *map(cell_len, cells)]) if tight else None
            justify: JustifyMethod = "left" if name == "setting" else "right"
            table.add_column(name, justify=justify, no_wrap=not tight, width=fixed)
        for r, *cells in zip([*rows, *summary], *values, strict=True):
            table.add_row(data_text(labels.get(r.input, r.input), line=True), *map(Text, cells))
        return table

    if wide:
        return Padding(build({}), (0, 0, 1, 0), expand=False)
    shown = {r.input: visible_line(r.input) for r in rows}  # labels are made to fit as the terminal shows them
    longest = max(cell_len(s) for s in shown.values())
    blank = {r.input: "" for r in [*rows, *summary]}
    room = width - _rest(build(blank))  # the cells left for labels with one-line headers
    tight = room < longest  # short of room: headers wrap between words, for the labels' sake
    label_width = max(LABEL_MIN, (width - _rest(build(blank, tight=True))) if tight else room)
    labels = distinct_labels(list(shown.values()), label_width)
    table = build({name: labels[text] for name, text in shown.items()}, label_width=label_width, tight=tight)
    return Padding(table, (0, 0, 1, 0), expand=False)


def _rest(table: Table) -> int:
    """How many cells ``table`` takes besides its labels (its first column, all blank, is as wide as its header)."""
    console = Console(width=10_000)
    return Measurement.get(console, console.options, table).maximum - cell_len(str(table.columns[0].header))


def _two_lines(header: str) -> int:
    """The fewest cells ``header`` takes on at most two lines, broken between words (``peak none`` / ``→ ours``)."""
    words = header.split()
    return min(max(cell_len(" ".join(words[:i])), cell_len(" ".join(words[i:]))) for i in range(1, len(words) + 1))
