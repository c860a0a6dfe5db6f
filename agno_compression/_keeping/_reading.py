"""What the agent read: names, locations and values from folded tool outputs that its next steps may use.

The working-state ledger (``_ledger``) keeps what the agent *did*; this keeps what it *read*: definitions with
their line (``check_token l.45``), search hits (``src/auth.py:45``), traceback locations, values it looked up
(``reservation_id=OBUT9V``) and the other identifiers of each output (paths, dotted, snake_case, camelCase
names). Rendered as one line per folded output, newest outputs first in priority, its names quoted as data::

    - view src/auth.py » "check_token l.45, make_token l.60, TOKEN_TTL, login_timestamp"

Everything is deterministic and bounded: ``render`` fits a token budget by dropping the lowest-ranked names of
the oldest outputs first. A previous summary's lines are parsed back and merged, so what was read stays
until newer reading crowds it out.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType

from agno.models.message import Message

from .._messages import (
    call_arguments,
    calls_by_id,
    command_of,
    content_text,
    message_text,
    one_line,
    result_ids,
    tool_call_texts,
    tool_name_of,
)
from .._plan import is_summary
from ._ledger import section_lines

SECTION = "Read"
"""The summary section that holds what was read."""

_TOKEN = re.compile(r"[\w./-]{4,}")
"""Runs of word characters, ``.``, ``/`` and ``-`` an identifier can come from (four or more characters: a shorter
run is shorter still once its edge punctuation is stripped)."""
_SPACED = str.maketrans({c: " " for c in map(chr, range(128)) if not (c.isalnum() or c in "_./-")})
"""ASCII text with every character that is not one of ``_TOKEN``'s made a space: its runs are the words."""
_INNER_CAPITAL = re.compile(r"[a-z][A-Z]")
_NUMBERED = re.compile(r"^\s*(\d{1,6})(?:\t|:|\s\||\s{2,}|\s(?=\S))(.*)$")
_DEFINITION = re.compile(
    r"\b(?:def|class|function|func|fn|struct|enum|interface|trait|type|module|impl|macro|var|let|const)\s+"
    r"\*?([A-Za-z_]\w{2,})"
    r"|^\s*#\s*define\s+([A-Za-z_]\w{2,})"
    r"|^(?:static\s+|inline\s+|extern\s+|const\s+|unsigned\s+|struct\s+)*[A-Za-z_][\w]*[\s*]+\**([A-Za-z_]\w{2,})\s*\("
    r"|^\s*([A-Za-z_]\w{2,})\s*(?::[^=]{0,40})?=(?!=)"
)
_HIT = re.compile(r"^([\w./-]*[\w-]\.[A-Za-z]\w{0,7}|[\w./-]+/[\w.-]+):(\d+)[:-]")
_TRACE = re.compile(r'File "([^"]+)", line (\d+)(?:, in (\w+))?')
_KEY_VALUE = re.compile(r'"(\w{2,40})"\s*:\s*(?:"([^"\n]{1,80})"|(-?\d[\d.]{0,20}))')
_CODE_WORDS = frozenset(
    {"self", "None", "True", "False", "return", "import", "from", "else", "elif", "while", "print", "this", "null"}
)
_QUOTE = '"'
_LABEL_KEYS = ("path", "file", "file_path", "filename", "command", "cmd", "query", "url", "action", "input")
LABEL_CHARS = 60
"""Characters of a reading line's label (the tool and its main argument)."""
NEWEST_QUOTA = 16
"""Names the newest folded output gets per round when the reading is rendered; each older output gets half as
many as the one after it, and at least one."""


# --- facts of a text (fact retention is measured with these) ---------------------------------------

