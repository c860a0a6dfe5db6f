"""An attached Agent and Team served by agno's AgentOS, driven through its HTTP API on loopback.

A real uvicorn server on 127.0.0.1 (a free port, a background thread), real httpx requests: runs
(plain and streamed as SSE), the session endpoints. Folds must happen, the session endpoint must
return every original message, and a streamed run's metrics must equal the scripted model's reported
usage, counted once.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.models.message import Message
from agno.os import AgentOS
from agno.team import Team

from agno_compression import CompressionManager, full_messages
from agno_compression.testing import Reply, ScriptedModel, ScriptInfo, ToolCall

BUDGET = 3_000
STEPS = 10


def read_chunk(index: int) -> str:
    """Read one chunk of a build log."""
    return "\n".join(f"[{index:02d}:{i:03d}] compiling src/m{index}/f{i}.c ok" for i in range(70))


class Usage:
    """The usage the scripted models report, summed; a run's share is the difference across its request."""

    def __init__(self) -> None:
        self.input = 0
        self.output = 0

    def snapshot(self) -> tuple[int, int]:
        return self.input, self.output


def looping_model(usage: Usage) -> ScriptedModel:
    """Reads STEPS chunks, then answers; records the usage it reports for each run."""
    model: ScriptedModel

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        # the last tool batch always reaches the model verbatim: its call says which chunk comes next
        calls = [m for m in messages if m.role == "assistant" and m.tool_calls and not m.from_history]
        step = json.loads(calls[-1].tool_calls[-1]["function"]["arguments"])["index"] + 1 if calls else 0
        reply = (
            Reply(text=f"Reading chunk {step}.", tool_calls=[ToolCall("read_chunk", {"index": step})])
            if step < STEPS and len(model.requests) < 100  # a bound, so a broken fold cannot loop forever
            else Reply(text="All chunks read.")
        )
        counted = model._usage(model.requests[-1].prompt_tokens, reply)
        usage.input += counted.input_tokens
        usage.output += counted.output_tokens
        return reply

    model = ScriptedModel(script=script)
    return model


@pytest.fixture
def served(tmp_path: Path) -> Iterator[dict[str, Any]]:
    db = SqliteDb(db_file=str(tmp_path / "os.db"))
    usage = Usage()
    manager = CompressionManager(compress_at_tokens=BUDGET)
    agent = Agent(id="builder", name="Builder", model=looping_model(usage), tools=[read_chunk], db=db, telemetry=False)
    helper = Agent(id="helper", name="Helper", model=ScriptedModel(script=lambda m, i: "ok"), db=db, telemetry=False)
    team = Team(
        id="desk",
        name="Desk",
        model=looping_model(usage),
        members=[helper],
        tools=[read_chunk],
        db=db,
        telemetry=False,
    )
    manager.attach(agent)
    manager.attach(team)
    app = AgentOS(agents=[agent], teams=[team], telemetry=False).get_app()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, name="agentos", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the AgentOS server did not start"
        time.sleep(0.05)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            yield {"client": client, "db": db, "usage": usage, "manager": manager}
    finally:
        server.should_exit = True
        thread.join(10)


def sse_events(response: httpx.Response) -> list[dict[str, Any]]:
    events = []
    for line in response.text.splitlines():
        if line.startswith("data:"):
            events.append(json.loads(line[len("data:") :].strip()))
    return events


def check_session(client: httpx.Client, db: SqliteDb, session_id: str, kind: str) -> None:
    """The session endpoints return every original message: all tool outputs, in order, complete."""
    detail = client.get(f"/sessions/{session_id}", params={"type": kind})
    assert detail.status_code == 200, detail.text
    runs = client.get(f"/sessions/{session_id}/runs", params={"type": kind})
    assert runs.status_code == 200, runs.text
    served = [
        m
        for r in runs.json()
        if not r.get("parent_run_id")
        for m in r.get("messages") or []
        if not m.get("from_history")
    ]
    tools = [m["content"] for m in served if m["role"] == "tool"]
    assert tools == [read_chunk(i) for i in range(STEPS)], "the session endpoint lost or changed tool outputs"
    stored = [m for m in full_messages(db, session_id) if m.role in ("user", "assistant", "tool")]
    assert [(m["role"], m["content"]) for m in served if m["role"] in ("user", "assistant", "tool")] == [
        (m.role, m.content) for m in stored
    ]


@pytest.mark.parametrize(("kind", "path"), [("agent", "/agents/builder/runs"), ("team", "/teams/desk/runs")])
def test_served_runs_fold_keep_every_message_and_count_usage_once(served: dict[str, Any], kind: str, path: str) -> None:
    client, db, usage, manager = served["client"], served["db"], served["usage"], served["manager"]

    before = usage.snapshot()
    plain = client.post(path, data={"message": "Read the log.", "stream": "false", "session_id": f"{kind}-plain"})
    assert plain.status_code == 200, plain.text
    reported = (usage.input - before[0], usage.output - before[1])
    body = plain.json()
    assert body["content"].endswith("All chunks read.") and body["status"] == "COMPLETED"
    folds = manager.stats["folds"]
    assert folds >= 1, "nothing folded: the budget is never reached"
    check_session(client, db, f"{kind}-plain", kind)
    assert (body["metrics"]["input_tokens"], body["metrics"]["output_tokens"]) == reported

    before = usage.snapshot()
    streamed = client.post(
        path, data={"message": "Read the log again.", "stream": "true", "session_id": f"{kind}-stream"}
    )
    assert streamed.status_code == 200, streamed.text
    reported = (usage.input - before[0], usage.output - before[1])
    assert reported[0] > BUDGET, "the streamed run made too few calls to prove anything"
    events = sse_events(streamed)
    completed = [e for e in events if e.get("event") in ("RunCompleted", "TeamRunCompleted")]
    assert len(completed) == 1, [e.get("event") for e in events]
    metrics = completed[0]["metrics"]
    assert manager.stats["folds"] > folds, "the streamed run did not fold"
    assert (metrics["input_tokens"], metrics["output_tokens"]) == reported, "streamed usage not counted once"
    check_session(client, db, f"{kind}-stream", kind)
    stored = client.get(f"/sessions/{kind}-stream/runs", params={"type": kind}).json()
    top = [r for r in stored if not r.get("parent_run_id")]
    assert len(top) == 1
    assert (top[0]["metrics"]["input_tokens"], top[0]["metrics"]["output_tokens"]) == reported
