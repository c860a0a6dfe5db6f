"""Copy the held-out (or the tuning) mini-swe-agent runs out of a snapshot of gruckion/mini-swe-agent.

    python bench/heldout/select.py TRAJS_DIR OUT_DIR [--part heldout|tune]

``TRAJS_DIR`` is ``swebench_results/20251118_gemini-3-pro-74pct/trajs`` of gruckion/mini-swe-agent at commit
d12a71affd95403b036b2bdbd827349b77bfffb9 (MIT; 500 SWE-bench Verified runs, one folder each). The runs are ranked
by their model calls (``info.model_stats.api_calls``, ties by name), ``psf__requests-1142`` left out (one of its
outputs is 0.9 MB): ranks 1-20 are the held-out part, never used to tune; ranks 21-40 the tuning part. Nothing is
copied into the repository: the runs are public but not ours to redistribute here.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

LEFT_OUT = {"psf__requests-1142"}
PARTS = {"heldout": slice(0, 20), "tune": slice(20, 40)}


def ranked(trajs: Path) -> list[Path]:
    """Every run's ``.traj.json``, most model calls first."""
    runs = []
    for path in sorted(trajs.glob("*/*.traj.json")):
        if path.parent.name in LEFT_OUT:
            continue
        calls = json.loads(path.read_text(encoding="utf-8")).get("info", {}).get("model_stats", {}).get("api_calls")
        runs.append((-(calls or 0), path.parent.name, path))
    return [path for _, _, path in sorted(runs)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    parser.add_argument("trajs", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--part", choices=sorted(PARTS), default="heldout")
    args = parser.parse_args(argv)
    if not args.trajs.is_dir():
        print(f"error: no folder at {args.trajs}", file=sys.stderr)
        return 2
    chosen = ranked(args.trajs)[PARTS[args.part]]
    args.out.mkdir(parents=True, exist_ok=True)
    for path in chosen:
        shutil.copy(path, args.out / path.name)
    print(f"{len(chosen)} runs copied to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
