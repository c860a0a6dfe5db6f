"""The peer adapters of the benchmark (bench/_peers.py) on one small recording.

Each peer (LangChain, OpenHands SDK, Google ADK) needs its package from the ``bench`` extra; a peer whose
package is missing is skipped with the reason (CI installs only ``.[test]``, so this skips there).
Checked: the peer replayed without compression sends exactly what agno's uncompressed replay sends
(so the conversion to agno messages is faithful and every row is counted the same way), and with
compression at a small threshold it folds, with a summary from the stand-in, no tool-pair violation,
and rows the report can aggregate.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
MODULES = {"langchain": "langchain.agents", "openhands": "openhands.sdk", "adk": "google.adk"}
THRESHOLD = 3_000
SYSTEM_EXTRA = {"adk": 12}
"""Tokens a peer adds to every prompt by itself: ADK appends 'You are an agent. Your internal name is "bench".'
to the instruction."""


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


@pytest.fixture(scope="module")
def bench(trajectories_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """The bench modules, one small multi-run recording and its uncompressed agno replay."""
    sys.path.insert(0, str(BENCH))
    try:
        import _offline
        import _peers
        import _replays
        import run

        from agno_compression.eval import iter_shared_trajectories

        work = tmp_path_factory.mktemp("peers")
        real = list(iter_shared_trajectories(trajectories_dir))
        recording = next(t for t in run.select_quick(real, 8_000) if t.source == "tau-bench")
        base = _replays.replay_one(recording, "none", 0, work, summarizer_factory=_offline.standin_summarizer)
        yield _peers, recording, base
    finally:
        sys.path.remove(str(BENCH))


@pytest.mark.parametrize("peer", sorted(MODULES))
def test_peer_adapter(peer: str, bench) -> None:
    if not _installed(MODULES[peer]):
        pytest.skip(
            f"{peer} is not installed (pip install -e '.[bench]'; openhands-sdk needs Python 3.12+, google-adk 3.11+)"
        )
    peers, recording, base = bench
    assert peer in peers.available()[0]

    plain = peers.uncompressed_tokens(peer, recording)
    extra = SYSTEM_EXTRA.get(peer, 0)
    assert len(plain) == len(base.tokens)
    # the first run has no history: the peer sends what agno sends (later runs: agno's history window may differ)
    first_run = len(peers.script_of(recording).turns[0].replies) + 1
    assert [p - extra for p in plain[:first_run]] == base.tokens[:first_run]

    rows = peers.ROWS[peer](recording, THRESHOLD)
    assert [r.setting for r in rows] == peers.settings(peer)
    assert rows[-1].tokens == plain and rows[-1].setting == peer + " uncompressed"
    for row in rows[:-1]:
        assert row.name == recording.name and row.threshold == THRESHOLD
        assert len(row.tokens) == len(base.tokens)
        assert row.errors == 0
        assert row.violations == 0
        assert row.folds >= 1 and row.summarizer_calls >= 1
        assert max(row.tokens) < max(plain)
        assert len(row.costs) == 2 and all(c > 0 for c in row.costs)
        assert row.final_text  # (acted-on facts: paths, test names, errors; a tau-bench run may have none)
        assert row.wall > 0 and row.wall_none > 0
        assert row.facts_total >= row.facts_kept >= 0
