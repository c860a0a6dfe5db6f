"""The example outputs in docs/cli.md, made by running the commands they show, so they cannot go stale.

    python -m tests.docs_examples          # rewrite every example (the eval one needs ../shared)
    python -m tests.docs_examples inspect  # rewrite one

Each example sits between ``<!-- example: NAME -->`` and ``<!-- /example -->`` in docs/cli.md: the command as a
user types it, then what it printed at 100 columns. ``tests/unit/test_docs_examples.py`` runs the commands again
and compares (agno's random run ids aside).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI_DOC = ROOT / "docs" / "cli.md"
TRAJECTORIES = ROOT.parent / "shared" / "trajectories"
COLUMNS = 100
BLOCK = re.compile(r"<!-- example: (?P<name>[\w-]+) -->\n```text\n(?P<body>.*?)```\n<!-- /example -->", re.S)


@dataclass(frozen=True)
class Example:
    name: str
    shown: str
    """The command as docs/cli.md shows it (run from the repository's root)."""
    args: Callable[[Path], list[str]]
    """The command's arguments, given the folder the cookbook wrote its databases to."""
    lines: int | None = None
    """Only the first lines (the command is shown piped into ``head``)."""
    needs_trajectories: bool = False


EXAMPLES = (
    Example(
        "inspect",
        "agno-compression inspect --db cookbook/out/multi_run_session.db",
        lambda out: ["inspect", "--db", str(out / "multi_run_session.db")],
    ),
    Example(
        "inspect-session",
        "agno-compression inspect --db cookbook/out/multi_run_session.db --session ops-review | head -24",
        lambda out: ["inspect", "--db", str(out / "multi_run_session.db"), "--session", "ops-review"],
        lines=24,
    ),
    Example(
        "fold",
        "agno-compression fold --db cookbook/out/multi_run_session.db --session ops-review",
        lambda out: ["fold", "--db", str(out / "multi_run_session.db"), "--session", "ops-review"],
    ),
    Example(
        "eval",
        "agno-compression eval ../shared/trajectories -b 8000 -b 16000",
        lambda out: ["eval", "../shared/trajectories", "-b", "8000", "-b", "16000"],
        needs_trajectories=True,
    ),
)


def cookbook(out: Path, example: str = "multi_run_session.py") -> None:
    """Run the cookbook's ``example`` (the multi-run session unless told) offline into ``out``."""
    env = {k: v for k, v in os.environ.items() if k not in ("GOOGLE_API_KEY", "GEMINI_API_KEY")}
    env["AGNO_COMPRESSION_COOKBOOK_OUT"] = str(out)
    script = ROOT / "cookbook" / example
    subprocess.run([sys.executable, str(script)], env=env, check=True, stdout=subprocess.DEVNULL, timeout=600)


def produce(example: Example, out: Path) -> str:
    """What ``example``'s command prints at 100 columns (trailing spaces dropped), named as docs/cli.md names it."""
    env = {**os.environ, "COLUMNS": str(COLUMNS)}
    done = subprocess.run(
        [sys.executable, "-m", "agno_compression", *example.args(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    text = done.stdout.replace(str(out), "cookbook/out")
    lines = [line.rstrip() for line in text.splitlines()]
    return "\n".join(lines[: example.lines] if example.lines else lines) + "\n"


def block(example: Example, output: str) -> str:
    return f"<!-- example: {example.name} -->\n```text\n$ {example.shown}\n{output}```\n<!-- /example -->"


def documented(text: str | None = None) -> dict[str, str]:
    """Each example's output as docs/cli.md holds it (the command line dropped)."""
    text = CLI_DOC.read_text(encoding="utf-8") if text is None else text
    return {m["name"]: m["body"].split("\n", 1)[1] for m in BLOCK.finditer(text)}


def masked(text: str) -> str:
    """``text`` without the ids agno picks at random for every run (of the same length every time)."""
    return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>", text)


def write(names: list[str]) -> None:
    chosen = [e for e in EXAMPLES if not names or e.name in names]
    text = CLI_DOC.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        cookbook(out)
        for example in chosen:
            if example.needs_trajectories and not TRAJECTORIES.is_dir():
                print(f"skipped {example.name}: no {TRAJECTORIES}", file=sys.stderr)
                continue
            new = block(example, produce(example, out))
            old = re.search(rf"<!-- example: {example.name} -->.*?<!-- /example -->", text, re.S)
            if old is None:
                raise SystemExit(f"docs/cli.md has no <!-- example: {example.name} --> block")
            text = text[: old.start()] + new + text[old.end() :]
            print(f"wrote {example.name}", file=sys.stderr)
    CLI_DOC.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    write(sys.argv[1:])
