"""Debian's Chromium driven by Playwright (``executable_path``): the browser the page tests and ``shoot`` use."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""What Chromium needs to run as root here, headless and quiet."""
LAPTOP = {"width": 1440, "height": 900}


def chromium_path() -> str | None:
    """The system's Chromium, if installed (``apt-get install chromium``)."""
    for candidate in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if Path(candidate).is_file():
            return candidate
    return shutil.which("chromium") or shutil.which("chromium-browser")


def why_not() -> str | None:
    """Why no browser test can run here, or ``None`` when one can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (pip install -e '.[test]')"
    if chromium_path() is None:
        return "no Chromium found (apt-get install chromium; npx playwright install cannot download here)"
    return None


@contextmanager
def launch(
    playwright: Any, color_scheme: str = "light", viewport: dict[str, int] | None = None, flags: Sequence[str] = ()
) -> Iterator[Any]:
    """A fresh Chromium context of a running Playwright (a new empty profile), at a laptop's size; ``flags`` are
    Chromium's, added to ``FLAGS``."""
    with tempfile.TemporaryDirectory() as profile:
        context = playwright.chromium.launch_persistent_context(
            profile,
            executable_path=chromium_path(),
            args=[*FLAGS, *flags],
            headless=True,
            viewport=viewport or LAPTOP,
            color_scheme=color_scheme,
        )
        try:
            yield context
        finally:
            context.close()


@contextmanager
def browser(color_scheme: str = "light", viewport: dict[str, int] | None = None) -> Iterator[Any]:
    """``launch`` with its own Playwright (one at a time per thread)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright, launch(playwright, color_scheme, viewport) as context:
        yield context
