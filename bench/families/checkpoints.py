"""Copy one agent's sessions out of a repository's Entire checkpoints branch by a fixed rule (bench/families/).

    python bench/families/checkpoints.py GIT_DIR AGENT OUT [--branch entire/checkpoints/v1] [--min 35] [--max 150]

The Entire CLI commits the transcript of every agent session its users work in to the branch
``entire/checkpoints/v1``: one folder per checkpoint, ``<2 hex>/<10 hex>/<n>/`` with ``full.jsonl`` (the agent's own
session file: Claude Code JSONL, a Codex rollout...) and ``metadata.json`` (``session_id``, ``agent``, ``model``).
The rule, fixed before anything was replayed: of the checkpoints whose ``metadata.json`` names ``AGENT``, one per
session (its largest ``full.jsonl``), kept when its transcript has ``--min`` to ``--max`` model calls as
``load_trajectories`` reads it. Copies ``transcripts/<checkpoint path without slashes>.jsonl`` (every original is
named ``full.jsonl``; the path keeps the names apart) and ``checkpoints/<path>/{metadata.json,prompt.txt}`` into
``OUT`` and prints each session with its model calls. Nothing goes into this repository: the recordings are public
but not ours to redistribute; write ``OUT/LICENSE`` and ``OUT/SOURCE.txt`` by hand (repository, commit, licence).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from agno_compression.eval import load_trajectories


def _git(git_dir: str, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", git_dir, *args], capture_output=True, check=True).stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    parser.add_argument("git_dir", help="a clone's .git folder (or a bare repository) holding the branch")
    parser.add_argument("agent", help='metadata.json\'s "agent" value, e.g. "Claude Code" or "Codex"')
    parser.add_argument("out", type=Path)
    parser.add_argument("--branch", default="entire/checkpoints/v1")
    parser.add_argument("--min", type=int, default=35, help="fewest model calls (default 35)")
    parser.add_argument("--max", type=int, default=150, help="most model calls (default 150)")
    args = parser.parse_args(argv)
    commit = _git(args.git_dir, "rev-parse", f"refs/heads/{args.branch}").decode().strip()
    sizes: dict[str, int] = {}
    for line in _git(args.git_dir, "ls-tree", "-r", "-l", commit).decode().splitlines():
        meta, path = line.split("\t", 1)
        size = meta.split()[3]
        sizes[path] = int(size) if size.isdigit() else -1
    sessions: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for path in sizes:
        parts = path.split("/")
        if len(parts) != 4 or parts[3] != "metadata.json":
            continue
        base = "/".join(parts[:3])
        meta = json.loads(_git(args.git_dir, "show", f"{commit}:{path}"))
        if meta.get("agent") == args.agent and sizes.get(f"{base}/full.jsonl", -1) > 0:
            sessions[str(meta.get("session_id"))].append((sizes[f"{base}/full.jsonl"], base))
    kept = 0
    with tempfile.TemporaryDirectory() as tmp:
        for session, checkpoints in sorted(sessions.items()):
            _, base = max(checkpoints)
            name = base.replace("/", "")[:12] + "-" + base.split("/")[2] + ".jsonl"
            file = Path(tmp, name)
            file.write_bytes(_git(args.git_dir, "show", f"{commit}:{base}/full.jsonl"))
            calls = sum(1 for t in load_trajectories(file) for m in t.messages if m.role == "assistant")
            chosen = args.min <= calls <= args.max
            print(f"{calls:4d} {'kept' if chosen else '    '} {base} {session}")
            if not chosen:
                continue
            kept += 1
            (args.out / "transcripts").mkdir(parents=True, exist_ok=True)
            (args.out / "transcripts" / name).write_bytes(file.read_bytes())
            folder = args.out / "checkpoints" / base
            folder.mkdir(parents=True, exist_ok=True)
            for extra in ("metadata.json", "prompt.txt"):
                if f"{base}/{extra}" in sizes:
                    (folder / extra).write_bytes(_git(args.git_dir, "show", f"{commit}:{base}/{extra}"))
    print(f"{args.branch} at {commit}: {len(sessions)} sessions of {args.agent}, {kept} kept", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