_PATH = re.compile(
    r"(?<![\w/])(?:\.{0,2}/)?(?:[\w.+-]+/)+[\w.+-]+"
    r"|\b[\w-]+\.(?:py|c|h|cc|cpp|rs|go|js|ts|java|json|ya?ml|toml|md|txt|pony|sh|cfg|ini|html|css|sql)\b"
)
_URL = re.compile(r"https?://[^\s'\"<>)\]]+")
_ERROR = re.compile(r"\b[A-Z]\w*(?:Error|Exception|Warning|Fault)\b|\bE\d{3,5}\b")
_EXIT = re.compile(r"(?:exit(?:ed)?(?: with)?(?: code| status)?|return ?code|returncode|status)[\s:=]+(-?\d+)", re.I)
_IDENT = re.compile(r"\b(?:[0-9a-f]{7,40}|[A-Z]{2,}-\d+|#\d{2,}|\w+_\w*\d\w*|[a-f0-9]{8}-[a-f0-9-]{27,})\b")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?%?(?![\w.])")


def extract_facts(text: str) -> dict[str, list[str]]:
    """Paths, URLs, identifiers, error names, exit codes and numbers found in ``text``, deduplicated in order."""

    def uniq(items: list[str]) -> list[str]:
        return list(dict.fromkeys(i.strip() for i in items if i.strip()))

    return {
        "paths": uniq(_PATH.findall(text)),
        "urls": uniq(_URL.findall(text)),
        "errors": uniq(_ERROR.findall(text)),
        "exit_codes": uniq(_EXIT.findall(text)),
        "ids": uniq(_IDENT.findall(text)),
        "numbers": uniq([n for n in _NUMBER.findall(text) if len(n.strip("-%")) >= 2]),
    }


_LETTER = re.compile(r"[^\W\d_]")
_DIGIT = re.compile(r"\d")


def is_identifier(token: str) -> bool:
    """Four or more characters with ``_``, ``.``, ``/``, a digit or an inner capital, and a letter; no dunder."""
    if len(token) < 4 or (token.startswith("__") and token.endswith("__")) or not _LETTER.search(token):
        return False
    if "." in token or "/" in token or "_" in token.strip("_") or _DIGIT.search(token):
        return True
    return bool(_INNER_CAPITAL.search(token))


@lru_cache(maxsize=1 << 14)
def _identifier_of(raw: str) -> str:
    """The identifier a token of ``_TOKEN`` stands for (edge punctuation stripped), or ``""``: cached, since the same
    tokens come back in every output and every fold (a pure function of the token, bounded)."""
    token = raw.strip("./-")
    return token if is_identifier(token) else ""


def _tokens(text: str) -> list[str]:
    """The runs of ``_TOKEN`` in ``text``, in order; in ASCII text (split, several times faster) shorter runs too."""
    return text.translate(_SPACED).split() if text.isascii() else _TOKEN.findall(text)


def identifiers_in(text: str) -> list[str]:
    """The identifiers of ``text`` in order of first appearance (edge punctuation stripped)."""
    out = dict.fromkeys(map(_identifier_of, dict.fromkeys(_tokens(text))))  # each distinct token once
    out.pop("", None)
    return list(out)


def _identifier_counts(text: str) -> Mapping[str, int]:
    counts: dict[str, int] = {}
    for raw, n in Counter(_tokens(text)).items():
        token = _identifier_of(raw)
        if token:
            counts[token] = counts.get(token, 0) + n
    return MappingProxyType(counts)


_kept_identifier_counts = lru_cache(maxsize=32)(_identifier_counts)
_COUNTED_CHARS = 200_000
"""Longest text whose ``identifier_counts`` are kept (what the cache holds is bounded)."""


def identifier_counts(text: str) -> Mapping[str, int]:
    """The identifiers of ``text`` (``identifiers_in``, in its order) with how often each occurs (read-only).

    One tool output is ranked by this twice per fold (the names in use, then what was read): the last few texts'
    answers are kept, keyed on the text itself."""
    return _kept_identifier_counts(text) if len(text) <= _COUNTED_CHARS else _identifier_counts(text)


