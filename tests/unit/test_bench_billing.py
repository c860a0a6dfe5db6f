"""The billing bench (bench/_billing.py): one recording through agno's Claude against the loopback provider, the
baseline and ours, and the RESULTS.md section with its columns. Benchmarks are not tests; this only checks that the
code path runs offline and measures what it says."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agno.models.message import Message

from agno_compression.eval import Trajectory, needs_of

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import _billing  # noqa: E402
import _offline  # noqa: E402


def recording(steps: int = 30) -> Trajectory:
    messages = [Message(role="system", content="You fix code. " * 150), Message(role="user", content="Fix it.")]
    for i in range(steps):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": json.dumps({"p": i})}}
        body = "\n".join(f"def handler_{i}_{j}(x): return x.value_{j}" for j in range(60))
        messages += [
            Message(role="assistant", content=f"Reading part {i}.", tool_calls=[call]),
            Message(role="tool", tool_call_id=f"c{i}", tool_name="read", content=body),
        ]
    messages.append(Message(role="assistant", content="handler_3_7 is wrong."))
    return Trajectory(source="test", name="reads", messages=messages)


def test_a_billing_replay_and_its_section(tmp_path: Path) -> None:
    trajectory = recording()
    needs = needs_of(trajectory.messages)
    settings = {s.name: s for s in _billing.SETTINGS if s.group == _billing.CLAUDE}
    base = _billing.replay(
        trajectory, settings["none, automatic caching"], 0, tmp_path, needs, _offline.standin_summarizer
    )
    ours = _billing.replay(
        trajectory, settings["ours, agno defaults"], 4_000, tmp_path, needs, _offline.standin_summarizer
    )
    assert base.over(4_000) > 0 and ours.over(4_000) == 0
    assert 0 < ours.billed < base.billed and ours.read > 0 and ours.written > 0
    assert ours.prefix_misses == 0 and ours.tool_changes == 0
    assert _billing.floor(base, 1.25) < base.billed
    text = "\n".join(_billing.section([base, ours], [4_000], "test"))
    assert "| 4k | ours, agno defaults | " in text and "of which reads · writes · uncached" in text
