"""Command line: ``agno-compression`` (also ``python -m agno_compression``).

Bad input exits with code 2 and one clear line on stderr.
"""

from __future__ import annotations

import errno
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import Progress

from . import __version__
from ._config import MIN_BUDGET
from ._databases import (
    SQLITE_HEADER,
    _output_file,
    _session,
    _sessions,
    _text_option,
    close_db,
    fail,
    is_json_db,
    open_db,
    reading,
    source_label,
)
from ._exceptions import ConfigError
from ._visible import json_text, visible_line
from .eval import Trajectory, load_trajectories
from .viewer._page import plural

app = typer.Typer(
    name="agno-compression",
    help="Measure and inspect agno-compression's context folding.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: rich help shows "<bool>" after flags, which take no value
)
err = Console(stderr=True)


def _version(value: bool) -> None:
    if value:
        typer.echo(__version__)
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """agno-compression's command line."""


SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
"""Files named as databases: one that is not SQLite is a damaged or foreign database, not a recording."""


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(16) == SQLITE_HEADER


def _is_db(spec: str) -> bool:
    """Whether ``eval`` reads ``spec`` as an agno database: a URL, a SQLite file or a ``JsonDb`` folder."""
    path = Path(spec)
    if "://" in spec or is_json_db(path):
        return True
    if path.is_file() and path.suffix.lower() in SQLITE_SUFFIXES and not _is_sqlite(path):
        raise fail(f"{path}: not a SQLite database (recordings are .json, .jsonl or .traj files)")
    return path.is_file() and _is_sqlite(path)


def _db_files(directory: Path) -> list[Path]:
    """The SQLite databases under ``directory`` (recursively, sorted): files of a SQLite suffix that are SQLite."""
    return sorted(
        p for p in directory.rglob("*") if p.suffix.lower() in SQLITE_SUFFIXES and p.is_file() and _is_sqlite(p)
    )


def _from_db(spec: str) -> list[Trajectory]:
    """Every session of an agno database as a recorded conversation (its full original messages)."""
    from ._sessions import full_messages

    db = open_db(spec)
    name = Path(spec).stem if "://" not in spec else "db"  # a JsonDb folder: its name
    return [
        Trajectory(source="agno-db", name=f"{name}#{s.session_id}", messages=full_messages(db, s.session_id))
        for s in _sessions(db)
    ]


def _load(paths: list[str]) -> list[Trajectory]:
    """Every recorded conversation of ``paths``; two files whose conversations would share a name (the same file
    name in two folders) are told apart by their paths."""
    from .eval._loaders import _trajectory_files

    found: list[tuple[str, Trajectory]] = []
    for spec in paths:
        _text_option("PATH", spec)  # '' would mean the current directory
        if _is_db(spec):
            with reading(spec):
                found += [(spec, t) for t in _from_db(spec)]
            continue
        path = Path(spec)
        if not path.exists():
            raise fail(f"{path}: no such file or directory")
        try:
            for file in _trajectory_files(path) if path.is_dir() else [path]:
                found += [(str(file), t) for t in load_trajectories(file)]
        except ConfigError as exc:
            raise fail(str(exc)) from exc
        for file in _db_files(path) if path.is_dir() else []:  # a folder of agno databases, as a folder of recordings
            with reading(str(file)):
                found += [(str(file), t) for t in _from_db(str(file))]
    if not found:
        raise fail("no recorded conversation found in " + ", ".join(paths))
    names: dict[str, set[str]] = {}
    for where, t in found:
        names.setdefault(t.name, set()).add(where)
    return [
        replace(t, name=f"{Path(where).with_suffix('')}#{t.name.split('#', 1)[-1]}") if len(names[t.name]) > 1 else t
        for where, t in found
    ]


def _console(need: int = 0) -> Console:
    """Stdout's console: the terminal's width; piped, ``COLUMNS`` when it is a positive number (at ``0`` rich would
    print nothing), else 160 or wide enough for ``need`` columns. Strings printed are never markup, emoji codes or
    highlighted: what session text reaches it is a ``Text`` already."""
    plain: dict[str, Any] = {"markup": False, "emoji": False, "highlight": False}
    if Console().is_terminal:
        return Console(**plain)
    columns = os.environ.get("COLUMNS", "")
    return Console(width=int(columns) if columns.isdigit() and int(columns) > 0 else max(160, need), **plain)


