"""Cost with prompt caching against next-step grounding: one chart per threshold and the Pareto front.

A setting is on the front when no other setting has both a lower cost (0.1× cached prefix, ÷ none) and a
higher grounding. The charts are written next to the results file; the section lists the front per group.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from _replays import OURS, Replayed
from _report import LONG, aggregate

from agno_compression.eval import Trajectory

DEFAULT = "extractive"
"""Our default setting: the front is read against it."""


def points(
    rows: Sequence[Replayed], baseline: dict[str, Replayed], threshold: int, settings: Sequence[str], keep: set[str]
) -> dict[str, tuple[float, float]]:
    """Setting -> (cost ratio, grounding) of the recordings in ``keep`` at ``threshold`` (those with both)."""
    out = {}
    for setting in ["none", *(s for s in settings if not s.endswith("uncompressed"))]:  # one no-compression point
        agg = aggregate(rows, baseline, threshold, setting, keep)
        cost, grounding = agg.cost_ratio(0), agg.grounding
        if agg.runs and cost is not None and grounding is not None:
            out[setting] = (cost, grounding)
    return out


def front(found: dict[str, tuple[float, float]]) -> list[str]:
    """The settings no other setting beats on both cost (lower) and grounding (higher)."""
    return [s for s, (c, g) in found.items() if not any(c2 < c and g2 > g for s2, (c2, g2) in found.items() if s2 != s)]


def _draw(path: Path, threshold: int, groups: dict[str, dict[str, tuple[float, float]]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(groups), figsize=(6.5 * len(groups), 5.2), squeeze=False)
    for ax, (group, found) in zip(axes[0], groups.items(), strict=True):
        best = set(front(found))
        xs, ys = [c for c, _ in found.values()], [g for _, g in found.values()]
        span = (max(xs) - min(xs) or 1.0, max(ys) - min(ys) or 1.0)
        placed: list[tuple[float, float]] = []
        for setting, (cost, grounding) in sorted(found.items(), key=lambda kv: (-kv[1][1], kv[1][0])):
            # labels of points close together are stacked downwards instead of printed over each other
            near = sum(1 for x, y in placed if abs(x - cost) / span[0] < 0.12 and abs(y - grounding) / span[1] < 0.06)
            placed.append((cost, grounding))
            ours = setting in OURS
            color = "#1f6feb" if ours else "#8250df" if setting.endswith(("window", "masking")) else "#6e7781"
            ax.scatter(
                cost,
                grounding,
                s=70 if setting in best else 35,
                color=color,
                edgecolors="black" if setting in best else "none",
            )
            ax.annotate(setting, (cost, grounding), textcoords="offset points", xytext=(6, 3 - 9 * near), fontsize=7)
        ax.set_title(f"{group} at {threshold // 1000}k (black edge: Pareto front)", fontsize=10)
        ax.set_xlabel("cost with prompt caching (0.1×) ÷ none  — lower is better")
        ax.set_ylabel("next-step grounding — higher is better")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def section(
    out_dir: Path,
    thresholds: Sequence[int],
    settings: Sequence[str],
    recordings: Sequence[Trajectory],
    baseline: dict[str, Replayed],
    rows: Sequence[Replayed],
) -> list[str]:
    """Draw ``pareto-<T>k.png`` per threshold into ``out_dir`` and return the results file's section."""
    real = {t.name for t in recordings if t.source != LONG}
    long = {t.name for t in recordings if t.source == LONG}
    lines = ["", "## Pareto front: cost with prompt caching against next-step grounding", ""]
    for th in thresholds:
        groups = {
            name: found
            for name, keep in (("all recorded runs", real), ("long sessions", long))
            if keep and (found := points(rows, baseline, th, settings, keep)) and len(found) > 1
        }
        if not groups:
            continue
        chart = out_dir / f"pareto-{th // 1000}k.png"
        _draw(chart, th, groups)
        lines.append(f"![{th // 1000}k]({chart.name})")
        lines.append("")
        for group, found in groups.items():
            on = front(found)
            mine = found.get(DEFAULT)
            beaten = (
                [s for s, (c, g) in found.items() if mine and c < mine[0] and g > mine[1]] if mine is not None else []
            )
            verdict = f"settings with both lower cost and higher grounding than `{DEFAULT}`: " + (
                ", ".join(beaten) if beaten else "none"
            )
            lines.append(f"- {th // 1000}k, {group}: on the front: {', '.join(on)}; {verdict}.")
        lines.append("")
    return lines
