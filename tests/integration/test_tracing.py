"""Folds in agno's tracing: with ``agno.tracing.setup_tracing(db)`` (SQLite and PostgreSQL) and with the OpenTelemetry
SDK's in-memory exporter, a run with N folds leaves exactly N ``agno_compression.fold`` spans, all in the run's trace,
each with its reason, strategy, tokens before and after and messages folded; the ``llm`` summarizer's model call is a
child of its fold span. An Agent (run, arun, streamed sync and async), a Team (plain and streamed).

Each tracing setup runs in a spawned process (``tests/_tracing_workers.py``): a process sets its tracer provider
once. Without a provider, the manager does no tracing work (``test_no_provider_no_tracing``).
"""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests._tracing_workers import SCENARIOS
from tests.helpers import DbTarget

pytest.importorskip("opentelemetry.sdk.trace", reason="the tracing extra (opentelemetry-sdk) is not installed")
pytest.importorskip("openinference.instrumentation.agno", reason="the tracing extra is not installed")

REQUIRED = (
    "agno_compression.reason",
    "agno_compression.strategy",
    "agno_compression.tokens.before",
    "agno_compression.tokens.after",
    "agno_compression.messages.folded",
)


def traced(setup: str, target: DbTarget) -> dict[str, Any]:
    from tests._tracing_workers import traced_runs

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(traced_runs, setup, target).result(timeout=600)


def spans_of(db: Any) -> list[dict[str, Any]]:
    """Every span agno's trace store holds, as plain dicts (PostgresDb and SqliteDb return all without a filter)."""
    return [
        {
            "name": s.name,
            "trace_id": s.trace_id,
            "span_id": s.span_id,
            "parent_span_id": s.parent_span_id,
            "attributes": dict(s.attributes or {}),
        }
        for s in db.get_spans()
    ]


def check(runs: list[dict[str, Any]], spans: list[dict[str, Any]]) -> None:
    assert [r["scenario"] for r in runs] == list(SCENARIOS)
    by_id = {s["span_id"]: s for s in spans}
    for run in runs:
        assert run["folds"] >= 2, run  # the scenario folds, more than once
        folds = [
            s
            for s in spans
            if s["name"] == "agno_compression.fold" and s["attributes"].get("session.id") == run["session_id"]
        ]
        assert len(folds) == run["folds"], (run, len(folds))
        # the run's trace: the trace of the run's own span (agno's Agent/Team span carries the run id)
        run_spans = [s for s in spans if s["attributes"].get("agno.run.id") == run["run_id"]]
        assert run_spans, f"no span of run {run['run_id']}"
        trace_id = run_spans[0]["trace_id"]
        assert {s["trace_id"] for s in folds} == {trace_id}, run["scenario"]
        for fold in folds:
            attributes = fold["attributes"]
            assert all(name in attributes for name in REQUIRED), attributes
            assert attributes["agno_compression.tokens.after"] < attributes["agno_compression.tokens.before"]
            assert attributes["agno_compression.messages.folded"] > 0
            assert attributes["agno_compression.reason"] in ("budget", "early")
            assert attributes["agno_compression.strategy"] == run["strategies"][0]
            assert attributes["agno_compression.run.id"] == run["run_id"]
            assert attributes["openinference.span.kind"] == "CHAIN"
            parent = by_id[fold["parent_span_id"]]  # in the run's trace, under the run's own span
            assert parent["trace_id"] == trace_id
        children = [s for s in spans if s["parent_span_id"] in {f["span_id"] for f in folds}]
        if run["scenario"].startswith("llm"):
            # the summarizer's own model call nests under its fold: one call per fold, each under its own fold
            assert run["summarizer_calls"] == len(folds)
            assert sorted(c["parent_span_id"] for c in children) == sorted(f["span_id"] for f in folds)
            assert all("invoke" in c["name"] for c in children), [c["name"] for c in children]
            assert all(f["attributes"]["agno_compression.summarizer.model"] == "gpt-5" for f in folds)
        else:
            assert children == []


def test_agno_setup_tracing_on_sqlite(tmp_path: Path) -> None:
    target = DbTarget("sqlite", str(tmp_path / "traced.db"))
    result = traced("agno", target)
    check(result["runs"], spans_of(target.open()))


