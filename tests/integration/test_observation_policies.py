"""Observation policies and history hygiene through real agno Agents; the stored record keeps every original."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.models.message import Message

from agno_compression import (
    CompressionManager,
    ConfigError,
    ObservationSummaryPolicy,
    TieredOutputPolicy,
    TruncatePolicy,
    full_messages,
)
from agno_compression._observations import OUTPUT_GUIDANCE
from agno_compression._plan import drop_failed_calls, is_failed_result, pair_violations, retain_turns
from agno_compression.testing import Reply, ScriptedModel, ScriptInfo, ToolCall

BIG_LIST = "[" + ", ".join(f'"layer_{i:04d}_conv2d_block"' for i in range(500)) + "]"
BIG_LOG = "\n".join(
    f"2026-11-22 10:{i // 60:02d}:{i % 60:02d} worker-{i % 7} processed batch {i} ok" for i in range(900)
)


def _agent(tmp_path: Path, manager: CompressionManager, script: Any, tools: list[Any], session: str = "s") -> Agent:
    agent = Agent(
        model=ScriptedModel(script=script),
        tools=tools,
        db=SqliteDb(db_file=str(tmp_path / "a.db")),
        session_id=session,
        add_history_to_context=True,
        num_history_runs=50,
        telemetry=False,
    )
    return manager.attach(agent)


def list_layers() -> str:
    """List every layer of the model."""
    return BIG_LIST


def read_log() -> str:
    """Read the worker log."""
    return BIG_LOG


def two_tools(messages: list[Message], info: ScriptInfo) -> Reply:
    if info.call_index == 0:
        return Reply(tool_calls=[ToolCall("list_layers"), ToolCall("read_log")])
    return Reply(text="done")


def test_policies_shorten_what_the_model_sees_and_storage_keeps_the_original(tmp_path: Path) -> None:
    manager = CompressionManager(
        compress_at_tokens=100_000, observations={"list_layers": TruncatePolicy(), "*": TieredOutputPolicy()}
    )
    agent = _agent(tmp_path, manager, two_tools, [list_layers, read_log])
    agent.run("inspect the model")
    sent = {m.tool_name: m for m in agent.model.requests[-1].messages if m.role == "tool"}  # type: ignore[union-attr]
    assert "488 more items" in sent["list_layers"].compressed_content
    assert "[hint:" in sent["read_log"].compressed_content and len(sent["read_log"].compressed_content) < 3_400
    stored = {m.tool_name: m.content for m in full_messages(agent.db, "s") if m.role == "tool"}
    assert stored == {"list_layers": BIG_LIST, "read_log": BIG_LOG}
    assert manager.stats["observations_rewritten"] == 2


def test_a_tool_can_opt_out(tmp_path: Path) -> None:
    manager = CompressionManager(compress_at_tokens=100_000, observations={"read_log": None, "*": TruncatePolicy()})
    agent = _agent(tmp_path, manager, two_tools, [list_layers, read_log])
    agent.run("inspect the model")
    sent = {m.tool_name: m for m in agent.model.requests[-1].messages if m.role == "tool"}  # type: ignore[union-attr]
    assert sent["read_log"].compressed_content is None and sent["list_layers"].compressed_content


def test_observation_summary_extractive_keeps_facts_of_the_omitted_part() -> None:
    text = BIG_LOG + "\nTraceback: ValueError at src/train/loop.py line 4242"
    middle = BIG_LOG.replace("batch 450 ok", "batch 450 FAILED with KeyError in src/data/shards_17.py")
    policy = ObservationSummaryPolicy(max_observation_tokens=300)
    out = policy.apply(middle + text[-60:])
    assert len(out) < len(middle) / 5
    assert "KeyError" in out and "src/data/shards_17.py" in out
    assert policy.apply("short output") == "short output"


def test_observation_summary_by_model_is_accounted_as_compression_usage(tmp_path: Path) -> None:
    summarizer = ScriptedModel(script=lambda m, i: "900 batches processed by 7 workers, all ok")
    policy = ObservationSummaryPolicy(max_observation_tokens=200, model=summarizer)
    manager = CompressionManager(observations=policy)
    agent = _agent(tmp_path, manager, two_tools, [list_layers, read_log])
    out = agent.run("inspect the model")
    sent = [m for m in agent.model.requests[-1].messages if m.role == "tool"]  # type: ignore[union-attr]
    assert all("900 batches processed" in (m.compressed_content or "") for m in sent)
    assert sum(m.input_tokens for m in out.metrics.details["compression_model"]) > 0


def test_observation_summary_falls_back_when_the_model_fails(caplog: pytest.LogCaptureFixture) -> None:
    def broken(messages: list[Message], info: ScriptInfo) -> str:
        raise RuntimeError("quota exceeded")

    policy = ObservationSummaryPolicy(max_observation_tokens=200, model=ScriptedModel(script=broken))
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        out = policy.apply(BIG_LOG)
    assert "facts in the omitted part" in out or "omitted" in out
    assert any("using the extractive one" in r.message for r in caplog.records)


def test_a_hallucinated_tool_call_is_left_out_of_the_next_runs_history(tmp_path: Path) -> None:
    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index == 0:
            return Reply(text="searching", tool_calls=[ToolCall("run", {"query": "Anthropic competitors"})])
        if info.call_index == 1:
            return Reply(tool_calls=[ToolCall("read_log")])
        return Reply(text="done")

    manager = CompressionManager(compress_at_tokens=100_000, drop_failed_calls=True)
    agent = _agent(tmp_path, manager, script, [read_log])
    agent.run("find competitors")
    stored = full_messages(agent.db, "s")
    failed = [m for m in stored if is_failed_result(m)]
    assert len(failed) == 1 and "does not exist" in str(failed[0].content)
    bad_call = next(m for m in stored if m.tool_calls and m.tool_calls[0]["function"]["name"] == "run")
    agent.run("and now?")
    history = agent.model.requests[-1].messages  # type: ignore[union-attr]
    ids = {m.id for m in history}
    assert failed[0].id not in ids
    assert not any(m.tool_calls and m.tool_calls[0]["function"]["name"] == "run" for m in history if m.tool_calls)
    assert any(m.id == bad_call.id and not m.tool_calls for m in history), "its text stays, its call goes"
    assert pair_violations(history) == []
    # the database still has both
    again = full_messages(agent.db, "s")
    assert any(m.id == failed[0].id for m in again) and any(m.id == bad_call.id and m.tool_calls for m in again)


def test_retained_turns_keeps_the_first_and_last_turns(tmp_path: Path) -> None:
    manager = CompressionManager(retained_turns=2)
    agent = _agent(tmp_path, manager, lambda m, i: Reply(text="ok"), [])
    for n in range(6):
        agent.run(f"question {n}")
    first = agent.model.requests[-1].messages  # type: ignore[union-attr]
    users = [m.content for m in first if m.role == "user"]
    assert users == ["question 0", "question 3", "question 4", "question 5"]


def test_output_guidance_reaches_the_system_prompt(tmp_path: Path) -> None:
    agent = _agent(tmp_path, CompressionManager(output_guidance=True), lambda m, i: Reply(text="ok"), [])
    agent.run("hi")
    assert OUTPUT_GUIDANCE in str(agent.model.requests[0].messages[0].content)  # type: ignore[union-attr]
    plain = _agent(tmp_path, CompressionManager(), lambda m, i: Reply(text="ok"), [], session="t")
    plain.run("hi")
    assert OUTPUT_GUIDANCE not in str(plain.model.requests[0].messages[0].content)  # type: ignore[union-attr]


def test_bad_policy_config_is_rejected() -> None:
    with pytest.raises(ConfigError, match=r"observations\['x'\].*ObservationPolicy.*'truncate'"):
        CompressionManager(observations={"x": "truncate"})  # type: ignore[dict-item]
    with pytest.raises(ConfigError, match="retained_turns"):
        CompressionManager(retained_turns=-1)
    with pytest.raises(ConfigError, match="max_chars"):
        TruncatePolicy(max_chars=5)


def test_hygiene_passes_are_pure_and_pair_safe() -> None:
    call = {"id": "a", "type": "function", "function": {"name": "run", "arguments": "{}"}}
    good = {"id": "b", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    msgs = [
        Message(role="user", content="q", from_history=True),
        Message(role="assistant", content=None, tool_calls=[call, good], from_history=True),
        Message(
            role="tool",
            tool_call_id="a",
            content="Error: The requested tool does not exist or is not available.",
            from_history=True,
        ),
        Message(role="tool", tool_call_id="b", content="files", from_history=True),
        Message(role="user", content="now"),
    ]
    out = drop_failed_calls(msgs)
    assert [m.role for m in out] == ["user", "assistant", "tool", "user"]
    assert out[1].tool_calls == [good] and msgs[1].tool_calls == [call, good]  # original untouched
    assert pair_violations(out) == []
    assert retain_turns(msgs, 0, keep_first=False) == [msgs[-1]]


class _BrokenPolicy:
    """A policy whose every call raises: the output must stay as it is and the budget check must go on."""

    def apply(self, text: str, tool_name: str | None = None) -> str:
        raise RuntimeError("policy broke")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_failing_policy_keeps_the_output_and_the_budget_check_goes_on(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    import asyncio

    manager = CompressionManager(compress_at_tokens=1_000, observations=_BrokenPolicy())
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    messages = [
        Message(role="system", content="You read files."),
        Message(role="user", content="Read the file."),
        Message(role="assistant", content="", tool_calls=[call]),
        Message(role="tool", tool_call_id="c1", tool_name="read", content="line of text\n" * 800),
    ]
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        over = manager.should_compress(messages) if mode == "sync" else asyncio.run(manager.ashould_compress(messages))
    assert over is True, "the prompt is over the budget whatever the policy did"
    assert messages[-1].compressed_content is None
    assert "observation policy failed on read, output kept: policy broke" in caplog.text
    assert "token count failed" not in caplog.text
