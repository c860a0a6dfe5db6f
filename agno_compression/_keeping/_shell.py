"""What a shell command does to files, as far as it can be told from the command alone.

For the ledger, what a command does to the files it names: reads (``cat``, ``head``...), edits (``sed -i``, an
appending redirection...) or creates them (a redirection, ``touch``, ``cp``...) (``shell_kind``); a here-document's
body is text the command writes, not files it acts on (``without_heredoc_bodies``), and a quoted argument is text
it is given (``unquoted``: ``--body 'a -> b'`` redirects nothing).

For the working set, a command that only prints one whole file (``cat f``, PowerShell ``Get-Content f``) reads
it; one that writes a whole file from a here-document (``cat > f <<'EOF'``, PowerShell ``$c = @'...'@`` then
``$c | Set-Content f``) writes it; any other command that may change a file it names (a redirection, ``sed -i``,
``Set-Content``, ``mv``, ``git checkout``...) leaves what was held of that file stale (``shell_read``,
``shell_write``, ``stale_after``). Pure: strings in, strings out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_READ = re.compile(r"""^\s*(?:cat|Get-Content|gc)\s+(?:-n\s+)?(?:-Path\s+)?(["']?)([^\s|;&<>"'*?$`]+)\1\s*$""")
_HEREDOC = re.compile(
    r"""^\s*cat\s+(?:>\s*(?P<p1>[^\s|;&<>"'*?$`]+)\s*<<-?\s*(?P<q1>['"]?)(?P<w1>\w+)(?P=q1)"""
    r"""|<<-?\s*(?P<q2>['"]?)(?P<w2>\w+)(?P=q2)\s*>\s*(?P<p2>[^\s|;&<>"'*?$`]+))[ \t]*\n(?P<body>.*?)\n"""
    r"""(?P<end>\w+)\s*$""",
    re.S,
)
_HERESTRING = re.compile(
    r"""^\s*\$(?P<var>\w+)\s*=\s*@(?P<q>['"])[ \t]*\n(?P<body>.*?)\n(?P=q)@\s*\n\s*\$(?P=var)\s*\|\s*"""
    r"""(?:Set-Content|Out-File)\s+(?:-(?:Path|FilePath)\s+)?(?P<qp>['"]?)(?P<path>[^\s|;&<>"'*?$`]+)(?P=qp)"""
    r"""(?:\s+-\w+(?:\s+[\w-]+)?)*\s*$""",
    re.S,
)
_WRITE = re.compile(
    r"(?<![<>&\d=-])>{1,2}(?![=&])|\b(?:tee|Set-Content|Add-Content|Out-File|mv|rm|cp|truncate|patch)\b"
    r"|\bsed\s+(?:-\w+\s+)*-i|\bperl\s+-\w*i|\bgit\s+(?:checkout|restore|apply|stash|reset)\b"
)


_SHELL_READ = frozenset({"cat", "head", "tail", "less", "more", "open", "nl", "bat", "view", "goto"})
_SHELL_EDIT = frozenset({"edit", "patch", "sed", "perl", "ed", "apply_patch", "str_replace", "insert"})
_SHELL_CREATE = frozenset({"create", "touch", "mkdir", "cp", "mv"})
_HEREDOC_BODY = re.compile(r"(<<-?\s*(['\"]?)(\w+)\2[^\n]*)\n.*?\n\s*\3\b", re.S)
"""A here-document anywhere in a command: its first line stays, its body goes."""


_QUOTED = re.compile(r"\$'(?:[^'\\]|\\.)*'|'[^']*'|\"(?:[^\"\\]|\\.)*\"", re.S)
"""A quoted word (ANSI-C ``$'...'``, single or double quotes): text the command is given, not shell syntax."""
_REDIRECT = re.compile(r"(?<![<>&\d])(>{1,2})\s*([\w./~-][^\s|;&<>()]*)")
"""An output redirection and its target (``2>`` and ``>&1`` aside: what goes to stderr or another stream)."""
_NOWHERE = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})


