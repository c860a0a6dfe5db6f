"""bench/native/split.py: a fixed split by file-name hash, a third of each source held out, nothing else copied."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers import load_script

SPLIT = Path(__file__).resolve().parents[2] / "bench" / "native" / "split.py"


@pytest.fixture(scope="module")
def split() -> ModuleType:
    return load_script(SPLIT, "native_split")


def make_source(root: Path, name: str, files: list[str]) -> Path:
    source = root / name
    for file in files:
        (source / file).parent.mkdir(parents=True, exist_ok=True)
        (source / file).write_text(json.dumps([{"role": "user", "content": file}]), encoding="utf-8")
    (source / "LICENSE").write_text("CC0", encoding="utf-8")
    (source / "SOURCE.txt").write_text("repo, commit", encoding="utf-8")
    (source / "checkpoints" / "ab").mkdir(parents=True)
    (source / "checkpoints" / "ab" / "metadata.json").write_text("{}", encoding="utf-8")
    return source


def test_a_third_of_each_source_is_held_out_by_name_hash(split: ModuleType, tmp_path: Path) -> None:
    names = [f"session-{n}.json" for n in range(7)]
    source = make_source(tmp_path / "data", "gemini", [f"Archives/{n}" for n in names])
    tune, held = split.split(source)
    by_hash = sorted(names, key=lambda n: hashlib.sha256(n.encode()).hexdigest())
    assert [p.name for p in held] == by_hash[:2] and [p.name for p in tune] == by_hash[2:]
    assert split.split(source) == (tune, held)  # the same every time


def test_main_copies_recordings_licence_and_source_only(split: ModuleType, tmp_path: Path) -> None:
    make_source(tmp_path / "data", "claude", ["transcripts/a.jsonl", "transcripts/b.jsonl", "transcripts/c.jsonl"])
    assert split.main(["--data", str(tmp_path / "data"), "--out", str(tmp_path / "out")]) == 0
    tune = sorted(p.name for p in (tmp_path / "out" / "tune" / "claude").iterdir())
    held = sorted(p.name for p in (tmp_path / "out" / "heldout" / "claude").iterdir())
    assert len([n for n in tune + held if n.endswith(".jsonl")]) == 3
    assert len([n for n in held if n.endswith(".jsonl")]) == 1
    assert {"LICENSE", "SOURCE.txt"} <= set(tune) & set(held) and "metadata.json" not in tune + held
