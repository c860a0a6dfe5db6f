"""What fold spans cost: the manager's time per model call with OpenTelemetry absent, imported without a tracer
provider, and with a provider set (the SDK's, spans exported to memory), on the same folding runs.

    python bench/tracing_overhead.py [--runs 5] [--steps 40]

Each setting runs in a fresh interpreter (a process sets its tracer provider once). A run is a real agno Agent on
the scripted model reading long log chunks with a 4,000-token budget, so it folds every few calls; the time
measured is what agno spends in the manager's hooks before each model call (``should_compress`` and, when it
folds, ``compress``), summed per run and divided by its model calls. The table gives the median over the runs and
the ratio to "absent" (and the fastest run, less sensitive to other processes on the machine). Not a timed test:
docs/observing.md quotes a run of it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {
    "absent": "OpenTelemetry not imported (not installed, or never used)",
    "no provider": "opentelemetry imported, no tracer provider set",
    "provider": "a tracer provider set (SDK, spans exported to memory)",
}


def measure(setting: str, runs: int, steps: int) -> dict[str, Any]:
    """In this process: set up ``setting``, run the agent ``runs`` times, return per-call times and spans made."""
    exporter = None
    if setting == "no provider":
        import opentelemetry.trace  # noqa: F401
    elif setting == "provider":
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        provider = TracerProvider()
        exporter = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)

    from agno_compression.testing import loop_agent

    per_call: list[float] = []
    folds = 0
    for n in range(runs + 1):  # the first run warms the caches (token counts, imports) and is not counted
        loop = loop_agent(steps=steps, session_id=f"bench-{n}", compress_at_tokens=4_000, payback_calls=None)
        manager = loop.manager
        spent = [0.0]

        def timed(hook: Any, spent: list[float] = spent) -> Any:
            def call(*args: Any, **kwargs: Any) -> Any:
                start = time.perf_counter()
                try:
                    return hook(*args, **kwargs)
                finally:
                    spent[0] += time.perf_counter() - start

            return call

        manager.should_compress = timed(manager.should_compress)  # type: ignore[method-assign]
        manager.compress = timed(manager.compress)  # type: ignore[method-assign]
        loop.run("Read every chunk of the build log.")
        if n:
            per_call.append(spent[0] / max(1, len(loop.model.requests)))
            folds += len([e for e in manager.events if e.summary])
        elif exporter is not None:
            exporter.clear()  # the warm-up run's spans are not counted either
    spans = len(exporter.get_finished_spans()) if exporter is not None else 0
    otel = any(name.startswith("opentelemetry") for name in sys.modules)
    return {"per_call": per_call, "folds": folds, "spans": spans, "otel_imported": otel}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--setting", choices=sorted(SETTINGS), help=argparse.SUPPRESS)  # one child process
    args = parser.parse_args()
    if args.setting:
        print(json.dumps(measure(args.setting, args.runs, args.steps)))
        return
    results = {}
    for setting in SETTINGS:
        done = subprocess.run(
            [sys.executable, __file__, "--setting", setting, "--runs", str(args.runs), "--steps", str(args.steps)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        results[setting] = json.loads(done.stdout.strip().splitlines()[-1])
    base = statistics.median(results["absent"]["per_call"])
    fastest = min(results["absent"]["per_call"])
    print(f"manager time per model call over {args.runs} runs of {args.steps} steps (4,000-token budget)\n")
    print(f"{'setting':<14} {'median':>9} {'ratio':>6} {'fastest':>9} {'ratio':>6} {'folds':>6} {'spans':>6}  otel")
    for setting, r in results.items():
        median, best = statistics.median(r["per_call"]), min(r["per_call"])
        print(
            f"{setting:<14} {median * 1e3:>7.3f}ms {median / base:>5.2f}x {best * 1e3:>7.3f}ms {best / fastest:>5.2f}x "
            f"{r['folds']:>6} {r['spans']:>6}  {'imported' if r['otel_imported'] else 'not imported'}"
        )
    print()
    for setting, what in SETTINGS.items():
        print(f"{setting}: {what}")


if __name__ == "__main__":
    main()
