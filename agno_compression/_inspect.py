"""What ``agno-compression inspect`` prints, laid out for a terminal of a given width (pure: no printing).

A table is chosen only when its columns fit as they need to: every id, number and name whole on its line (a header
may wrap between its words) and the summary column at least ``SUMMARY_MIN`` wide. Otherwise each session or fold is
a block of lines that wrap with a hanging indent (a wrapped line starts under its field's text, ``hanging``). Either
way no line is wider than the terminal and no id is cut. A team's member runs are grouped under the leader's run
they belong to (``session_view``). Every text read from the database goes through ``data_text`` (``_visible``):
shown, never interpreted, never markup.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console, Group, RenderableType
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


MEMBER_INDENT = 4
"""Columns a member run is indented under the run of its leader (``--members``)."""
_BULLET = re.compile(r" {0,4}(?:[-*+•]|\d{1,3}[.)]) +(?=\S)")
"""A list item's marker at the start of a summary line: its wrapped lines hang under the item's text."""


def hanging(lead: str | Text, body: Text, indent: int = 0) -> Table:
    """``lead`` (``indent`` spaces before it) then ``body``, whose wrapped lines start under its first character:
    a grid of two columns, rich wrapping the second (a word longer than it is folded, never cut)."""
    grid = Table.grid()
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row(Text(" " * indent).append_text(Text(lead) if isinstance(lead, str) else lead), body)
    return grid


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
        out.append(hanging("", data_text(r["owner"], line=True).append(f" · {facts}"), 2))
    return out


def _summary(fold: dict[str, Any], full: bool) -> Text:
    summary = str(fold["summary"] or "")
    if not full:
        lines = summary.splitlines()
        summary = "\n".join(lines[:SUMMARY_LINES]) + ("\n…" if len(lines) > SUMMARY_LINES else "")
    return data_text(summary)


def _summary_block(summary: Text) -> Group:
    """A summary's lines for a block: a list item's wrapped lines hang under its text, other lines under their own
    first character."""
    lines: list[RenderableType] = []
    for line in summary.split("\n", allow_blank=True):
        item = _BULLET.match(line.plain)
        lines.append(hanging(line[: item.end()], line[item.end() :]) if item else line)
    return Group(*lines)


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


def _where(fold: dict[str, Any]) -> str:
    """Where a fold of a run came: before which of its calls, or after it (a fold on request, between runs)."""
    if fold["before_call"]:
        return f"before call {fold['before_call']}"
    return "after the run" if fold["reason"] == "request" else "before call -"


def _fold_block(fold: dict[str, Any], *, ids: bool, full: bool) -> list[RenderableType]:
    head = Text(f"{_where(fold)} · {REASONS[fold['reason']]} · ")
    head.append_text(data_text(fold["strategy"], line=True))
    head.append(f" · {fold['tokens_before']:,} -> {fold['tokens_after']:,} tokens · ")
    head.append(f"{plural(int(fold['folded']), 'message')} folded")
    out: list[RenderableType] = [hanging(f"fold {fold['record_id']} · ", head)]
    out += [hanging("", data_text(i, line=True), 4) for i in (fold["folded_ids"] if ids else [])]
    out.append(Padding(_summary_block(_summary(fold, full)), (0, 0, 1, 2), expand=False))
    return out


def run_view(
    run: dict[str, Any],
    width: int,
    *,
    ids: bool,
    full: bool,
    name: str | None = None,
    members: RenderableType | None = None,
) -> list[RenderableType]:
    """One run of ``inspect --session``: its calls and prompt sizes (then ``members``, the line about its member
    runs), then its folds as a table or as blocks. A member run is named by its member's ``name`` when known."""
    head = data_text(run["run_id"], line=True).append(" · ")
    head.append_text(data_text(str(run["status"]).lower(), line=True))
    if run["member_of"]:
        head.append(" · member run" + (" of " if name else "")).append_text(data_text(name or "", line=True))
    head.append(f" · {plural(int(run['model_calls']), 'model call')}")
    sizes = " · ".join(f"{int(n or 0):,}" for n in run["prompt_tokens"]) or "-"
    out: list[RenderableType] = [hanging("run ", head), hanging("prompt tokens: ", Text(sizes), 2)]
    out += [members] if members is not None else []
    if not run["folds"]:
        return out
    headers = ("#", "before call", "reason", "strategy", "tokens before -> after", "folded", "summary")
    rows = [_fold_row(f, ids=ids, full=full) for f in run["folds"]]
    table = fitted_table(headers, rows, width, wrap=6, numbers=frozenset({0, 1, 4, 5}), show_lines=True)
    if table is not None:
        return [*out, table]
    return out + [line for f in run["folds"] for line in _fold_block(f, ids=ids, full=full)]


