"""Where session text meets a terminal, a page or a log: the one rule every output of the tools follows.

Session text (tool outputs, model text, user messages, ids, names) comes from web pages, files and other people's
programs. Written as it is, an escape sequence clears the screen, retitles the window or plants a link, a bidi
control shows ``exe.txt`` as ``txt.exe``, a lone surrogate cannot be written at all, and square brackets handed to
rich as markup lose text (``Optional[bool]`` would print as ``Optional``). So every text read from a session is
shown through ``visible``: C0 controls other than newline and tab, DEL, C1 controls, line and paragraph separators,
bidi controls, lone surrogates and invisible characters (zero-width spaces, fillers, the BOM, tag characters: text
a model reads and a person cannot see) become visible marks (``\\x1b``, ``<U+202E>``), never interpreted; rich gets it
as a ``Text`` (``data_text``), never as markup; a page gets it HTML-escaped too (``html_text``); JSON stays exact
JSON, with the same characters written as ``\\u`` escapes (``json_text``).
"""

from __future__ import annotations

import json
import re
from html import escape
from typing import Any

from rich.text import Text

_INVISIBLE = (  # zero-width and filler characters, the BOM, tag characters: text a reader cannot see but a model reads
    r"\u00ad\u034f\u115f\u1160\u180e\u200b\u200c\u2060-\u2064\u3164\ufeff\uffa0\U000e0000-\U000e007f"
    r"\U000e0100-\U000e01ef"
)
_BIDI_AND_SEPARATORS = rf"\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff{_INVISIBLE}"
_UNSAFE = re.compile(rf"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI_AND_SEPARATORS}]")
_UNSAFE_IN_A_LINE = re.compile(rf"[\x00-\x1f\x7f-\x9f{_BIDI_AND_SEPARATORS}]")
# json.dumps escapes C0 itself; what it leaves raw with ensure_ascii=False can only stand inside a JSON string
_UNSAFE_IN_JSON = re.compile(rf"[\x7f-\x9f{_BIDI_AND_SEPARATORS}]")


def _mark(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"<U+{code:04X}>"


def visible(value: object) -> str:
    """``value`` as text that shows every character a terminal or a reader would act on (newlines and tabs kept;
    a Windows line end is a newline)."""
    text = str(value)
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_mark, text.replace("\r\n", "\n"))


def visible_line(value: object) -> str:
    """``visible`` on one line: newlines and tabs are marked too (an id, a name, a message of one line)."""
    text = str(value)
    return text if _UNSAFE_IN_A_LINE.search(text) is None else _UNSAFE_IN_A_LINE.sub(_mark, text)


def data_text(value: object, *, line: bool = False, style: str = "") -> Text:
    """Session text for rich: ``visible`` (``visible_line`` with ``line``), as a ``Text``, so it is never markup."""
    return Text(visible_line(value) if line else visible(value), style=style)


def html_text(value: object) -> str:
    """``value`` as HTML text, ``visible`` first and escaped (quotes too, so it is safe in an attribute)."""
    return escape(visible(value), quote=True)


def json_text(value: Any, *, indent: int | None = None) -> str:
    """``value`` as JSON (non-ASCII text as it is), the characters ``visible`` marks written as ``\\u`` escapes.

    Decoding gives ``value`` back, except that a high surrogate directly followed by a low one decodes as the
    character the pair encodes (JSON has no other way to write them).
    """
    out = json.dumps(value, ensure_ascii=False, indent=indent)
    return _UNSAFE_IN_JSON.sub(_json_escape, out)


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # outside the BMP: JSON writes it as a surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
