"""The working-state ledger: what the agent acted on, kept exactly through every fold.

Built deterministically from folded messages and merged with the previous summary's ledger:
files read / edited / created (paths from tool-call arguments and the agent's own text, as the
agent wrote them), commands and tests run with their outcome (exit code, pass/fail counts),
errors with where they occurred, ids and URLs the agent used, and its open items. Rendered as
``- key: value`` lines under ``## Working state`` so the next fold can parse and extend it.
When a summary has to shrink, the command list is condensed first (oldest first); files, tests and
the other lists give up their least recently used entries last, and say how many went, so a summary of
a session of any length stays within its budget.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from agno.models.message import Message

from .._messages import (
    call_arguments,
    calls_by_id,
    command_of,
    message_text,
    one_line,
    path_argument,
    result_ids,
    tool_name_of,
)
from .._plan import is_summary
from ._shell import shell_command, shell_kind, shell_targets, without_heredoc_bodies

SECTION = "Working state"

_PATH = re.compile(
    r"(?<![\w/.:~@-])(?:~|\.{1,2})?/?(?:[\w.+@-]+/)+[\w.+@-]*"
    r"|(?<![\w/.@-])[\w+-]+(?:\.[\w+-]+)*\.[A-Za-z][\w]{0,7}\b"
)
_URL = re.compile(r"https?://[^\s'\"<>)\]`]+")
_TEST = re.compile(r"\btest_\w+")
_ERROR = re.compile(r"\b\w*(?:Error|Exception)\b")
_RAISED = re.compile(
    r"^(?:E\s+|FAILED \S+ - |ERROR \S+ - )?([A-Za-z_][\w.]*(?:Error|Exception)\w*|Error|Exception)(?=:\s|:$|$|\s*$)",
    re.M,
)
MAX_NAMES_SEEN = 40
"""Exception names merely seen in outputs that a summary keeps when it must shrink (the newest)."""
MAX_VERBS = 10
"""Verbs the ``earlier commands`` line names (the most run); the others are added up under ``OTHER_VERBS``."""
OTHER_VERBS = "other commands"
MAX_ERRORS = 12
"""Error entries a summary keeps when it must shrink (the newest); the rest are counted."""
_EXIT = re.compile(r"(?:exit(?:ed)?(?: with)?(?: code| status)?|return ?code|returncode)[\s:=]+(-?\d+)", re.I)
_EXIT_WORDS = ("exit", "return")  # every _EXIT match holds one (any case)
_COUNTS = re.compile(r"\b(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)\b")
_COUNT_WORDS = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
_ID = re.compile(
    r"\b(?:[A-Z]{2,}-\d+|#\d{2,}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{12,40})\b"
)
_OPEN = re.compile(
    r"^\s*(?:[-*]\s*)?(?:TODO|FIXME|Next(?: step)?|Remaining|Still need|I need to|I still need)\b.*", re.I
)
_FILE_EXTS = (
    "py pyi pyx pxd ipynb c h cc cpp cxx hpp hh m mm rs go java kt kts scala swift js jsx mjs cjs ts tsx "
    "vue svelte rb php pl pm lua r jl sh bash zsh fish ps1 bat cmd sql graphql proto thrift json jsonl "
    "yaml yml toml ini cfg conf env lock xml html htm css scss sass less md rst txt csv tsv log diff "
    "patch tex bib svg png jpg jpeg gif pdf zip tar gz tgz bz2 xz whl egg db sqlite sqlite3 pkl npy npz "
    "parquet mod sum gradle cmake mk make pony dockerfile tf hcl nix el clj ex exs erl hrl hs ml mli fs "
    "fsx cs vb dart asm s po pot mo in out err traj"
)
_FILE_EXT = frozenset(_FILE_EXTS.split())
"""File extensions that make a word without a slash a path (``setup.py``); ``self.name`` is a name."""
_SED_SCRIPT = re.compile(r"^(?:\d+(?:,\d+)?|/)?[sy]/|^\d+[sy]?/")

_READ = re.compile(r"(?:^|_)(?:read|view|open|cat|show|get|load|head|tail|less)(?:_|$)", re.I)
_EDIT = re.compile(r"(?:^|_)(?:edit|replace|patch|insert|modify|update|apply|append|str)(?:_|$)", re.I)
_CREATE = re.compile(r"(?:^|_)(?:write|create|new|save|touch)(?:_|$)", re.I)
_SHELL_KEYS = ("command", "cmd", "action", "code", "script", "input", "commands")
_EDITOR_VERBS = {
    "view": "read",
    "read": "read",
    "create": "created",
    "write": "created",
    "str_replace": "edited",
    "insert": "edited",
    "undo_edit": "edited",
    "edit": "edited",
    "replace": "edited",
    "append": "edited",
}

KEYS = (
    "edited",
    "created",
    "read",
    "paths used",
    "tests",
    "errors",
    "exception names seen",
    "ids",
    "urls",
    "open items",
)
"""Ledger lines with lists of values, in the order they are rendered."""
PATH_LISTS = ("edited", "created", "read", "paths used")
"""The ledger's lists of paths: a path shows once, in the first of them that has it (an edited file was read)."""


