"""No strategy sends a call over the budget while something can still be folded or shortened, and a model whose
real window is below the budget overflows once per run, not once per call."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from agno.models.message import Message

from agno_compression import CompressionManager
from agno_compression.testing import RUN_MODES, Reply, ScriptInfo, ToolCall, run_agent, scripted_agent
from agno_compression.tokens import TokenCounter
from tests.fakes import LimitedModel

HUGE = 2_000_000  # characters of one tool output (half a million tokens)


def dump_table(name: str) -> str:
    """Dump a whole table."""
    return "\n".join(f"{name} row {i}: id={i} amount={i * 17 % 1000} status=ok" for i in range(HUGE // 45))


def read_chunk(index: int) -> str:
    """Read one chunk of a log."""
    return "\n".join(f"[{index:03d}:{i:02d}] job {index}.{i} finished ok in {i * 7 % 90} ms" for i in range(12))


@pytest.mark.parametrize("mode", RUN_MODES)
def test_mask_shortens_a_giant_output_that_masking_cannot_free(mode: str, caplog: pytest.LogCaptureFixture) -> None:
    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index == 0:
            return Reply(tool_calls=[ToolCall("dump_table", {"name": "orders"})])
        return Reply(text="The table is dumped.")

    manager = CompressionManager(compress_at_tokens=4_000, summarizer="mask")
    agent, model = scripted_agent(script, dump_table, manager=manager)
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        run_agent(agent, "Dump the orders table.", mode)
    assert [r.prompt_tokens <= 4_000 for r in model.requests] == [True, True], [r.prompt_tokens for r in model.requests]
    assert manager.stats["shortened"] + manager.stats["folds"] >= 1
    assert any("over the budget" in r.message for r in caplog.records), [r.message for r in caplog.records]


def test_mask_falls_back_to_a_summary_when_placeholders_and_turns_outgrow_the_budget(
    caplog: pytest.LogCaptureFixture,
) -> None:
    steps = 90

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index < steps:
            note = f"Chunk {info.call_index} looks fine; the timings are within the usual range for this job. " * 3
            return Reply(text=note, tool_calls=[ToolCall("read_chunk", {"index": info.call_index})])
        return Reply(text="All chunks read.")

    manager = CompressionManager(compress_at_tokens=4_000, summarizer="mask")
    agent, model = scripted_agent(script, read_chunk, manager=manager)
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        agent.run("Read every chunk of the log.")
    sizes = [r.prompt_tokens for r in model.requests]
    assert len(sizes) == steps + 1 and max(sizes) <= 4_000, f"{sum(s > 4_000 for s in sizes)} calls over"
    assert manager.stats["masks"] >= 1 and manager.stats["folds"] >= 1
    assert any(e.strategy == "mask->extractive" for e in manager.events)
    warned = [r for r in caplog.records if "masking alone" in r.message]
    assert len(warned) == 1, "warned once per run"


@pytest.mark.parametrize("mode", RUN_MODES)
def test_after_one_overflow_the_run_folds_below_the_models_real_window(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    steps = 30
    script = _each_call("read_chunk", steps)
    model = LimitedModel(script=script, limit=3_000)
    manager = CompressionManager(compress_at_tokens=16_000)
    agent, _ = scripted_agent(script, read_chunk, manager=manager)
    agent.model = model
    manager.attach(agent)
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        run_agent(agent, "Read the log chunk by chunk.", mode)
    assert len(model.requests) == steps + 1, "the run completed"
    assert model.rejected == 1, f"{model.rejected} overflows: only the first call over the real window may overflow"
    assert any("this run's budget is now" in r.message for r in caplog.records)


def test_the_warning_names_the_part_that_keeps_a_prompt_over_its_budget(caplog: pytest.LogCaptureFixture) -> None:
    task = "Summarise this requirement list. " + " ".join(f"requirement_{i} must hold." for i in range(900))

    manager = CompressionManager(compress_at_tokens=2_000)
    agent, _ = scripted_agent(_each_call("read_chunk", 3), read_chunk, manager=manager)
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        agent.run(task)
    over = [r.message for r in caplog.records if "leaving no room" in r.message]
    assert over and "the current user message" in over[0].split("holds", 1)[1].split(",")[0], over


def test_a_large_output_in_the_last_batch_reaches_the_model_shortened_and_stats_count_each() -> None:
    """README and docs/design.md: the last tool batch is kept, but an output too large for the budget in it is
    shortened in context; ``stats["shortened"]`` counts the outputs the events record as shortened."""

    def page(index: int) -> str:
        """Read one large page."""
        return "\n".join(f"page {index} line {i}: " + "lorem ipsum dolor sit amet " * 3 for i in range(400))

    manager = CompressionManager(compress_at_tokens=4_000)
    agent, model = scripted_agent(_each_call("page", 4, "All pages read."), page, manager=manager)
    agent.run("Read four pages.")
    shortened = [i for e in manager.events for i in e.shortened_ids]
    assert len(shortened) >= 2 and len(set(shortened)) == len(shortened), [e.strategy for e in manager.events]
    assert manager.stats["shortened"] == len(shortened), (manager.stats["shortened"], len(shortened))
    assert any(e.strategy != "shorten" and e.shortened_ids for e in manager.events), "shortened within a fold"
    last = model.requests[-1].messages
    tool = next(m for m in reversed(last) if m.role == "tool")
    full = page(3)
    sent = tool.compressed_content if tool.compressed_content is not None else str(tool.content)
    assert tool.id in shortened and len(sent) < len(full) / 2, "the last batch's output reached the model shortened"


def module_source(index: int) -> str:
    """A source file of about 2,500 tokens, its own names in every line."""
    return "\n".join(
        f"def handler_{index}_{i}(request_{i}, store_{index}):\n    return store_{index}.get({i})" for i in range(170)
    )


def test_a_parallel_batch_too_large_together_is_shortened_evenly(tmp_path: Path) -> None:
    """A batch of eight reads that together exceed the room is cut like one oversized output: every large output
    down to one common size (head, tail, outline), not the largest ones crushed while the rest stay whole."""
    from agno.tools.file import FileTools

    for i in range(8):
        (tmp_path / f"mod{i}.py").write_text(module_source(i))

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index == 0:
            return Reply(tool_calls=[ToolCall("read_file", {"file_name": f"mod{i}.py"}) for i in range(8)])
        return Reply(text="Read them all.")

    manager = CompressionManager(compress_at_tokens=12_000)
    agent, model = scripted_agent(script, FileTools(base_dir=tmp_path), manager=manager)
    agent.run("Read the eight modules, then list their handlers. " + "Each handler must be listed. " * 400)
    assert [r.prompt_tokens <= 12_000 for r in model.requests] == [True, True], [
        r.prompt_tokens for r in model.requests
    ]
    counter = TokenCounter("gpt-4o")
    sent = [counter.count_message(m) for m in model.requests[-1].messages if m.role == "tool"]
    assert len(sent) == 8 and max(sent) <= 1.5 * min(sent), sent


def save_note(index: int, text: str) -> str:
    """Save one note; answers with the store's log of the save."""
    return "\n".join(f"note {index}: block {i} of {len(text)} chars stored at offset {i * 512}" for i in range(60))