def _check_budget(values: list[int] | None) -> None:
    """One rule for every command's ``--budget``: compress_at_tokens' own minimum."""
    for value in values or []:
        if value < MIN_BUDGET:
            raise fail(f"--budget must be at least {MIN_BUDGET} tokens (compress_at_tokens' minimum), got {value}")


@app.command("eval")
def eval_command(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Trajectory files or folders (OpenAI chat JSON/JSONL, tau-bench, OpenHands, SWE-agent, "
            "mini-swe-agent, TapeAgents, Claude Code, Gemini CLI, OpenAI Responses / Codex), agno session databases "
            "(SQLite files, JsonDb folders or URLs, as --db)."
        ),
    ],
    summarizer: Annotated[
        list[str],
        typer.Option(
            "--summarizer",
            "-s",
            help="Setting(s) to compare: extractive, mask, pipeline. Repeat to compare side by side.",
        ),
    ] = ["extractive"],  # noqa: B006
    budget: Annotated[
        list[int],
        typer.Option("--budget", "-b", help=f"compress_at_tokens (at least {MIN_BUDGET}); repeat for several."),
    ] = [16000],  # noqa: B006
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON rows (every measure), not a table.")] = False,
    wide: Annotated[bool, typer.Option("--wide", help="Every column and whole input names (a wide terminal).")] = False,
    only_over: Annotated[
        bool,
        typer.Option(
            "--only-over-budget/--all", help="Report only conversations whose uncompressed peak exceeds the budget."
        ),
    ] = True,
) -> None:
    """Replay recorded conversations offline, with and without compression, and compare."""
    from .eval import evaluate, totals
    from .eval._table import NARROW_NOTE, eval_table

    for s in summarizer:
        if s not in ("extractive", "mask", "pipeline"):
            raise fail(f"--summarizer {s!r} is not available offline; choose extractive, mask or pipeline")
    _check_budget(budget)
    runs = _load(paths)
    with Progress(console=err, transient=True, disable=as_json) as progress:
        task = progress.add_task("replaying", total=len(runs))
        rows = evaluate(runs, settings=summarizer, budgets=budget, progress=lambda _: progress.advance(task))
    if only_over:
        rows = [r for r in rows if r.peak_prompt_uncompressed > r.budget]
    summary = totals(rows)
    if as_json:
        typer.echo(json_text({"rows": [r.to_dict() for r in rows], "totals": [t.to_dict() for t in summary]}, indent=2))
        return
    replayed = plural(len(runs), "conversation") + " replayed"
    if not rows:
        budgets = " or ".join(f"{b:,}" for b in budget)
        typer.echo(
            f"{replayed}; none has an uncompressed peak over the budget ({budgets} tokens), so there is nothing to "
            "compare. --all reports every conversation; a smaller --budget folds sooner."
        )
        return
    title = f"{replayed}; {plural(len(rows), 'row')} over budget" if only_over else replayed
    console = _console(need=10_000 if wide else 0)
    console.print(eval_table(rows, summary, wide=wide, title=title, width=console.width))
    if not wide:
        console.print(NARROW_NOTE, style="dim")


DbOption = Annotated[
    str,
    typer.Option(
        "--db",
        help="The agent's database: a SQLite file, a JsonDb folder, or a sqlite://, postgresql://, mysql://, "
        "mariadb://, redis:// or rediss:// URL (a driver may follow the scheme: postgresql+psycopg://).",
    ),
]
SchemaOption = Annotated[
    str | None,
    typer.Option(
        "--schema",
        help="agno's db_schema: the PostgreSQL schema or MySQL database of its tables (default: ai), or the "
        "Redis key prefix (default: agno).",
    ),
]