def json_strings(value: Any) -> list[str]:
    """Every string in a JSON-like value (tool-call arguments), in order."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in json_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in json_strings(v)]
    return [] if value is None else [str(value)]


def paths_in(text: str) -> list[str]:
    """File and folder paths in ``text``, exactly as written, in order of first appearance."""
    out = []
    for p in _PATH.findall(text):
        # a sentence's full stop is not part of a path; Go's package pattern ``./cmd/...`` is
        p = p if p.endswith("/...") else p.rstrip(".,:;")
        if not any(c.isalpha() for c in p) or p.startswith("//") or f"://{p}" in text:
            continue
        if _SED_SCRIPT.match(p):  # sed's 's/old/new/' and '12s/old/' are scripts, not paths
            continue
        last = p.rstrip("/").rsplit("/", 1)[-1]
        ext = last.rsplit(".", 1)[-1] if "." in last.strip(".") else ""
        # without a slash, only a known file extension makes a path: 'self.name' and 'django.conf' are names
        if "/" not in p and ext.lower() not in _FILE_EXT:
            continue
        out.append(p)
    return list(dict.fromkeys(out))


def mentions(text: str, words: tuple[str, ...]) -> bool:
    """False only when no word occurs in ``text`` in any letter case: a cheap scan before a case-blind regex.

    For ASCII text, ``lower()`` plus ``in`` is what ``re.I`` matches; other text always says True (``re.I``
    also folds a few non-ASCII letters such as the Kelvin sign into ASCII ones).
    """
    if not text.isascii():
        return True
    lower = text.lower()
    return any(w in lower for w in words)


def _errors_in(text: str) -> list[str]:
    """Exception names in ``text`` (every match holds ``Error`` or ``Exception``, so most outputs skip the regex)."""
    return _ERROR.findall(text) if "Error" in text or "Exception" in text else []


def errors_raised(text: str, failed: bool = False) -> list[str]:
    """Names of the errors an output reports as having happened, not every error name it mentions.

    A traceback's final ``Name: message`` line, pytest's ``E   Name`` and ``FAILED ... - Name`` lines, and a line
    that starts with ``Name:`` (what a failing command prints). A source file, a listing or a docs page that only
    names exception classes reports none. ``failed`` (the tool call itself failed) counts any name in the
    output's first error line too.
    """
    if "Error" not in text and "Exception" not in text:
        return []
    found = [m.group(1) for m in _RAISED.finditer(text)]
    if failed:
        first = next((ln for ln in text.splitlines() if _ERROR.search(ln)), "")
        found += _ERROR.findall(first)
    return [_quoted(name) for name in dict.fromkeys(found)]


def _quoted(name: str) -> str:
    """A name that came from a tool output, marked as data (backticks) and bounded."""
    return "`" + one_line(name.replace("`", "'"), 60) + "`"


def _clean_where(text: str) -> str:
    return one_line(re.sub(r"[(),]", " ", text), 60)


def outcome_of(text: str, failed: bool = False) -> str:
    """A short outcome of a tool output: exit code and test counts, or FAILED."""
    parts = []
    exits = _EXIT.findall(text) if mentions(text, _EXIT_WORDS) else []
    if exits:
        parts.append(f"exit {exits[-1]}")
    tail = text[-4000:]
    found = _COUNTS.findall(tail) if any(f" {w}" in tail for w in _COUNT_WORDS) else []
    counts = dict.fromkeys(f"{n} {kind}" for n, kind in found)
    parts += list(counts)[-3:]
    if failed and not parts:
        parts.append("FAILED")
    return ", ".join(parts)


@dataclass
class Ledger:
    """What the agent acted on, deduplicated, oldest first."""

    values: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in KEYS})
    commands: dict[str, list[str]] = field(default_factory=dict)
    """Command (one line) -> [times run, last outcome]."""
    earlier: dict[str, int] = field(default_factory=dict)
    """Commands condensed away by earlier folds: first word -> times run."""
    dropped: dict[str, int] = field(default_factory=dict)
    """Entries of a list condensed away by this or an earlier fold: key -> how many."""

    def add(self, key: str, items: Iterable[str]) -> None:
        """Append new ``items`` to ``key``'s list; one used again moves to the end (most recent last), except
        an error, which stays where it first happened."""
        bucket = self.values.setdefault(key, [])
        known = set(bucket)
        for item in items:
            if not item:
                continue
            if item in known:
                if key != "errors" and bucket[-1] != item:
                    bucket.remove(item)
                    bucket.append(item)
                continue
            bucket.append(item)
            known.add(item)

    def condense(self, key: str, keep: int) -> None:
        """Keep the ``keep`` most recent entries of ``key``'s list; count the others."""
        bucket = self.values.get(key, [])
        if len(bucket) > keep:
            self.dropped[key] = self.dropped.get(key, 0) + len(bucket) - keep
            self.values[key] = bucket[len(bucket) - keep :]

    def ran(self, command: str, outcome: str) -> None:
        entry = self.commands.pop(command, ["0", ""])  # re-inserted: newest last
        entry[0] = str(int(entry[0]) + 1)
        entry[1] = outcome or entry[1]
        self.commands[command] = entry

    def _key(self, key: str) -> str:
        return f"{key} ({self.dropped[key]} earlier)" if self.dropped.get(key) else key

    def lines(self, max_commands: int | None = None) -> list[str]:
        """The ``- key: value`` lines; ``max_commands`` keeps only the newest commands, the rest counted."""
        shown = {k: v for k, v in self.values.items() if v}
        held = _held_by_longer(frozenset(p for k in PATH_LISTS for p in shown.get(k, [])))
        once: set[str] = set()
        for k in PATH_LISTS:  # each path once, and not when a longer one names it already
            if k in shown:
                shown[k] = [p for p in shown[k] if p not in once and p not in held]
                once.update(shown[k])
        if "paths used" in shown:  # a path the ledger holds already, whole or inside a longer one, is not repeated
            longer = "\n".join(p for k, v in shown.items() if k != "errors" for p in v)
            shown["paths used"] = [p for p in shown["paths used"] if longer.count(p) < 2]
        out = [f"- {self._key(k)}: {', '.join(shown[k])}" for k in KEYS if shown.get(k)]
        commands = list(self.commands.items())
        verbs = dict(self.earlier)
        if max_commands is not None and len(commands) > max_commands:
            older = commands[: len(commands) - max_commands]
            for cmd, (times, _) in older:
                verb = cmd.split()[0] if cmd.split() else cmd
                verbs[verb] = verbs.get(verb, 0) + int(times)
            commands = commands[len(older) :]
        if len(verbs) > MAX_VERBS:  # the most run stay by name, the rest are added up
            ranked = sorted(verbs.items(), key=lambda vn: -vn[1])
            verbs = dict(ranked[: MAX_VERBS - 1])
            verbs[OTHER_VERBS] = verbs.get(OTHER_VERBS, 0) + sum(n for _, n in ranked[MAX_VERBS - 1 :])
        if verbs:
            out.append(f"- earlier commands: {', '.join(f'{v} ×{n}' for v, n in verbs.items())}")
        for cmd, (times, outcome) in commands:
            extra = f" ×{times}" if times != "1" else ""
            out.append(f"- ran `{cmd}`{extra}" + (f" → {outcome}" if outcome else ""))
        return out

    @classmethod
    def parse(cls, text: str | None) -> Ledger:
        """The ledger of a previous summary (its ``## Working state`` lines), or an empty one."""
        ledger = cls()
        for line in section_lines(text, SECTION):
            if not line.startswith("- "):
                continue
            body = line[2:]
            ran = re.match(r"ran `(.*)`(?: ×(\d+))?(?: → (.*))?$", body)
            if ran:
                ledger.commands[ran.group(1)] = [ran.group(2) or "1", ran.group(3) or ""]
                continue
            key, sep, values = body.partition(": ")
            counted = re.fullmatch(r"(.+) \((\d+) earlier\)", key)
            if counted and counted.group(1) in KEYS:
                key = counted.group(1)
                ledger.dropped[key] = ledger.dropped.get(key, 0) + int(counted.group(2))
            if sep and key == "earlier commands":
                for item in values.split(", "):
                    verb, _, times = item.rpartition(" ×")
                    if verb and times.isdigit():
                        ledger.earlier[verb] = ledger.earlier.get(verb, 0) + int(times)
            elif sep and key in KEYS:
                ledger.add(key, _split_values(key, values))
        return ledger


