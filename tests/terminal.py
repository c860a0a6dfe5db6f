"""Running the command line in a real pseudo-terminal of a given width, as a user's terminal runs it."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import sys
import termios

_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


def in_terminal(args: list[str], columns: int, timeout: float = 120.0) -> str:
    """What ``python -m agno_compression *args`` shows in a ``columns``-wide terminal (escape codes removed)."""
    return _ESCAPES.sub("", raw_terminal(args, columns, timeout))


def raw_terminal(args: list[str], columns: int, timeout: float = 120.0) -> str:
    """Every character ``python -m agno_compression *args`` writes to a ``columns``-wide terminal, escapes included."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: its stdout is the terminal, as wide as a shell would say
        fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
        env = {**os.environ, "COLUMNS": str(columns), "LINES": "50", "TERM": "xterm-256color"}
        os.execve(sys.executable, [sys.executable, "-m", "agno_compression", *args], env)
    out = b""
    while True:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            os.kill(pid, 9)
            break
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    os.close(fd)
    return out.decode("utf-8", "replace")