def _saved(fold: dict[str, Any]) -> int:
    """A fold's tokens saved, as ``stats()`` counts them (an early fold that grew the prompt saved none)."""
    return max(0, int(fold["tokens_before"] or 0) - int(fold["tokens_after"] or 0))


def _tally(runs: Sequence[dict[str, Any]]) -> tuple[int, int]:
    folds = [f for r in runs for f in r["folds"]]
    return len(folds), sum(_saved(f) for f in folds)


def _members_line(runs: Sequence[dict[str, Any]], names: Mapping[str, str], expanded: bool) -> Table:
    """One line about a leader's member runs (``runs``, nested ones too): how many, their folds and tokens saved,
    and per member name when there are several."""
    folds, saved = _tally(runs)
    body = Text(f"{plural(len(runs), 'run')} · {plural(folds, 'fold')} · {saved:,} tokens saved")
    by_name: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        by_name.setdefault(names.get(str(r["run_id"])) or "", []).append(r)
    if len(by_name) > 1 or "" not in by_name:
        for name, own in by_name.items():
            body.append(" · ").append_text(data_text(name or "unnamed", line=True))
            folds, saved = _tally(own)
            body.append(f": {plural(len(own), 'run')}")
            body.append(f", {plural(folds, 'fold')}, {saved:,} tokens saved" if folds and len(by_name) > 1 else "")
    body.append("" if expanded else " · --members lists them")
    return hanging("members: ", body, 2)


def session_view(
    runs: Sequence[dict[str, Any]],
    width: int,
    *,
    ids: bool,
    full: bool,
    members: bool = False,
    names: Mapping[str, str] | None = None,
) -> list[RenderableType]:
    """``inspect --session``: each run (``session_json``'s runs) in order, a member run under the leader's run it
    belongs to (its ``member_of``, agno's ``parent_run_id``): the leader's run says how many member runs it had,
    their folds and tokens saved; with ``members`` they follow it, each indented under its leader. A run whose
    leader is not in the session stays where it is. ``names`` gives a member's name by run id."""
    names = names or {}
    here = {str(r["run_id"]) for r in runs}
    children: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        if r["member_of"] and str(r["member_of"]) in here and r["member_of"] != r["run_id"]:
            children.setdefault(str(r["member_of"]), []).append(r)
    shown: set[int] = set()  # runs by identity: two stored runs may share an id

    def below(run: dict[str, Any], seen: set[int]) -> list[dict[str, Any]]:
        """The member runs under ``run``, nested ones too, each once (whatever circle the stored ids make)."""
        out = []
        for child in children.get(str(run["run_id"]), []):
            if id(child) not in seen:
                seen.add(id(child))
                out += [child, *below(child, seen)]
        return out

    def view(run: dict[str, Any], depth: int) -> list[RenderableType]:
        shown.add(id(run))
        under = below(run, set(shown))
        if not members:
            shown.update(id(r) for r in under)
        line = _members_line(under, names, members) if under else None
        indent = min(MEMBER_INDENT * depth, max(0, width - SUMMARY_MIN))  # deep teams: still SUMMARY_MIN wide
        parts = run_view(run, width - indent, ids=ids, full=full, name=names.get(str(run["run_id"])), members=line)
        out = [Padding(p, (0, 0, 0, indent), expand=False) if indent else p for p in parts]
        for child in children.get(str(run["run_id"]), []) if members else []:
            out += view(child, depth + 1) if id(child) not in shown else []
        return out

    grouped = {id(r) for rs in children.values() for r in rs}
    out: list[RenderableType] = []
    for run in [r for r in runs if id(r) not in grouped] + list(runs):  # then runs no leader reached (a circle)
        out += view(run, 0) if id(run) not in shown else []
    return out