@lru_cache(maxsize=8)  # a render asks again for every size it tries, mostly of the same paths
def _held_by_longer(paths: frozenset[str]) -> frozenset[str]:
    """The ``paths`` a longer one names already: the same file written out longer (``cli/hooks.go`` in
    ``/repo/cmd/cli/hooks.go``), or a folder or import path another lies under (``github.com/o/r/agent`` under
    ``github.com/o/r/agent/gemini``). By set lookups: a ledger of a long session lists hundreds of paths."""
    tails: set[str] = set()
    heads: set[str] = set()
    for q in paths:  # tails and heads are shorter than the path they come from: no path holds itself
        slashes = [i for i in range(1, len(q)) if q[i] == "/"]
        tails.update(q[i:] for i in slashes)
        heads.update(h for i in slashes for h in (q[:i], q[: i + 1]) if h != q)
    # each one left out is inside the one that holds it, as written: what was acted on stays findable verbatim
    return frozenset(p for p in paths if "/" + p in tails or p in heads)


def section_lines(text: str | None, section: str) -> list[str]:
    """The lines under ``## <section>`` of a summary (a section may appear more than once)."""
    out: list[str] = []
    inside = False
    for line in (text or "").splitlines():
        if line.startswith("## "):
            inside = line[3:].strip() == section
        elif inside:
            out.append(line)
    return out


