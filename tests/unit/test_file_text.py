"""What a read tool's output says a file holds: framing, gutters and reminders off, the text itself untouched."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agno_compression._keeping._file_text import file_text


@pytest.mark.parametrize(
    ("output", "text"),
    [
        # Claude Code's Read, with a system reminder after it
        (
            "     1→package main\n     2→\n     3→func main() {}\n\n<system-reminder>\ncareful\n</system-reminder>",
            "package main\n\nfunc main() {}",
        ),
        # OpenHands' str_replace_editor view
        (
            "Here's the result of running `cat -n` on /a.py:\n     1\timport os\n     2\tprint(os.sep)\n",
            "import os\nprint(os.sep)",
        ),
        # OpenCode's read today (packages/opencode/src/tool/read.ts): tags, ``N: `` gutters, a closing line
        (
            "<path>/a.py</path>\n<type>file</type>\n<content>\n7: import os\n8: \n9: x = 1\n\n"
            "(Showing lines 7-9 of 40. Use offset=10 to continue.)\n</content>",
            "import os\n\nx = 1",
        ),
        # OpenCode's read before: <file> and zero-padded ``00001| `` gutters
        ("<file>\n00001| import os\n00002| x = 1\n\n(End of file - total 2 lines)\n</file>", "import os\nx = 1"),
    ],
)
def test_a_read_tools_framing_and_gutters_come_off(output: str, text: str) -> None:
    assert file_text(output) == text


@pytest.mark.parametrize(
    "text",
    [
        "plain 1→ text\nno gutter",
        "200: OK\n404: Not found\n500: Server error",  # numbered lines that do not count up are the file's own
        "notes\n</content>",  # a closing tag without the opening framing is the file's own
    ],
)
def test_text_that_only_looks_numbered_or_framed_is_kept_as_it_is(text: str) -> None:
    assert file_text(text) == text


LINE = st.text(alphabet=st.sampled_from("abc xyz_0123456789:|→\t(){}<>/-é中"), max_size=30)


@given(st.lists(LINE, max_size=30))
def test_any_file_read_with_gutters_comes_back_as_it_was(lines: list[str]) -> None:
    text = "\n".join(lines).rstrip()
    numbered = "\n".join(f"{i + 1}: {line}" for i, line in enumerate(text.split("\n")))
    framed = f"<path>/f</path>\n<type>file</type>\n<content>\n{numbered}\n\n(End of file - total 9 lines)\n</content>"
    assert file_text(framed) == text
