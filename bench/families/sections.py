"""What each section of a summary supplies the next step, per token: the density a default trades on.

Every run of every population is replayed with the default at one budget, as ``bench/families.py`` replays it. For
each model call, each needed identifier of the next action (``agno_compression.eval.needs_of``) that the prompt
holds only inside the summaries is credited to the summary sections holding it (shared evenly when several do);
each section's tokens are summed over the calls that sent it. A section's density is its credits per 1,000 tokens
sent: what one more token of it would likely buy, against what it costs. Offline, deterministic.

    python bench/families/sections.py --data /work/data/families [--budget 16000] [--out bench/families/SECTIONS.md]
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import tempfile
import time
import warnings
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import _offline  # noqa: E402
import _replays  # noqa: E402
import families  # noqa: E402

from agno_compression._messages import content_text  # noqa: E402
from agno_compression._plan import is_summary  # noqa: E402
from agno_compression.eval import Trajectory  # noqa: E402
from agno_compression.eval._grounding import prompt_text  # noqa: E402

SECTIONS = (
    "Kept on request",
    "Earlier summary",
    "User requests",
    "Working state",
    "Read",
    "Names in use",
    "Steps",
    "Latest state",
    "Working set",
)
"""The sections an extractive summary may hold (``## <name>``; the working set's heading goes on after its name)."""
_HEADING = re.compile(r"^## (.+)$")


def sections(text: str, kind: str) -> dict[str, str]:
    """``kind:section`` -> its text, for one summary (a heading inside quoted data is not a section)."""
    out: dict[str, list[str]] = {f"{kind}:(header)": []}
    current = f"{kind}:(header)"
    for line in text.splitlines():
        heading = _HEADING.match(line)
        name = next((s for s in SECTIONS if heading and heading.group(1).startswith(s)), None)
        if name is not None:
            current = f"{kind}:{name}"
            out.setdefault(current, [])
        else:
            out[current].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def _one(job: tuple[Trajectory, int]) -> tuple[str, Counter[str], dict[str, float]]:
    trajectory, budget = job
    with tempfile.TemporaryDirectory(prefix="agno-compression-sections-") as tmp:
        row = _replays.replay_one(
            trajectory,
            families.DEFAULT,
            budget,
            Path(tmp),
            summarizer_factory=_offline.standin_summarizer,
            keep_requests=True,
        )
    count = _replays._COUNTER.count_text
    tokens: Counter[str] = Counter()
    credit: dict[str, float] = defaultdict(float)
    counted: dict[str, int] = {}
    for request, needed in zip(row.requests, _replays.needs_for(trajectory), strict=False):
        parts: dict[str, str] = {}
        for m in request.messages:
            if is_summary(m):
                text = content_text(m, use_compressed_content=True)
                kind = "history" if text.startswith("[Summary") else "progress"
                for key, part in sections(text, kind).items():
                    parts[key] = parts.get(key, "") + "\n" + part
        if not parts:
            continue
        rest = prompt_text([m for m in request.messages if not is_summary(m)])
        for key, part in parts.items():
            if part not in counted:
                counted[part] = count(part)
            tokens[key] += counted[part]
        for name in needed:
            if name in rest:
                continue
            holders = [key for key, part in parts.items() if name in part]
            for key in holders:
                credit[key] += 1 / len(holders)
    return trajectory.source, tokens, dict(credit)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="tune/<family>/ and heldout/<family>/")
    parser.add_argument("--budget", type=int, default=16_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=HERE / "SECTIONS.md")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    _offline.forbid_network()
    started = time.perf_counter()
    runs = [t for p in families.populations(args.data) for t in p.runs]
    tokens: dict[str, Counter[str]] = {}
    credit: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="agno-compression-sections-") as tmp:
        rank_dir = str(Path(tmp) / "tiktoken")
        _offline.provide_tiktoken_rank_files(Path(rank_dir))
        with ProcessPoolExecutor(args.workers, initializer=families._init, initargs=(rank_dir, {})) as pool:
            for family, t, c in pool.map(_one, [(t, args.budget) for t in runs], chunksize=1):
                tokens.setdefault(family, Counter()).update(t)
                into = credit.setdefault(family, defaultdict(float))
                for key, value in c.items():
                    into[key] += value
    keys = sorted({k for t in tokens.values() for k in t}, key=lambda k: (k.split(":")[0], _order(k)))
    lines = [
        "# What each summary section supplies the next step, per token",
        "",
        f"`python bench/families/sections.py --data DATA --budget {args.budget}` "
        f"({time.perf_counter() - started:.0f} s on this machine; every run of every family, tune and held out, with "
        "the default). Per family: needed identifiers of the next action that the prompt held only inside the "
        "summaries, credited to the sections holding them, per 1,000 tokens of the section sent (summed over calls; "
        "the tokens in brackets). `history`: the summary before the request (earlier runs); `progress`: the one "
        "after it (this run's earlier steps); `(header)`: the lines before the first section. User requests earn "
        "nothing by construction: an identifier a user message holds is never a need (`needs_of`).",
        "",
        "| section | " + " | ".join(sorted(tokens)) + " |",
        "|---|" + "---|" * len(tokens),
    ]
    for key in keys:
        cells = []
        for family in sorted(tokens):
            sent = tokens[family].get(key, 0)
            cells.append(f"{1000 * credit[family].get(key, 0) / sent:.2f} ({sent / 1000:,.0f}k)" if sent else "–")
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def _order(key: str) -> int:
    """Where a ``kind:section`` key's section comes in a summary (its header first)."""
    name = key.split(":", 1)[1]
    return SECTIONS.index(name) if name in SECTIONS else -1


if __name__ == "__main__":
    sys.exit(main())
