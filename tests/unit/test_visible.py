"""The one rule for session text at a terminal, a page, a log and in JSON (``_visible``), on hostile text."""

from __future__ import annotations

import io
import json
import re
from html import unescape

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console

from agno_compression._visible import data_text, html_text, json_text, visible, visible_line
from tests.strategies import HOSTILE_TEXT, examples

ACTED_ON = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
    r"\u00ad\u034f\u115f\u1160\u180e\u200b\u200c\u2060-\u2064\u3164\ufeff\uffa0\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
"""What a terminal or a reader would act on, or could not see: C0 but newline and tab, DEL, C1, separators, bidi
controls, surrogates, zero-width and filler characters, the BOM, tag characters and supplementary selectors."""


def test_controls_and_bidi_become_visible_marks() -> None:
    assert visible("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert visible("exe.\u202etxt") == "exe.<U+202E>txt"
    assert visible("nul\x00 bel\x07 del\x7f c1\x9b") == "nul\\x00 bel\\x07 del\\x7f c1\\x9b"
    assert visible("lone \ud800") == "lone <U+D800>"
    assert visible("two\nlines\tand a tab") == "two\nlines\tand a tab"
    assert visible("windows\r\nline end, cr\rhere") == "windows\nline end, cr\\x0dhere"
    assert visible_line("one\nline\t") == "one\\x0aline\\x09"
    assert visible("Optional[bool] = None") == "Optional[bool] = None", "brackets are text, left alone"
    assert visible("a\u200bb\ufeffc\u3164d") == "a<U+200B>b<U+FEFF>c<U+3164>d", "invisible characters are shown"
    assert visible_line("tag\U000e0041") == "tag<U+E0041>"
    assert json_text("tag\U000e0041") == '"tag\\udb40\\udc41"', "outside the BMP: a surrogate pair escape"


@settings(max_examples=examples(300), deadline=None)
@given(HOSTILE_TEXT)
def test_visible_leaves_nothing_to_act_on_and_can_always_be_written(text: str) -> None:
    shown, line = visible(text), visible_line(text)
    assert ACTED_ON.search(shown) is None and ACTED_ON.search(line) is None
    assert "\n" not in line and "\t" not in line
    shown.encode("utf-8")  # a lone surrogate would make this, and any write of it, fail
    assert visible(shown) == shown and visible_line(line) == line, "marks are plain text: shown once more unchanged"
    if ACTED_ON.search(text.replace("\r\n", "\n")) is None:
        assert shown == text.replace("\r\n", "\n") or shown == text


@settings(max_examples=examples(200), deadline=None)
@given(HOSTILE_TEXT, st.sampled_from([20, 60, 80]))
def test_rich_prints_data_text_literally_within_the_width(text: str, width: int) -> None:
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=False, color_system=None)
    console.print(data_text(text))
    printed = out.getvalue()
    assert ACTED_ON.search(printed) is None and "\x1b" not in printed
    assert all(cell_len(line) <= width for line in printed.splitlines())
    flat = "".join(printed.split())
    assert "".join(visible(text).split()) == flat, "every character shown, markup and emoji codes as typed"


@settings(max_examples=examples(200), deadline=None)
@given(HOSTILE_TEXT)
def test_html_text_is_the_same_marks_escaped(text: str) -> None:
    page = html_text(text)
    assert ACTED_ON.search(page) is None and "<" not in page and ">" not in page and '"' not in page
    assert unescape(page) == visible(text)


def _pairs_combined(text: str) -> str:
    """``text`` as JSON can say it: a high surrogate followed by a low one is the character they encode."""
    return re.sub(
        "[\ud800-\udbff][\udc00-\udfff]",
        lambda m: chr(0x10000 + ((ord(m.group()[0]) - 0xD800) << 10) + ord(m.group()[1]) - 0xDC00),
        text,
    )


@settings(max_examples=examples(300), deadline=None)
@given(st.dictionaries(HOSTILE_TEXT, st.lists(HOSTILE_TEXT, max_size=3), max_size=3))
def test_json_text_is_exact_json_without_a_raw_control(value: dict[str, list[str]]) -> None:
    for indent in (None, 2):
        out = json_text(value, indent=indent)
        assert ACTED_ON.search(out.replace("\n", "")) is None
        out.encode("utf-8")
        back = json.loads(out)
        expected = {_pairs_combined(k): [_pairs_combined(v) for v in vs] for k, vs in value.items()}
        assert back == expected
    assert json_text({"a": "é \u202e"}) == '{"a": "é \\u202e"}', "non-ASCII text stays readable"
