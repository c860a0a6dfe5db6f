"""``inspect``'s layouts (``_inspect``) at every width a terminal has: nothing wider than it, no id cut, summaries
whole, hostile text shown as text. (tests/unit/test_cli_terminal.py runs the command on real sessions.)"""

from __future__ import annotations

import io
import re
import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console

from agno_compression._inspect import SUMMARY_MIN, run_view, session_list
from agno_compression._visible import visible, visible_line
from tests.strategies import HOSTILE_LINE, HOSTILE_TEXT, examples
from tests.unit.test_visible import ACTED_ON

WIDTHS = (60, 80, 100, 120, 160, 250)


def render(parts: list[Any], width: int) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=False, color_system=None, markup=False, emoji=False)
    for part in parts:
        console.print(part)
    return out.getvalue()


def _fold(n: int, summary: str, strategy: str = "extractive", ids: int = 3) -> dict[str, Any]:
    return {
        "record_id": n,
        "before_call": n + 2,
        "reason": "budget" if n % 2 else "early",
        "budget": 3000,
        "strategy": strategy,
        "tokens_before": 123_456 * n,
        "tokens_after": 1_789,
        "folded": ids,
        "folded_ids": [str(uuid.UUID(int=n * 100 + i)) for i in range(ids)],
        "summary": summary,
    }


def _run(folds: list[dict[str, Any]], run_id: str = "e738d6be-9fb7-40a0-9d59-f2622a10b3aa") -> dict[str, Any]:
    return {
        "run_id": run_id,
        "status": "COMPLETED",
        "member_of": None,
        "model_calls": 60,
        "prompt_tokens": [1_000 + 37 * i for i in range(60)],
        "folds": folds,
    }


SUMMARY = "\n".join(
    [
        "[Progress so far: earlier steps, folded by agno-compression to save context.]",
        "## Working state",
        "- edited: `src/agno_compression/_cli.py`, `Optional[bool] = None`, `additional_metrics[k] = v`",
        "- commands: `python -m pytest -q tests/unit/test_cli.py` (exit 0, 3 passed, 2 times)",
        *(f"- step {i}: read `docs/page_{i}.md` and found nothing new" for i in range(60)),
    ]
)


def _lines_fit(shown: str, width: int) -> None:
    wide = [line for line in shown.splitlines() if cell_len(line) > width]
    assert not wide, f"{len(wide)} lines wider than {width}:\n" + "\n".join(wide[:3])


def test_every_width_fits_and_keeps_ids_and_summaries_whole() -> None:
    run = _run([_fold(1, SUMMARY), _fold(2, SUMMARY, "mask->extractive")])
    for width in WIDTHS:
        for ids in (False, True):
            for full in (False, True):
                shown = render(run_view(run, width, ids=ids, full=full), width)
                _lines_fit(shown, width)
                lines = shown.splitlines()
                cut = [line for line in lines if re.search(r"\S…|…\S", line)]  # a "…" alone: more lines follow
                assert not cut, f"something was cut at {width}: {cut}"
                assert any(run["run_id"] in line for line in lines)
                for fold in run["folds"]:
                    assert all(any(i in line for line in lines) for i in fold["folded_ids"]) == ids
                words = shown.split()
                for word in SUMMARY.split() if full else SUMMARY.splitlines()[2].split():
                    assert word in words or word in "".join(words), (width, word)
                assert ("step 59:" in shown) == full, "without --full, the first lines; with it, all of them"


def test_a_table_only_where_its_columns_fit_a_readable_summary() -> None:
    run = _run([_fold(1, SUMMARY)])
    for width in range(60, 251, 5):
        shown = render(run_view(run, width, ids=False, full=False), width)
        table = "┃" in shown
        if table:
            header = next(line for line in shown.splitlines() if "summary" in line)
            summary_cell = header.split("┃")[-2]
            assert len(summary_cell) - 2 >= SUMMARY_MIN, f"a {len(summary_cell)}-wide summary column at {width}"
        else:
            assert "fold 1 · before call 3" in shown
    assert "┃" in render(run_view(run, 160, ids=False, full=False), 160)
    assert "┃" not in render(run_view(run, 80, ids=False, full=False), 80)


def test_the_first_line_of_a_run_wraps_at_80_columns() -> None:
    shown = render(run_view(_run([]), 80, ids=False, full=False), 80)
    _lines_fit(shown, 80)
    assert "prompt tokens:" in shown and "3,183" in shown, "the 60th call's prompt size is there too"


def _row(session_id: str, owner: str) -> dict[str, Any]:
    return {"session_id": session_id, "owner": owner, "runs": 3, "messages": 1_234, "folds": 12, "tokens_saved": 98_765}


