"""Split the native-agent recordings into a tuning part and a held-out part, by a fixed rule (bench/native/README.md).

    python bench/native/split.py [--data /work/data/native] [--out /work/data/native-split]

Every source folder under ``--data`` (one per repository) is split on its own: its recording files, sorted by the
SHA-256 of their file name, the first third (rounded) held out, the rest for tuning. The rule looks at names
only, never at results, and a file keeps its part when others are added to its source unless they sort before
it. Copies the files into ``OUT/tune/<source>/`` and ``OUT/heldout/<source>/`` with each source's ``LICENSE`` and
``SOURCE.txt``, and prints the assignment.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
from pathlib import Path

RECORDING_SUFFIXES = {".json", ".jsonl"}
NOT_RECORDINGS = {"metadata", "license", "source", "readme"}  # Entire's checkpoint metadata, licence, provenance


def recordings(source: Path) -> list[Path]:
    """The recording files of one source folder, in the rule's order (SHA-256 of the file name)."""
    files = [
        p
        for p in source.rglob("*")
        if p.is_file() and p.suffix in RECORDING_SUFFIXES and p.stem.lower() not in NOT_RECORDINGS
    ]
    return sorted(files, key=lambda p: hashlib.sha256(p.name.encode()).hexdigest())


def split(source: Path) -> tuple[list[Path], list[Path]]:
    """(tune, held out) of one source: the first third of its recordings in the rule's order is held out."""
    files = recordings(source)
    held = round(len(files) / 3)
    return files[held:], files[:held]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/data/native"), help="one folder per source")
    parser.add_argument("--out", type=Path, default=Path("/work/data/native-split"), help="where tune/ and heldout/ go")
    args = parser.parse_args(argv)
    sources = sorted(p for p in args.data.iterdir() if p.is_dir()) if args.data.is_dir() else []
    if not sources:
        print(f"error: no source folders under {args.data}", file=sys.stderr)
        return 2
    for part in ("tune", "heldout"):
        shutil.rmtree(args.out / part, ignore_errors=True)
    for source in sources:
        for part, files in zip(("tune", "heldout"), split(source), strict=True):
            target = args.out / part / source.name
            target.mkdir(parents=True, exist_ok=True)
            for extra in ("LICENSE", "SOURCE.txt"):
                if (source / extra).is_file():
                    shutil.copy2(source / extra, target / extra)
            for file in files:
                shutil.copy2(file, target / file.name)
                print(f"{part:8} {source.name}/{file.relative_to(source)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
