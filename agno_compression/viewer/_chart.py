"""The prompt-size chart of one lane as inline SVG: calls on x (whole numbers), prompt tokens on y (thousands
separated), runs as bands, folds as numbered lines linking to their details, the budget as a labelled line.

Colours come from the page's stylesheet (classes, ``currentColor``), so the chart follows light and dark mode.
Every text placed here goes through `html_text`: marked where it would act, then escaped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from .._messages import one_line
from .._visible import html_text
from ._timeline import REASONS, Lane

Scale = Callable[[float], float]

WIDTH = 1000
LEFT, RIGHT, TOP, BOTTOM = 72, 24, 40, 46


def nice_step(span: float, parts: int) -> float:
    """A round step (1, 2, 2.5 or 5 times a power of ten) cutting ``span`` into about ``parts`` pieces."""
    raw = max(span, 1) / max(parts, 1)
    power = 10 ** math.floor(math.log10(raw))
    return next(k * power for k in (1, 2, 2.5, 5, 10) if k * power >= raw)


def call_ticks(calls: int, most: int = 20) -> list[int]:
    """Whole call numbers to label on the x axis: 1 and every multiple of a round step, at most about ``most``."""
    step = max(1, int(nice_step(calls, most)))
    step = step if step in (1, 2, 5) or step % 5 == 0 else 5 * math.ceil(step / 5)
    return [c for c in range(1, calls + 1) if c == 1 or c % step == 0]


def _n(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def lane_chart(
    lane: Lane, index: int, budget: int | None, *, height: int = 340, label: str = "", searches: Sequence[int] = ()
) -> str:
    """The SVG of ``lane`` (``index`` keeps ids unique on the page); ``searches``: calls that searched the folded
    history."""
    calls = lane.calls
    n = max(len(calls), 1)
    peak = max([c.without for c in calls] + [f.record.tokens_before for f in lane.folds], default=0)
    peak = max(peak, budget or 0, 1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, height - TOP - BOTTOM
    room = peak * plot_h / (plot_h - 20)  # the top 20 units stay free for the run labels
    step = nice_step(room, 5)
    top_value = step * math.ceil(room / step)
    slot = plot_w / n

    def x(call: float) -> float:
        return LEFT + (call - 0.5) * slot

    def y(value: float) -> float:
        return TOP + plot_h * (1 - value / top_value)

    out = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-labelledby="chart-title-{index}" data-lane="{index}" preserveAspectRatio="xMidYMid meet">',
        f'<title id="chart-title-{index}">{html_text(label or lane.name)}: prompt tokens per model call</title>',
    ]
    out += _bands(lane, x, slot, height)
    for tick in range(0, int(top_value) + 1, max(1, int(step))):
        ty = y(tick)
        out.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{_n(ty)}" y2="{_n(ty)}"/>')
        out.append(f'<text class="tick" x="{LEFT - 8}" y="{_n(ty + 4)}" text-anchor="end">{tick:,}</text>')
    for number in call_ticks(n):
        tx = _n(x(number))
        out.append(f'<text class="tick" x="{tx}" y="{TOP + plot_h + 18}" text-anchor="middle">{number}</text>')
    out.append(
        f'<text class="axis" x="{LEFT + plot_w / 2:.0f}" y="{height - 6}" text-anchor="middle">model call</text>'
        f'<text class="axis" transform="translate(16 {TOP + plot_h / 2:.0f}) rotate(-90)" '
        'text-anchor="middle">prompt tokens</text>'
    )
    if budget:
        by = _n(y(budget))
        out.append(f'<line class="budget" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{by}" y2="{by}"/>')
        out.append(
            f'<text class="budget-label" x="{WIDTH - RIGHT - 4}" y="{_n(y(budget) - 6)}" '
            f'text-anchor="end">budget {budget:,}</text>'
        )
    if calls:
        without = " ".join(f"{_n(x(c.number))},{_n(y(c.without))}" for c in calls)
        sent = " ".join(f"{_n(x(c.number))},{_n(y(c.sent))}" for c in calls)
        out.append(f'<polyline class="without" points="{without}"/>')
        out.append(f'<polyline class="sent" points="{sent}"/>')
    out += _folds(lane, x, y, slot, plot_h)
    sent_at = {c.number: c.sent for c in calls}
    for searched in sorted(set(searches) & set(sent_at)):  # a ring around the point of the call that searched
        sx, sy = x(searched), y(sent_at[searched])
        out.append(
            f'<path class="search-mark" d="M{_n(sx)} {_n(sy - 10)} l10 10 l-10 10 l-10 -10 z" data-call="{searched}">'
            f"<title>call {searched} searched the folded history (search_folded_history)</title></path>"
        )
    radius = 3.5 if n <= 60 else 2
    for c in calls:
        tip = f"call {c.number} (run {c.run}, its call {c.index}): sent {c.sent:,} tokens; without compression "
        tip += f"{c.without:,}"
        if c.read or c.written:  # what the provider reported of its prompt cache
            tip += f"; cache: {c.read:,} read, {c.written:,} written"
        out.append(
            f'<circle class="point" cx="{_n(x(c.number))}" cy="{_n(y(c.sent))}" r="{radius}" data-call="{c.number}" '
            f'data-sent="{c.sent}" data-without="{c.without}" data-read="{c.read}" data-written="{c.written}">'
            f"<title>{html_text(tip)}</title></circle>"
        )
    out.append("</svg>")
    return "\n".join(out)


def _bands(lane: Lane, x: Scale, slot: float, height: int) -> list[str]:
    """Alternating backgrounds behind each run's calls, labelled with the run's number."""
    out = []
    runs = [r for r in lane.runs if r.calls]
    every = max(1, math.ceil(len(runs) * 48 / (WIDTH - LEFT - RIGHT)))  # a label needs about 48 units
    for k, run in enumerate(runs):
        left = x(run.calls[0].number) - slot / 2
        width = slot * len(run.calls)
        out.append(
            f'<rect class="band band-{k % 2}" x="{_n(left)}" y="{TOP}" width="{_n(width)}" '
            f'height="{height - TOP - BOTTOM}" data-run="{run.number}"><title>run {run.number}: '
            f"{html_text(one_line(run.request, 120))}</title></rect>"
        )
        if k % every == 0:
            out.append(f'<text class="run-label" x="{_n(left + 4)}" y="{TOP + 13}">run {run.number}</text>')
    return out


def _folds(lane: Lane, x: Scale, y: Scale, slot: float, plot_h: float) -> list[str]:
    """Each fold: a line just before the call it came before, its number in a badge (a link to its details) and
    an arrow from the prompt size before the fold down to what it left."""
    out = []
    for fold in lane.folds:
        if fold.call is None:
            continue
        r = fold.record
        at = x(fold.call) - slot / 2
        where = f"before call {fold.call}" + (" (estimated)" if fold.estimated else "")
        tip = f"fold {fold.number} {where}: {REASONS[fold.reason]}; {r.tokens_before:,} → {r.tokens_after:,} tokens"
        out.append(
            f'<a class="fold-mark reason-{fold.reason}" href="#fold-{fold.number}" data-fold="{fold.number}" '
            f'data-call="{fold.call}" aria-label="{html_text(tip)}"><title>{html_text(tip)}</title>'
            f'<line class="fold-line" x1="{_n(at)}" x2="{_n(at)}" y1="{TOP - 8}" y2="{_n(TOP + plot_h)}"/>'
            f'<line class="fold-drop" x1="{_n(x(fold.call))}" x2="{_n(x(fold.call))}" '
            f'y1="{_n(y(r.tokens_before))}" y2="{_n(y(r.tokens_after) - 5)}"/>'
            f'<circle class="fold-badge" cx="{_n(at)}" cy="{TOP - 20}" r="11"/>'
            f'<text class="fold-number" x="{_n(at)}" y="{TOP - 16}" text-anchor="middle">{fold.number}</text></a>'
        )
    return out
