"""Every figure the README and docs quote agrees with the bench run it cites.

The bench writes its results as Markdown tables (bench/RESULTS.md, bench/heldout/RESULTS.md,
bench/families/RESULTS.md, bench/PEERS.md). Each quoted figure is computed here from the table it cites and must
appear in the text as printed: a new bench run that moves a figure fails this test until the text is updated.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@cache
def tables(path: str) -> list[tuple[str, list[dict[str, str]]]]:
    """Every table of a Markdown file with the heading it sits under: (heading, rows as header -> cell)."""
    out: list[tuple[str, list[dict[str, str]]]] = []
    heading: str = ""
    header: list[str] | None = None
    rows: list[dict[str, str]] = []
    for line in [*(ROOT / path).read_text(encoding="utf-8").splitlines(), ""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
            elif not set("".join(cells)) <= set("-: "):
                rows.append(dict(zip(header, cells, strict=False)))
            continue
        if header is not None:
            out.append((heading, rows))
            header, rows = None, []
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
    return out


def row(path: str, section: str, **match: str) -> dict[str, str]:
    """The one row under a heading starting with ``section`` whose cells equal ``match`` (keys with ``_`` for
    spaces)."""
    found = [
        r
        for heading, rows in tables(path)
        if heading.startswith(section)
        for r in rows
        if all(r.get(k.replace("_", " ")) == v for k, v in match.items())
    ]
    assert len(found) == 1, f"{path} / {section} / {match}: {len(found)} rows"
    return found[0]


def pct(cell: str) -> str:
    return f"{round(float(cell) * 100)}%"


def of(cell: str) -> str:
    kept, total = cell.split("/")
    return f"{kept} of {total}"


def text(path: str) -> str:
    return re.sub(r"\s+", " ", (ROOT / path).read_text(encoding="utf-8"))


MAIN, HELD, FAMILIES = "bench/RESULTS.md", "bench/heldout/RESULTS.md", "bench/families/RESULTS.md"
LONG = "Long sessions"
SETTINGS = {"agno-compress": "agno `CompressionManager`", "agno-compaction": "agno `Compaction`"}


@pytest.mark.parametrize("threshold", ["8k", "16k"])
@pytest.mark.parametrize("setting", ["agno-compress", "agno-compaction", "extractive"])
def test_readme_table_rows_are_the_long_sessions_results(threshold: str, setting: str) -> None:
    r = row(MAIN, LONG, threshold=threshold, setting=setting)
    name = SETTINGS.get(setting, "ours, `extractive` (default)")
    kept = of(r["runs kept ≤ T"])
    kept = f"**{kept}**" if setting == "extractive" else kept
    cells = [
        threshold,
        name,
        kept,
        pct(r["cumulative ÷ none"]),
        pct(r["cost cached 0.1× ÷ none"]),
        pct(r["acted-on facts at end"]),
        pct(r["next-step grounding"]),
    ]
    assert "| " + " | ".join(cells) + " |" in text("README.md")


def test_heldout_swe_figures() -> None:
    at = {t: row(HELD, "All recorded runs", threshold=t, setting="extractive") for t in ("8k", "16k")}
    window = row(HELD, "All recorded runs", threshold="8k", setting="chunked-window")
    costs = {pct(r["cost cached 0.1× ÷ none"]) for r in at.values()}
    assert len(costs) == 1, "the README quotes one cost for 8k and 16k"
    acted = {pct(r["acted-on facts at end"]) for r in at.values()}
    assert len(acted) == 1
    grounding = [pct(at[t]["next-step grounding"]) for t in ("8k", "16k")]
    readme = text("README.md")
    assert f"{costs.pop()} of the uncompressed cost with prompt caching (8k and 16k)" in readme
    assert f"next-step grounding {grounding[0]} and {grounding[1]} and acted-on facts {acted.pop()}" in readme
    assert (
        f"without a summary ({pct(window['cost cached 0.1× ÷ none'])}), grounds {pct(window['next-step grounding'])}"
        in readme
    )


def test_heldout_billing_figures() -> None:
    def billed(section: str, threshold: str, setting: str) -> str:
        return row(HELD, section, threshold=threshold, setting=setting)["billed ÷ baseline"]

    claude = {billed("Claude (reads 0.1×", t, "ours, agno defaults") for t in ("8k", "16k")}
    gpt5 = {billed("OpenAIChat gpt-5", t, "ours") for t in ("8k", "16k")}
    assert len(claude) == len(gpt5) == 1, "the README quotes one figure for 8k and 16k"
    defaults = billed("Claude (reads 0.1×", "8k", "none, agno defaults")
    readme = text("README.md")
    assert f"{claude.pop()} of the same runs uncompressed with the best plain caching on `Claude`" in readme
    assert f"(agno's defaults uncompressed: {defaults}), {gpt5.pop()} on gpt-5" in readme
    cost = text("docs/cost.md")
    for section, ours, label in [
        ("Claude (reads 0.1×", "ours, agno defaults", "`Claude` sonnet-4-5: reads 0.1×, writes 1.25×"),
        ("Claude, newer models", "ours, agno defaults", "`Claude` newer models: reads 0.05×, 512-token minimum"),
        ("OpenAIChat gpt-5", "ours", "`OpenAIChat` gpt-5: reads 0.1×"),
        ("OpenAIChat gpt-4o", "ours", "`OpenAIChat` gpt-4o: reads 0.5×"),
    ]:
        figures = " | ".join(billed(section, t, ours) for t in ("8k", "16k"))
        assert f"| {label} | {figures} |" in cost, label
    assert f"is billed {defaults} of that baseline" in cost


def test_families_figures() -> None:
    rows = [r for h, rs in tables(FAMILIES) if h.startswith("The default") for r in rs if r["part"] == "heldout"]
    within = {
        b: (
            sum(int(r["within"]) for r in rows if r["budget"] == b),
            sum(int(r["runs"]) for r in rows if r["budget"] == b),
        )
        for b in ("8k", "16k", "32k")
    }
    no_room = sum(int(r["no room"]) for r in rows if r["budget"] == "8k")
    grounding = [float(r["grounding (worst)"].split()[0]) for r in rows if r["budget"] == "16k"]
    readme = text("README.md")
    assert within["16k"][0] == within["16k"][1] and within["32k"][0] == within["32k"][1]
    assert all(r["calls over with room"] == "0" for r in rows), "a run with room went over the budget"
    kept, runs = within["8k"]
    assert no_room == runs - kept, "at 8k the runs over the budget are exactly those told their request leaves no room"
    assert (
        f"every run stays under 16k and 32k, and under 8k every run whose request leaves room ({kept} of {runs}; the "
        f"other {no_room} are told theirs does not)" in readme
    )
    assert f"next-step grounding {min(grounding):.2f}-{max(grounding):.2f} at 16k" in readme


def test_families_bounds_and_early_fold_figures() -> None:
    held = [r for h, rs in tables(FAMILIES) if h.startswith("The default") for r in rs if r["part"] == "heldout"]
    least = {r["budget"]: r["least folds/100"] for r in held if r["family"] == "codex-cli-agentv"}
    side = [r for h, rs in tables(FAMILIES) if h.startswith("Candidates") for r in rs if r.get("part") == "heldout"]

    def cell(family: str, budget: str, setting: str) -> list[str]:
        return next(r[setting] for r in side if r["family"] == family and r["budget"] == budget).split(" / ")

    others = sorted({r["family"] for r in side} - {"codex-cli-agentv"})
    folds = {s: [float(cell(f, "32k", s)[2]) for f in others] for s in ("extractive", "no-early-folds")}
    readme = text("bench/families/README.md")
    assert f"at least {least['16k']} folds per 100 calls at 16k and {least['32k']} at 32k" in readme
    nofold = folds["no-early-folds"]
    codex = cell("codex-cli-agentv", "32k", "no-early-folds")[2]
    assert f"folds per 100 calls are {min(nofold):.1f}-{max(nofold):.1f} outside Codex ({codex} there)" in readme
    assert f"against {min(folds['extractive']):.1f}-{max(folds['extractive']):.1f} for the default" in readme
    for family in {r["family"] for r in side}:
        base, new = cell(family, "32k", "extractive"), cell(family, "32k", "no-early-folds")
        assert float(new[1]) > float(base[1]), f"{family}: the cost rises at 32k without the early fold"
    gemini, mini = (
        [cell(f, "32k", s)[1] for s in ("extractive", "no-early-folds")]
        for f in ("gemini-cli-m-gemini", "mini-swe-agent-gemini3")
    )
    assert f"Gemini CLI {gemini[0]} -> {gemini[1]}, mini-swe-agent {mini[0]} -> {mini[1]}" in readme
    pack = [cell("claude-code-packmind-context-evaluator", "32k", s)[0] for s in ("extractive", "no-early-folds")]
    assert f"falls from {pack[0]} to {pack[1]}" in readme


def test_families_no_room_figures() -> None:
    rows = [r for h, rs in tables(FAMILIES) if h.startswith("The default") for r in rs if r["budget"] == "8k"]
    tight = {
        (r["family"], r["part"]): float(r["folds/100 with no room"]) for r in rows if r["folds/100 with no room"] != "–"
    }
    readme = text("bench/families/README.md")
    assert f"At 8k, {len(tight)} populations have such" in readme
    assert f"folds {min(tight.values()):.1f}-{max(tight.values()):.1f} times per 100 of them" in readme
    over = {k: v for k, v in tight.items() if v > 20}
    codex = (over[("codex-cli-agentv", "tune")], over[("codex-cli-agentv", "heldout")])
    assert f"Codex CLI ({codex[0]:.1f} on the tune part, {codex[1]:.1f} held out)" in readme
    assert f"oh-my-posh's tune part ({over[('claude-code-oh-my-posh', 'tune')]:.1f})" in readme
    assert len(over) == 3, over


def test_short_runs_figures() -> None:
    r = row(MAIN, "All recorded runs", threshold="8k", setting="extractive")
    builtins = [
        of(row(MAIN, "All recorded runs", threshold="8k", setting=s)["runs kept ≤ T"]).split()[0] for s in SETTINGS
    ]
    readme = text("README.md")
    assert (
        f"keeps {of(r['runs kept ≤ T'])} runs under the budget (agno's built-ins {builtins[0]} and {builtins[1]})"
        in readme
    )
    assert f"at {pct(r['cumulative ÷ none'])} of the uncompressed prompt tokens" in readme
    assert f"{r['peak tokens']} tokens, which are never folded" in readme


def test_overhead_figures() -> None:
    rows = [r for h, rs in tables(MAIN) if h.startswith(LONG) for r in rs if r["setting"] == "extractive"]
    median = [float(r["machinery ms/call median (mean)"].split()[0]) for r in rows]
    mean = [float(r["machinery ms/call median (mean)"].split("(")[1].rstrip(")")) for r in rows]
    loads = [
        row(MAIN, "Session load", db_object=o)["ratio"].rstrip("x")
        for o in ("new SqliteDb per load (cold)", "one SqliteDb, agno's run cache warm")
    ]
    readme = text("README.md")
    assert (
        f"median {min(median):.1f}-{max(median):.1f} ms and a mean {min(mean):.1f}-{max(mean):.1f} ms per model call"
        in readme
    )
    assert f"takes {loads[0]}× (cold) and {loads[1]}× (warm)" in readme


def test_peer_figures() -> None:
    """Quoted from the same run as the table above them (bench/RESULTS.md holds the peers' rows too)."""
    ours = row(MAIN, LONG, threshold="8k", setting="extractive")
    peer = row(MAIN, LONG, threshold="8k", setting="openhands-llm-summarizing")
    cost, facts, grounding = "cost cached 0.1× ÷ none", "acted-on facts at end", "next-step grounding"
    readme = text("README.md")
    assert f"({pct(peer[cost])} against our {pct(ours[cost])})" in readme
    assert f"keeps {pct(peer[facts])} of the acted-on facts against our {pct(ours[facts])}" in readme
    assert f"grounds {pct(peer[grounding])} against our {pct(ours[grounding])}" in readme
