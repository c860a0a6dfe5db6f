"""Names in use: the identifiers a folded span used, most recently used first.

An agent's next step mostly reuses names it has met before: a setting it put into a test script, a method it is
editing, a path it read. The ledger (``_ledger``) keeps what the agent did and the reading (``_reading``) keeps
located names of each output (``check_token l.45``); this keeps the plain names themselves, from the agent's own
messages and tool calls (``used``) and from the tool outputs (``seen``), each kind ordered by when its names were
last used. Rendered as quoted lines, newest first::

    - used: "settings.configure, INSTALLED_APPS, schema_editor.create_model, check_token"
    - seen: "login_timestamp, PasswordResetTokenGenerator, django/contrib/auth/tokens.py"

A name is an identifier as ``_reading.identifiers_in`` finds it (four or more characters with ``_``, ``.``, ``/``, a
digit or an inner capital). A previous summary's names are parsed back and merged, so a name stays until newer ones
crowd it out; ``render`` leaves out names the rest of the summary already holds. Pure and deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, field

from agno.models.message import Message

from .._messages import call_arguments, content_text
from .._plan import is_summary
from ._ledger import json_strings, section_lines
from ._reading import identifier_counts, identifiers_in, identifiers_of

SECTION = "Names in use"
"""The summary section that holds the names, most recently used first."""
MAX_NAMES = 2_000
"""Names of each kind a summary remembers at most (a render shows far fewer; this bounds the work)."""
PER_LINE = 24
"""Names per rendered line."""
PER_OUTPUT = 120
"""Names one tool output adds at most (its best ranked): a whole file listing must not push out everything else."""
USED_SHARE = 0.8
"""Share of the section's budget that names the agent used itself get first (they are the likeliest to be used
again); names only tools showed fill the rest, and each kind takes what the other leaves."""
_LINE = re.compile(r'- (used|seen)(?: \(cont\.\))?: "(.*)"$')


@dataclass
class Names:
    """Names the agent used itself (its messages and tool calls) and names only tools showed; newest first."""

    used: list[str] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str | None) -> Names:
        """The names of a previous summary's ``## Names in use`` lines."""
        kinds: dict[str, dict[str, None]] = {"used": {}, "seen": {}}
        for line in section_lines(text, SECTION):
            found = _LINE.match(line)
            if found:
                kinds[found.group(1)].update(dict.fromkeys(n for n in found.group(2).split(", ") if n))
        return cls(list(kinds["used"]), [n for n in kinds["seen"] if n not in kinds["used"]])


def _action_names(message: Message) -> list[str]:
    """Identifiers of an assistant message: its text, then its tool calls' argument strings, in order."""
    parts = [content_text(message, use_compressed_content=False)]
    for call in message.tool_calls or []:
        parts.extend(json_strings(call_arguments(call)))
    return identifiers_of(parts)


def _output_names(text: str, own: Container[str]) -> list[str]:
    """Identifiers of a tool output, best first: those the agent itself used, then the most frequent."""
    counts = identifier_counts(text)  # identifiers_in(text), each with how often it occurs
    found = list(counts)
    if len(found) <= 1:
        return found
    ranked = sorted(found, key=lambda n: (n not in own, -counts[n]))
    return ranked[:PER_OUTPUT]


def build(messages: Sequence[Message], previous: str | None = None, *, before: Names | None = None) -> Names:
    """The names in use after ``messages`` (oldest first) were folded on top of ``before`` (default: the names of
    the ``previous`` summary's text).

    A message's names count as used when it was sent; within one message the best ranked is the most recent. A
    name the agent used itself is listed as used from then on, even when a later output shows it again.
    """
    before = before if before is not None else Names.parse(previous)
    used: dict[str, None] = dict.fromkeys(reversed(before.used))  # oldest first: the end is the newest
    seen: dict[str, None] = dict.fromkeys(reversed(before.seen))

    def use(names: Iterable[str], into: dict[str, None]) -> None:
        for name in reversed(list(names)):  # the first (best) name ends up the most recent
            into.pop(name, None)
            into[name] = None

    for m in messages:
        if is_summary(m) or m.role in ("system", "developer"):
            continue
        text = content_text(m, use_compressed_content=False)
        if m.role in ("tool", "function"):
            use((n for n in _output_names(text, used) if n not in used), seen)
        else:  # the agent's own messages and calls, and what users wrote
            names = _action_names(m) if m.role == "assistant" else identifiers_in(text)
            use(names, used)
            for name in names:
                seen.pop(name, None)
    return Names(list(reversed(used))[:MAX_NAMES], list(reversed(seen))[:MAX_NAMES])


def _lines(kind: str, names: Sequence[str]) -> list[str]:
    return [
        f'- {kind}{" (cont.)" if i else ""}: "' + ", ".join(names[i : i + PER_LINE]) + '"'
        for i in range(0, len(names), PER_LINE)
    ]


def _take(names: Sequence[str], kind: str, max_tokens: int, count: Callable[[str], int]) -> list[str]:
    """The newest of ``names`` whose lines fit in ``max_tokens``."""
    taken: list[str] = []
    spent = 0
    for name in names:
        step = count(", " + name) + (count(f'- {kind} (cont.): ""') if len(taken) % PER_LINE == 0 else 0)
        if spent + step > max_tokens:
            break
        taken.append(name)
        spent += step
    while taken and count("\n".join(_lines(kind, taken))) > max_tokens:  # per-name counts drift from the joined count
        taken.pop()
    return taken


def _once(count: Callable[[str], int]) -> Callable[[str], int]:
    """``count``, remembering what it answered (for one render: a count is a pure function of the text)."""
    counts: dict[str, int] = {}

    def counted(text: str) -> int:
        found = counts.get(text)
        if found is None:
            found = counts[text] = count(text)
        return found

    return counted


def render(names: Names, max_tokens: int, count: Callable[[str], int], *, present: str = "") -> list[str]:
    """The newest names of each kind that fit in ``max_tokens`` (used ones get ``USED_SHARE`` first, each kind
    takes what the other leaves), without those ``present`` already holds."""
    if max_tokens <= 0:
        return []
    count = _once(count)  # each _take counts the same names again
    used = [n for n in names.used if n not in present]
    seen = [n for n in names.seen if n not in present]
    first = _take(used, "used", int(max_tokens * USED_SHARE), count)
    spent = count("\n".join(_lines("used", first))) + 1 if first else 0
    shown = _take(seen, "seen", max_tokens - spent, count)
    if len(first) < len(used):  # what the seen names left goes to more used ones
        spent_seen = count("\n".join(_lines("seen", shown))) + 1 if shown else 0
        first = _take(used, "used", max_tokens - spent_seen, count)
    return [*_lines("used", first), *_lines("seen", shown)]