@app.command("inspect")
def inspect_command(
    db: DbOption,
    session: Annotated[str | None, typer.Option("--session", help="Show one session's timeline.")] = None,
    schema: SchemaOption = None,
    ids: Annotated[bool, typer.Option("--ids", help="List the folded message ids of each fold.")] = False,
    full: Annotated[bool, typer.Option("--full", help="Print whole summaries, not their first lines.")] = False,
    members: Annotated[
        bool,
        typer.Option(
            "--members",
            help="Show a team's member runs, each under its leader's run (default: one line about them there).",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """List a database's sessions (newest first), or one session's timeline of model calls and folds."""
    _text_option("--session", session)
    _text_option("--schema", schema)
    with reading(db):
        handle = open_db(db, schema=schema)
        if session is None:
            _list_sessions(db, handle, as_json=as_json)
        else:
            _timeline(db, handle, session, ids=ids, full=full, members=members, as_json=as_json)


def _list_sessions(db: str, handle: object, *, as_json: bool) -> None:
    from ._inspect import session_list
    from .viewer._report import session_rows

    rows = session_rows(handle)
    if as_json:
        listed = [{k: v for k, v in r.items() if k not in ("updated_at", "request")} for r in rows]
        typer.echo(json_text(listed, indent=2))
        return
    console = _console()
    for part in session_list(rows, f"{plural(len(rows), 'session')} in {source_label(db)}", console.width):
        console.print(part)


def _timeline(db: str, handle: object, session: str, *, ids: bool, full: bool, members: bool, as_json: bool) -> None:
    from ._inspect import session_view
    from .viewer._report import session_json

    data = session_json(handle, session, db)
    if as_json:
        typer.echo(json_text(data, indent=2))
        return
    console = _console()
    _note_skipped(data["skipped_records"])
    names = _member_names(handle, session, db, data["runs"])
    for part in session_view(data["runs"], console.width, ids=ids, full=full, members=members, names=names):
        console.print(part)


def _member_names(handle: object, session: str, db: str, runs: list[dict[str, Any]]) -> dict[str, str]:
    """The member's name of each member run (by run id), when the session has member runs: agno's ``agent_name``
    (``team_name`` for a member team), else its id."""
    if not {r["member_of"] for r in runs} & {r["run_id"] for r in runs}:
        return {}
    from ._sessions import session_runs

    return {
        str(r.run_id): str(
            getattr(r, "agent_name", None)
            or getattr(r, "team_name", None)
            or getattr(r, "agent_id", None)
            or getattr(r, "team_id", None)
            or ""
        )
        for r in session_runs(_session(handle, session, db))
        if getattr(r, "parent_run_id", None)
    }


def _note_skipped(notes: list[str]) -> None:
    """Stored fold records that did not read, named on stderr (the output shows the rest of the session)."""
    if notes:
        shown = "; ".join(visible_line(n) for n in notes[:5]) + (
            f"; and {len(notes) - 5} more" if len(notes) > 5 else ""
        )
        typer.echo(f"note: {plural(len(notes), 'fold record')} skipped: {shown}", err=True)


@app.command("export")
def export_command(
    db: DbOption,
    session: Annotated[str | None, typer.Option("--session", help="Export one session (default: all).")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="JSONL file to write (default: stdout).")] = None,
    per: Annotated[str, typer.Option("--per", help="One example per 'session' or per 'run'.")] = "session",
    with_view: Annotated[bool, typer.Option("--with-view", help="Add the compressed view the model sees.")] = False,
    schema: SchemaOption = None,
) -> None:
    """Export full original messages as training data (OpenAI-chat JSONL; format in docs/cli.md)."""
    from ._export import export_examples

    if per not in ("session", "run"):
        raise fail(f"--per must be 'session' or 'run', got {per!r}")
    _text_option("--session", session)
    _text_option("--schema", schema)
    if out is not None:
        _output_file("--out", out)
    with reading(db):
        handle = open_db(db, schema=schema)
        ids = [session] if session is not None else [s.session_id for s in _sessions(handle)]
        if session is not None:
            _session(handle, session, db)
        lines = [json_text(e) for sid in ids for e in export_examples(handle, sid, per=per, with_view=with_view)]
    text = "\n".join(lines) + ("\n" if lines else "")
    if out is None:
        typer.echo(text, nl=False)
        return
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise fail(f"--out {str(out)!r}: cannot write ({exc.strerror or exc})") from exc
    typer.echo(f"wrote {plural(len(lines), 'example')} to {visible_line(out)}", err=True)


BudgetLine = Annotated[
    int | None,
    typer.Option(
        "--budget",
        help=f"The budget line to draw, and to tell over-budget folds from early ones in records that predate "
        f"storing it (at least {MIN_BUDGET}).",
        show_default="the compress_at_tokens stored with the session's folds",
    ),
]


@app.command("report")
def report_command(
    db: DbOption,
    session: Annotated[str, typer.Option("--session", help="The session to show.")],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", help="The page to write: one self-contained .html file (default: beside the database file)."
        ),
    ] = None,
    budget: BudgetLine = None,
    schema: SchemaOption = None,
) -> None:
    """Write a session's page: prompt size per model call, each fold where it happened, what it folded and why."""
    from .viewer._report import report_page

    out = out if out is not None else _report_path(db, session)
    _output_file("--out", out)  # a directory is named as one, whatever its name ends in
    if out.suffix.lower() not in (".html", ".htm"):
        raise fail(f"--out must end in .html (the report is one self-contained page), got {out.name!r}")
    _text_option("--session", session)
    _text_option("--schema", schema)
    _check_budget([budget] if budget is not None else None)
    with reading(db):
        page = report_page(open_db(db, schema=schema), session, db, budget=budget)
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise fail(f"--out {str(out)!r}: cannot write ({exc.strerror or exc})") from exc
    typer.echo(f"wrote {visible_line(out)}")


