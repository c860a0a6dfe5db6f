"""Every option of ``CompressionManager`` is checked at construction, and ``stats`` has every documented key."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.models.message import Message

from agno_compression import CompressionManager, ConfigError, ExtractiveSummarizer, TruncatePolicy
from agno_compression._config import CHECKED
from agno_compression._stats import STATS_KEYS
from agno_compression.testing import Reply, ScriptedModel, ScriptInfo, ToolCall
from agno_compression.tokens import TokenCounter

ROOT = Path(__file__).resolve().parents[2]


class _Store:
    def record(self, row: Any) -> int:
        return 1

    def load(self, session_id: str) -> Any:
        raise NotImplementedError

    def events(self, session_id: str) -> list[Any]:
        return []


BAD: list[tuple[str, Any]] = [
    ("compress_at_tokens", "16000"),
    ("compress_at_tokens", 16000.0),
    ("compress_at_tokens", True),
    ("compress_at_tokens", 100),
    ("summarizer", ExtractiveSummarizer),  # the class, not an instance
    ("summarizer", "abstractive"),
    ("summarizer", 3),
    ("target_ratio", "0.5"),
    ("target_ratio", True),
    ("target_ratio", float("nan")),
    ("target_ratio", 2),
    ("verbatim_ratio", "0.2"),
    ("verbatim_ratio", -0.1),
    ("verbatim_ratio", 0.95),
    ("working_set_ratio", 1.0),
    ("working_set_ratio", "0.5"),
    ("max_working_set_tokens", -1),
    ("max_working_set_tokens", 4000.5),
    ("max_working_set_tokens", True),
    ("ledger_ratio", 0.6),
    ("ledger_ratio", -0.1),
    ("tool_kinds", ["Read"]),
    ("tool_kinds", {"Read": "open"}),
    ("tool_kinds", {1: "read"}),
    ("max_summary_tokens", "x"),
    ("max_summary_tokens", 2000.5),
    ("max_summary_tokens", False),
    ("min_summary_tokens", "200"),
    ("min_summary_tokens", 5),
    ("token_counter", "tiktoken"),
    ("token_counter", TokenCounter),
    ("summarizer_timeout", None),
    ("summarizer_timeout", "120"),
    ("summarizer_timeout", True),
    ("summarizer_timeout", float("inf")),
    ("summarizer_timeout", 0),
    ("background_summary_at", "0.7"),
    ("background_summary_at", True),
    ("background_summary_at", 0.0),
    ("background_summary_at", 1.5),
    ("background_summary_at", float("nan")),
    ("on_fold", "print"),
    ("on_fold", 1),
    ("store", "sqlite:///x.db"),
    ("store", _Store),
    ("persist", "yes"),
    ("persist", 1),
    ("persist", None),
    ("store_cooldown", "3"),
    ("store_cooldown", -1),
    ("store_cooldown", True),
    ("observations", TruncatePolicy),
    ("observations", "truncate"),
    ("observations", {"*": "truncate"}),
    ("observations", {1: TruncatePolicy()}),
    ("drop_failed_calls", "false"),
    ("drop_failed_calls", 0),
    ("retained_turns", "3"),
    ("retained_turns", -1),
    ("retained_turns", True),
    ("output_guidance", 1),
    ("overflow_retries", "2"),
    ("overflow_retries", 11),
    ("overflow_retries", 2.0),
    ("overflow_retries", True),
    ("cache_rate", "0.1"),
    ("cache_rate", 1.5),
    ("cache_rate", True),
    ("cache_rate", float("nan")),
    ("prompt_caching", "yes"),
    ("prompt_caching", 1),
    ("price_model", 0.1),
    ("price_model", {"read_rate": 0.1}),
    ("payback_calls", 0),
    ("payback_calls", 2.5),
    ("payback_calls", True),
    ("hold_by_price", "yes"),
    ("hold_by_price", 1),
    ("search_tool", "on"),
    ("search_tool", None),
    ("fold_tool", "yes"),
    ("model", 42),
    ("model", ScriptedModel),
    ("model", "nosuchprovider:model-x"),
    ("compress_tool_results", "true"),
    ("compress_tool_results_limit", "3"),
    ("compress_token_limit", 1.5),
    ("compress_tool_call_instructions", 7),
    ("stats", []),
]


def test_every_field_is_checked_and_has_bad_values() -> None:
    fields = {f.name for f in dataclasses.fields(CompressionManager)}
    assert set(CHECKED) == fields, "a new option needs a check in _config.check_options"
    assert {name for name, _ in BAD} == fields


@pytest.mark.parametrize(("option", "value"), BAD, ids=[f"{n}={v!r}" for n, v in BAD])
def test_bad_option_raises_config_error_naming_option_and_value(option: str, value: Any) -> None:
    with pytest.raises(ConfigError) as info:
        CompressionManager(**{option: value})
    message = str(info.value)
    assert message.startswith(option.split("[")[0]) or option in message, message
    # the value itself, or for a dict the offending entry, or for a class its name
    shown = [repr(value)] + ([repr(x) for kv in value.items() for x in kv] if isinstance(value, dict) else [])
    shown += [value.__name__] if isinstance(value, type) else []
    assert any(s in message for s in shown), message


def test_good_values_pass() -> None:
    m = CompressionManager(
        compress_at_tokens=256,
        target_ratio=1,
        summarizer=ExtractiveSummarizer(),
        summarizer_timeout=0.5,
        store_cooldown=0,
        observations={"*": TruncatePolicy(), "ls": None},
        retained_turns=0,
        store=_Store(),
        token_counter=TokenCounter("gpt-4o"),
        on_fold=lambda event, folded: None,
        compress_tool_call_instructions="be brief",
    )
    assert m.target_tokens == 256


# --- stats ------------------------------------------------------------------------------------------


def test_fresh_manager_has_every_documented_stat_at_zero() -> None:
    assert CompressionManager().stats == dict.fromkeys(STATS_KEYS, 0)
    # the README names the counters in a line and links the table (docs/configuration.md) that documents each
    table = (ROOT / "docs" / "configuration.md").read_text()
    for key in STATS_KEYS:
        assert f"`{key}`" in table, f"stats key {key} is not documented in docs/configuration.md"
    assert "docs/configuration.md" in (ROOT / "README.md").read_text()


def test_code_only_increments_documented_stats() -> None:
    """Every ``stats[...]`` key the package writes is one of ``STATS_KEYS`` (a new counter must be declared)."""
    written: set[str] = set()
    for path in (ROOT / "agno_compression").glob("*.py"):
        source = path.read_text()
        written |= set(re.findall(r"stats\[\"(\w+)\"\]\s*=", source))
        # computed keys: the names mapped in ``_record``'s strategy -> counter table
        for table in re.findall(r"\{(\"mask\": \"masks\"[^}]*)\}", source):
            written |= set(re.findall(r":\s*\"(\w+)\"", table))
    assert written, "no stats writes found: the pattern went stale"
    assert written <= set(STATS_KEYS), written - set(STATS_KEYS)
    assert {"masks", "shortened"} <= written


def _script(steps: int) -> Any:
    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index >= steps:
            return Reply(text="done")
        return Reply(text=f"step {info.call_index}", tool_calls=[ToolCall("read_chunk", {"index": info.call_index})])

    return script


def read_chunk(index: int) -> str:
    """Read one long chunk of a build log."""
    return "\n".join(f"[{index:03d}:{n:04d}] compiling src/module_{index}/file_{n}.c ok" for n in range(60))


@pytest.mark.parametrize("summarizer", ["extractive", "mask", "pipeline"])
def test_runs_keep_stats_keys_fixed(tmp_path: Path, summarizer: str) -> None:
    manager = CompressionManager(
        compress_at_tokens=1_500, summarizer=summarizer, observations=TruncatePolicy(max_chars=1500)
    )
    agent = manager.attach(
        Agent(model=ScriptedModel(script=_script(10)), tools=[read_chunk], db=SqliteDb(db_file=str(tmp_path / "a.db")))
    )
    agent.run("Read the chunks.", session_id="s1")
    assert set(manager.stats) == set(STATS_KEYS)
    acted = manager.stats["masks"] if summarizer == "mask" else manager.stats["folds"]
    assert acted >= 1 and manager.stats["observations_rewritten"] >= 1
