"""A pytest plugin ``bench/mutation.py`` loads into every pytest run mutmut makes (``-p _mutation_plugin``).

Neither hook changes what a run finds: a mutant fails or passes the same tests, only sooner.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any


def pytest_configure(config: Any) -> None:
    """Freeze what the fork server had already built before this mutant's run forked from it.

    pytest collects garbage when a session ends (its unraisable-exception check); over the fork server's whole heap
    that took about 1 s per mutant here, most of it copying the shared pages the collector touches. Frozen objects
    are skipped; everything this run creates is collected as usual.
    """
    gc.freeze()


def pytest_collection_modifyitems(items: list[Any]) -> None:
    """Run the fastest tests first (the durations of mutmut's clean run): a mutant's run stops at its first failure."""
    try:
        durations = json.loads(Path("mutmut-stats.json").read_text())["duration_by_test"]
    except (OSError, ValueError, KeyError):
        return  # mutmut's first run, before it has timed the tests
    items.sort(key=lambda item: durations.get(item.nodeid, 0.0))
