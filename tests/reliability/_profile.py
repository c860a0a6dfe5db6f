"""Hypothesis settings profiles of the reliability harness.

``reliability-ci`` (default): at least 5,000 examples in total across the property tests, a few minutes at most.
``reliability-long``: selected by ``AGNO_COMPRESSION_LONG=1``; 100,000 examples in total (override the total with
``AGNO_COMPRESSION_EXAMPLES=N``). Each property test takes a fixed share of the total.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

LONG = os.environ.get("AGNO_COMPRESSION_LONG", "") not in ("", "0")
TOTAL = int(os.environ.get("AGNO_COMPRESSION_EXAMPLES", "100000" if LONG else "5200"))

_COMMON = {
    "deadline": None,
    "suppress_health_check": [
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.function_scoped_fixture,
    ],
}
settings.register_profile("reliability-ci", max_examples=TOTAL, print_blob=True, **_COMMON)
settings.register_profile("reliability-long", max_examples=TOTAL, print_blob=True, **_COMMON)
PROFILE = settings.get_profile("reliability-long" if LONG else "reliability-ci")

EXAMPLES_RUN: dict[str, int] = {}
"""Examples that went through every check, per test (printed at the end of the session)."""


def share(fraction: float) -> settings:
    """The profile with ``fraction`` of the total examples."""
    return settings(PROFILE, max_examples=max(1, round(TOTAL * fraction)))


def count(test: str) -> None:
    EXAMPLES_RUN[test] = EXAMPLES_RUN.get(test, 0) + 1