def _split_values(key: str, values: str) -> list[str]:
    if key == "errors":
        return [v.strip() for v in re.findall(r"[^,(]+(?:\([^)]*\))?", values) if v.strip()]
    return [v for v in values.split(", ") if v]


def _file_action(tool: str, args: Any) -> tuple[str | None, str | None]:
    """(kind of file action, shell command) of one tool call."""
    strings = args if isinstance(args, dict) else {}
    verb = strings.get("command") if isinstance(strings.get("command"), str) else None
    if verb in _EDITOR_VERBS and any(k in strings for k in ("path", "file", "file_path", "filename")):
        return _EDITOR_VERBS[verb], None
    command = next((strings[k] for k in _SHELL_KEYS if isinstance(strings.get(k), str)), None)
    if command is None and isinstance(args, str):
        command = args
    elif command is None:  # an argument list: Codex's ``shell`` tool, agno's ShellTools
        command = shell_command(strings)
    if command is not None:
        command = command_of(command)  # reasoning followed by a ```bash block runs the block
    for pattern, kind in ((_CREATE, "created"), (_EDIT, "edited"), (_READ, "read")):
        if pattern.search(tool):
            return kind, command
    return None, command


def _mentioned_path(path: str) -> bool:
    """A path mentioned inside written text that names a file or folder: one with an extension, anchored (``/``,
    ``./``, ``~``) or of three or more parts. ``encoding/json`` or ``Claude/Gemini`` in code or prose is not one."""
    last = path.rstrip("/").rsplit("/", 1)[-1]
    return "." in last.strip(".") or path.startswith(("/", "./", "../", "~")) or path.count("/") >= 2


def _command_line(command: str) -> str:
    """The first line of a command, for the ledger (edits can carry whole files)."""
    first = next((ln for ln in command.strip().splitlines() if ln.strip()), "")
    return one_line(first.replace("`", "'"), 160)