def unquoted(command: str) -> str:
    """``command`` with its here-documents' bodies and its quoted words left out: what the shell itself reads as
    syntax (``gh pr edit --body 'a -> b'`` redirects nothing)."""
    return _QUOTED.sub("''", without_heredoc_bodies(command))


def redirect_targets(command: str) -> list[str]:
    """The files a command's output redirections write (``> f``, ``>> f``), ``/dev/null`` aside, in order."""
    return [target for _, target in _redirections(command)]


def _redirections(command: str) -> list[tuple[str, str]]:
    """``(operator, target)`` of each output redirection of ``command`` to a file."""
    return [(op, t) for op, t in _REDIRECT.findall(unquoted(command)) if t not in _NOWHERE]


def shell_kind(command: str) -> str | None:
    """What a shell command does to the files it names: ``read``, ``edited``, ``created``, or ``None`` (ran them)."""
    words = command.strip().split()
    if not words:
        return None
    first = words[0].rsplit("/", 1)[-1]
    redirections = _redirections(command)
    if first == "tee" or redirections:
        return "edited" if any(op == ">>" for op, _ in redirections) else "created"
    return _verb_kind(first, words)


def shell_targets(command: str, paths: list[str]) -> list[str]:
    """Of ``paths`` (those a command names), the ones ``shell_kind`` is about: all of them, but for a command that
    only redirects its output (``rg x src/ > hits.txt``: ``hits.txt``) the files it redirects to."""
    words = command.strip().split()
    if not words or words[0] == "tee" or _verb_kind(words[0].rsplit("/", 1)[-1], words) in ("edited", "created"):
        return paths
    targets = redirect_targets(command)
    return [p for p in paths if p in targets] if targets else paths


def _verb_kind(first: str, words: list[str]) -> str | None:
    if first in _SHELL_EDIT and (first != "sed" or "-i" in words) and (first != "perl" or "-i" in " ".join(words)):
        return "edited"
    if first in _SHELL_CREATE:
        return "created"
    if first in _SHELL_READ:
        return "read"
    return None


def without_heredoc_bodies(command: str) -> str:
    """``command`` without its here-documents' bodies (a script's text, not files the command acts on)."""
    return _HEREDOC_BODY.sub(r"\1", command)


_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish", "pwsh", "powershell"})
_SCRIPT_FLAGS = frozenset({"-c", "-lc", "-ic", "-lic", "-Command"})


def shell_command(args: Mapping[str, Any]) -> str | None:
    """A shell call's command line: its ``command`` or ``cmd``, a string or an argument list (Codex's ``shell`` tool:
    ``["bash", "-lc", script]`` runs ``script``), or agno ``ShellTools``' ``args`` list."""
    command = args.get("command", args.get("cmd"))
    if command is None and isinstance(args.get("args"), list):
        command = args["args"]
    if not isinstance(command, list) or not command or not all(isinstance(a, str) for a in command):
        return command if isinstance(command, str) else None
    shell = command[0].rsplit("/", 1)[-1].removesuffix(".exe")
    if len(command) == 3 and shell in _SHELLS and command[1] in _SCRIPT_FLAGS:
        return command[2]
    return " ".join(command)


def shell_read(args: Mapping[str, Any]) -> str | None:
    """The file a shell call only prints whole, or ``None``."""
    command = shell_command(args)
    found = _READ.match(command) if command and "\n" not in command.strip() else None
    return found.group(2) if found else None


def shell_write(args: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(path, content)`` of a shell call that writes one whole file from a here-document, or ``None``."""
    command = shell_command(args)
    if not command:
        return None
    found = _HEREDOC.match(command)
    if found and found.group("end") == (found.group("w1") or found.group("w2")):
        return found.group("p1") or found.group("p2"), found.group("body")
    found = _HERESTRING.match(command)
    return (found.group("path"), found.group("body")) if found else None


def stale_after(command: str, path: str) -> bool:
    """True when ``command`` may change the file at ``path`` (it names the path, or its file name, and writes)."""
    if not _WRITE.search(command):
        return False
    name = re.split(r"[/\\]", path)[-1]
    return path in command or re.search(rf"(?<![\w.-]){re.escape(name)}\b", command) is not None
