"""Aggregate the replays and write ``RESULTS.md``: tables, definitions, the machine line and the goals."""

from __future__ import annotations

import datetime
import os
import platform
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from _memory import MemoryResult, section
from _replays import OURS, Replayed
from _session_load import LoadResult

from agno_compression.eval import Trajectory, acted_retained

LONG = "long sessions"
TOTAL = "all recorded"
LONG_RUN_MESSAGES = 150
"""The machinery goal is about runs of at least this many messages."""

COLUMNS = [
    "threshold",
    "setting",
    "runs kept ≤ T",
    "calls > T",
    "pair violations",
    "peak tokens",
    "peak ÷ none",
    "peak ÷ floor",
    "cumulative ÷ none",
    "cumulative ÷ floor",
    "cost cached 0.1× ÷ none",
    "cost cached 0.25× ÷ none",
    "acted-on facts at end",
    "next-step grounding",
    "folds",
    "summarizer calls",
    "calls per fold",
    "fact retention per summary",
    "largest summary",
    "machinery ms/call median (mean)",
    "wall ÷ none (CPU ÷ none)",
]


@dataclass
class Agg:
    """A group of replays of one setting at one threshold, next to the same recordings uncompressed."""

    runs: int = 0
    kept: int = 0
    calls: int = 0
    over: int = 0
    violations: int = 0
    errors: int = 0
    peak: int = 0
    peak_vs_none: list[float] = field(default_factory=list)
    peak_vs_floor: list[float] = field(default_factory=list)
    cumulative: int = 0
    cumulative_none: int = 0
    cumulative_floor: int = 0
    costs: list[float] = field(default_factory=lambda: [0.0, 0.0])
    costs_none: list[float] = field(default_factory=lambda: [0.0, 0.0])
    costs_floor: list[float] = field(default_factory=lambda: [0.0, 0.0])
    acted_kept: int = 0
    acted_total: int = 0
    grounded: int = 0
    grounding_total: int = 0
    folds: int = 0
    masks: int = 0
    summarizer_calls: int = 0
    summarizer_prompt_tokens: int = 0
    facts_kept: int = 0
    facts_total: int = 0
    largest_summary: int = 0
    per_call: list[float] = field(default_factory=list)
    wall: float = 0.0
    wall_none: float = 0.0
    cpu: float = 0.0
    cpu_none: float = 0.0
    machinery: float = 0.0
    summarizer: float = 0.0
    kinds: dict[str, list[int]] = field(default_factory=dict)
    fact_tokens: list[int] = field(default_factory=list)
    composition: dict[str, int] = field(default_factory=dict)
    impossible: list[str] = field(default_factory=list)
    """Runs not kept under the threshold whose system prompt and current user message alone are over it."""

    def add(self, row: Replayed, base: Replayed, threshold: int) -> None:
        peak = max(row.tokens, default=0)
        self.runs += 1
        self.kept += peak <= threshold
        self.calls += len(row.tokens)
        self.over += sum(1 for t in row.tokens if t > threshold)
        self.violations += row.violations
        self.errors += row.errors
        self.peak = max(self.peak, peak)
        self.peak_vs_none.append(peak / max(1, max(base.tokens, default=1)))
        self.peak_vs_floor.append(peak / max(1, max(base.floors, default=1)))
        self.cumulative += sum(row.tokens)
        self.cumulative_none += sum(base.tokens)
        self.cumulative_floor += sum(base.floors)
        for i in range(min(len(row.costs), len(base.costs), 2)):
            self.costs[i] += row.costs[i]
            self.costs_none[i] += base.costs[i]
            self.costs_floor[i] += base.floor_costs[i] if len(base.floor_costs) > i else 0.0
        acted_kept, acted_total = acted_retained(base.acted, base.final_text, row.final_text)
        self.acted_kept += acted_kept
        self.acted_total += acted_total
        self.grounded += row.grounded
        self.grounding_total += row.grounding_total
        self.folds += row.folds
        self.masks += row.masks
        self.summarizer_calls += row.summarizer_calls
        self.summarizer_prompt_tokens += row.summarizer_prompt_tokens
        self.facts_kept += row.facts_kept
        self.facts_total += row.facts_total
        self.largest_summary = max(self.largest_summary, row.max_summary_tokens)
        self.per_call += row.per_call
        self.wall += row.wall
        self.cpu += row.cpu
        self.wall_none += row.wall_none if row is not base else base.wall
        self.cpu_none += row.cpu_none if row is not base else base.cpu
        self.machinery += row.machinery
        self.summarizer += row.summarizer
        for kind, (kept, total) in row.facts_by_kind.items():
            self.kinds.setdefault(kind, [0, 0])
            self.kinds[kind][0] += kept
            self.kinds[kind][1] += total
        self.fact_tokens += row.fact_tokens
        for part, tokens in row.composition.items():
            self.composition[part] = self.composition.get(part, 0) + tokens
        if peak > threshold and base.fixed_peak > threshold:
            self.impossible.append(row.name)

    @property
    def cumulative_ratio(self) -> float:
        return self.cumulative / self.cumulative_none if self.cumulative_none else float("nan")

    def cost_ratio(self, i: int) -> float | None:
        return self.costs[i] / self.costs_none[i] if self.costs_none[i] else None

    def floor_cost_ratio(self, i: int) -> float | None:
        """What sending only each call's floor would cost, ÷ none: no setting that keeps it verbatim costs less."""
        return self.costs_floor[i] / self.costs_none[i] if self.costs_none[i] and self.costs_floor[i] else None

    @property
    def acted_retention(self) -> float | None:
        return self.acted_kept / self.acted_total if self.acted_total else None

    @property
    def grounding(self) -> float | None:
        return self.grounded / self.grounding_total if self.grounding_total else None

    @property
    def retention(self) -> float | None:
        return self.facts_kept / self.facts_total if self.facts_total else None

    @property
    def machinery_median_ms(self) -> float | None:
        return statistics.median(self.per_call) * 1e3 if self.per_call else None

    @property
    def machinery_mean_ms(self) -> float | None:
        return statistics.fmean(self.per_call) * 1e3 if self.per_call else None

    @property
    def wall_ratio(self) -> float:
        return self.wall / self.wall_none if self.wall_none else float("nan")

    @property
    def cpu_ratio(self) -> float:
        return self.cpu / self.cpu_none if self.cpu_none else float("nan")

    @property
    def calls_per_fold(self) -> float | None:
        return self.calls / self.folds if self.folds else None


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "–" if value is None else format(value, spec)


