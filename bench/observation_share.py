"""Observation tokens the model sees, as a share of the original, per source of the shared recordings.

Regenerates the observation-share table of docs/observations.md: every tool output (``role="tool"``
message as recorded; text-only loops, whose observations are user messages, have none) of every run in
``../shared/trajectories`` goes through each policy with its defaults; the table gives the original o200k tokens
and what each policy leaves, as a share. Offline, deterministic (``ObservationSummaryPolicy`` without a model uses
its extractive fallback), a few seconds.

    python bench/observation_share.py [TRAJECTORIES_DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

from agno_compression import ObservationSummaryPolicy, TieredOutputPolicy, TruncatePolicy
from agno_compression.eval import iter_shared_trajectories
from agno_compression.tokens import TokenCounter

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {
    "tau-bench": "tau-bench (JSON records)",
    "openhands": "OpenHands (file views, builds)",
    "swe-agent": "SWE-agent (function-calling runs)",
    "tapeagents": "TapeAgents (search results, web pages)",
}


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else ROOT.parent / "shared" / "trajectories"
    counter = TokenCounter("gpt-4o")
    policies = {
        "TruncatePolicy()": TruncatePolicy(),
        "TieredOutputPolicy()": TieredOutputPolicy(),
        "ObservationSummaryPolicy()": ObservationSummaryPolicy(count_tokens=counter.count_text),
    }
    totals: dict[str, list[int]] = {}  # source -> [original, one figure per policy]
    for run in iter_shared_trajectories(root):
        row = totals.setdefault(run.source, [0] * (1 + len(policies)))
        for m in run.messages:
            if m.role != "tool":
                continue
            text = m.get_content_string()
            row[0] += counter.count_text(text)
            for k, policy in enumerate(policies.values(), start=1):
                row[k] += counter.count_text(policy.apply(text, m.tool_name))
    rows = [(SOURCES.get(s, s), totals[s]) for s in [*SOURCES, *sorted(set(totals) - set(SOURCES))] if s in totals]
    rows.append(("all", [sum(r[k] for _, r in rows) for k in range(1 + len(policies))]))
    print("| source | original tokens | " + " | ".join(policies) + " |")
    print("|---|---|" + "---|" * len(policies))
    for label, r in rows:
        shares = " | ".join(f"{100 * v / r[0]:.1f}%" if r[0] else "-" for v in r[1:])
        print(f"| {label} | {r[0]:,} | {shares} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
