"""Command line: ``agno-compression`` (also ``python -m agno_compression``).

Bad input exits with code 2 and one clear line on stderr.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from . import __version__
from ._databases import SQLITE_HEADER, _output_file, _owner, _session, _sessions, _text_option, fail, open_db, reading
from ._exceptions import ConfigError
from .eval import Trajectory, load_trajectories

app = typer.Typer(
    name="agno-compression",
    help="Measure and inspect agno-compression's context folding.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
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


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(16) == SQLITE_HEADER


def _from_db(spec: str) -> list[Trajectory]:
    """Every session of an agno database as a recorded conversation (its full original messages)."""
    from ._sessions import full_messages

    db = open_db(spec)
    name = Path(spec).stem if "://" not in spec else "db"
    return [
        Trajectory(source="agno-db", name=f"{name}#{s.session_id}", messages=full_messages(db, s.session_id))
        for s in _sessions(db)
    ]


def _load(paths: list[str]) -> list[Trajectory]:
    runs: list[Trajectory] = []
    for spec in paths:
        _text_option("PATH", spec)  # '' would mean the current directory
        if "://" in spec or (Path(spec).is_file() and _is_sqlite(Path(spec))):
            with reading(spec):
                runs += _from_db(spec)
            continue
        path = Path(spec)
        if not path.exists():
            raise fail(f"{path}: no such file or directory")
        try:
            runs += load_trajectories(path)
        except ConfigError as exc:
            raise fail(str(exc)) from exc
    if not runs:
        raise fail("no recorded conversation found in " + ", ".join(paths))
    return runs


@app.command("eval")
def eval_command(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Trajectory files or folders (OpenAI chat JSON/JSONL, tau-bench, OpenHands, SWE-agent, "
            "mini-swe-agent, TapeAgents), agno session databases (SQLite files or SQLAlchemy URLs)."
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
        list[int] | None, typer.Option("--budget", "-b", help="compress_at_tokens; repeat for several.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON rows instead of a table.")] = False,
    only_over: Annotated[
        bool,
        typer.Option(
            "--only-over-budget/--all", help="Report only conversations whose uncompressed peak exceeds the budget."
        ),
    ] = True,
) -> None:
    """Replay recorded conversations offline, with and without compression, and compare."""
    from .eval import evaluate, totals

    if budget is None:
        budget = [16000]
    for s in summarizer:
        if s not in ("extractive", "mask", "pipeline"):
            raise fail(f"--summarizer {s!r} is not available offline; choose extractive, mask or pipeline")
    for b in budget:
        if b < 256:
            raise fail(f"--budget must be >= 256, got {b}")
    runs = _load(paths)
    with Progress(console=err, transient=True, disable=as_json) as progress:
        task = progress.add_task("replaying", total=len(runs))
        rows = evaluate(runs, settings=summarizer, budgets=budget, progress=lambda _: progress.advance(task))
    if only_over:
        rows = [r for r in rows if r.peak_prompt_uncompressed > r.budget]
    summary = totals(rows)
    if as_json:
        typer.echo(
            json.dumps({"rows": [r.to_dict() for r in rows], "totals": [t.to_dict() for t in summary]}, indent=2)
        )
        return
    table = Table(title=f"{len(runs)} conversations replayed; {len(rows)} rows over budget" if only_over else None)
    for col in (
        "input",
        "setting",
        "budget",
        "calls",
        "peak (none)",
        "peak",
        "cumulative vs none",
        "cost cached 0.1x vs none",
        "cost cached 0.25x vs none",
        "acted-on facts at end",
        "next-step grounding",
        "over budget",
        "folds",
        "masks",
        "summarizer calls",
        "pair violations",
        "fact retention per summary",
    ):
        table.add_column(col, justify="left" if col in ("input", "setting") else "right")
    for r in [*rows, *summary]:
        ratio = r.cumulative_prompt / r.cumulative_prompt_uncompressed if r.cumulative_prompt_uncompressed else 0
        retention = f"{r.fact_retention:.0%}" if r.fact_retention is not None else "-"
        table.add_row(
            r.input[-48:],
            r.setting,
            f"{r.budget:,}",
            str(r.model_calls),
            f"{r.peak_prompt_uncompressed:,}",
            f"{r.peak_prompt:,}",
            f"{ratio:.1%}",
            _ratio(r.cost_ratio(0.1)),
            _ratio(r.cost_ratio(0.25)),
            _ratio(r.acted_retention),
            _ratio(r.grounding),
            str(r.calls_over_budget),
            str(r.folds),
            str(r.masks),
            str(r.summarizer_calls),
            str(r.pair_violations),
            retention,
        )
    Console(width=None if Console().is_terminal else 200).print(table)


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


DbOption = Annotated[str, typer.Option("--db", help="SQLAlchemy URL or SQLite file path of the agent's database.")]
SchemaOption = Annotated[str | None, typer.Option("--schema", help="PostgreSQL schema of agno's tables (default: ai).")]


@app.command("inspect")
def inspect_command(
    db: DbOption,
    session: Annotated[str | None, typer.Option("--session", help="Show one session's timeline.")] = None,
    schema: SchemaOption = None,
    ids: Annotated[bool, typer.Option("--ids", help="List the folded message ids of each fold.")] = False,
    full: Annotated[bool, typer.Option("--full", help="Print whole summaries, not their first lines.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """List a database's sessions, or one session's timeline of model calls and folds."""
    _text_option("--session", session)
    _text_option("--schema", schema)
    with reading(db):
        _inspect(db, session, schema, ids=ids, full=full, as_json=as_json)


def _inspect(db: str, session: str | None, schema: str | None, *, ids: bool, full: bool, as_json: bool) -> None:
    from ._sessions import records_of_run, session_runs, stats
    from ._store import store_for

    handle = open_db(db, schema=schema)
    store = store_for(handle)
    console = Console(width=None if Console().is_terminal else 160)
    if session is None:
        rows = []
        for s in _sessions(handle):
            st = stats(store, s.session_id) if store is not None else None
            rows.append(
                {
                    "session_id": s.session_id,
                    "owner": _owner(s),
                    "runs": len(s.runs or []),
                    "messages": sum(len([m for m in r.messages or [] if not m.from_history]) for r in session_runs(s)),
                    "folds": st.folds if st else 0,
                    "tokens_saved": st.tokens_saved if st else 0,
                }
            )
        if as_json:
            typer.echo(json.dumps(rows, indent=2))
            return
        table = Table(title=f"{len(rows)} sessions in {db}")
        for col in ("session_id", "owner", "runs", "messages", "folds", "tokens_saved"):
            table.add_column(col, justify="left" if col in ("session_id", "owner") else "right")
        for r in rows:
            table.add_row(*(f"{v:,}" if isinstance(v, int) else str(v) for v in r.values()))
        console.print(table)
        return
    found = _session(handle, session, db)
    records = store.events(session) if store is not None else []
    timeline = []
    for run in session_runs(found):
        calls = [m for m in run.messages or [] if m.role == "assistant" and not m.from_history]
        folds = records_of_run(records, run)
        timeline.append(
            {
                "run_id": run.run_id,
                "status": str(getattr(run.status, "value", run.status)),
                "member_of": getattr(run, "parent_run_id", None),
                "model_calls": len(calls),
                "prompt_tokens": [getattr(m.metrics, "input_tokens", 0) for m in calls],
                "folds": [
                    {
                        "record_id": f.id,
                        "strategy": f.strategy,
                        "tokens_before": f.tokens_before,
                        "tokens_after": f.tokens_after,
                        "folded": len(f.folded_ids),
                        "folded_ids": f.folded_ids,
                        "summary": f.summary,
                    }
                    for f in folds
                ],
            }
        )
    if as_json:
        typer.echo(json.dumps({"session_id": session, "runs": timeline}, indent=2))
        return
    for run in timeline:
        title = f"run {run['run_id']} ({run['status']}{', member run' if run['member_of'] else ''}): "
        title += f"{run['model_calls']} model calls, prompt tokens {run['prompt_tokens']}"
        console.print(title, highlight=False, markup=False)
        if not run["folds"]:
            continue
        table = Table(show_lines=True)
        for col in ("#", "strategy", "tokens before -> after", "folded", "summary"):
            table.add_column(col)
        for f in run["folds"]:
            summary = f["summary"] or ""
            if not full:
                summary = "\n".join(summary.splitlines()[:6]) + ("\n…" if summary.count("\n") >= 6 else "")
            folded = str(f["folded"]) + ("\n" + "\n".join(f["folded_ids"]) if ids else "")
            table.add_row(
                str(f["record_id"]), f["strategy"], f"{f['tokens_before']:,} -> {f['tokens_after']:,}", folded, summary
            )
        console.print(table)


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
        lines = [
            json.dumps(e, ensure_ascii=False)
            for sid in ids
            for e in export_examples(handle, sid, per=per, with_view=with_view)
        ]
    text = "\n".join(lines) + ("\n" if lines else "")
    if out is None:
        typer.echo(text, nl=False)
        return
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise fail(f"--out {str(out)!r}: cannot write ({exc.strerror or exc})") from exc
    typer.echo(f"wrote {len(lines)} examples to {out}", err=True)


@app.command("report")
def report_command(
    db: DbOption,
    session: Annotated[str, typer.Option("--session", help="The session to draw.")],
    out: Annotated[
        Path, typer.Option("--out", help="Chart file (.png or .svg); an .html page is written beside it.")
    ] = Path("compression-report.png"),
    budget: Annotated[int | None, typer.Option("--budget", help="Draw the compress_at_tokens line.")] = None,
    schema: SchemaOption = None,
) -> None:
    """Draw prompt tokens per model call, with and without compression, folds marked."""
    from ._sessions import session_runs
    from ._store import store_for
    from .eval import draw, session_series

    if out.suffix not in (".png", ".svg"):
        raise fail(f"--out must end in .png or .svg, got {out.name!r}")
    _output_file("--out", out)
    _text_option("--session", session)
    _text_option("--schema", schema)
    if budget is not None and budget <= 0:
        raise fail(f"--budget must be a positive number of tokens, got {budget}")
    with reading(db):
        handle = open_db(db, schema=schema)
        found = _session(handle, session, db)
        store = store_for(handle)
        records = store.events(session) if store is not None else []
        runs = session_runs(found, top_level=True)
    series = session_series(runs, records, f"session {session}")
    series.budget = budget
    if not series.with_compression:
        raise fail(f"session {session!r} has no model calls to draw")
    try:
        page = draw(series, out)
    except OSError as exc:
        raise fail(f"--out {str(out)!r}: cannot write ({exc.strerror or exc})") from exc
    typer.echo(f"wrote {out} and {page}")


def main() -> None:
    """Console-script entry point."""
    app()
