"""The command line, run as a user runs it: through the console script's app and ``python -m``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from agno_compression._cli import app

runner = CliRunner()


def _chat_file(tmp_path: Path, steps: int = 12) -> Path:
    """An OpenAI-chat-format conversation with long tool outputs."""
    messages = [{"role": "system", "content": "You debug."}, {"role": "user", "content": "Find the failing test."}]
    for i in range(steps):
        messages.append(
            {
                "role": "assistant",
                "content": f"step {i}",
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "run_tests", "arguments": json.dumps({"k": i})},
                    }
                ],
            }
        )
        body = "\n".join(f"tests/test_mod_{i}.py::test_{j} PASSED" for j in range(120))
        messages.append(
            {
                "role": "tool",
                "tool_call_id": f"c{i}",
                "name": "run_tests",
                "content": body + f"\nFAILED tests/test_mod_{i}.py::test_edge - AssertionError: 41 != 42",
            }
        )
    messages.append({"role": "assistant", "content": "test_edge fails."})
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"messages": messages}))
    return path


def test_eval_json_compares_settings(tmp_path: Path) -> None:
    path = _chat_file(tmp_path)
    result = runner.invoke(app, ["eval", str(path), "-s", "extractive", "-s", "mask", "-b", "4000", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    rows = {r["setting"]: r for r in data["rows"]}
    assert set(rows) == {"extractive", "mask"}
    ext = rows["extractive"]
    assert ext["peak_prompt_uncompressed"] > 4000 >= ext["peak_prompt"]
    assert ext["folds"] >= 1 and ext["pair_violations"] == 0 and ext["calls_over_budget"] == 0
    assert ext["cumulative_prompt"] < ext["cumulative_prompt_uncompressed"]
    assert 0 < ext["fact_retention"] <= 1
    assert rows["mask"]["masks"] >= 1 and rows["mask"]["folds"] == 0


def test_eval_table(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", str(_chat_file(tmp_path)), "-b", "4000"])
    assert result.exit_code == 0, result.output
    assert "TOTAL" in result.stdout and "extractive" in result.stdout


def test_bad_input_exits_2_with_one_clear_line(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["eval", str(tmp_path / "nope.json")])
    assert missing.exit_code == 2 and "no such file" in missing.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    malformed = runner.invoke(app, ["eval", str(bad)])
    assert malformed.exit_code == 2
    assert str(bad) in malformed.stderr and len(malformed.stderr.strip().splitlines()) == 1
    unknown = runner.invoke(app, ["eval", str(_chat_file(tmp_path)), "-s", "llm"])
    assert unknown.exit_code == 2 and "not available offline" in unknown.stderr


def test_help_on_every_command_and_python_dash_m() -> None:
    assert runner.invoke(app, ["--help"]).exit_code == 0
    assert "Replay recorded conversations" in runner.invoke(app, ["eval", "--help"]).stdout
    done = subprocess.run(
        [sys.executable, "-m", "agno_compression", "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and done.stdout.strip()
