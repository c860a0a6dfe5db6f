"""Benchmark: recounting a long prompt after one new message versus counting it from scratch.

Run ``python bench/tokens_bench.py``. The prompt is the first 150 messages of the tau-bench
runs in ``../shared/trajectories`` (synthetic messages when that folder is absent) plus the
tool definitions of the airline domain. For each backend it times

* from scratch: a fresh ``TokenCounter`` counts the 150-message prompt, and
* incremental: a counter that already counted those 150 messages counts them plus one new one,

and prints the ratio of the medians. Each timing runs with garbage collection paused, as
``timeit`` does ("warm"); the "cold" rows first run ``gc.collect()``, which also evicts CPU
caches the way the work between two model calls does. Exits with status 1 if a warm ratio
is below 20x.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from agno.models.message import Message

from agno_compression.tokens import EstimateBackend, TextCounter, TiktokenBackend, TokenCounter

TRAJECTORIES = Path(__file__).resolve().parents[1].parent / "shared" / "trajectories"
REQUIRED_RATIO = 20.0
TOOLS = [
    {
        "name": "get_reservation_details",
        "description": "Get the details of a reservation.",
        "parameters": {
            "type": "object",
            "properties": {
                "reservation_id": {"type": "string", "description": "The reservation id, such as '8JX2WO'."}
            },
            "required": ["reservation_id"],
        },
    },
    {
        "name": "search_direct_flight",
        "description": "Search direct flights between two cities on a specific date.",
        "parameters": {
            "type": "object",
            "properties": {
                "origin": {"type": "string", "description": "The origin city airport in three letters, such as 'JFK'."},
                "destination": {"type": "string", "description": "The destination city airport, such as 'LAX'."},
                "date": {"type": "string", "description": "The date of the flight in the format 'YYYY-MM-DD'."},
            },
            "required": ["origin", "destination", "date"],
        },
    },
]


def trajectory_messages(limit: int) -> list[Message]:
    """Messages of consecutive tau-bench runs (OpenAI chat format), or ``[]`` without the shared data."""
    path = TRAJECTORIES / "tau-bench" / "gpt-4o-airline.json"
    if not path.is_file():
        return []
    from agno_compression.eval import load_trajectories

    messages: list[Message] = [m for t in load_trajectories(path) for m in t.messages]
    return messages[:limit]


def synthetic_messages(limit: int) -> list[Message]:
    """A deterministic agent-like session: questions, tool calls with JSON arguments and JSON results."""
    messages = [Message(role="system", content="You are an airline support agent. " * 40)]
    for i in range(limit):
        if i % 3 == 0:
            messages.append(Message(role="user", content=f"Can you check reservation R{i:05d} and its flights? " * 3))
        elif i % 3 == 1:
            arguments = json.dumps({"reservation_id": f"R{i:05d}"})
            call = {
                "id": f"c{i}",
                "type": "function",
                "function": {"name": "get_reservation_details", "arguments": arguments},
            }
            messages.append(Message(role="assistant", tool_calls=[call]))
        else:
            record = {
                "reservation_id": f"R{i:05d}",
                "flights": [{"flight": f"HAT{n:03d}", "price": 100 + n} for n in range(30)],
            }
            messages.append(Message(role="tool", tool_call_id=f"c{i - 1}", content=json.dumps(record)))
    return messages[:limit]


def session(limit: int) -> tuple[list[Message], str]:
    """``limit`` messages and where they came from."""
    messages = trajectory_messages(limit)
    if len(messages) >= limit:
        return messages, f"tau-bench ({TRAJECTORIES})"
    return synthetic_messages(limit), "synthetic (shared trajectories not found)"


def clone(message: Message) -> Message:
    """A copy of ``message`` with a fresh id, as a new turn of the session would have."""
    return Message(
        role=message.role,
        content=message.content,
        tool_calls=message.tool_calls,
        tool_call_id=message.tool_call_id,
    )


def timed(action: Callable[[], int], cold: bool) -> tuple[float, int]:
    """Seconds taken by ``action`` with garbage collection paused, and its result."""
    if cold:
        gc.collect()
    gc.disable()
    try:
        started = time.perf_counter()
        result = action()
        return time.perf_counter() - started, result
    finally:
        gc.enable()


def bench_backend(
    backend: TextCounter, prompt: list[Message], extra: list[Message], repeats: int, cold: bool
) -> dict[str, Any]:
    """Median seconds from scratch and incremental, checking both give the same counts."""
    scratch = []
    from_scratch = 0
    for _ in range(repeats):
        seconds, from_scratch = timed(lambda: TokenCounter(backend=backend).count_prompt(prompt, TOOLS), cold)
        scratch.append(seconds)
    warm = TokenCounter(backend=backend)
    warm.count_prompt(prompt, TOOLS)
    grown_prompts = [[*prompt, clone(new)] for new in extra]
    incremental, counts = [], []
    for grown in grown_prompts:
        seconds, count = timed(partial(warm.count_prompt, grown, TOOLS), cold)
        incremental.append(seconds)
        counts.append(count)
    for grown, count in zip(grown_prompts, counts, strict=True):
        expected = TokenCounter(backend=backend).count_prompt(grown, TOOLS)
        if count != expected:
            raise AssertionError(f"incremental count {count} != from-scratch count {expected}")
    return {
        "backend": backend.name,
        "mode": "cold" if cold else "warm",
        "tokens": from_scratch,
        "scratch_ms": statistics.median(scratch) * 1e3,
        "incremental_ms": statistics.median(incremental) * 1e3,
    }


def backends() -> list[TextCounter]:
    """The exact o200k backend (if its rank file is available locally) and the estimate."""
    found: list[TextCounter] = []
    try:
        found.append(TiktokenBackend("o200k_base"))
    except LookupError as exc:
        print(f"tiktoken o200k unavailable offline ({exc}); benchmarking the estimate only")
    found.append(EstimateBackend())
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=150, help="prompt length in messages (default 150)")
    parser.add_argument("--repeats", type=int, default=25, help="timed repetitions per measurement (default 25)")
    args = parser.parse_args(argv)
    messages, source = session(args.messages + args.repeats)
    prompt, extra = messages[: args.messages], messages[args.messages :]
    chars = sum(len(m.get_content_string() or "") for m in prompt)
    print(f"prompt: {len(prompt)} messages, {chars:,} characters of content, {len(TOOLS)} tools; source: {source}")
    print(f"{'backend':<22}{'mode':<6}{'tokens':>9}{'from scratch':>15}{'+1 message':>13}{'ratio':>9}")
    ok = True
    for backend in backends():
        for cold in (False, True):
            result = bench_backend(backend, prompt, extra, args.repeats, cold)
            ratio = result["scratch_ms"] / result["incremental_ms"]
            ok = ok and (cold or ratio >= REQUIRED_RATIO)
            print(
                f"{result['backend']:<22}{result['mode']:<6}{result['tokens']:>9,}{result['scratch_ms']:>12.2f} ms"
                f"{result['incremental_ms']:>10.3f} ms{ratio:>8.1f}x"
            )
    verdict = "at least" if ok else "NOT"
    print(f"recounting after one new message is {verdict} {REQUIRED_RATIO:.0f}x cheaper than from scratch (warm)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
