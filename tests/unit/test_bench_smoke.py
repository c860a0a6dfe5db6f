"""The benchmark command runs: quick mode (a few small recordings, one threshold) writes its results file
under the git-ignored bench/out/, never over the committed bench/RESULTS.md.

Benchmarks are not tests; this only checks that ``python bench/run.py --quick`` works end to end
(offline, agno's built-ins included) and writes the table with the expected columns.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "RESULTS.md"


def published_columns() -> list[str]:
    """The columns of the committed RESULTS.md's tables: quick mode writes the same table."""
    lines = RESULTS.read_text(encoding="utf-8").splitlines()
    header = next(line for line in lines if line.startswith("| threshold | setting | "))
    return [c.strip() for c in header.strip().strip("|").split(" | ")]


COLUMNS = published_columns()
SETTINGS = ["none", "agno-compress", "agno-compaction", "extractive", "mask", "pipeline", "llm"]


@pytest.fixture
def quick_out() -> Iterator[Path]:
    """Where ``--quick`` writes by default (git-ignored bench/out/); left as it was found."""
    out = ROOT / "bench" / "out" / "RESULTS-quick.md"
    before = out.read_bytes() if out.exists() else None
    out.unlink(missing_ok=True)
    yield out
    if before is None:
        out.unlink(missing_ok=True)
    else:
        out.write_bytes(before)


@pytest.mark.slow
def test_quick_benchmark_writes_results(trajectories_dir: Path, tmp_path: Path, quick_out: Path) -> None:
    out = quick_out
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--trajectories", str(trajectories_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    assert out.is_file(), "--quick without --out must write bench/out/RESULTS-quick.md"
    ignored = subprocess.run(["git", "check-ignore", "-q", str(out)], cwd=ROOT, check=False)
    assert ignored.returncode == 0, "bench/out/ must be git-ignored"
    assert elapsed < 60, f"quick mode took {elapsed:.0f} s"
    text = out.read_text(encoding="utf-8")
    header = "| " + " | ".join(COLUMNS) + " |"
    lines = text.splitlines()
    assert header in lines
    start = lines.index(header) + 2  # the first table: all recorded runs
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    rows = lines[start:end]
    assert rows and all(line.startswith("| 8k | ") for line in rows)
    for setting in SETTINGS:
        assert any(line.split(" | ")[1] == setting for line in rows), f"no row for {setting}"
    for line in rows:
        assert line.count(" | ") == len(COLUMNS) - 1, line
    assert "## Session load" in text and "## Goals" in text
    assert "CPUs, Python" in text  # the machine line
    assert "TIKTOKEN_CACHE_DIR" in text  # says how agno's counter was made to work offline
    # agno's built-ins really ran offline: their token trigger fired and the stand-in summarizer was called
    agno = next(line for line in rows if line.split(" | ")[1] == "agno-compress").split(" | ")
    assert int(agno[COLUMNS.index("summarizer calls")]) > 0
    assert "errored" not in agno[2]


def test_quick_benchmark_rejects_a_missing_folder(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--trajectories", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "no trajectory folder" in done.stderr


@pytest.fixture(autouse=True)
def _no_results_in_repo() -> Iterator[None]:
    """The smoke test never touches bench/RESULTS.md."""
    before = RESULTS.stat().st_mtime if RESULTS.exists() else None
    yield
    after = RESULTS.stat().st_mtime if RESULTS.exists() else None
    assert before == after