@lru_cache(maxsize=64)
def names_of_text(text: str) -> frozenset[str]:
    """The names in a held text (cached: a held text is checked again at every model call and fold)."""
    return frozenset(identifiers_in(text))


_PART_CHARS = 8_000
"""Longest part whose identifiers ``identifiers_of`` keeps (what its cache holds is bounded)."""


@lru_cache(maxsize=512)
def _part_identifiers(text: str) -> tuple[str, ...]:
    return tuple(identifiers_in(text))


def identifiers_of(parts: Iterable[str]) -> list[str]:
    """``identifiers_in`` of the parts joined by line breaks (no identifier spans one, nor a parenthesis), each
    part's found once: the working set, the names in use and what was read each read the same message's text."""
    found: dict[str, None] = {}
    for part in parts:
        found.update(dict.fromkeys(_part_identifiers(part) if len(part) <= _PART_CHARS else identifiers_in(part)))
    return list(found)


def _action_parts(message: Message) -> list[str]:
    return [str(message.content or ""), *(a for _, a in tool_call_texts(message))]


def action_text(message: Message) -> str:
    """What an assistant message does, as text: its words and its calls' arguments."""
    return "\n".join(_action_parts(message))


def action_names(message: Message) -> frozenset[str]:
    """The names in ``action_text(message)`` (each part's found once: every fold walks the run's actions again)."""
    return frozenset(identifiers_of(_action_parts(message)))


@dataclass
class Source:
    """One folded output: where it came from and what it showed, best first."""

    label: str
    names: list[str] = field(default_factory=list)


@dataclass
class Reading:
    """What was read, oldest output first."""

    sources: list[Source] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [_line(s.label, s.names) for s in self.sources if s.names]

    @classmethod
    def parse(cls, text: str | None) -> Reading:
        """The reading of a previous summary (its ``## Read`` lines), or an empty one."""
        reading = cls()
        for line in section_lines(text, SECTION):
            found = re.match(r'- (.*?) » "(.*)"$', line)
            if found:
                reading.sources.append(Source(found.group(1), [n for n in found.group(2).split(", ") if n]))
        return reading


def _line(label: str, names: Sequence[str]) -> str:
    return f'- {label} » "{", ".join(names)}"'


def _label(message: Message, calls: dict[str, dict[str, object]]) -> str:
    """The tool and its main argument (a path or a command), on one short line without quotes."""
    name = tool_name_of(message, calls)
    call = next((calls[c] for c in result_ids(message) if c in calls), None)
    args = call_arguments(call) if call is not None else None
    detail = ""
    if isinstance(args, dict):
        found = [args.get(k) for k in _LABEL_KEYS]
        detail = next((v for v in found if isinstance(v, str) and v.strip()), "")
        if isinstance(args.get("command"), str) and isinstance(args.get("path"), str):
            detail = f"{args['command']} {args['path']}"  # an editor's verb and its file
    elif isinstance(args, str):
        detail = args
    detail = command_of(detail)
    label = one_line(f"{name} {detail}".replace(_QUOTE, "'").replace("»", ">>"), LABEL_CHARS)
    return label


