"""The section bench (bench/families/sections.py): a summary split into its sections, a heading inside quoted data
left in its section; one recording replayed credits the identifiers its next steps need to the sections that held
them. Benchmarks are not tests; this only checks that the code path runs offline and measures what it says."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agno.models.message import Message

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "families"))

import sections  # noqa: E402

from agno_compression.eval import Trajectory  # noqa: E402


def test_a_summary_splits_into_its_sections_and_quoted_headings_stay_inside() -> None:
    text = (
        '[Progress so far: ...]\n## Working state\n- edited: src/a.py\n## Names in use\n- used: "handler_1"\n'
        "## Working set (files and pages as last read or written)\n### src/a.py\n## Install\nrun make\n"
    )
    parts = sections.sections(text, "progress")
    kinds = {"(header)", "Working state", "Names in use", "Working set"}
    assert set(parts) == {f"progress:{k}" for k in kinds}
    assert "## Install" in parts["progress:Working set"], "a file's own heading is the file's text"
    assert "handler_1" in parts["progress:Names in use"]


def test_one_recording_credits_what_its_next_steps_needed(tmp_path: Path) -> None:
    messages = [Message(role="system", content="You fix code."), Message(role="user", content="Fix it.")]
    for i in range(40):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": json.dumps({"p": i})}}
        used = f"setting_{i - 5}.value" if i >= 5 else "start"  # read five steps ago: folded by now
        body = "\n".join(f"def handler_{i}_{j}(x): return setting_{i}.value + {j}" for j in range(60))
        messages += [
            Message(role="assistant", content=f"Next I use {used}.", tool_calls=[call]),
            Message(role="tool", tool_call_id=f"c{i}", tool_name="read", content=body),
        ]
    messages.append(Message(role="assistant", content="Done."))
    trajectory = Trajectory(name="synthetic", source="synthetic", messages=messages)
    source, tokens, credit = sections._one((trajectory, 4_000))
    assert source == "synthetic"
    assert tokens and all(v > 0 for v in tokens.values()), "the summaries were sent, section by section"
    assert set(credit) <= set(tokens), "only a section that was sent earns credit"
    assert sum(credit.values()) > 0, "names read before the fold reached the next step through a summary"
