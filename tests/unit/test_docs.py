"""The README stays a short front page that starts with the set-up commands, and no doc link points nowhere."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
MAX_README_BYTES = 12_288

# A fresh clone's set-up, byte for byte: install + offline demo, then the test suite (.ci/run runs the same).
SETUP = (
    "# agno-compression\n"
    "\n"
    "```bash\n"
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && python cookbook/long_tool_loop.py\n"
    ". .venv/bin/activate && python -m pytest -q\n"
    "```\n"
)

# [text](target) and ![alt](target); a target ends at whitespace or ")" (titles and spaces are not used here)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)[^)]*\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _links(text: str) -> list[str]:
    return LINK.findall(FENCE.sub("", text))  # code blocks hold no links, only code that may look like one


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(text: str) -> set[str]:
    return {_anchor(m) for m in re.findall(r"^#+ (.+)$", FENCE.sub("", text), re.M)}


def _broken(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    broken = []
    for target in _links(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ...: not checked offline
            continue
        file_part, _, anchor = target.partition("#")
        if not file_part:
            if anchor not in _anchors(text):
                broken.append(target)
            continue
        if not (path.parent / file_part).resolve().exists():
            broken.append(target)
    return broken


def test_readme_is_at_most_12_kib() -> None:
    size = len(README.read_bytes())
    assert size <= MAX_README_BYTES, f"README.md is {size:,} bytes (limit {MAX_README_BYTES:,}): move detail to docs/"


def test_readme_starts_with_the_two_setup_commands() -> None:
    assert README.read_text(encoding="utf-8").startswith(SETUP)
    assert (ROOT / "cookbook" / "long_tool_loop.py").is_file()  # the demo the first command runs


def test_the_quickstart_runs_offline_as_printed(tmp_path: Path) -> None:
    """Every Python block of the README, in order, pasted into one file and run in an empty folder: the offline
    quickstart folds, and the real-model variant builds (it makes no call)."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 2, "the quickstart and its real-model variant"
    script = tmp_path / "quickstart.py"
    script.write_text("\n\n".join(blocks), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    folds = int(done.stdout.split(" folds", 1)[0].split()[-1])
    assert folds >= 1 and done.stdout.count("extractive ") == folds, done.stdout


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_to_existing_files(path: Path) -> None:
    assert _broken(path) == []


def test_the_link_check_sees_links_and_catches_a_missing_file(tmp_path: Path) -> None:
    assert len(_links(README.read_text(encoding="utf-8"))) >= 10  # the front page links into docs/
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n[ok](#title) [web](https://example.com) [gone](missing.md) [bad anchor](#nope)\n"
        "```\n[in code](also-missing.md)\n```\n"
    )
    assert _broken(page) == ["missing.md", "#nope"]