def read_names(text: str, own: frozenset[str] = frozenset()) -> list[str]:
    """The names of one tool output, best first: definitions with their line, search hits, traceback
    locations and looked-up values, then the other identifiers (those the agent itself wrote, then the most
    frequent). ``own`` holds identifiers the agent used in its own messages."""
    marked: dict[str, None] = {}
    lines = text.splitlines()
    numbered = sum(1 for ln in lines[:50] if _NUMBERED.match(ln)) >= min(5, max(1, len(lines) // 2))
    for ln in lines:
        number, code = None, ln
        if numbered:
            found = _NUMBERED.match(ln)
            if found:
                number, code = found.group(1), found.group(2)
        hit = _HIT.match(ln)
        if hit:
            marked.setdefault(f"{hit.group(1)}:{hit.group(2)}", None)
        definition = _DEFINITION.search(code) if len(code) < 300 else None
        if definition:
            name = next(g for g in definition.groups() if g)
            if name not in _CODE_WORDS:
                marked.setdefault(f"{name} l.{number}" if number else name, None)
    if 'File "' in text:
        for path, line, func in _TRACE.findall(text):
            marked.setdefault(f"{path}:{line}" + (f" {func}" if func else ""), None)
    if '":' in text:
        for key, value, number in _KEY_VALUE.findall(text):
            value = value or number
            if is_identifier(value) or (value.isalnum() and any(c.isdigit() for c in value) and len(value) >= 4):
                marked.setdefault(f"{key}={value}", None)
    seen = " ".join(marked)
    counts = identifier_counts(text)
    rest = [t for t in counts if t not in seen]
    rest.sort(key=lambda t: (t not in own, -counts[t]))
    return [_clean(n) for n in [*marked, *rest]]


def _clean(name: str) -> str:
    """A name as data inside the quoted list: no quote, no list separator, bounded."""
    return one_line(name.replace(_QUOTE, "'").replace(", ", ","), 80)


def build(messages: Sequence[Message], previous: str | None = None) -> Reading:
    """What the folded tool outputs of ``messages`` showed, after the previous summary's reading."""
    reading = Reading.parse(previous)
    calls = calls_by_id(messages)
    own: set[str] = set()
    for m in messages:
        if m.role == "assistant" and not is_summary(m):  # message_text: the text, then name(arguments) lines
            parts = [part for call in tool_call_texts(m) for part in call]
            own.update(identifiers_of([content_text(m, use_compressed_content=False), *parts]))
    mine = frozenset(own)
    for m in messages:
        if m.role not in ("tool", "function") or is_summary(m):
            continue
        names = read_names(message_text(m, use_compressed_content=False), mine)
        if names:
            reading.sources.append(Source(_label(m, calls), names))
    return reading


def render(reading: Reading, max_tokens: int, count: Callable[[str], int]) -> list[str]:
    """The reading's lines within ``max_tokens``: every output keeps its best names, newer outputs more of them.

    Names are taken in rounds, newest output first, best-ranked first, while they fit: the first round gives
    every output its best name; each later one gives the newest output ``NEWEST_QUOTA`` more, the next half of
    that, and every older one at least one. So a large new output cannot crowd out the definitions and hits of
    an older one. An output with no name taken is left out.
    """
    if max_tokens <= 0 or not reading.sources:
        return []
    sources = [Source(s.label, list(dict.fromkeys(s.names))) for s in reading.sources]
    # a name read again later counts once, where it was read last
    later: set[str] = set()
    for s in reversed(sources):
        s.names = [n for n in s.names if n not in later]
        later.update(s.names)
    order = [i for i in range(len(sources) - 1, -1, -1) if sources[i].names]  # newest first
    taken = dict.fromkeys(order, 0)
    picks: list[int] = []  # which source each name was taken for, in the order taken
    used = 0
    progress, first = True, True
    while progress:
        progress = False
        for rank, i in enumerate(order):
            s = sources[i]
            for _ in range(1 if first else max(1, NEWEST_QUOTA >> rank)):
                if taken[i] >= len(s.names):
                    break
                # the line's frame (label, quotes, newline) is paid with its first name
                step = count(", " + s.names[taken[i]]) + (count(_line(s.label, [])) + 1 if not taken[i] else 0)
                if used + step > max_tokens:
                    break
                used += step
                taken[i] += 1
                picks.append(i)
                progress = True
        first = False

    def lines() -> list[str]:
        return [_line(sources[i].label, sources[i].names[: taken[i]]) for i in sorted(taken) if taken[i]]

    out = lines()
    while picks and count("\n".join(out)) > max_tokens:  # per-name counts drift from the joined text's count
        taken[picks.pop()] -= 1
        out = lines()
    return out