def test_a_batch_of_many_calls_shares_the_room_and_the_prompt_fits() -> None:
    """Eighteen parallel calls, each with a long argument and a long answer, at a budget the request leaves room
    in: each output and argument goes below its usual floor (head and tail, a share of what the rest leaves), so
    the prompt fits instead of staying over the budget."""

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index == 0:
            notes = [ToolCall("save_note", {"index": i, "text": f"Finding {i}: " + "detail " * 250}) for i in range(18)]
            return Reply(tool_calls=notes)
        return Reply(text="Saved them all.")

    manager = CompressionManager(compress_at_tokens=6_000)
    agent, model = scripted_agent(script, save_note, manager=manager)
    agent.run("Save a note for each finding. " + " ".join(f"finding_{i} is listed." for i in range(420)))
    sizes = [r.prompt_tokens for r in model.requests]
    assert len(sizes) == 2 and max(sizes) <= 6_000, sizes
    assert manager.stats["budget_too_small"] == 0, "the request leaves room: no warning"
    last = model.requests[-1].messages
    assert sum(1 for m in last if m.role == "tool") == 18, "every output is still there, shortened"


def _each_call(tool: str, steps: int, done: str = "Done.") -> Any:
    """A script calling ``tool`` with the call's index, ``steps`` times, then answering ``done``."""

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index < steps:
            return Reply(tool_calls=[ToolCall(tool, {"index": info.call_index})])
        return Reply(text=done)

    return script


def _read_chunks(steps: int) -> Any:
    """A script reading one chunk per model call, ``steps`` of them, then done."""

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index < steps:
            call = ToolCall("read_chunk", {"index": info.call_index})
            return Reply(text=f"Chunk {info.call_index}.", tool_calls=[call])
        return Reply(text="Done.")

    return script


def test_a_request_that_fills_the_budget_is_told_once_and_folds_seldom(caplog: pytest.LogCaptureFixture) -> None:
    """System prompt and request leave under a fifth of the budget: no fold can hold it. The run says so once
    (log, stats, each fold's reason) and folds at most every fifth call, instead of at every call."""
    manager = CompressionManager(compress_at_tokens=4_000)
    agent, model = scripted_agent(_read_chunks(40), read_chunk, manager=manager)
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        agent.run("Check every chunk against this list. " + " ".join(f"rule_{i} holds." for i in range(1_100)))
    warned = [r.message for r in caplog.records if "leaving no room to fold into" in r.message]
    assert len(warned) == 1, warned
    assert manager.stats["budget_too_small"] == 1
    assert 1 <= manager.stats["folds"] <= len(model.requests) / 5, (manager.stats["folds"], len(model.requests))
    assert manager.events and all(e.strategy.startswith("tight:") for e in manager.events if e.summary)
    from agno_compression.viewer._timeline import REASONS

    assert "tight" in REASONS


def test_a_request_that_leaves_room_keeps_every_call_under_the_budget() -> None:
    manager = CompressionManager(compress_at_tokens=4_000)
    agent, model = scripted_agent(_read_chunks(40), read_chunk, manager=manager)
    agent.run("Check every chunk against this list. " + " ".join(f"rule_{i} holds." for i in range(500)))
    assert max(r.prompt_tokens for r in model.requests) <= 4_000
    assert manager.stats["budget_too_small"] == 0
