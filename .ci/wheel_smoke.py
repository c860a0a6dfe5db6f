"""Smoke test of the installed wheel: .ci/run runs it with the wheel's own virtualenv, from a directory outside
the checkout, so the package under test is the wheel's and never the checkout's:

    python wheel_smoke.py cookbook/long_tool_loop.py

Checks: where the package was imported from, its version and public names, py.typed, exact token counting offline
(the rank files come from an installed dependency), a real agno Agent that folds and stores its fold records in
SQLite, and the installed ``agno-compression`` command reading that database; then runs the offline demo given
(a copy of the cookbook's) on the installed package and checks that it folded.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import json
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path

from agno.db.sqlite import SqliteDb

import agno_compression
import agno_compression.eval
import agno_compression.testing
import agno_compression.tokens
from agno_compression import count_tokens, full_messages, stats
from agno_compression.testing import loop_agent, offline

location = Path(agno_compression.__file__).resolve()
prefix = Path(sys.prefix).resolve()
assert prefix in location.parents, f"agno_compression was imported from {location}, not from the venv {prefix}"
assert Path.cwd().resolve() not in location.parents, f"imported from the working directory: {location}"
assert agno_compression.__version__ == importlib.metadata.version("agno-compression"), agno_compression.__version__
missing = [name for name in agno_compression.__all__ if not hasattr(agno_compression, name)]
assert not missing, f"names in __all__ that the installed package lacks: {missing}"
missing = [name for name in agno_compression.tokens.__all__ if not hasattr(agno_compression.tokens, name)]
assert not missing, f"names in agno_compression.tokens.__all__ that the installed package lacks: {missing}"
assert (location.parent / "py.typed").is_file(), "py.typed is not installed"
assert count_tokens("hello world", model="gpt-4o") == 2, "exact o200k count offline"

with tempfile.TemporaryDirectory() as tmp, offline():
    db_file = Path(tmp) / "smoke.db"
    loop = loop_agent(steps=12, db=SqliteDb(db_file=str(db_file)), compress_at_tokens=2_000)
    loop.run("Read the build log.")
    folds = stats(loop.agent.db, "s1").folds
    assert folds >= 1 and loop.summary_folds, f"the loop did not fold: {loop.manager.stats}"
    kept = [m.content for m in full_messages(loop.agent.db, "s1") if m.role == "tool"]
    assert kept == loop.produced, "a stored tool output differs from what the tool returned"

    cli = Path(sys.executable).with_name("agno-compression")
    done = subprocess.run(
        [str(cli), "inspect", "--db", str(db_file), "--json"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    sessions = {row["session_id"]: row for row in json.loads(done.stdout)}
    assert sessions["s1"]["folds"] == folds, done.stdout[:2000]

demo = Path(sys.argv[1]).resolve()
printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    runpy.run_path(str(demo), run_name="__main__")
print(printed.getvalue())
assert "Offline: a scripted model" in printed.getvalue() and "extractive: folded" in printed.getvalue(), demo
assert "Every original message is stored in" in printed.getvalue(), demo

print(f"wheel smoke test passed: agno_compression {agno_compression.__version__} from {location.parent}")
print(f"{folds} folds in the smoke loop; {demo.name} folded")