def test_agno_setup_tracing_on_postgres(postgres_db: DbTarget) -> None:
    result = traced("agno", postgres_db)
    check(result["runs"], spans_of(postgres_db.open()))


def test_the_sdk_in_memory_exporter(tmp_path: Path) -> None:
    result = traced("memory", DbTarget("sqlite", str(tmp_path / "sessions.db")))
    check(result["runs"], result["spans"])


def test_no_provider_no_tracing() -> None:
    """Without OpenTelemetry imported the manager imports none of it; imported without a provider, no tracer."""
    code = (
        "import sys\n"
        "from agno_compression._tracing import tracer\n"
        "from agno_compression.testing import loop_agent\n"
        "loop = loop_agent(steps=8, compress_at_tokens=2_000)\n"
        "loop.run('Read the logs.')\n"
        "assert loop.manager.events, 'the run folds'\n"
        "assert not [m for m in sys.modules if m.startswith('opentelemetry')], 'OpenTelemetry was imported'\n"
        "import opentelemetry.trace\n"
        "assert tracer() is None\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_masking_and_overflow_retries_are_span_events(tmp_path: Path) -> None:
    from tests._tracing_workers import event_runs

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        result = pool.submit(event_runs, DbTarget("sqlite", str(tmp_path / "sessions.db"))).result(timeout=600)
    mask, overflow = result["runs"]
    spans = result["spans"]
    run_span = next(s for s in spans if s["attributes"].get("agno.run.id") == mask["run_id"])
    masked = [e for e in run_span["events"] if e["name"] == "agno_compression.mask"]
    # masking alone folds nothing: no fold span, one event on the run's span per masking pass
    assert mask["masks"] >= 1 and mask["folds"] == 0 and len(masked) == mask["masks"]
    assert all(e["attributes"]["agno_compression.messages.masked"] > 0 for e in masked)
    assert not [s for s in spans if s["name"] == "agno_compression.fold" and s["trace_id"] == run_span["trace_id"]]

    folds = [
        s for s in spans if s["name"] == "agno_compression.fold" and s["attributes"]["session.id"] == "sess-overflow"
    ]
    assert len(folds) == overflow["folds"]
    retries = [f for f in folds if f["attributes"]["agno_compression.reason"] == "overflow"]
    assert len(retries) == overflow["strategies"].count("overflow:extractive") >= 1
    (event,) = retries[0]["events"]
    assert event["name"] == "agno_compression.overflow_retry" and event["attributes"]["agno_compression.attempt"] == 1
    # the retry's budget is the lower one the rest of the run keeps to, below compress_at_tokens
    assert (
        event["attributes"]["agno_compression.budget"] == retries[0]["attributes"]["agno_compression.budget"] < 20_000
    )


def test_the_docs_name_every_attribute_and_event() -> None:
    from agno_compression._tracing import ATTRIBUTES, EVENTS

    page = (Path(__file__).resolve().parents[2] / "docs" / "observing.md").read_text(encoding="utf-8")
    missing = [name for name in (*ATTRIBUTES, *EVENTS) if f"| `{name}` |" not in page]
    assert not missing, missing


@pytest.mark.parametrize("fault", ["raising-start", "slow-export"])
def test_a_failing_tracer_never_stops_a_fold_nor_holds_up_a_run(tmp_path: Path, fault: str) -> None:
    """A span processor that raises costs the trace, not the fold; a synchronous exporter blocked for as long as
    the run takes is never waited for: the run ends with its spans still unexported, and they follow once it lets
    go (``flush_records`` waits for them)."""
    from tests._tracing_workers import READS, faulty_tracing

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        result = pool.submit(faulty_tracing, DbTarget("sqlite", str(tmp_path / "s.db")), fault).result(timeout=600)
    assert result["folds"] >= 2, result
    assert result["stored_tool_results"] == READS, "the stored run holds every tool result"
    if fault == "slow-export":
        assert result["exported_during_run"] == 0, "the run waited for the exporter"
        assert result["exported"] == result["folds"], "every fold span follows once the exporter lets go"
