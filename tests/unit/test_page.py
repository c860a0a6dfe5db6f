"""``agno-compression report``'s page, read as HTML: folds at the right calls, one "saved", lines counted alike,
readable axes, every stored text escaped. (tests/browser/ opens the same pages in Chromium.)"""

from __future__ import annotations

import json
import re
from html import unescape
from html.parser import HTMLParser
from http import HTTPStatus
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agno_compression import stats
from agno_compression._cli import app
from agno_compression._databases import open_db
from tests.scenarios import HOSTILE, Scenario, hostile_session

runner = CliRunner()


class Elements(HTMLParser):
    """Every start tag's attributes, by tag name."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str]]] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, {k: v or "" for k, v in attrs}))

    def all(self, tag: str, cls: str | None = None) -> list[dict[str, str]]:
        return [a for t, a in self.found if t == tag and (cls is None or cls in a.get("class", "").split())]

    def lanes(self) -> list[list[dict[str, str]]]:
        """The call points of each chart, chart by chart."""
        out: list[list[dict[str, str]]] = []
        for tag, attrs in self.found:
            if tag == "svg":
                out.append([])
            elif tag == "circle" and "point" in attrs.get("class", "").split():
                out[-1].append(attrs)
        return out


def report(scenario: Scenario, tmp_path: Path, *extra: str) -> str:
    out = tmp_path / f"{abs(hash(scenario.session_id))}.html"
    result = runner.invoke(
        app, ["report", "--db", scenario.db_file, "--session", scenario.session_id, "--out", str(out), *extra]
    )
    assert result.exit_code == 0, result.output
    return out.read_text(encoding="utf-8")


def visible_text(page: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", page)).split())


def saved_figure(page: str) -> int:
    """The number the page calls tokens saved."""
    text = visible_text(page)
    found = re.search(r"Tokens saved ([\d,]+)", text) or re.search(r"([\d,]+) saved", text)
    assert found, "the page shows no tokens-saved figure"
    return int(found.group(1).replace(",", ""))


def test_folds_are_drawn_at_the_calls_they_came_before_in_a_multi_run_session(
    multi_scenario: Scenario, tmp_path: Path
) -> None:
    page = Elements(report(multi_scenario, tmp_path))
    marks = page.all("a", "fold-mark")
    assert [int(m["data-call"]) for m in marks] == [n + 1 for n in multi_scenario.requests_before]
    assert len(marks) == stats(open_db(multi_scenario.db_file), multi_scenario.session_id).folds
    sent = {int(p["data-call"]): int(p["data-sent"]) for p in page.all("circle", "point")}
    assert [sent[int(m["data-call"])] for m in marks] == [e.tokens_after for e in multi_scenario.events]


def test_a_team_page_has_every_fold_and_the_members_calls_in_their_own_lane(
    team_scenario: Scenario, tmp_path: Path
) -> None:
    page = Elements(report(team_scenario, tmp_path))
    charts = page.all("svg", "chart")
    assert len(charts) == 2, "the leader's lane and the member's"
    marks = page.all("a", "fold-mark")
    assert [int(m["data-call"]) for m in marks] == [n + 1 for n in team_scenario.requests_before] and len(marks) == 3
    assert [len(lane) for lane in page.lanes()] == [11, 20]
    assert "Tester (team member)" in visible_text(report(team_scenario, tmp_path))


@pytest.mark.parametrize("which", ["multi_scenario", "team_scenario"])
def test_without_compression_is_counted_like_with_and_never_below_it(
    which: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    scenario: Scenario = request.getfixturevalue(which)
    page = Elements(report(scenario, tmp_path))
    first_fold = min(int(m["data-call"]) for m in page.all("a", "fold-mark"))  # on the first lane
    lanes = page.lanes()
    assert all(int(p["data-without"]) >= int(p["data-sent"]) for lane in lanes for p in lane)
    before = [p for p in lanes[0] if int(p["data-call"]) < first_fold]
    assert before and all(p["data-without"] == p["data-sent"] for p in before), "the same count before any fold"


@pytest.mark.parametrize("which", ["multi_scenario", "team_scenario"])
def test_the_saved_figure_is_inspects_tokens_saved(which: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    scenario: Scenario = request.getfixturevalue(which)
    listed = json.loads(runner.invoke(app, ["inspect", "--db", scenario.db_file, "--json"]).stdout)
    expected = next(r["tokens_saved"] for r in listed if r["session_id"] == scenario.session_id)
    assert expected == stats(open_db(scenario.db_file), scenario.session_id).tokens_saved > 0
    assert saved_figure(report(scenario, tmp_path)) == expected


def test_axes_have_whole_call_numbers_thousands_separators_and_labelled_folds(
    multi_scenario: Scenario, tmp_path: Path
) -> None:
    page = report(multi_scenario, tmp_path)
    chart = page[page.index("<svg") : page.index("</svg>")]
    ticks = re.findall(r'<text class="tick"[^>]*text-anchor="(middle|end)">([^<]*)</text>', chart)
    calls = [label for anchor, label in ticks if anchor == "middle"]
    tokens = [label for anchor, label in ticks if anchor == "end"]
    assert calls and all(re.fullmatch(r"\d+", c) for c in calls), calls
    assert any(int(t.replace(",", "")) >= 1000 for t in tokens)
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*", t) for t in tokens), tokens
    marks = Elements(page).all("a", "fold-mark")
    numbers = re.findall(r'<text class="fold-number"[^>]*>(\d+)</text>', chart)
    assert numbers == [m["data-fold"] for m in marks] and all(m["aria-label"].startswith("fold ") for m in marks)
    assert "budget 3,000" in visible_text(page), "the budget recorded with the folds, without --budget"


def test_every_stored_text_is_escaped(tmp_path: Path) -> None:
    scenario = hostile_session(str(tmp_path / "hostile.db"))
    page = report(scenario, tmp_path)
    assert (
        "<script" not in page
        and "<h1 id=injected>" not in page
        and "onerror=" not in page.replace("onerror=&quot;", "")
    )
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in page
    assert HOSTILE in visible_text(page), "the text itself is shown, as text"
    assert "Content-Security-Policy" in page and "script-src" not in page, "and no script may run anyway"
    assert "evil &quot;&lt;b&gt;id&lt;/b&gt;&quot;" in page
    assert "search_folded_history" in page and "Tool outputs shortened in context" in page


# --- session text on the page: shown, never acted on; sizes that describe one text ---------------------------------

from agno.models.message import Message  # noqa: E402
from hypothesis import given, settings  # noqa: E402

from agno_compression import full_messages  # noqa: E402
from agno_compression._messages import message_text  # noqa: E402
from agno_compression._visible import visible  # noqa: E402
from agno_compression.tokens import TokenCounter  # noqa: E402
from agno_compression.viewer._page import _original  # noqa: E402
from agno_compression.viewer._site import error_page, index_page  # noqa: E402
from tests.scenarios import CORPUS_SESSION  # noqa: E402
from tests.strategies import HOSTILE_LINE, HOSTILE_TEXT, examples  # noqa: E402
from tests.unit.test_visible import ACTED_ON  # noqa: E402


def _no_raw_control(page: str) -> None:
    found = ACTED_ON.search(page)
    assert found is None, f"raw {found.group()!r}: {page[max(0, found.start() - 80) : found.start() + 40]!r}"


def test_the_page_holds_no_raw_control_or_bidi_character(corpus_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "corpus.html"
    result = runner.invoke(app, ["report", "--db", str(corpus_db), "--session", CORPUS_SESSION, "--out", str(out)])
    assert result.exit_code == 0, result.output[-2000:]
    page = out.read_text(encoding="utf-8")
    _no_raw_control(page)
    text = visible_text(page)
    assert "exe.<U+202E>txt" in text and "\\x1b[2J" in text and "[red]x[/red]" in text and "<U+D800>" in text
    assert "s-[bold]b[/bold]-\\x1b[31m-<U+202E>-end" in text, "the session id, shown as typed"


def test_a_folded_originals_sizes_describe_one_text(tmp_path: Path) -> None:
    scenario = hostile_session(str(tmp_path / "hostile.db"))
    page = report(scenario, tmp_path)
    stored = {m.id: m for m in full_messages(open_db(scenario.db_file), scenario.session_id)}
    counter = TokenCounter("gpt-4o")
    labels = re.findall(r'<li data-message="([^"]+)">.*?<span class="muted">([^<]*)</span>', page)
    assert labels
    shortened = 0
    for message_id, label in labels:
        m = stored[unescape(message_id)]
        original = message_text(m, use_compressed_content=False)
        assert label.startswith(f"{len(original):,} characters · {counter.count_text(original):,} tokens"), label
        if m.compressed_content is not None and m.compressed_content != m.content:
            shortened += 1
            sent = f"shortened in context to {len(m.compressed_content):,} characters · {counter.count_message(m):,}"
            assert sent in label, label
    assert shortened >= 1, "the 52 kB output was shortened in context before it was folded"


@settings(max_examples=examples(100), deadline=None)
@given(HOSTILE_TEXT, HOSTILE_LINE, HOSTILE_LINE)
def test_hostile_text_on_a_page_is_shown_as_text(text: str, session_id: str, owner: str) -> None:
    counter = TokenCounter("gpt-4o")
    row = {"session_id": session_id, "owner": owner, "request": text, "runs": 1, "folds": 0, "tokens_saved": 0}
    parts = [
        _original(Message(role="tool", content=text, tool_name=owner), counter),
        _original(Message(role="user", content=text * 3), counter),
        index_page([row], query=text, source=owner),
        error_page(HTTPStatus.NOT_FOUND, f"no page /{text}"),
    ]
    for part in parts:
        _no_raw_control(part)
    shown = visible_text(parts[2])
    assert " ".join(visible(session_id).split()) in shown and " ".join(visible(owner).split()) in shown


def test_a_line_says_why_billed_input_stays_near_uncompressed_when_far_fewer_tokens_were_sent() -> None:
    from types import SimpleNamespace

    from agno_compression.viewer._page import _billed_note

    short = SimpleNamespace(cost_with=9_500, cost_without=10_000, sent=3_100, without=10_000)
    assert "already bills most of each prompt at its read rate" in _billed_note(short)  # type: ignore[arg-type]
    long = SimpleNamespace(cost_with=3_600, cost_without=10_000, sent=2_700, without=10_000)
    assert _billed_note(long) == ""  # type: ignore[arg-type]


def test_a_fold_on_request_is_drawn_before_the_next_runs_first_call_and_says_why(tmp_path: Path) -> None:
    from tests.unit.test_timeline import requested_fold_session

    scenario = requested_fold_session(str(tmp_path / "asked.db"))
    page = report(scenario, tmp_path)
    elements = Elements(page)
    (mark,) = elements.all("a", "reason-request")
    third = re.search(r'<tr data-run="3"><td class="num">3</td><td class="text">.*?</td><td class="num">(\d+)', page)
    assert third and mark["data-call"] == third.group(1), "before the first call of the run after it"
    (row,) = [d for d in elements.all("details", "fold") if d["data-reason"] == "request"]
    assert row["data-call"] == mark["data-call"] and row["data-lane"] == "0"
    shown = visible_text(page)
    assert "fold: on request" in shown and "on request" in mark["aria-label"], "the legend, the chart"
    summary = page[page.index(f'id="fold-{row["data-fold"]}"') :]
    summary = summary[: summary.index("</summary>")]
    assert ">after 2<" in summary and '<span class="pill request">on request</span>' in summary
    assert '<span class="strategy">extractive</span>' in summary, "the reason column says why, not the strategy's tag"
    assert "Folded between runs, after run 2: the next run loaded this summary" in shown
    css = page[page.index("<style>") : page.index("</style>")]
    assert ".pill.request" in css and ".fold-mark.reason-request" in css and ".key.fold.request" in css
