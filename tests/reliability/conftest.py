"""Reliability harness: prints how many property examples ran (and writes them to AGNO_COMPRESSION_COUNT_FILE)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from tests.reliability._profile import EXAMPLES_RUN, LONG, TOTAL


@pytest.fixture(scope="session", autouse=True)
def _report_example_counts() -> Iterator[None]:
    yield
    if not EXAMPLES_RUN:
        return
    total = sum(EXAMPLES_RUN.values())
    mode = "long" if LONG else "ci"
    print(f"\nagno-compression reliability ({mode} profile, target {TOTAL}): {total} property examples checked")
    for name, n in sorted(EXAMPLES_RUN.items()):
        print(f"  {name}: {n}")
    out = os.environ.get("AGNO_COMPRESSION_COUNT_FILE")
    if out:
        with open(out, "w", encoding="utf-8") as fh:
            json.dump({"profile": mode, "target": TOTAL, "total": total, "per_test": EXAMPLES_RUN}, fh, indent=2)