def _row(threshold: int, setting: str, a: Agg) -> list[str]:
    if not a.runs:
        return [f"{threshold // 1000}k", setting, "0/0 (no run over T)", *["–"] * (len(COLUMNS) - 3)]
    machinery = "–"
    if a.per_call:
        machinery = f"{a.machinery_median_ms:.3f} ({statistics.fmean(a.per_call) * 1e3:.3f})"
    folds = str(a.folds) + (f" + {a.masks} masking" if a.masks else "")
    return [
        f"{threshold // 1000}k",
        setting,
        f"{a.kept}/{a.runs}" + (f" ({a.errors} errored)" if a.errors else ""),
        f"{a.over}/{a.calls}",
        str(a.violations),
        f"{a.peak:,}",
        _fmt(statistics.fmean(a.peak_vs_none)),
        _fmt(statistics.fmean(a.peak_vs_floor)),
        _fmt(a.cumulative_ratio),
        _fmt(a.cumulative / a.cumulative_floor if a.cumulative_floor else None),
        _fmt(a.cost_ratio(0)),
        _fmt(a.cost_ratio(1)),
        _fmt(a.acted_retention),
        _fmt(a.grounding),
        folds if setting != "none" else "–",
        str(a.summarizer_calls) if setting != "none" else "–",
        _fmt(a.calls_per_fold, ".1f"),
        _fmt(a.retention * 100 if a.retention is not None else None, ".1f") + ("%" if a.retention is not None else ""),
        f"{a.largest_summary:,}" if a.largest_summary else "–",
        machinery,
        "1.00 (1.00)" if setting == "none" else f"{a.wall_ratio:.2f} ({a.cpu_ratio:.2f})" if a.wall else "–",
    ]


