"""The ledger through a real agno agent: a run that writes more files than ``max_summary_tokens`` can list."""

from __future__ import annotations

from pathlib import Path

import pytest
from agno.models.message import Message
from agno.tools.file import FileTools

from agno_compression import CompressionManager
from agno_compression.testing import Reply, ScriptInfo, ToolCall, scripted_agent

FILES = [f"services/billing/adapters/provider_{i:03d}/settlement_reconciliation_handler.py" for i in range(90)]


def dump_logs(part: int) -> str:
    """Print one part of the build logs."""
    return "\n".join(f"[build {part}:{n:04d}] linking object files for target module_{n} ok" for n in range(150))


@pytest.mark.parametrize(("ledger_ratio", "kept"), [(0.1, True), (0.0, False)], ids=["ledger room", "hard cap"])
def test_every_file_written_stays_listed_up_to_the_ledgers_share(
    tmp_path: Path, ledger_ratio: float, kept: bool
) -> None:
    seen: dict[str, str] = {}

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        step = info.call_index
        if step < len(FILES):
            return Reply(tool_calls=[ToolCall("save_file", {"file_name": FILES[step], "contents": "x = 1"})])
        if step < len(FILES) + 6:
            return Reply(tool_calls=[ToolCall("dump_logs", {"part": step})])
        summaries = [m.get_content_string() for m in messages if getattr(m, "agno_compression_summary", None)]
        seen["ledger"] = "\n".join(s.split("## Working state", 1)[-1].split("\n## ", 1)[0] for s in summaries)
        return Reply(text="All adapters written.")

    manager = CompressionManager(compress_at_tokens=16_000, ledger_ratio=ledger_ratio)
    agent, model = scripted_agent(script, FileTools(base_dir=tmp_path), dump_logs, manager=manager)
    agent.run("Write a settlement reconciliation handler for every billing provider.")
    assert manager.stats["folds"] >= 1
    listed = [f for f in FILES if f in seen["ledger"]]
    assert model.counter.count_text("\n".join(FILES)) > manager.max_summary_tokens, "more than the summary's bound"
    if kept:
        assert listed == FILES
    else:
        assert len(listed) < len(FILES) and "earlier)" in seen["ledger"]
    assert all(r.prompt_tokens <= 16_000 for r in model.requests)