def _report_path(db: str, session: str) -> Path:
    """``<database>-<session>.html`` beside a database file; ``compression-report.html`` here for a server URL."""
    if "://" in db and not db.startswith("sqlite"):
        return Path("compression-report.html")
    path = Path(db.split(":///", 1)[1] if db.startswith("sqlite") else db)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", session).strip("._")[:60] or "session"
    return path.with_name(f"{path.stem}-{slug}.html")


@app.command("serve")
def serve_command(
    db: DbOption,
    host: Annotated[str, typer.Option("--host", help="Address to listen on (this machine only by default).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option("--port", help="Port to listen on (0: any free port).")] = 8321,
    schema: SchemaOption = None,
) -> None:
    """Browse a database's sessions in a web browser: a searchable list, newest first, and each session's page."""
    from .viewer._serve import serve

    _text_option("--schema", schema)
    _text_option("--host", host)
    if not 0 <= port <= 65535:
        raise fail(f"--port must be from 0 to 65535, got {port}")
    with reading(db):
        close_db(open_db(db, schema=schema))  # a bad --db fails here, before listening
    serve(db, schema=schema, host=host, port=port)


@app.command("fold")
def fold_command(
    db: DbOption,
    session: Annotated[str, typer.Option("--session", help="The session to fold.")],
    instructions: Annotated[str | None, typer.Option("--instructions", help="What the summary keeps first.")] = None,
    apply: Annotated[bool, typer.Option("--apply", help="Write it (default: a dry run, nothing written).")] = False,
    budget: Annotated[int, typer.Option("--budget", help=f"compress_at_tokens (at least {MIN_BUDGET}).")] = 16000,
    summarizer: Annotated[str, typer.Option("--summarizer", help="extractive: no model offline.")] = "extractive",
    wait: Annotated[float, typer.Option("--wait", help="Seconds to wait while a run of the session goes on.")] = 0.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    schema: SchemaOption = None,
) -> None:
    """Fold a session's history into one summary now, as its next run would: a dry run unless --apply."""
    from ._fold_command import fold

    _check_budget([budget])
    fold(db, session, instructions, apply, budget, summarizer, wait, as_json, schema, _console())


_OUTPUT_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})
"""Why writing stdout fails when it is a file (``> /dev/full``, a full disk or quota, a file too large)."""


def _discard_stdout() -> None:
    """Point stdout at the null device: the interpreter flushes it once more at exit, which must not fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


@contextmanager
def stdout_failures() -> Iterator[None]:
    """A closed pipe (``| head -1``) ends a command quietly, a full disk with one line; both exit 1, as Unix tools do,
    never with a traceback."""
    try:
        try:
            yield
        finally:
            sys.stdout.flush()  # what is still buffered fails here, not while the interpreter exits
    except BrokenPipeError:
        _discard_stdout()
        raise SystemExit(1) from None
    except OSError as exc:
        if exc.filename is not None or exc.errno not in _OUTPUT_ERRORS:
            raise  # not a failure of stdout: a bug must show where it is
        _discard_stdout()
        sys.stderr.write(f"agno-compression: error: cannot write the output: {exc.strerror}\n")
        raise SystemExit(1) from None


def main() -> None:
    """Console-script entry point."""
    with stdout_failures():
        app()
