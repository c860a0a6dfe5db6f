"""``agno-compression fold``: fold a stored session's history into one summary now, as its next run's history fold
would (``CompressionManager.fold_session``). A dry run unless ``--apply``: it says what would fold, the tokens
before and after, and the summary's first lines, and writes nothing; with ``--apply`` the database is opened
writable and one fold record is written.

Session text (the summary, the session id) reaches the terminal through ``data_text``: shown, never interpreted.
"""

from __future__ import annotations

import math

import typer
from rich.console import Console
from rich.text import Text

from ._databases import _session, _text_option, close_db, fail, open_db, reading, source_label
from ._exceptions import ConfigError
from ._requested_fold import BUSY, DRY_RUN, FOLDED, NO_SESSION, FoldResult
from ._visible import data_text, json_text
from .viewer._page import plural

SUMMARIZERS = ("extractive",)
"""What writes the summary on the command line: no model is called offline."""
SUMMARY_LINES = 6
"""Lines of the summary shown (``--json`` has all of it)."""


def fold(
    db: str,
    session: str,
    instructions: str | None,
    apply: bool,
    budget: int,
    summarizer: str,
    wait: float,
    as_json: bool,
    schema: str | None,
    console: Console,
) -> None:
    """The ``fold`` command's body: bad input exits 2 (one line), a run of the session still going exits 1."""
    from ._manager import CompressionManager

    _text_option("--session", session)
    _text_option("--schema", schema)
    _text_option("--instructions", instructions)
    if summarizer not in SUMMARIZERS:
        raise fail(f"--summarizer {summarizer!r} is not available offline; the command line folds with extractive")
    if not math.isfinite(wait) or wait < 0:
        raise fail(f"--wait must be a number of seconds >= 0, got {wait}")
    manager = CompressionManager(compress_at_tokens=budget, summarizer=summarizer)
    with reading(db):
        handle = open_db(db, schema=schema, writable=apply)
        try:
            _session(handle, session, db)  # no such session: exit 2, as inspect --session
            try:
                result = manager.fold_session(handle, session, instructions, apply=apply, wait=wait)
            except ConfigError as exc:
                raise fail(f"{source_label(db)}: {exc}") from exc
        finally:
            close_db(handle)
    if result.status == NO_SESSION:
        raise fail(f"{source_label(db)}: no session {session!r}")
    if as_json:
        typer.echo(json_text(result.to_dict(), indent=2))
    else:
        _show(result, db, console)
    if result.status == BUSY:
        if not as_json:
            typer.echo(f"agno-compression: {data_text(result.message, line=True).plain}", err=True)
        raise typer.Exit(code=1)


def _show(result: FoldResult, db: str, console: Console) -> None:
    from ._inspect import hanging

    if result.status == BUSY:
        return  # one line on stderr
    head = Text("session ").append_text(data_text(result.session_id, line=True)).append(": ")
    if result.status not in (DRY_RUN, FOLDED):  # nothing to fold: the reason
        console.print(head.append_text(data_text(result.message, line=True)))
        return
    head.append("would fold " if result.status == DRY_RUN else "folded ")
    head.append(f"{plural(result.folded_messages, 'message')} of its history, ")
    console.print(head.append(f"{result.tokens_before:,} -> {result.tokens_after:,} tokens"))
    lines = (result.summary or "").splitlines()
    console.print(f"summary ({plural(len(lines), 'line')}; --json prints all of it):")
    for line in [*lines[:SUMMARY_LINES], *(["…"] if len(lines) > SUMMARY_LINES else [])]:
        console.print(hanging("", data_text(line), 2))
    if result.status == DRY_RUN:
        console.print("nothing written; add --apply to write it")
    else:
        where = data_text(source_label(db), line=True)
        console.print(Text(f"wrote fold record {result.record_id} to ").append_text(where))