def _table(lines: list[list[str]]) -> str:
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    out += ["| " + " | ".join(cells) + " |" for cells in lines]
    return "\n".join(out)


def _block(
    rows: Sequence[Replayed], baseline: dict[str, Replayed], threshold: int, settings: Sequence[str], keep: set[str]
) -> list[list[str]]:
    """One table line per setting, or one line saying no run needed compression at this threshold."""
    lines = [_row(threshold, s, aggregate(rows, baseline, threshold, s, keep)) for s in settings]
    if aggregate(rows, baseline, threshold, "none", keep).runs:
        return lines
    return [_row(threshold, "every setting", Agg())]


def aggregate(
    rows: Sequence[Replayed], baseline: dict[str, Replayed], threshold: int, setting: str, keep: set[str]
) -> Agg:
    """The replays of ``setting`` at ``threshold`` of the recordings named in ``keep``."""
    agg = Agg()
    if setting == "none":
        for name in sorted(keep):
            base = baseline[name]
            if max(base.tokens, default=0) > threshold:
                agg.add(base, base, threshold)
        return agg
    for row in rows:
        if row.threshold == threshold and row.setting == setting and row.name in keep:
            agg.add(row, baseline[row.name], threshold)
    return agg


def render(
    *,
    command: str,
    thresholds: Sequence[int],
    settings: Sequence[str],
    recordings: Sequence[Trajectory],
    baseline: dict[str, Replayed],
    rows: Sequence[Replayed],
    load: LoadResult | None,
    encodings: Sequence[str],
    seconds: float,
    memory: MemoryResult | None = None,
) -> str:
    sources = list(dict.fromkeys(t.source for t in recordings if t.source != LONG))
    names = {s: {t.name for t in recordings if t.source == s} for s in [*sources, LONG]}
    real = set().union(*(names[s] for s in sources)) if sources else set()
    every = ["none", *settings]
    cpu = _cpu_model() or platform.processor() or platform.machine()
    machine = (
        f"{platform.system()} {platform.release()} {cpu}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"agno {_version('agno')}, tiktoken {_version('tiktoken')}; "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; benchmark took {seconds:.0f} s"
    )
    counts = {s: len(names[s]) for s in [*sources, LONG] if names[s]}
    over = {
        th: {s: sum(1 for n in names[s] if max(baseline[n].tokens, default=0) > th) for s in counts}
        for th in thresholds
    }
    out = [
        "# Benchmark results",
        "",
        f"Command: `{command}` (writes this file). Machine: {machine}.",
        "",
        "Recordings replayed: "
        + ", ".join(f"{s} {n}" for s, n in counts.items())
        + ". Only recordings whose uncompressed replay exceeds the threshold somewhere count at that threshold: "
        + "; ".join(f"{th // 1000}k: " + ", ".join(f"{s} {n}" for s, n in over[th].items()) for th in thresholds)
        + ".",
        "",
        f"## All recorded runs ({', '.join(s for s in sources if names[s]) or 'none'})",
        "",
        _table([line for th in thresholds for line in _block(rows, baseline, th, every, real)]),
    ]
    if names[LONG]:
        out += [
            "",
            f"## Long sessions ({', '.join(sorted(names[LONG]))})",
            "",
            "Each chains the longest recordings of one source into one session (one system prompt; each recording's "
            "user messages start runs, so later runs carry the earlier ones as history): "
            + ", ".join(f"{n}: {baseline[n].messages} messages" for n in sorted(names[LONG]))
            + ".",
            "",
            _table([line for th in thresholds for line in _block(rows, baseline, th, every, names[LONG])]),
        ]
    out += ["", "## Per source", ""]
    out.append(
        _table(
            [
                _row(th, f"{s} · {src}", aggregate(rows, baseline, th, s, names[src]))
                for src in sources
                for th in thresholds
                for s in every
                if over[th].get(src)
            ]
        )
    )
    out += _breakdowns(rows, baseline, thresholds, every, {TOTAL: real, LONG: names[LONG]})
    if load is not None:
        title = "## Session load (10,000 messages, 100 folds)" if load.messages >= 10_000 else "## Session load"
        out += ["", title, ""]
        out += [
            f"One agent session of {load.messages:,} messages in {load.runs} runs stored by agno in SQLite "
            f"({load.db_bytes / 1e6:.1f} MB), {load.folds} rows in `agno_compression_events` folding "
            f"{load.folded_ids:,} of its message ids; median of {load.repeats} interleaved loads each, "
            "`gc.collect()` before each.",
            "",
            "| db object | agno plain load ms | + our filtering ms | ratio | of which get_session | history build "
            "| load_counted | filter_folded | messages left |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for t in load.times:
            label = "new SqliteDb per load (cold)" if t.mode == "cold" else "one SqliteDb, agno's run cache warm"
            out.append(
                f"| {label} | {t.plain_ms:.1f} | {t.filtered_ms:.1f} | {t.ratio:.2f}x | {t.get_session_ms:.1f} "
                f"| {t.history_ms:.1f} | {t.store_load_ms:.1f} | {t.filter_ms:.1f} | {load.kept_after_filter:,} |"
            )
    if memory is not None:
        out += ["", *section(memory)]
    out += ["", "## How it is measured", ""]
    out += [
        "- Every replay runs a real agno `Agent` (sync mode, SQLite `db`, full history) in this one process; a "
        "`ScriptedModel` plays the recorded assistant turns and records every request with its exact o200k token "
        "count (messages with role overhead, tool calls and tool definitions), which is what every token figure "
        "here is. Non-loopback network connections are refused for the whole benchmark.",
        "- agno's built-ins count with agno's own counter (`agno.utils.tokens`, tiktoken o200k for this model id). "
        "Offline, tiktoken cannot download its rank files, so `Compaction` would never fire and "
        "`compress_token_limit` would end runs in error. The benchmark writes the rank files shipped by the "
        f"`bpe-openai` package ({', '.join(encodings)}), unpacked and checked against the published sha256, into a "
        "temporary directory under tiktoken's cache names (sha1 of the download URL) and points "
        "`TIKTOKEN_CACHE_DIR` at it before anything loads an encoding: agno then counts exactly, offline, with "
        "the same encoding. agno's count leaves out role overhead and tool-definition framing, so it reads a little "
        "lower than ours and fires a little later; that is agno's behaviour, not changed here.",
        "- `agno-compress` is `agno.compression.manager.CompressionManager(compress_token_limit=T, model=stand-in)`"
        ", `agno-compaction` is `Agent(compaction=Compaction(compact_at_tokens=T, model=stand-in))`, both with "
        "agno's other defaults. `extractive`, `mask`, `pipeline`, `llm` are "
        "`agno_compression.CompressionManager(compress_at_tokens=T, summarizer=...)`, `llm` with "
        "`model=stand-in`.",
        "- The stand-in summarizer is a real agno model (`ScriptedModel`, no network) that answers with a "
        "deterministic digest of its input: the first lines and every path, id, number, error name and URL, cut "
        "to 20% of the input's tokens (at least 64, at most 1,500). Its fact retention measures that digest, not "
        "a real LLM; only the extractive figure is the real thing.",
        "- A run (recording) is kept ≤ T when every model call of its replay is at most T tokens. Peak ratios are "
        "means over runs of (run's peak ÷ its uncompressed peak) and (run's peak ÷ its floor peak); cumulative "
        "ratios are sums over runs. The floor of a model call is what no strategy can drop: system + current user "
        "message + last tool batch (+ tool definitions), counted on the uncompressed replay.",
        "- Folds: our summary folds (`+ masking` = masking-only passes); agno-compress: `compress()` calls that "
        "compressed at least one tool result; agno-compaction: summaries written. Summarizer calls: calls of the "
        "summarizer (ours, the extractive one included) or of the stand-in model (agno: one per tool result, "
        "one per compaction). Fact retention: `agno_compression.eval.fact_retention` of every summary against "
        "what it replaced (ids, paths, numbers, error names, exit codes, URLs), summed; largest summary in o200k "
        "tokens (ours: the text one fold injects, its history and progress summaries together).",
        "- Machinery: wall time inside each strategy's hooks (ours: `should_compress`, `compress`, pre- and "
        "post-hook; agno-compress: `should_compress`, `compress`; agno-compaction: `apply_compaction` and "
        "`_stored_compaction`), minus the time inside its summarizer, booked to the model call it precedes; "
        "median (mean) over all model calls. Wall ÷ none: the whole replay (every run of the session, storage "
        "included) against the same recordings uncompressed.",
        "- Timing: at each threshold every recording is replayed in rounds (3 by default), each round one "
        "uncompressed replay and one per setting in rotating order, after a full `gc.collect()`; wall and CPU "
        "times are the medians over the rounds, so drift and other processes on the machine hit both sides of "
        "a ratio alike. Every replay uses a fresh SQLite file, so agno's tables and ours are created inside the "
        "timing, as for a new database.",
    ]
    if any(s.split("-")[0].split(" ")[0] in ("langchain", "openhands", "adk") for s in settings):
        out += [
            "- Peer rows (`--peers`, `bench/_peers.py`): `langchain-summarization` is LangChain's `create_agent` with "
            '`SummarizationMiddleware(trigger=("tokens", T))` (default keep: the last 20 messages), '
            "`openhands-llm-summarizing` is the OpenHands SDK's `LLMSummarizingCondenser(max_tokens=T)` applied to the "
            "recorded events before every model call as `Agent.step` does, `adk-compaction` is a Google ADK `Runner` "
            "with `EventsCompactionConfig(token_threshold=T, event_retention_size=10)`; each with a fake model of "
            "that library playing the recorded turns, tools returning the recorded outputs and the same stand-in "
            "summarizer. What each fake model receives is converted to agno messages and counted, costed and "
            "checked exactly as the other rows. `<peer> uncompressed` is the peer without compression: agno keeps "
            "the last 3 runs of history by default, the peers every run, so on recordings of several runs it is "
            "above `none`. Wall ÷ none of a peer row is against that peer's own uncompressed replay.",
        ]
    peers = [
        x for x in settings if x not in ("none", "agno-compress", "agno-compaction", *OURS) and "uncompressed" not in x
    ]
    if peers:
        out += ["", "## Where a peer beats us", ""]
        out += _peer_wins(rows, baseline, thresholds, settings, peers, {TOTAL: real, LONG: names[LONG]})
    out += ["", "## Goals", ""]
    out += _goals(rows, baseline, thresholds, settings, real, names[LONG], recordings, load)
    return "\n".join(out) + "\n"


def _peer_wins(
    rows: Sequence[Replayed],
    baseline: dict[str, Replayed],
    thresholds: Sequence[int],
    settings: Sequence[str],
    peers: Sequence[str],
    groups: dict[str, set[str]],
) -> list[str]:
    """Every column on which a peer row is better than the best of this package's settings, said plainly."""
    columns: list[tuple[str, Any, bool]] = [
        ("runs kept ≤ T", lambda a: a.kept / a.runs if a.runs else None, True),
        ("peak tokens", lambda a: a.peak, False),
        ("cumulative ÷ none", lambda a: a.cumulative_ratio, False),
        ("cost cached 0.1× ÷ none", lambda a: a.cost_ratio(0), False),
        ("cost cached 0.25× ÷ none", lambda a: a.cost_ratio(1), False),
        ("acted-on facts at end", lambda a: a.acted_retention, True),
        ("summarizer calls", lambda a: a.summarizer_calls, False),
        ("fact retention per summary", lambda a: a.retention, True),
    ]
    ours = [x for x in settings if x in OURS and x != "mask"]
    lines = []
    for th in thresholds:
        for group, keep in groups.items():
            mine = {x: aggregate(rows, baseline, th, x, keep) for x in ours}
            mine = {x: a for x, a in mine.items() if a.runs}
            for peer in peers:
                theirs = aggregate(rows, baseline, th, peer, keep)
                if not theirs.runs or not mine:
                    continue
                for name, value, higher in columns:
                    got = value(theirs)
                    best = [(value(a), x) for x, a in mine.items() if value(a) is not None]
                    if got is None or not best:
                        continue
                    top, who = max(best) if higher else min(best)
                    if (got > top) if higher else (got < top):
                        lines.append(
                            f"- {th // 1000}k, {group}: `{peer}` beats our best (`{who}`) on {name}: "
                            f"{got:,.2f} against {top:,.2f}."
                        )
    return lines or ["- No peer row is better than ours on any compared column."]


def _pct(part: float, whole: float) -> str:
    return f"{part / whole:.1%}" if whole else "–"


def _breakdowns(
    rows: Sequence[Replayed],
    baseline: dict[str, Replayed],
    thresholds: Sequence[int],
    settings: Sequence[str],
    groups: dict[str, set[str]],
) -> list[str]:
    """Where the prompt tokens and the time go, and which facts the summaries keep."""
    blocks: list[tuple[int, str, str, Agg]] = []
    for th in thresholds:
        for group, keep in groups.items():
            if keep and aggregate(rows, baseline, th, "none", keep).runs:
                blocks += [(th, group, s, aggregate(rows, baseline, th, s, keep)) for s in settings]
    out = [
        "",
        "## Where the prompt tokens go",
        "",
        "Cumulative prompt tokens split per model call into the floor (system + current user + last tool batch + "
        "tool definitions), this package's summary message, and the rest (history and tool batches not folded "
        "yet, masked or compressed or not), as shares of the uncompressed cumulative tokens of the same runs.",
        "",
        "| threshold | runs | setting | floor | summary | rest | total ÷ none |",
        "|---|---|---|---|---|---|---|",
    ]
    for th, group, setting, a in blocks:
        c = a.composition
        out.append(
            f"| {th // 1000}k | {group} | {setting} | {_pct(c.get('floor', 0), a.cumulative_none)} "
            f"| {_pct(c.get('summary', 0), a.cumulative_none)} | {_pct(c.get('rest', 0), a.cumulative_none)} "
            f"| {_pct(a.cumulative, a.cumulative_none)} |"
        )
    out += [
        "",
        "## Where the time goes",
        "",
        "Seconds summed over the runs (medians of the timed rounds): the whole replay, the same runs uncompressed "
        "(timed next to it), the strategy's hooks without its summarizer, and its summarizer (the offline stand-in "
        "model for agno's built-ins and `llm`); the remainder is what the strategy changes elsewhere (agno storing "
        "the restored messages, prompts of another size, timing noise).",
        "",
        "| threshold | runs | setting | replay s | uncompressed s | machinery s | summarizer s | summarizer ms/call "
        "| remainder s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for th, group, setting, a in blocks:
        if setting == "none":
            continue
        net = a.machinery - a.summarizer
        per = a.summarizer / a.summarizer_calls * 1e3 if a.summarizer_calls else None
        rest = a.wall - a.wall_none - net - a.summarizer
        out.append(
            f"| {th // 1000}k | {group} | {setting} | {a.wall:.2f} | {a.wall_none:.2f} | {net:.2f} "
            f"| {a.summarizer:.2f} | {_fmt(per, '.1f')} | {rest:+.2f} |"
        )
    kinds = ("paths", "ids", "errors", "numbers", "exit_codes", "urls")
    out += [
        "",
        "## Fact retention by kind",
        "",
        "Share of the facts of the folded messages found verbatim in the summary that replaced them (kept/total). "
        "Only `extractive` and `pipeline` are this package's real summaries; the others are the offline stand-in. "
        "The last column is what merely listing every fact of the replaced messages once would take, in o200k "
        "tokens per summary (median, max), next to the largest summary written.",
        "",
        "| threshold | runs | setting | " + " | ".join(kinds) + " | all | facts alone: tokens median (max) "
        "| largest summary |",
        "|---|---|---|" + "---|" * (len(kinds) + 3),
    ]
    for th, group, setting, a in blocks:
        if not a.facts_total:
            continue
        cells = [
            f"{_pct(a.kinds[k][0], a.kinds[k][1])} ({a.kinds[k][0]}/{a.kinds[k][1]})"
            if a.kinds.get(k, [0, 0])[1]
            else "–"
            for k in kinds
        ]
        out.append(
            f"| {th // 1000}k | {group} | {setting} | "
            + " | ".join(cells)
            + f" | {_pct(a.facts_kept, a.facts_total)} | {statistics.median(a.fact_tokens):,.0f} "
            f"({max(a.fact_tokens):,}) | {a.largest_summary:,} |"
        )
    return out


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "?"


def _goals(
    rows: Sequence[Replayed],
    baseline: dict[str, Replayed],
    thresholds: Sequence[int],
    settings: Sequence[str],
    real: set[str],
    long: set[str],
    recordings: Sequence[Trajectory],
    load: LoadResult | None,
) -> list[str]:
    lines: list[str] = []
    every = real | long
    ours = [s for s in settings if s in OURS]

    def status(ok: bool) -> str:
        return "**met**" if ok else "**missed**"

    # 1. every run under threshold, no pair violation
    for s in ours:
        parts, ok = [], True
        for th in thresholds:
            a = aggregate(rows, baseline, th, s, every)
            if not a.runs:
                parts.append(f"{th // 1000}k: no run over it")
                continue
            ok = ok and a.kept == a.runs and a.violations == 0
            note = ""
            if a.impossible:
                note = (
                    f" ({len(a.impossible)} not kept whose system prompt + current user message alone are over "
                    f"{th:,}: {', '.join(a.impossible)})"
                )
            parts.append(f"{th // 1000}k: {a.kept}/{a.runs} runs, {a.over} calls over, {a.violations} violations{note}")
        lines.append(f"- Every run under the threshold, 0 pair violations ({s}): {status(ok)} — {'; '.join(parts)}.")
    # 2. what the folded context keeps and what it costs (the fold-quality goals), per group of runs
    goals = {8_000: (0.85, 0.25), 16_000: (0.90, 0.30)}
    for s in [x for x in ("extractive", "pipeline", "llm") if x in ours]:
        for label, keep in (("recorded runs", real), ("long sessions", long)):
            parts, ok = [], True
            for th in [t for t in thresholds if t in goals]:
                a = aggregate(rows, baseline, th, s, keep)
                if not a.runs:
                    continue
                want_facts, want_cum = goals[th]
                floor = a.cumulative_floor / a.cumulative_none if a.cumulative_none else 0.0
                ok = (
                    ok
                    and (a.acted_retention or 0.0) >= want_facts
                    and a.cumulative_ratio <= want_cum
                    and (a.cost_ratio(0) or 1.0) <= 0.40
                )
                parts.append(
                    f"{th // 1000}k: acted-on facts {_fmt(a.acted_retention)} (≥ {want_facts}), cumulative "
                    f"{a.cumulative_ratio:.2f} (≤ {want_cum}; floor {floor:.2f}), cost cached 0.1× "
                    f"{_fmt(a.cost_ratio(0))} (≤ 0.40)"
                )
            if parts:
                lines.append(f"- Fold quality and cost ({s}, {label}): {status(ok)} — {'; '.join(parts)}.")
    # 2b. what the next step needs: grounding and acted-on facts at a cost with caching, every run under T
    needs = {8_000: 0.90, 16_000: 0.95}
    for s in [x for x in ("extractive", "pipeline", "llm") if x in ours]:
        for label, keep in (("recorded runs", real), ("long sessions", long)):
            parts, ok = [], True
            for th in [t for t in thresholds if t in needs]:
                a = aggregate(rows, baseline, th, s, keep)
                if not a.runs:
                    continue
                cost, floor = a.cost_ratio(0), a.floor_cost_ratio(0)
                unreachable = len(a.impossible)
                ok = (
                    ok
                    and (a.grounding or 0.0) >= needs[th]
                    and (a.acted_retention or 0.0) >= 0.95
                    and (cost or 1.0) <= 0.45
                    and a.kept + unreachable == a.runs
                    and a.violations == 0
                )
                parts.append(
                    f"{th // 1000}k: grounding {_fmt(a.grounding)} (≥ {needs[th]}), acted-on facts "
                    f"{_fmt(a.acted_retention)} (≥ 0.95), cost cached 0.1× {_fmt(cost)} (≤ 0.45; the floor alone "
                    f"costs {_fmt(floor)}), {a.kept}/{a.runs} runs ≤ T"
                    + (f" ({unreachable} whose system prompt and task alone are over T)" if unreachable else "")
                    + f", {a.violations} violations"
                )
            if parts:
                lines.append(f"- What the next step needs ({s}, {label}): {status(ok)} — {'; '.join(parts)}.")
    # 3. summarizer calls = folds, folds ≤ one per ~5 calls on long runs
    long_runs = {t.name for t in recordings if t.name in every and baseline[t.name].messages >= LONG_RUN_MESSAGES}
    for s in ours:
        if s == "mask":
            continue
        parts, ok = [], True
        for th in thresholds:
            a = aggregate(rows, baseline, th, s, every)
            if not a.runs:
                continue
            la = aggregate(rows, baseline, th, s, long_runs)
            ok = ok and a.summarizer_calls == a.folds and (not la.folds or (la.calls_per_fold or 0) >= 5)
            parts.append(
                f"{th // 1000}k: {a.summarizer_calls} summarizer calls / {a.folds} folds, "
                f"{_fmt(la.calls_per_fold, '.1f')} calls per fold on runs of ≥ {LONG_RUN_MESSAGES} messages"
            )
        if parts:
            lines.append(
                f"- Summarizer calls = folds, ≥ 5 calls per fold on long runs ({s}): {status(ok)} — {'; '.join(parts)}."
            )
    # 4. machinery ≤ 1 ms per call on 150-message runs
    for s in ours:
        parts, ok = [], True
        for th in thresholds:
            a = aggregate(rows, baseline, th, s, long_runs)
            if not a.per_call:
                continue
            mean, median = a.machinery_mean_ms or 0.0, a.machinery_median_ms or 0.0
            ok = ok and mean <= 1.0
            parts.append(f"{th // 1000}k: mean {mean:.3f} ms, median {median:.3f} ms over {len(a.per_call)} calls")
        if parts:
            lines.append(
                f"- Machinery ≤ 1 ms per model call (mean, fold calls included) on runs of ≥ {LONG_RUN_MESSAGES} "
                f"messages ({s}): "
                f"{status(ok)} — {'; '.join(parts)}."
            )
    if not long_runs:
        lines.append(f"- Machinery on runs of ≥ {LONG_RUN_MESSAGES} messages: not measured (no such run replayed).")
    # 5. wall time with extractive
    if "extractive" in settings:
        parts, ok = [], True
        for th in thresholds:
            a = aggregate(rows, baseline, th, "extractive", every)
            if a.runs:
                ok = ok and (a.wall_ratio <= 1.15 or th not in (8_000, 16_000))
                parts.append(
                    f"{th // 1000}k: {a.wall_ratio:.2f}x ({a.wall:.1f} s vs {a.wall_none:.1f} s; "
                    f"CPU {a.cpu_ratio:.2f}x)"
                )
        goal = "- Whole replay ≤ 1.15x the wall time of none at 8k and 16k (extractive)"
        lines.append(f"{goal}: {status(ok)} — {'; '.join(parts)}.")
    # 6. session load
    if load is not None:
        ratios = "; ".join(f"{t.mode}: {t.ratio:.2f}x ({t.filtered_ms:.1f} vs {t.plain_ms:.1f} ms)" for t in load.times)
        lines.append(
            f"- Session load with filtering ≤ 1.1x agno's plain load ({load.messages:,} messages, {load.folds} "
            f"folds): {status(all(t.ratio <= 1.1 for t in load.times))} — {ratios}."
        )
    # 7. extractive fact retention
    if "extractive" in settings:
        parts, ok = [], True
        for th in thresholds:
            a = aggregate(rows, baseline, th, "extractive", every)
            if a.retention is None:
                continue
            ok = ok and a.retention >= 0.9 and a.largest_summary <= 2_000
            parts.append(f"{th // 1000}k: {a.retention:.1%} kept, largest summary {a.largest_summary:,} tokens")
        lines.append(
            f"- Extractive fact retention ≥ 90% with summaries ≤ 2,000 tokens: {status(ok)} — "
            f"{'; '.join(parts) or 'no fold'}."
        )
    return lines
