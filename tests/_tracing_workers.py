"""Runs that fold, with tracing set up, in a process of their own (importable under the spawn start method).

OpenTelemetry lets a process set its global tracer provider once, and agno's ``setup_tracing`` binds it to one
database: each tracing setup (agno's on SQLite, agno's on PostgreSQL, the SDK's in-memory exporter) therefore runs
in a fresh spawned process, and the test process itself never sets a provider.

The models are agno's real ``OpenAIChat`` with its real client against the loopback OpenAI server of
``agno_compression.eval``, so OpenInference traces every model call (it instruments agno's own model classes), the
summarizer's too.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Mapping
from typing import Any

from tests.helpers import DbTarget

SCENARIOS = ("agent-sync", "agent-arun", "agent-stream", "agent-astream", "team", "team-stream", "llm", "llm-arun")
"""Each a run in a session of its own: an Agent run sync, with arun, streamed (sync and async), a Team run (plain
and streamed), and an Agent whose folds are written by the ``llm`` summarizer (sync and async)."""
SUMMARY = "The files read so far define handler functions; handler_m3_7 looked suspicious."
READS = 12


def read_file(path: str) -> str:
    """Read a source file."""
    return f"# {path}\n" + "\n".join(
        f"def handler_{path[:-3]}_{i}(request):\n    return request.value_{i}" for i in range(40)
    )


class Loop:
    """The provider's answers: ``READS`` tool calls, one file each, then an answer; a request without tools is the
    ``llm`` summarizer's, answered with a summary."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, body: Mapping[str, Any]) -> Any:
        from agno_compression.testing import Reply, ToolCall

        if not body.get("tools"):
            return Reply(text=SUMMARY)
        self.calls += 1
        if self.calls <= READS:
            call = ToolCall("read_file", {"path": f"m{self.calls}.py"})
            return Reply(text=f"Reading part {self.calls}.", tool_calls=[call])
        self.calls = 0
        return Reply(text="handler_m3_7 needs the fix.")


def _run(scenario: str, db: Any, **options: Any) -> dict[str, Any]:
    from agno.agent import Agent
    from agno.models.openai import OpenAIChat
    from agno.team import Team

    from agno_compression import CompressionManager
    from agno_compression._tracing import NOTES
    from agno_compression.eval._loopback import OpenAIServer

    window = options.pop("context_window", None)
    with OpenAIServer(Loop(), context_window=window) as server:

        def model() -> OpenAIChat:
            return OpenAIChat(id="gpt-5", api_key="offline", client_params={"base_url": f"{server.url}/v1"})

        summarizer = "llm" if scenario.startswith("llm") else "extractive"
        settings: dict[str, Any] = {"compress_at_tokens": 3_000, "summarizer": summarizer, "payback_calls": None}
        manager = CompressionManager(**{**settings, **options})
        session = f"sess-{scenario}"
        target: Any
        if scenario.startswith("team"):
            helper = Agent(id="helper", name="Helper", model=model(), db=db, telemetry=False)
            target = Team(
                id="readers", name="Readers", model=model(), members=[helper], tools=[read_file], db=db, telemetry=False
            )
        else:
            target = Agent(id="reader", name="Reader", model=model(), tools=[read_file], db=db, telemetry=False)
        manager.attach(target)
        task = "Read the source files one by one and tell me which function to fix."
        if scenario.endswith("arun"):
            output = asyncio.run(target.arun(task, session_id=session))
        elif scenario.endswith("astream"):

            async def drain() -> Any:
                events = [e async for e in target.arun(task, session_id=session, stream=True, yield_run_output=True)]
                return events[-1]  # the run's output comes last

            output = asyncio.run(drain())
        elif scenario.endswith("stream"):
            output = list(target.run(task, session_id=session, stream=True, yield_run_output=True))[-1]
        else:
            output = target.run(task, session_id=session)
        manager.flush_records()
        folds = [e for e in manager.events if e.strategy not in NOTES]
        return {
            "scenario": scenario,
            "session_id": session,
            "run_id": getattr(output, "run_id", None),
            "folds": len(folds),
            "strategies": [e.strategy for e in folds],
            "masks": sum(1 for e in manager.events if e.strategy == "mask"),
            "summarizer_calls": sum(1 for c in server.calls if not c.body.get("tools")),
        }