def build(messages: Sequence[Message], previous: str | None = None) -> Ledger:
    """The ledger of ``messages`` merged into the one parsed from ``previous``."""
    ledger = Ledger.parse(previous)
    calls = calls_by_id(messages)
    pending: dict[str, str] = {}
    for m in messages:
        if is_summary(m):
            continue
        text = message_text(m, use_compressed_content=False)
        if m.role == "assistant":
            own = str(m.content or "") if m.tool_calls else text
            ledger.add("paths used", paths_in(own))
            ledger.add("tests", _TEST.findall(own))
            ledger.add("urls", _URL.findall(own))
            ledger.add("ids", _ID.findall(own))
            ledger.add("open items", [one_line(x, 160) for x in _OPEN.findall(own)][-3:])
            for call in m.tool_calls or []:
                if not isinstance(call, dict):
                    continue
                tool = str(call.get("function", {}).get("name") or "tool")
                args = call_arguments(call)
                joined = "\n".join(json_strings(args))
                kind, command = _file_action(tool, args)
                shell = shell_kind(command) if command else None
                found = paths_in(joined)
                # the files a command acts on are on its own lines; a here-document's body only mentions paths;
                # a file tool's path and the paths its text names are listed with it, import names are not
                target = path_argument(args) if kind and isinstance(args, dict) else None
                if command and "<<" in command:
                    acted = paths_in(without_heredoc_bodies(command))
                elif target is not None:
                    acted = found = [p for p in found if p == target or _mentioned_path(p)]
                else:
                    acted = found
                if command and shell is not None and kind is None:  # ``rg x src/ > hits.txt`` creates hits.txt only
                    acted = shell_targets(command, acted)
                ledger.add(kind or shell or "paths used", acted)
                ledger.add("paths used", [p for p in found if p not in acted])
                ledger.add("tests", _TEST.findall(joined))
                ledger.add("urls", _URL.findall(joined))
                ledger.add("ids", _ID.findall(joined))
                label = _command_line(command) if command else one_line(f"{tool} {' '.join(found)}".strip(), 80)
                if call.get("id"):
                    pending[str(call["id"])] = label
                if command:
                    ledger.ran(label, "")
                # exception classes the agent's own code or command names (a written file raising one)
                ledger.add(
                    "exception names seen", [_quoted(e) for e in dict.fromkeys(_errors_in(joined)) if len(e) > 5]
                )
        elif m.role in ("tool", "function"):
            ids = result_ids(m) or {""}
            label = next((pending[c] for c in ids if c in pending), tool_name_of(m, calls))
            outcome = outcome_of(text, bool(m.tool_call_error))
            if label in ledger.commands and outcome:
                ledger.commands[label][1] = outcome
            elif outcome:  # a non-shell tool with an exit code or test counts (a test runner, a build tool)
                ledger.ran(label, outcome)
            raised = errors_raised(text, bool(m.tool_call_error))
            ledger.add("errors", [f"{e} (after {_clean_where(label)})" for e in raised])
            # exception classes an output only names (a source file, a listing): kept as names, not as errors
            seen = [_quoted(e) for e in dict.fromkeys(_errors_in(text)) if len(e) > 5]
            ledger.add("exception names seen", [e for e in seen if e not in raised])
        elif m.role == "user":  # a user reporting an error it got
            ledger.add("errors", [f"{e} (in {m.role} message)" for e in dict.fromkeys(_errors_in(text))])
    _dedupe_errors(ledger)
    return ledger


def _dedupe_errors(ledger: Ledger) -> None:
    """One entry per exception name: the first place it was seen."""
    seen: set[str] = set()
    kept = []
    for entry in ledger.values.get("errors", []):
        name = entry.split(" (", 1)[0]
        if name not in seen:
            seen.add(name)
            kept.append(entry)
    ledger.values["errors"] = kept


CONDENSE_ORDER = (
    "open items",
    "urls",
    "ids",
    "exception names seen",
    "paths used",
    "errors",
    "read",
    "tests",
    "created",
    "edited",
)
"""The order in which lists give up their least recently used entries when nothing else is left to condense."""


def render(ledger: Ledger, max_tokens: int, count: Callable[[str], int], cap: int | None = None) -> list[str]:
    """The ledger's lines within ``max_tokens``, or over it up to ``cap`` rather than lose a file or a test.

    Commands are condensed oldest first, then the where-information of errors goes and only the newest
    errors and names seen stay; then ids, urls and open items shrink. Only when the lines are still over
    ``cap`` (default ``max_tokens``; a session of hundreds of runs) does every list keep just its most
    recently used entries (files edited and created last of all), saying how many went.
    """
    lines = ledger.lines()
    if count("\n".join(lines)) <= max_tokens:
        return lines
    for keep in (20, 10, 5, 3):  # the newest commands and their outcomes always stay
        lines = ledger.lines(max_commands=keep)
        if count("\n".join(lines)) <= max_tokens:
            return lines
    ledger.values["errors"] = [e.split(" (", 1)[0] for e in ledger.values.get("errors", [])]
    ledger.condense("errors", MAX_ERRORS)  # the newest stay; how many went is said once
    ledger.condense("exception names seen", MAX_NAMES_SEEN)
    for key in ("open items", "urls", "ids"):
        lines = ledger.lines(max_commands=3)
        if count("\n".join(lines)) <= max_tokens:
            return lines
        ledger.condense(key, 3)
    limit = max(max_tokens, cap or 0)
    for keep in (24, 12, 6, 3, 1):  # a long-lived session: the least recently used entries go, counted
        for key in CONDENSE_ORDER:
            lines = ledger.lines(max_commands=3)
            if count("\n".join(lines)) <= limit:
                return lines
            ledger.condense(key, keep)
    return ledger.lines(max_commands=1)
