"""The ``report`` picture: prompt tokens per model call, with and without compression, fold points marked."""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._sessions import records_of_run
from ..tokens import TokenCounter
from ..tokens._counter import PROMPT_OVERHEAD


@dataclass
class Series:
    """What the chart draws."""

    title: str
    with_compression: list[int] = field(default_factory=list)
    """Prompt tokens each model call was sent (provider-reported)."""
    without: list[int] = field(default_factory=list)
    """Prompt tokens the same call would have had with nothing folded (counted, o200k)."""
    folds: list[int] = field(default_factory=list)
    """Indices of the calls right after a fold."""
    budget: int | None = None


def session_series(runs: list[Any], records: list[Any], title: str, counter: TokenCounter | None = None) -> Series:
    """Build the series of a stored session: each assistant message is one model call.

    "Without" counts every original message of the session that came before the call (agno would
    replay all history); "with" is the prompt size the provider reported for the call. Folds are
    matched, in order within their run, to the calls whose reported prompt dropped.
    """
    counter = counter or TokenCounter("gpt-4o")
    series = Series(title=title)
    total = PROMPT_OVERHEAD  # running size of everything so far, originals only
    for run in runs:
        run_records = records_of_run(records, run)
        first_call = len(series.with_compression)
        for message in run.messages or []:
            if message.from_history:
                continue
            if message.role == "assistant":
                series.without.append(total)
                reported = getattr(message.metrics, "input_tokens", 0) or 0
                series.with_compression.append(reported or total)
            total += counter.count_message(message.model_copy(update={"compressed_content": None}))
        calls = series.with_compression[first_call:]
        drops = [first_call + i for i in range(1, len(calls)) if calls[i] < calls[i - 1]]
        # A fold before the run's first call: that call was sent what the first record says it left.
        if run_records and calls and abs(calls[0] - run_records[0].tokens_after) <= 0.05 * max(calls[0], 1):
            drops.insert(0, first_call)
        series.folds += drops[: len(run_records)]
    return series


def draw(series: Series, out: Path) -> Path:
    """Write the chart (PNG or SVG by suffix) and a self-contained HTML page beside it; returns the page."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4.5), dpi=120)
    x = list(range(1, len(series.without) + 1))
    ax.plot(x, series.without, color="#999999", linestyle="--", label="without compression")
    ax.plot(x, series.with_compression, color="#1f6feb", marker=".", label="with agno-compression")
    for i, k in enumerate(series.folds):
        ax.axvline(k + 1, color="#d73a49", alpha=0.35, linewidth=1, label="fold" if i == 0 else None)
    if series.budget:
        ax.axhline(series.budget, color="#d73a49", linestyle=":", label=f"budget {series.budget:,}")
    ax.set_xlabel("model call")
    ax.set_ylabel("prompt tokens")
    ax.set_title(series.title)
    ax.grid(alpha=0.25)
    ax.legend(loc="upper left")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
    mime = "image/svg+xml" if out.suffix == ".svg" else "image/png"
    data = base64.b64encode(out.read_bytes()).decode()
    saved = sum(series.without) - sum(series.with_compression)
    page = out.with_suffix(".html")
    stats = (
        f"{len(x)} model calls, {len(series.folds)} folds; prompt tokens sent {sum(series.with_compression):,} "
        f"instead of {sum(series.without):,} ({saved:,} saved)."
    )
    page.write_text(
        f"<!doctype html><meta charset=utf-8><title>{html.escape(series.title)}</title>"
        f"<h1>{html.escape(series.title)}</h1><p>{stats}</p>"
        f'<img alt="prompt tokens per model call" src="data:{mime};base64,{data}">',
        encoding="utf-8",
    )
    return page
