"""Every cookbook example runs offline, folds, and says where the full record is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

COOKBOOK = Path(__file__).resolve().parents[2] / "cookbook"
EXAMPLES = sorted(p.name for p in COOKBOOK.glob("*.py") if not p.name.startswith("_"))


def test_the_cookbook_has_the_promised_examples() -> None:
    assert {
        "long_tool_loop.py",
        "multi_run_session.py",
        "team.py",
        "export_training_data.py",
        "competitor_analysis.py",
    } <= set(EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES)
def test_example_runs_offline(example: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("GOOGLE_API_KEY", "GEMINI_API_KEY")}
    env["AGNO_COMPRESSION_COOKBOOK_OUT"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, str(COOKBOOK / example)], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Offline: a scripted model" in done.stdout
    assert "compression events" in done.stdout and "extractive: folded" in done.stdout
    assert f"Every original message is stored in {tmp_path}" in done.stdout
    assert list(tmp_path.glob("*.db"))
