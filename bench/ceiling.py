"""The grounding ceiling of a folder of recordings: how much of what each next step needs could any prompt within the
budget hold?

Per model call of the uncompressed replay, the prompt keeps what no fold removes (system messages, the current user
message, the newest tool batch); then an oracle that knows the names the recorded next step uses (``needs_of``)
adds the cheapest lines of the earlier messages that hold them (greedy: most needed names per token first) until the
budget is spent. The ceiling is the share of needed names that prompt holds, summed like next-step grounding. It
says whether a miss is the budget's (the names cannot fit) or the fold's (they fit, but it kept other lines): a
fold cannot beat it without knowing the next step.

    python bench/ceiling.py DIR [-b 8000 -b 16000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from agno.db.sqlite import SqliteDb
from agno.models.message import Message

from agno_compression._messages import message_text
from agno_compression.eval import identifiers, load_trajectories, needs_of, observations_as_tool_calls, replay
from agno_compression.tokens import TokenCounter

FRAMING = 300
"""Tokens left for the headings and framing a real fold adds around what it keeps."""


def fixed_part(messages: Sequence[Message]) -> set[int]:
    """Indexes of what no fold removes: system messages, the current user message, the newest tool batch."""
    current = max((i for i, m in enumerate(messages) if m.role == "user"), default=0)
    newest = max((i for i, m in enumerate(messages) if m.role == "assistant" and m.tool_calls), default=len(messages))
    system = {i for i, m in enumerate(messages) if m.role in ("system", "developer")}
    return system | {current} | set(range(max(newest, current), len(messages)))


def call_ceiling(messages: Sequence[Message], need: frozenset[str], budget: int, counter: TokenCounter) -> int:
    """How many of ``need`` the best prompt within ``budget`` holds for one model call (see the module doc)."""
    fixed = fixed_part(messages)
    text = "\n".join(message_text(messages[i], use_compressed_content=False) for i in fixed)
    held = {name for name in need if name in text}
    left = set(need) - held
    room = budget - FRAMING - sum(counter.count_message(messages[i]) for i in fixed)
    lines = [
        (names, counter.count_text(line) + 1)
        for i, m in enumerate(messages)
        if i not in fixed
        for line in message_text(m, use_compressed_content=False).split("\n")
        if (names := identifiers(line) & left)
    ]
    while left and room > 0 and lines:
        best = max(lines, key=lambda line: len(line[0] & left) / line[1])
        lines.remove(best)
        gain = best[0] & left
        if not gain:
            break
        if best[1] <= room:
            room -= best[1]
            held |= gain
            left -= gain
    return len(held)


def ceiling(folder: str, budgets: Sequence[int]) -> dict[int, tuple[int, int]]:
    """Per budget, (names the best prompts hold, names needed) over every recording of ``folder``."""
    counter = TokenCounter("gpt-4o")
    totals = {budget: (0, 0) for budget in budgets}
    with tempfile.TemporaryDirectory(prefix="agno-compression-ceiling-") as tmp:
        for n, trajectory in enumerate(load_trajectories(folder)):
            messages = observations_as_tool_calls(trajectory.messages)
            base = replay(messages, db=SqliteDb(db_file=str(Path(tmp, f"{n}.db"))))
            over = [b for b in budgets if max((r.prompt_tokens for r in base.requests), default=0) > b]
            for request, need in zip(base.requests, needs_of(messages), strict=False):
                if not need:
                    continue
                for budget in over:  # as in eval: a recording counts where it needs compressing
                    kept, total = totals[budget]
                    totals[budget] = (kept + call_ceiling(request.messages, need, budget, counter), total + len(need))
    return totals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="a folder of recordings (any format agno-compression eval reads)")
    parser.add_argument("-b", "--budget", type=int, action="append", help="budget in tokens (repeatable)")
    args = parser.parse_args(argv)
    for budget, (kept, total) in ceiling(args.folder, args.budget or [8000, 16000]).items():
        print(f"{budget:>7,}  grounding ceiling {kept / total if total else 1.0:.3f}  ({kept:,} of {total:,} names)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
