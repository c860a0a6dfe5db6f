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
from ._exceptions import ConfigError
from ._trajectories import Trajectory, load_trajectories

app = typer.Typer(
    name="agno-compression",
    help="Measure and inspect agno-compression's context folding.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True)


def fail(message: str) -> typer.Exit:
    """Print one clear line and return the exit (code 2) to raise."""
    typer.echo(f"agno-compression: error: {' '.join(message.split())}", err=True)
    return typer.Exit(code=2)


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


def _load(paths: list[Path]) -> list[Trajectory]:
    runs: list[Trajectory] = []
    for path in paths:
        if not path.exists():
            raise fail(f"{path}: no such file or directory")
        try:
            runs += load_trajectories(path)
        except ConfigError as exc:
            raise fail(str(exc)) from exc
    if not runs:
        raise fail("no recorded conversation found in " + ", ".join(map(str, paths)))
    return runs


@app.command("eval")
def eval_command(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Trajectory files or folders (OpenAI chat JSON, tau-bench, OpenHands, SWE-agent, TapeAgents)."
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
    from ._eval import evaluate, totals

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
        "over budget",
        "folds",
        "masks",
        "summarizer calls",
        "pair violations",
        "fact retention",
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
            str(r.calls_over_budget),
            str(r.folds),
            str(r.masks),
            str(r.summarizer_calls),
            str(r.pair_violations),
            retention,
        )
    Console(width=None if Console().is_terminal else 200).print(table)


def main() -> None:
    """Console-script entry point."""
    app()
