"""The bench's simple baselines (sliding window, chunked window, observation masking) on synthetic requests."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
from agno.models.message import Message

from agno_compression._plan import pair_violations
from agno_compression.eval._scoring import cached_prefix
from agno_compression.tokens import TokenCounter

BENCH = Path(__file__).resolve().parents[2] / "bench"
COUNTER = TokenCounter("gpt-4o")
THRESHOLD = 2_000


@pytest.fixture(scope="module")
def baselines() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCH))
    try:
        import _baselines

        yield _baselines
    finally:
        sys.path.remove(str(BENCH))


def _requests(steps: int = 30) -> list[SimpleNamespace]:
    """What an uncompressed run sends: each call the previous prompt plus one more step."""
    messages = [Message(role="system", content="sys"), Message(role="user", content="Read every file.")]
    out = []
    for i in range(steps):
        out.append(SimpleNamespace(messages=list(messages), tools=[]))
        call = {"id": f"c{i}", "type": "function", "function": {"name": "cat", "arguments": f'{{"n": {i}}}'}}
        messages += [
            Message(role="assistant", tool_calls=[call]),
            Message(role="tool", tool_call_id=f"c{i}", content=f"file {i}\n" + "line of text\n" * 60),
        ]
    return out


def test_sliding_window_stays_under_the_threshold_with_whole_steps(baselines: ModuleType) -> None:
    prompts = baselines.sliding_window(_requests(), THRESHOLD)
    assert all(COUNTER.count_prompt(p, []) <= THRESHOLD for p in prompts)
    assert all(pair_violations(p) == [] for p in prompts)
    assert all(p[1].content == "Read every file." for p in prompts), "the task stays"


def test_chunked_window_drops_to_half_and_keeps_its_prefix_between_drops(baselines: ModuleType) -> None:
    prompts = baselines.chunked_window(_requests(), THRESHOLD)
    sizes = [COUNTER.count_prompt(p, []) for p in prompts]
    assert all(s <= THRESHOLD for s in sizes) and all(pair_violations(p) == [] for p in prompts)
    drops = [k for k in range(1, len(prompts)) if cached_prefix(prompts[k - 1], prompts[k]) < len(prompts[k - 1])]
    assert drops, "it dropped at least once"
    assert all(sizes[k] <= THRESHOLD // 2 + 400 for k in drops), "a drop goes down to about half the threshold"
    assert len(drops) < len(prompts) // 3, "between drops the prompt only grows: the prefix stays cached"


def test_observation_masking_keeps_the_newest_five_outputs(baselines: ModuleType) -> None:
    prompts = baselines.observation_masking(_requests(), THRESHOLD)
    last = prompts[-1]
    outputs = [m for m in last if m.role == "tool"]
    assert [m.compressed_content is None for m in outputs[-5:]] == [True] * 5
    assert all(m.compressed_content and m.compressed_content.startswith("[output omitted") for m in outputs[:-5])
    assert all(pair_violations(p) == [] for p in prompts)
