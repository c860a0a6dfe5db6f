"""What a read tool's output says a file holds: its text without the tool's framing, line-number gutters and
system reminders, so that the working set holds the file as it is (edits match it) at fewer tokens. Pure."""

from __future__ import annotations

import re
from itertools import pairwise

_NUMBERED = re.compile(r"^ *(\d+)(?:→|\t|: |\| |:$|\|$)", re.M)  # cat -n, Claude Code, OpenCode (new, old)
REMINDER = re.compile(r"\s*<system-reminder>.*?</system-reminder>\s*", re.S)
_VIEW_HEADER = re.compile(
    r"\A\s*(?:Here's the result of running `cat -n` on [^\n]*:|<path>[^\n]*</path>\s*<type>file</type>\s*<content>"
    r"|<file>)[ \t]*\n"
)  # OpenHands; OpenCode's read (now, before)
_VIEW_FOOTER = re.compile(
    r"\n*(?:\((?:End of file|Showing lines|Output capped)[^\n]*\)\s*)?(?:</content>|</file>)\s*\Z"
)  # OpenCode's closing line and tag


def file_text(output: str) -> str:
    """A read tool's output as the file's text: a tool's framing (OpenHands' header, OpenCode's tags and closing
    line), line-number gutters (``cat -n``, Claude Code's ``N→``, OpenCode's ``N: `` and ``0000N| ``) and Claude
    Code's system reminders taken off, so edits match and the text costs fewer tokens. Gutters are taken off only
    where most lines have one and their numbers count up by one: a file of ``200: OK`` lines keeps its text."""
    text, framed = _VIEW_HEADER.subn("", REMINDER.sub("\n", output))
    text = (_VIEW_FOOTER.sub("", text) if framed else text).rstrip()
    lines = text.split("\n")
    numbers = [int(found.group(1)) for line in lines if (found := _NUMBERED.match(line))]
    counting = sum(1 for a, b in pairwise(numbers) if b == a + 1)
    if lines and len(numbers) >= 0.8 * len(lines) and counting >= 0.8 * (len(numbers) - 1):
        text = "\n".join(_NUMBERED.sub("", line, count=1) for line in lines)
    return text
