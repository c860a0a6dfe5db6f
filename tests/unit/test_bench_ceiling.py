"""bench/ceiling.py: what the best prompt within a budget could hold of what the next step needs."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from agno.models.message import Message

from agno_compression.tokens import TokenCounter
from tests.helpers import load_script

CEILING = Path(__file__).resolve().parents[2] / "bench" / "ceiling.py"
COUNTER = TokenCounter("gpt-4o")
NEED = frozenset({"RetryPolicy", "backoff_seconds", "max_attempts"})


@pytest.fixture(scope="module")
def ceiling() -> ModuleType:
    return load_script(CEILING, "bench_ceiling")


def conversation(filler_lines: int) -> list[Message]:
    """A read of a large file whose three needed names sit on two short lines, then a newer batch."""
    filler = "\n".join(f"    unrelated_line_{i} = compute_value({i})" for i in range(filler_lines))
    source = f"class RetryPolicy:\n{filler}\n    backoff_seconds: float = 2.0\n    max_attempts: int = 5\n"
    read = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "retry.py"}'}}
    run = {"id": "c2", "type": "function", "function": {"name": "run", "arguments": json.dumps({"command": "pytest"})}}
    return [
        Message(role="system", content="You write code."),
        Message(role="user", content="Write a sibling of retry.py."),
        Message(role="assistant", tool_calls=[read]),
        Message(role="tool", tool_call_id="c1", content=source),
        Message(role="assistant", tool_calls=[run]),
        Message(role="tool", tool_call_id="c2", content="3 passed"),
    ]


def test_the_fixed_part_is_system_current_request_and_newest_batch(ceiling: ModuleType) -> None:
    assert ceiling.fixed_part(conversation(3)) == {0, 1, 4, 5}


def test_the_needed_lines_fit_where_the_whole_file_does_not(ceiling: ModuleType) -> None:
    messages = conversation(2_000)
    assert COUNTER.count_message(messages[3]) > 8_000, "the file alone is over the budget"
    assert ceiling.call_ceiling(messages, NEED, 8_000, COUNTER) == 3, "three short lines hold every name"


def test_a_budget_the_fixed_part_fills_holds_only_what_that_part_says(ceiling: ModuleType) -> None:
    messages = conversation(10)
    assert ceiling.call_ceiling(messages, NEED, 100, COUNTER) == 0
    need = NEED | {"retry.py"}  # the current request names it
    assert ceiling.call_ceiling(messages, need, 100, COUNTER) == 1