def test_the_session_list_keeps_ids_whole_at_every_width() -> None:
    rows = [_row(str(uuid.uuid4()), f"agent {uuid.uuid4()}") for _ in range(3)] + [_row("a-[bold]b[/bold]", "team t")]
    for width in WIDTHS:
        shown = render(session_list(rows, "4 sessions in agent.db", width), width)
        _lines_fit(shown, width)
        assert all(any(r["session_id"] in line for line in shown.splitlines()) for r in rows), shown
        assert ("┃" in shown) == (width >= 160), width


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(st.tuples(HOSTILE_LINE, HOSTILE_LINE), min_size=1, max_size=3),
    HOSTILE_TEXT,
    HOSTILE_LINE,
    st.sampled_from(WIDTHS),
    st.booleans(),
)
def test_hostile_text_is_shown_as_text_within_the_width(
    names: list[tuple[str, str]], summary: str, strategy: str, width: int, full: bool
) -> None:
    rows = [_row(session_id, owner) for session_id, owner in names]
    listing = render(session_list(rows, "sessions", width), width)
    run = _run([_fold(1, summary, strategy)], run_id=names[0][0])
    timeline = render(run_view(run, width, ids=True, full=full), width)
    for shown in (listing, timeline):
        assert ACTED_ON.search(shown) is None and "\x1b" not in shown
        _lines_fit(shown, width)
    flat = "".join(listing.split())
    assert all("".join(visible_line(session_id).split()) in flat for session_id, _ in names), "no id is cut"
    if full and "│" not in summary:
        rows = [line.split("│")[-2] for line in timeline.splitlines() if line.count("│") > 2]  # the summary cells
        shown = "".join(rows) if rows else timeline
        assert "".join(visible(summary).split()) in "".join(shown.split())


def _field(lines: list[str], start: str, text: str) -> list[str]:
    """The lines the field that begins with ``start`` takes: from that line until its words are all shown."""
    at = next(i for i, line in enumerate(lines) if line.startswith(start))
    want, got = len(text.split()), 0
    for end in range(at, len(lines)):
        got += len(lines[end].split())
        if got >= want:
            return lines[at : end + 1]
    raise AssertionError(f"{text!r} is not whole after {start!r}")


def _hangs(lines: list[str], start: str, lead: str, text: str) -> int:
    """Every wrapped line of the field ``lead + text`` (its first line beginning ``start``) starts under its text;
    how many wrapped lines it has."""
    field = _field(lines, start, lead + text)
    assert " ".join(" ".join(field).split()) == " ".join((lead + text).split()), field
    indent = len(start) - len(start.lstrip()) + len(lead)
    for line in field[1:]:
        assert line.startswith(" " * indent) and line[indent] != " ", f"not under the text at {indent}:\n" + "\n".join(
            field
        )
    return len(field) - 1


def test_wrapped_lines_hang_under_their_fields_text_at_80_100_and_120_columns() -> None:
    strategy = "mask->extractive-after-a-summarizer-timeout-with-a-long-name"
    run = _run([_fold(1, SUMMARY, strategy)])
    sizes = " · ".join(f"{n:,}" for n in run["prompt_tokens"])
    head = f"before call 3 · over the budget · {strategy} · 123,456 -> 1,789 tokens · 3 messages folded"
    bullet = SUMMARY.splitlines()[2][2:]
    row = _row(str(uuid.UUID(int=7)), "agent " + "-".join(["log-reviewer"] * 6))
    facts = f"{row['owner']} · 3 runs · 1,234 messages · 12 folds · 98,765 tokens saved"
    for width in (80, 100, 120):
        lines = render(run_view(run, width, ids=True, full=False), width).splitlines()
        assert "┃" not in "".join(lines), "the block layout"
        wrapped = _hangs(lines, "  prompt tokens: ", "prompt tokens: ", sizes)
        wrapped += _hangs(lines, "fold 1 · ", "fold 1 · ", head)
        wrapped += _hangs(lines, "  - edited:", "- ", bullet)
        wrapped += _hangs(lines, "run ", "run ", f"{run['run_id']} · completed · 60 model calls")
        listing = render(session_list([row], "1 session", width), width).splitlines()
        wrapped += _hangs(listing, "  agent ", "", facts)
        assert wrapped >= (5 if width == 80 else 3), (width, wrapped)
        assert all(line.startswith(("run ", "fold ", "  ")) or not line.strip() for line in lines), lines


def test_a_fold_on_request_says_so_and_that_it_came_after_the_run() -> None:
    asked = {**_fold(3, "[Summary of earlier conversation]"), "before_call": None, "reason": "request"}
    asked["strategy"] = "request:extractive"
    run = _run([_fold(1, SUMMARY), asked])
    block = render(run_view(run, 80, ids=False, full=False), 80)
    assert "fold 3 · after the run · on request · request:extractive" in block
    table = render(run_view(run, 200, ids=False, full=False), 200)
    assert "on request" in table and "request:extractive" in table
    agent = {**_fold(4, "[Progress so far]"), "reason": "agent", "strategy": "agent:extractive"}
    assert "before call 6 · the agent asked · agent:extractive" in render(
        run_view(_run([agent]), 80, ids=False, full=False), 80
    )
