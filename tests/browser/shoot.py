"""docs/report.png: the session page of cookbook/multi_run_session.py, as Chromium shows it on a laptop;
docs/agentos.png: the session page of cookbook/agentos_viewer.py, served from its AgentOS app.

    python -m tests.browser.shoot [OUT.png]
    python -m tests.browser.shoot --agentos [OUT.png]

Runs the cookbook example offline into a temporary folder, writes its page with ``agno-compression report`` and
takes a screenshot of its first screen (1440x900, light mode). Needs Playwright (the ``test`` extra) and Debian's
``chromium``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.browser._chromium import browser, why_not

ROOT = Path(__file__).resolve().parents[2]


def main(out: Path) -> None:
    reason = why_not()
    if reason is not None:
        sys.exit(f"cannot take the screenshot: {reason}")
    with tempfile.TemporaryDirectory() as folder:
        env = {k: v for k, v in os.environ.items() if k not in ("GOOGLE_API_KEY", "GEMINI_API_KEY")}
        env["AGNO_COMPRESSION_COOKBOOK_OUT"] = folder
        subprocess.run(
            [sys.executable, str(ROOT / "cookbook" / "multi_run_session.py")],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        page_file = Path(folder) / "ops-review.html"
        subprocess.run(  # from the folder, so the page names the database as a user in cookbook/out would see it
            [
                sys.executable,
                "-m",
                "agno_compression",
                "report",
                "--db",
                "multi_run_session.db",
                "--session",
                "ops-review",
                "--out",
                str(page_file),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            cwd=folder,
        )
        with browser() as context:
            page = context.new_page()
            page.goto(page_file.resolve().as_uri())
            page.screenshot(path=str(out))
    print(f"wrote {out}")


def agentos(out: Path) -> None:
    """The cookbook's AgentOS app on a real uvicorn server (loopback, a free port), its session page in Chromium."""
    from tests._app_server import serving

    reason = why_not()
    if reason is not None:
        sys.exit(f"cannot take the screenshot: {reason}")
    with tempfile.TemporaryDirectory() as folder:
        for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY"):
            os.environ.pop(name, None)
        os.environ["AGNO_COMPRESSION_COOKBOOK_OUT"] = folder
        sys.path.insert(0, str(ROOT / "cookbook"))
        import agentos_viewer  # type: ignore[import-not-found]

        agent, _, app = agentos_viewer.build(Path(folder) / "agentos_viewer.db")
        agent.run("Review the deployment log of the last six days.", session_id=agentos_viewer.SESSION)
        with serving(app) as url, browser() as context:
            page = context.new_page()
            page.goto(f"{url}/compression/session/{agentos_viewer.SESSION}")
            page.screenshot(path=str(out))
    print(f"wrote {out}")


if __name__ == "__main__":
    if "--agentos" in sys.argv:
        rest = [a for a in sys.argv[1:] if a != "--agentos"]
        agentos(Path(rest[0]) if rest else ROOT / "docs" / "agentos.png")
    else:
        main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "report.png")
