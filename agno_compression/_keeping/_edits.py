"""An agent's edits applied to the text of a file it holds: a replacement (``old``/``new`` strings, a list of them as
in Claude Code's MultiEdit, argument names in any case style as OpenCode's ``oldString``), SEARCH/REPLACE blocks
(Cline, Roo Code) or a Codex ``apply_patch`` patch. An edit that cannot be applied gives ``None``: the
text no longer matches the file. Pure: strings in, strings out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._messages import argument, first_string

OLD_KEYS = ("old_string", "old_str", "old")
NEW_KEYS = ("new_string", "new_str", "new")


_BLOCK = re.compile(
    r"^(?:<{7}|-{7}) SEARCH[ \t]*\n(?::start_line:\s*\d+[ \t]*\n-{7}[ \t]*\n)?(.*?)\n?^={7}[ \t]*\n(.*?)\n?"
    r"^(?:>{7}|\+{7}) REPLACE[ \t]*$",
    re.M | re.S,
)
"""One SEARCH/REPLACE block of Cline's ``replace_in_file`` (``------- SEARCH`` ... ``+++++++ REPLACE``, formerly
``<<<<<<<``/``>>>>>>>``) or Roo Code's ``apply_diff`` (a ``:start_line:`` line first)."""


def has_blocks(diff: Any) -> bool:
    """True when ``diff`` is text holding SEARCH/REPLACE blocks."""
    return isinstance(diff, str) and _BLOCK.search(diff) is not None


def apply_edit(text: str, args: Mapping[str, Any]) -> str | None:
    """``text`` after an edit call, or ``None`` when the edit cannot be applied to it (the text is then stale)."""
    if has_blocks(diff := first_string(args, ("diff",))):
        return apply_blocks(text, diff)
    edits = args.get("edits")
    steps = edits if isinstance(edits, list) else [args]
    for step in steps:
        if not isinstance(step, dict):
            return None
        old, new = first_string(step, OLD_KEYS), first_string(step, NEW_KEYS)
        if old is None or new is None or not old or old not in text:
            return None
        text = text.replace(old, new) if argument(step, ("replace_all",)) else text.replace(old, new, 1)
    return text


def apply_blocks(text: str, diff: str) -> str | None:
    """``text`` after each SEARCH/REPLACE block of ``diff`` in turn, or ``None`` when one's search text is not in it."""
    for block in _BLOCK.finditer(diff):
        old, new = block.group(1), block.group(2)
        if not old or old not in text:  # an empty search (a whole new file) is not followed here either
            return None
        text = text.replace(old, new, 1)
    return text


_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$", re.M)


def patch_files(patch: str) -> list[tuple[str, str, str]]:
    """``(action, path, body)`` of each file of a Codex ``apply_patch`` patch."""
    marks = list(_PATCH_FILE.finditer(patch))
    out = []
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(patch)
        body = patch[mark.end() : end].split("\n*** End Patch", 1)[0]
        out.append((mark.group(1), mark.group(2).strip(), body.strip("\n")))
    return out


def apply_hunks(text: str, body: str) -> str | None:
    """``text`` after a patch's hunks for it, or ``None`` when one does not apply."""
    for hunk in re.split(r"^@@.*$", body, flags=re.M):
        lines = [ln for ln in hunk.split("\n") if ln[:1] in (" ", "-", "+")]
        if not lines:
            continue
        old = "\n".join(ln[1:] for ln in lines if ln[0] in " -")
        new = "\n".join(ln[1:] for ln in lines if ln[0] in " +")
        if old not in text:
            return None
        text = text.replace(old, new, 1)
    return text
