"""Every recording family, tune and held-out parts, at every budget: the every-population table, what the user is
billed per provider, and the leave-one-family-out choice of the defaults (bench/families/README.md).

    python bench/families.py --data /work/data/families [--budgets 8000 16000 32000] [--billing 8000 16000]
        [--candidate NAME='{"option": value}' ...] [--workers 2] [--out bench/families/RESULTS.md]

``--data`` holds ``tune/<family>/`` and ``heldout/<family>/`` (``bench/native/split.py --data SOURCES --out DATA``
makes them; a family that comes split, such as the mini-swe-agent runs, is copied in as its two parts). Every run
of every population is replayed as ``bench/run.py`` replays it (a real agno Agent, a scripted model playing the
recorded turns, the agent's own tools under their own names returning the recorded outputs, o200k counts with the
tool definitions): uncompressed, with the default (``extractive``), and with each ``--candidate`` (the default
with other manager options). The billing replays go through agno's real ``Claude`` and ``OpenAIChat`` against the
loopback servers (``bench/_billing.py``), for the default.

The leave-one-family-out table chooses among the default and the candidates without each family in turn, on the
tune parts of the others: the setting whose mean next-step grounding over those populations and budgets is within
one point of the best, at the lowest mean cost with caching; it then reports that family under the choice. A choice
that does not change when any one family is left out is not fitted to one of them.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
import warnings
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _billing  # noqa: E402
import _offline  # noqa: E402
import _replays  # noqa: E402

from agno_compression._trigger import MIN_ROOM_SHARE  # noqa: E402
from agno_compression.eval import Trajectory, acted_retained, load_trajectories  # noqa: E402

DEFAULT = "extractive"
PARTS = ("tune", "heldout")
OUT = HERE / "families" / "RESULTS.md"
INTO = (HERE / "RESULTS.md", HERE.parent / "docs" / "benchmarks.md")
"""Files whose block between ``BEGIN`` and ``END`` gets the same tables, from the same run."""
BEGIN = "<!-- bench/families.py: begin -->"
END = "<!-- bench/families.py: end -->"
BILLED = ("none, automatic caching", "ours, agno defaults", "none", "ours")
"""The billing settings replayed: each provider group's baseline and this package's default."""


@dataclass
class Population:
    family: str
    part: str
    runs: list[Trajectory]

    @property
    def name(self) -> str:
        return f"{self.family} ({self.part})"


@dataclass
class Figures:
    """One setting on one population at one budget."""

    runs: int = 0
    within: int = 0
    no_room: int = 0
    """Runs told their request leaves no workable room (a run of the recording warned ``budget_too_small``)."""
    calls: int = 0
    over: int = 0
    over_room: int = 0
    """Calls over the budget in the runs with room: what a fold should have prevented."""
    folds: int = 0
    least_folds: int = 0
    """Folds had each kept only the system messages, the request and the newest tool batch (``least_folds``)."""
    no_room_calls: int = 0
    no_room_folds: int = 0
    """Model calls whose system messages, tool definitions and request leave under ``MIN_ROOM_SHARE`` of the budget
    (``no_room_calls``), and the folds before them: the fold rate where the budget cannot be held."""
    grounded: int = 0
    needed: int = 0
    worst: float = 1.0
    acted: int = 0
    acted_total: int = 0
    cost: float = 0.0
    cost_none: float = 0.0
    floor: float = 0.0
    """Cost with caching had every call sent only its system messages, request and newest tool batch (the runs
    uncompressed, ``Replayed.floor_costs``): what no fold that keeps those verbatim can go below."""
    billed: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    """Provider group -> (billed, baseline billed, worst run's ratio)."""

    @property
    def grounding(self) -> float:
        return self.grounded / self.needed if self.needed else 1.0

    @property
    def cost_ratio(self) -> float:
        return self.cost / self.cost_none if self.cost_none else 0.0

    @property
    def floor_ratio(self) -> float:
        return self.floor / self.cost_none if self.cost_none else 0.0


def populations(data: Path) -> list[Population]:
    out = []
    for part in PARTS:
        for folder in sorted(p for p in (data / part).glob("*") if p.is_dir()):
            runs = [replace(t, source=folder.name) for t in load_trajectories(folder)]
            out.append(Population(folder.name, part, runs))
    return out


def _replay(job: tuple[Trajectory, str, int]) -> tuple[str, str, int, Any]:
    trajectory, setting, budget = job
    with tempfile.TemporaryDirectory(prefix="agno-compression-families-") as tmp:
        row = _replays.replay_one(
            trajectory, setting, budget, Path(tmp), summarizer_factory=_offline.standin_summarizer
        )
    row.requests = []
    return f"{trajectory.source}/{trajectory.name}", setting, budget, row


def _init(rank_dir: str, variants: dict[str, dict[str, Any]]) -> None:
    import os

    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    os.environ["TIKTOKEN_CACHE_DIR"] = rank_dir
    _offline.forbid_network()
    _replays.VARIANTS.update(variants)
    _replays.OURS = (*_replays.OURS, *variants)


def least_folds(tokens: Sequence[int], floors: Sequence[int], budget: int) -> int:
    """Folds a run uncompressed (``tokens``: each call's prompt) would make at ``budget`` had each fold come only over
    the budget and left only that call's floor (``floors``: its system messages, request and newest tool batch).

    What each call adds is what it adds uncompressed. A call whose floor is over the budget folds nothing: no fold can
    hold the budget there (a run with no room), and the prompt grows on until a call's floor fits again. A fold that
    keeps a summary or more steps lands higher and comes back sooner: this is the fold rate the recording itself
    sets at that budget where the budget can be held.
    """
    size = previous = folds = 0
    for prompt, floor in zip(tokens, floors, strict=True):
        size += max(0, prompt - previous)
        previous = prompt
        if size > budget and floor <= budget:
            size, folds = floor, folds + 1
    return folds


def no_room_folds(fixed: Sequence[int], fold_calls: Iterable[int], budget: int) -> tuple[int, int]:
    """The model calls whose system messages, tool definitions and request (``fixed``, per call) leave under
    ``MIN_ROOM_SHARE`` of ``budget``, as the manager tells a run it has no room, and the folds that came before
    them (``fold_calls``: call indices)."""
    tight = {k for k, size in enumerate(fixed) if budget - size < budget * MIN_ROOM_SHARE}
    return len(tight), sum(1 for k in fold_calls if k in tight)


def measure(
    pops: Sequence[Population],
    settings: Sequence[str],
    budgets: Sequence[int],
    variants: dict[str, dict[str, Any]],
    rank_dir: str,
    workers: int,
) -> dict[tuple[str, str, str, int], Figures]:
    """(family, part, setting, budget) -> figures, from one replay of every run with every setting."""
    runs = [t for p in pops for t in p.runs]
    jobs = [(t, "none", 0) for t in runs] + [(t, s, b) for t in runs for s in settings for b in budgets]
    with ProcessPoolExecutor(workers, initializer=_init, initargs=(rank_dir, variants)) as pool:
        done = {(n, s, b): row for n, s, b, row in pool.map(_replay, jobs, chunksize=1)}
    out: dict[tuple[str, str, str, int], Figures] = {}
    for p in pops:
        for s in settings:
            for b in budgets:
                f = out[(p.family, p.part, s, b)] = Figures()
                for t in p.runs:
                    key = f"{t.source}/{t.name}"
                    base = done[(key, "none", 0)]
                    if max(base.tokens, default=0) <= b:
                        continue  # never over the budget uncompressed: nothing to fold
                    row = done[(key, s, b)]
                    over = sum(1 for x in row.tokens if x > b)
                    kept, total = acted_retained(base.acted, base.final_text, row.final_text)
                    f.runs += 1
                    f.within += over == 0
                    f.no_room += row.no_room > 0
                    f.calls += len(row.tokens)
                    f.over += over
                    f.over_room += over if not row.no_room else 0
                    f.folds += row.folds
                    f.least_folds += least_folds(base.tokens, base.floors, b)
                    calls, folds = no_room_folds(base.fixed, row.fold_calls, b)
                    f.no_room_calls += calls
                    f.no_room_folds += folds
                    f.grounded += row.grounded
                    f.needed += row.grounding_total
                    if row.grounding_total:
                        f.worst = min(f.worst, row.grounded / row.grounding_total)
                    f.acted += kept
                    f.acted_total += total
                    f.cost += row.costs[0]
                    f.cost_none += base.costs[0]
                    f.floor += base.floor_costs[0] if base.floor_costs else 0.0
    return out


def bill(
    pops: Sequence[Population], budgets: Sequence[int], rank_dir: str, workers: int
) -> dict[tuple[str, str, int], dict[str, tuple[float, float, float]]]:
    """(family, part, budget) -> provider group -> (billed, baseline, worst run's ratio), for the default."""
    _billing.SETTINGS = tuple(s for s in _billing.SETTINGS if s.name in BILLED)
    runs = [t for p in pops for t in p.runs]
    results = _billing.run_all(runs, budgets, rank_dir, workers=workers)
    base = {(r.setting.group, r.name): r for r in results if r.setting.baseline}
    out: dict[tuple[str, str, int], dict[str, tuple[float, float, float]]] = {}
    for p in pops:
        names = {t.name for t in p.runs}
        for b in budgets:
            groups = out[(p.family, p.part, b)] = {}
            for group in _billing.GROUPS:
                rows = [
                    r
                    for r in results
                    if r.name in names
                    and r.setting.group == group
                    and not r.setting.baseline
                    and r.threshold == b
                    and base[(group, r.name)].peak > b
                ]
                if rows:
                    against = [base[(group, r.name)].billed for r in rows]
                    worst = max(r.billed / a for r, a in zip(rows, against, strict=True) if a)
                    groups[group] = (sum(r.billed for r in rows), sum(against), worst)
    return out


# --- the report ----------------------------------------------------------------------------------------------


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def choose(
    figures: dict[tuple[str, str, str, int], Figures],
    settings: Sequence[str],
    families: Iterable[str],
    budgets: Sequence[int],
) -> str:
    """The setting chosen on the tune parts of ``families``: mean grounding within a point of the best, then the
    lowest mean cost with caching."""
    keys = [(f, "tune", b) for f in families for b in budgets]

    def score(s: str) -> tuple[float, float]:
        rows = [figures[(f, p, s, b)] for f, p, b in keys if figures[(f, p, s, b)].runs]
        return _mean(r.grounding for r in rows), _mean(r.cost_ratio for r in rows)

    scores = {s: score(s) for s in settings}
    best = max(g for g, _ in scores.values())
    return min((s for s in settings if scores[s][0] >= best - 0.01), key=lambda s: (scores[s][1], settings.index(s)))


def _short(group: str) -> str:
    return group.split(" (")[0]


def render(
    pops: Sequence[Population],
    settings: Sequence[str],
    variants: dict[str, dict[str, Any]],
    budgets: Sequence[int],
    figures: dict[tuple[str, str, str, int], Figures],
    billed: dict[tuple[str, str, int], dict[str, tuple[float, float, float]]],
    command: str,
    seconds: float,
) -> str:
    groups = [g for g in _billing.GROUPS if any(g in v for v in billed.values())]
    lines = [
        "# Every family of recorded runs",
        "",
        f"`{command}` ({seconds / 60:.0f} minutes on this machine). What each family is, its licence, commit and "
        "selection rule: [README.md](README.md). Columns: runs over the budget uncompressed; runs with no call over "
        "the budget; runs whose system messages, tool definitions and request left under a fifth of the budget "
        "(told so once: `budget_too_small`); calls over the budget (prompt with tool definitions, o200k), all and in "
        "the runs with room; next-step grounding (worst run); acted-on "
        "facts at the end; folds per 100 model calls; input cost with prompt caching (cached prefix 0.1×) ÷ none, "
        "and its floor: the same had every call sent only its system messages, request and newest tool batch (what "
        "no fold that keeps those verbatim goes below: every output is sent in full once); the folds per 100 calls "
        "had each fold come only over the budget and kept only that floor, none where the floor is over the budget "
        "(`least_folds`: the rate the recording itself sets where the budget can be held; a fold that keeps more "
        "comes back sooner); the folds per 100 of the calls whose system messages, tool definitions and request "
        "leave under a fifth of the budget (no room: the budget cannot be held there; – where there are none); "
        "billed ÷ the same runs uncompressed with the provider's best plain caching, through agno's real `Claude` "
        "and `OpenAIChat` (worst run in brackets).",
        "",
        f"## The default (`{DEFAULT}`) on every population",
        "",
        "| family | part | budget | runs | within | no room | calls over | calls over with room | grounding (worst) | "
        "acted-on | folds/100 calls | least folds/100 | folds/100 with no room | cost cached ÷ none | floor ÷ none | "
        + " | ".join(f"billed {_short(g)}" for g in groups)
        + " |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + "---|" * len(groups),
    ]
    for p in pops:
        for b in budgets:
            f = figures[(p.family, p.part, DEFAULT, b)]
            if not f.runs:
                continue
            money = billed.get((p.family, p.part, b), {})
            cells = [
                f"{money[g][0] / money[g][1]:.2f} ({money[g][2]:.2f})" if g in money and money[g][1] else "–"
                for g in groups
            ]
            lines.append(
                f"| {p.family} | {p.part} | {b // 1000}k | {f.runs} | {f.within} | {f.no_room} | {f.over} | "
                f"{f.over_room} | "
                f"{f.grounding:.3f} ({f.worst:.2f}) | {f.acted / f.acted_total if f.acted_total else 1:.3f} | "
                f"{100 * f.folds / max(1, f.calls):.1f} | {100 * f.least_folds / max(1, f.calls):.1f} | "
                f"{f'{100 * f.no_room_folds / f.no_room_calls:.1f}' if f.no_room_calls else '–'} | "
                f"{f.cost_ratio:.2f} | {f.floor_ratio:.2f} | " + " | ".join(cells) + " |"
            )
    if len(settings) > 1:
        families = sorted({p.family for p in pops})
        lines += [
            "",
            "## Candidates side by side",
            "",
            "Each candidate is the default with the options shown. Grounding / cost cached ÷ none / folds per 100 "
            "calls / runs within the budget, per population and budget.",
            "",
            "| setting | options |",
            "|---|---|",
            *(f"| {s} | `{json.dumps(variants.get(s, {}))}` |" for s in settings),
            "",
            "| family | part | budget | " + " | ".join(settings) + " |",
            "|---|---|---|" + "---|" * len(settings),
        ]
        for p in pops:
            for b in budgets:
                if not figures[(p.family, p.part, DEFAULT, b)].runs:
                    continue
                cells = []
                for s in settings:
                    f = figures[(p.family, p.part, s, b)]
                    cells.append(
                        f"{f.grounding:.3f} / {f.cost_ratio:.2f} / {100 * f.folds / max(1, f.calls):.1f} / "
                        f"{f.within}/{f.runs}"
                    )
                lines.append(f"| {p.family} | {p.part} | {b // 1000}k | " + " | ".join(cells) + " |")
        overall = choose(figures, settings, families, budgets)
        lines += [
            "",
            "## Leave one family out",
            "",
            "For each family: the setting chosen on the tune parts of all the *other* families (mean grounding within "
            "one point of the best, then the lowest mean cost with caching), and the left-out family's held-out "
            "part under that choice and under the default. Chosen on every family: "
            f"`{overall}`.",
            "",
            "| left out | chosen without it | its held-out part, chosen: grounding / cost / folds per 100 | "
            "default: grounding / cost / folds per 100 |",
            "|---|---|---|---|",
        ]
        for family in families:
            chosen = choose(figures, settings, [f for f in families if f != family], budgets)
            cells = []
            for s in (chosen, DEFAULT):
                held = [(b, figures[(family, "heldout", s, b)]) for b in budgets]
                shown = [
                    f"{b // 1000}k {r.grounding:.3f} / {r.cost_ratio:.2f} / {100 * r.folds / max(1, r.calls):.1f}"
                    for b, r in held
                    if r.runs
                ]
                cells.append(" · ".join(shown) or "–")
            lines.append(f"| {family} | `{chosen}` | {cells[0]} | {cells[1]} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="tune/<family>/ and heldout/<family>/")
    parser.add_argument("--budgets", type=int, nargs="+", default=[8_000, 16_000, 32_000])
    parser.add_argument("--billing", type=int, nargs="*", default=[8_000, 16_000], help="budgets billed (none: off)")
    parser.add_argument(
        "--candidate", action="append", default=[], metavar="NAME=JSON", help="the default, other options"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    variants = {}
    for spec in args.candidate:
        name, _, options = spec.partition("=")
        variants[name] = {"summarizer": DEFAULT, **json.loads(options)}
    settings = [DEFAULT, *variants]
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    _offline.forbid_network()
    started = time.perf_counter()
    pops = populations(args.data)
    if not pops:
        print(f"error: no tune/<family>/ or heldout/<family>/ folders under {args.data}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="agno-compression-families-") as tmp:
        rank_dir = str(Path(tmp) / "tiktoken")
        _offline.provide_tiktoken_rank_files(Path(rank_dir))
        figures = measure(pops, settings, args.budgets, variants, rank_dir, args.workers)
        billed = bill(pops, args.billing, rank_dir, args.workers) if args.billing else {}
    command = "python bench/families.py --data DATA"
    command += " --budgets " + " ".join(map(str, args.budgets))
    command += " --billing" + "".join(f" {b}" for b in args.billing)
    command += "".join(f" --candidate {n}='{json.dumps(o)}'" for n, o in variants.items())
    text = render(pops, settings, variants, args.budgets, figures, billed, command, time.perf_counter() - started)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    if args.out == OUT:  # the committed run: the same tables go into the bench's results and the docs
        block = "\n".join("#" + line if line.startswith("#") else line for line in text.split("\n"))
        block = block.replace("](README.md)", "](families/README.md)")
        for path in INTO:
            splice(
                path,
                block.replace("](families/", "](../bench/families/")
                if path.suffix == ".md" and "docs" in path.parts
                else block,
            )
    return 0


def splice(path: Path, block: str) -> None:
    """Put ``block`` between ``BEGIN`` and ``END`` in ``path`` (appended with both markers the first time)."""
    text = path.read_text(encoding="utf-8")
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + BEGIN + "\n" + block + END + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + BEGIN + "\n" + block + END + "\n"
    path.write_text(text, encoding="utf-8")
    print(f"updated {path}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
