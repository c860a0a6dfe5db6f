"""What ``agno-compression inspect`` prints, laid out for a terminal of a given width (pure: no printing).

A table is chosen only when its columns fit as they need to: every id, number and name whole on its line (a header
may wrap between its words) and the summary column at least ``SUMMARY_MIN`` wide. Otherwise each session or fold is
a block of lines that wrap. Either way no line is wider than the terminal and no id is cut. Every text read from the
database goes through ``data_text`` (``_visible``): shown, never interpreted, never markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ._visible import data_text
from .viewer._page import plural
from .viewer._timeline import REASONS

SUMMARY_MIN = 40
"""The narrowest summary column worth a table: below it the blocks read better."""
SUMMARY_LINES = 6
"""Lines of each summary shown without ``--full``."""


def _width(cell: Text) -> int:
    return max((line.cell_len for line in cell.split("\n")), default=0)


def fitted_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Text]],
    width: int,
    *,
    wrap: int | None = None,
    numbers: frozenset[int] = frozenset(),
    **options: Any,
) -> Table | None:
    """A table whose columns are as wide as their widest cell (a header wraps between its words) and whose ``wrap``
    column, if any, takes the rest, at least ``SUMMARY_MIN``; ``None`` when that is wider than ``width``. The
    ``numbers`` columns are right-aligned."""

    def build(wrap_width: int | None) -> Table:
        table = Table(**options)
        for i, header in enumerate(headers):
            if i == wrap:
                table.add_column(header, width=wrap_width, min_width=SUMMARY_MIN, overflow="fold")
                continue
            words = max(len(word) for word in header.split())
            cells = max((_width(row[i]) for row in rows), default=0)
            table.add_column(header, width=max(words, cells), justify="right" if i in numbers else "left")
        for row in rows:
            table.add_row(*row)
        return table

    probe = build(SUMMARY_MIN if wrap is not None else None)
    measuring = Console(width=1_000_000)
    if Measurement.get(measuring, measuring.options, probe).minimum > width:
        return None
    return build(None)


def _list_row(r: dict[str, Any]) -> list[Text]:
    numbers = [Text(f"{int(r[k]):,}") for k in ("runs", "messages", "folds", "tokens_saved")]
    return [data_text(r["session_id"], line=True), data_text(r["owner"], line=True), *numbers]


def session_list(rows: Sequence[dict[str, Any]], title: str, width: int) -> list[RenderableType]:
    """The sessions (``session_rows``), newest first: a table, or a block per session where it does not fit."""
    headers = ("session_id", "owner", "runs", "messages", "folds", "tokens_saved")
    table = fitted_table(headers, [_list_row(r) for r in rows], width, numbers=frozenset({2, 3, 4, 5}))
    head = data_text(title, line=True)
    if table is not None:
        return [head, table]
    out: list[RenderableType] = [head]
    for r in rows:
        facts = f"{plural(int(r['runs']), 'run')} · {plural(int(r['messages']), 'message')} · "
        facts += f"{plural(int(r['folds']), 'fold')} · {int(r['tokens_saved']):,} tokens saved"
        out += [Text(""), data_text(r["session_id"], line=True, style="bold")]
        out.append(Padding(data_text(r["owner"], line=True).append(f" · {facts}"), (0, 0, 0, 2), expand=False))
    return out


def _summary(fold: dict[str, Any], full: bool) -> Text:
    summary = str(fold["summary"] or "")
    if not full:
        lines = summary.splitlines()
        summary = "\n".join(lines[:SUMMARY_LINES]) + ("\n…" if len(lines) > SUMMARY_LINES else "")
    return data_text(summary)


def _fold_row(fold: dict[str, Any], *, ids: bool, full: bool) -> list[Text]:
    folded = Text(f"{int(fold['folded']):,}")
    for message_id in fold["folded_ids"] if ids else []:
        folded.append("\n").append_text(data_text(message_id, line=True))
    return [
        Text(str(fold["record_id"])),
        Text(str(fold["before_call"] or "-")),
        Text(REASONS[fold["reason"]]),
        data_text(fold["strategy"], line=True),
        Text(f"{fold['tokens_before']:,} -> {fold['tokens_after']:,}"),
        folded,
        _summary(fold, full),
    ]


def _fold_block(fold: dict[str, Any], *, ids: bool, full: bool) -> list[RenderableType]:
    head = Text(f"fold {fold['record_id']} · before call {fold['before_call'] or '-'} · {REASONS[fold['reason']]} · ")
    head.append_text(data_text(fold["strategy"], line=True))
    head.append(f" · {fold['tokens_before']:,} -> {fold['tokens_after']:,} tokens · ")
    head.append(f"{plural(int(fold['folded']), 'message')} folded")
    out: list[RenderableType] = [head]
    out += [Padding(data_text(i, line=True), (0, 0, 0, 4), expand=False) for i in (fold["folded_ids"] if ids else [])]
    out.append(Padding(_summary(fold, full), (0, 0, 1, 2), expand=False))
    return out


def run_view(run: dict[str, Any], width: int, *, ids: bool, full: bool) -> list[RenderableType]:
    """One run of ``inspect --session``: its calls and prompt sizes, then its folds as a table or as blocks."""
    head = Text("run ").append_text(data_text(run["run_id"], line=True)).append(" · ")
    head.append_text(data_text(str(run["status"]).lower(), line=True))
    head.append(f"{' · member run' if run['member_of'] else ''} · {plural(int(run['model_calls']), 'model call')}")
    sizes = " · ".join(f"{int(n or 0):,}" for n in run["prompt_tokens"]) or "-"
    out: list[RenderableType] = [head, Padding(Text(f"prompt tokens: {sizes}"), (0, 0, 0, 2), expand=False)]
    if not run["folds"]:
        return out
    headers = ("#", "before call", "reason", "strategy", "tokens before -> after", "folded", "summary")
    rows = [_fold_row(f, ids=ids, full=full) for f in run["folds"]]
    table = fitted_table(headers, rows, width, wrap=6, numbers=frozenset({0, 1, 4, 5}), show_lines=True)
    if table is not None:
        return [*out, table]
    return out + [line for f in run["folds"] for line in _fold_block(f, ids=ids, full=full)]