def _spans(exporter: Any) -> list[dict[str, Any]]:
    return [
        {
            "name": span.name,
            "trace_id": format(span.context.trace_id, "032x"),
            "span_id": format(span.context.span_id, "016x"),
            "parent_span_id": format(span.parent.span_id, "016x") if span.parent else None,
            "attributes": json.loads(json.dumps(dict(span.attributes or {}), default=str)),
            "events": [{"name": e.name, "attributes": dict(e.attributes or {})} for e in span.events],
        }
        for span in exporter.get_finished_spans()
    ]


def event_runs(target: DbTarget) -> dict[str, Any]:
    """The SDK's in-memory exporter; a run with ``summarizer="mask"`` and one whose provider rejects prompts over a
    window smaller than the budget (overflow retries)."""
    from openinference.instrumentation.agno import AgnoInstrumentor
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    AgnoInstrumentor().instrument(tracer_provider=provider)
    db = target.open()
    runs = [
        contextvars.copy_context().run(_run, "mask", db, summarizer="mask"),
        contextvars.copy_context().run(_run, "overflow", db, compress_at_tokens=20_000, context_window=4_000),
    ]
    return {"runs": runs, "spans": _spans(exporter)}


def traced_runs(setup: str, target: DbTarget) -> dict[str, Any]:
    """Set up tracing (``agno``: agno's ``setup_tracing`` on ``target``'s db; ``memory``: the SDK's in-memory
    exporter, sessions in ``target``'s db), run every scenario, and return what each did (with ``memory``, the
    finished spans too)."""
    from opentelemetry import trace

    db = target.open()
    exporter = None
    if setup == "agno":
        from agno.tracing import setup_tracing

        setup_tracing(db)
    else:
        from openinference.instrumentation.agno import AgnoInstrumentor
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        provider = TracerProvider()
        exporter = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        AgnoInstrumentor().instrument(tracer_provider=provider)
    # Each run in a context of its own: a run that leaves a span attached to the thread's context (seen after some
    # Team runs under the OpenInference instrumentation) must not make the next run part of its trace.
    runs = [contextvars.copy_context().run(_run, scenario, db) for scenario in SCENARIOS]
    spans = _spans(exporter) if exporter is not None else []
    return {"runs": runs, "spans": spans}


def faulty_tracing(target: DbTarget, fault: str) -> dict[str, Any]:
    """A run with the ``llm`` summarizer (its call opens the fold span) under a tracer provider that fails:
    ``raising-start``, a span processor whose ``on_start`` raises; ``slow-export``, a synchronous exporter that
    blocks until released. No agno instrumentation: only the fold spans meet the fault."""
    import threading

    from agno.agent import Agent
    from agno.models.openai import OpenAIChat
    from opentelemetry import trace
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    from agno_compression import CompressionManager, full_messages
    from agno_compression._tracing import NOTES
    from agno_compression.eval._loopback import OpenAIServer

    gate, exported = threading.Event(), []
    provider = TracerProvider()
    if fault == "raising-start":

        class Raising(SpanProcessor):
            def on_start(self, span: Any, parent_context: Any = None) -> None:
                raise RuntimeError("span processor down")

        provider.add_span_processor(Raising())
    else:

        class Slow(SpanExporter):
            def export(self, spans: Any) -> SpanExportResult:
                gate.wait(120)
                exported.extend(spans)
                return SpanExportResult.SUCCESS

        provider.add_span_processor(SimpleSpanProcessor(Slow()))
    trace.set_tracer_provider(provider)
    db = target.open()
    with OpenAIServer(Loop()) as server:
        model = OpenAIChat(id="gpt-5", api_key="offline", client_params={"base_url": f"{server.url}/v1"})
        manager = CompressionManager(compress_at_tokens=3_000, summarizer="llm", payback_calls=None)
        agent = Agent(id="reader", name="Reader", model=model, tools=[read_file], db=db, telemetry=False)
        manager.attach(agent)
        agent.run("Read the source files one by one and tell me which function to fix.", session_id="faulty")
        result = {
            "folds": len([e for e in manager.events if e.strategy not in NOTES]),
            "stored_tool_results": sum(1 for m in full_messages(db, "faulty") if m.role == "tool"),
            "exported_during_run": len(exported),
            "stats": dict(manager.stats),
        }
        gate.set()
        manager.flush_records()
        result["exported"] = len([s for s in exported if s.name == "agno_compression.fold"])
    return result
