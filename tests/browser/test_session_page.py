"""The session page in a real browser (Debian's Chromium through Playwright), on the cookbook's own databases.

Folds must sit where ``inspect`` and ``stats()`` put them, a fold must open from the keyboard, stored text must stay
text, and the page must fit a laptop screen in light and dark mode. Screenshots go to tests/out/ (look at them).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agno_compression import stats
from agno_compression._cli import app
from agno_compression._databases import open_db
from tests.browser._chromium import launch, why_not
from tests.scenarios import HOSTILE, hostile_session

pytestmark = pytest.mark.skipif(why_not() is not None, reason=str(why_not()))

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "out"
runner = CliRunner()


@pytest.fixture(scope="module")
def cookbook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The databases of cookbook/multi_run_session.py and cookbook/team.py, run offline as a user runs them."""
    out = tmp_path_factory.mktemp("cookbook")
    env = {k: v for k, v in os.environ.items() if k not in ("GOOGLE_API_KEY", "GEMINI_API_KEY")}
    env["AGNO_COMPRESSION_COOKBOOK_OUT"] = str(out)
    for example in ("multi_run_session.py", "team.py"):
        done = subprocess.run(
            [sys.executable, str(ROOT / "cookbook" / example)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
    OUT.mkdir(exist_ok=True)
    return out


@pytest.fixture(scope="module")
def playwright() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as instance:
        yield instance


@pytest.fixture(scope="module")
def context(playwright: Any) -> Iterator[Any]:
    with launch(playwright) as ctx:
        yield ctx


def write_page(db: Path, session_id: str, out: Path) -> str:
    result = runner.invoke(app, ["report", "--db", str(db), "--session", session_id, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out.resolve().as_uri()


def expected_folds(db: Path, session_id: str) -> list[tuple[int, int, int]]:
    """``(lane call, tokens after, record id)`` of each fold of the first lane, from ``inspect --json``."""
    shown = json.loads(runner.invoke(app, ["inspect", "--db", str(db), "--session", session_id, "--json"]).stdout)
    lead = [run for run in shown["runs"] if not run["member_of"]]
    out, offset = [], 0
    for run in lead:
        out += [(offset + f["before_call"], f["tokens_after"], f["record_id"]) for f in run["folds"]]
        offset += run["model_calls"]
    return out


def marks(page: Any, lane: int = 0) -> list[dict[str, Any]]:
    return page.eval_on_selector_all(  # type: ignore[no-any-return]
        f'svg.chart[data-lane="{lane}"] a.fold-mark',
        "els => els.map(e => ({fold: +e.dataset.fold, call: +e.dataset.call}))",
    )


def points(page: Any, lane: int) -> dict[int, tuple[int, int]]:
    found = page.eval_on_selector_all(
        f'svg.chart[data-lane="{lane}"] circle.point',
        "els => els.map(e => [+e.dataset.call, +e.dataset.sent, +e.dataset.without])",
    )
    return {call: (sent, without) for call, sent, without in found}


def check_totals(page: Any, db: Path, session_id: str) -> None:
    st = stats(open_db(str(db)), session_id)
    tiles = page.eval_on_selector_all(
        ".tile", "els => Object.fromEntries(els.map(e => [e.dataset.total, e.querySelector('.value').innerText]))"
    )
    assert int(tiles["folds"].replace(",", "")) == st.folds
    assert int(tiles["saved"].replace(",", "")) == st.tokens_saved
    assert int(tiles["folded"].replace(",", "")) == st.folded_messages


def open_fold_from_the_keyboard(page: Any, number: int) -> Any:
    summary = page.locator(f"#fold-{number} > summary")
    summary.focus()
    page.keyboard.press("Enter")
    fold = page.locator(f"#fold-{number}")
    assert fold.get_attribute("open") is not None
    assert fold.get_by_text("What the model saw instead").is_visible()
    full = fold.locator(".originals details > summary").first
    full.focus()
    page.keyboard.press("Enter")
    assert fold.locator(".originals details[open] pre").first.is_visible()
    return fold


def test_the_multi_run_session_page(cookbook: Path, context: Any) -> None:
    db = cookbook / "multi_run_session.db"
    page = context.new_page()
    page.goto(write_page(db, "ops-review", OUT / "multi_run_session.html"))
    expected = expected_folds(db, "ops-review")
    assert [m["call"] for m in marks(page)] == [call for call, _, _ in expected]
    assert len(expected) == stats(open_db(str(db)), "ops-review").folds >= 5
    sent = points(page, 0)
    assert [sent[call][0] for call, _, _ in expected] == [after for _, after, _ in expected]
    assert all(without >= s for s, without in sent.values())
    check_totals(page, db, "ops-review")
    assert page.locator("svg.chart").first.bounding_box()["width"] > 900
    assert page.get_by_text("budget 6,000").first.is_visible()
    assert page.locator("svg .run-label").all_text_contents() == ["run 1", "run 2", "run 3"]
    page.screenshot(path=str(OUT / "multi_run_session-top.png"))
    page.locator('a.fold-mark[data-fold="3"]').focus()  # a fold in the chart is a link to its row
    page.keyboard.press("Enter")
    assert page.evaluate("location.hash") == "#fold-3"
    open_fold_from_the_keyboard(page, 3)
    page.screenshot(path=str(OUT / "multi_run_session.png"), full_page=True)
    page.close()


def test_the_team_page_gives_the_member_its_own_lane(cookbook: Path, context: Any) -> None:
    db = cookbook / "team.db"
    page = context.new_page()
    page.goto(write_page(db, "qa", OUT / "team.html"))
    expected = expected_folds(db, "qa")
    assert [m["call"] for m in marks(page, 0)] == [call for call, _, _ in expected] and len(expected) == 3
    leader, member = points(page, 0), points(page, 1)
    assert len(leader) == 13 and len(member) == 24, "the members' 24 calls are on the page, in their own lane"
    assert marks(page, 1) == []
    assert page.get_by_role("heading", name="Tester (team member)").is_visible()
    check_totals(page, db, "qa")
    open_fold_from_the_keyboard(page, 1)
    page.screenshot(path=str(OUT / "team.png"), full_page=True)
    page.close()


def test_the_page_in_dark_mode_on_a_smaller_laptop(cookbook: Path, playwright: Any) -> None:
    url = write_page(cookbook / "multi_run_session.db", "ops-review", OUT / "multi_run_session.html")
    with launch(playwright, "dark", {"width": 1366, "height": 768}) as ctx:
        page = ctx.new_page()
        page.goto(url)
        background = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
        assert background == "rgb(13, 17, 23)", background
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "no sideways scrolling"
        page.screenshot(path=str(OUT / "multi_run_session-dark.png"))


def test_stored_text_stays_text_in_the_browser(tmp_path: Path, context: Any) -> None:
    scenario = hostile_session(str(tmp_path / "hostile.db"))
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(write_page(Path(scenario.db_file), scenario.session_id, OUT / "hostile.html"))
    fold = open_fold_from_the_keyboard(page, 1)
    assert page.evaluate("window.__pwned") is None and page.locator("#injected").count() == 0 and not errors
    assert HOSTILE in fold.inner_text() or HOSTILE in page.locator("body").inner_text()
    assert page.get_by_text("Tool outputs shortened in context").is_visible()
    assert page.locator("svg .search-mark").count() == 1
    page.screenshot(path=str(OUT / "hostile.png"), full_page=True)
    page.close()


def test_serve_lists_searches_and_opens_a_session(cookbook: Path, context: Any) -> None:
    from agno_compression.viewer._serve import make_server

    server = make_server(str(cookbook / "multi_run_session.db"), port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        page = context.new_page()
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/")
        page.fill("#q", "billing")
        page.keyboard.press("Enter")
        page.wait_for_url("**/?q=billing")
        assert page.locator("tr[data-session]").count() == 1
        page.screenshot(path=str(OUT / "serve.png"))
        page.get_by_role("link", name="ops-review").click()
        page.wait_for_url("**/session/ops-review")
        assert len(marks(page)) == stats(open_db(str(cookbook / "multi_run_session.db")), "ops-review").folds
        page.get_by_role("link", name="All sessions").click()
        page.wait_for_url("**/")
        page.close()
    finally:
        server.shutdown()
        server.server_close()


# --- the trust boundary in a browser: stored text isolated and shown, no framing, no other host name -------------


def test_session_text_is_shown_isolated_never_acted_on(corpus_db: Path, context: Any) -> None:
    from tests.scenarios import CORPUS_SESSION

    OUT.mkdir(exist_ok=True)
    page = context.new_page()
    page.goto(write_page(corpus_db, CORPUS_SESSION, OUT / "corpus.html"))
    open_fold_from_the_keyboard(page, 1)
    text = page.locator("body").inner_text()
    assert "exe.<U+202E>txt" in text and "\\x1b[2J" in text and "[red]x[/red]" in text
    assert not any(c in text for c in ("\u202e", "\x1b", "\x07", "\x00")), "no raw control reaches the reader"
    assert page.locator("h1 .id").inner_text() == "s-[bold]b[/bold]-\\x1b[31m-<U+202E>-end"
    for selector in ("h1 .id", ".fold[open] pre", ".originals .who strong", "td.text"):
        style = page.locator(selector).first.evaluate("e => getComputedStyle(e).unicodeBidi")
        assert style == "plaintext", (selector, style)
    sizes = page.locator(".originals .muted").filter(
        has_text=re.compile(r"^2,0\d\d,\d{3} characters · [\d,]{7} tokens")
    )
    assert sizes.count() == 1, "the 2 MB output's size, characters and tokens of the same text"
    page.screenshot(path=str(OUT / "corpus.png"), full_page=False)
    page.close()


def test_serve_cannot_be_framed_or_read_under_another_name(cookbook: Path, playwright: Any) -> None:
    from agno_compression.viewer._serve import make_server

    server = make_server(str(cookbook / "multi_run_session.db"), port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    rebinding = ["--host-resolver-rules=MAP evil.example 127.0.0.1"]  # a rebinding page's name, on this address
    try:
        with launch(playwright, flags=rebinding) as ctx:
            page = ctx.new_page()
            page.goto(f"http://127.0.0.1:{port}/")
            assert page.locator('tr[data-session="ops-review"]').count() == 1, "the viewer itself works"
            answer = page.goto(f"http://evil.example:{port}/")
            assert answer is not None and answer.status == 421
            assert "ops-review" not in page.content()
            page.screenshot(path=str(OUT / "serve-other-name.png"))
            page.set_content(f'<iframe id="f" src="http://127.0.0.1:{port}/session/ops-review"></iframe>')
            page.wait_for_timeout(1500)
            framed = page.frames[-1]
            assert framed is not page.main_frame
            assert framed.evaluate("() => document.body ? document.body.innerText : ''").find("ops-review") < 0
            page.close()
    finally:
        server.shutdown()
        server.server_close()
