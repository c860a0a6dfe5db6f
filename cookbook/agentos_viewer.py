"""An agent with the manager, served by AgentOS, with the session viewer in the same app.

AgentOS serves the agent (runs, sessions, its security key) as always. The viewer's routes go into the FastAPI app
AgentOS builds on, its ``base_app``: under /compression, the sessions of the agent's own database, newest first,
each session's folds as a page and as JSON; read-only, answering only to the names given, and asking for the
same credentials as AgentOS's own routes.

    python cookbook/agentos_viewer.py          # one run that folds, then what the viewer answers
    python cookbook/agentos_viewer.py --serve  # and serve it: http://127.0.0.1:7777/compression/
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.models.message import Message
from agno.os import AgentOS
from fastapi import FastAPI

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import answer_of, database_path, pick_model, print_answer, print_folds

from agno_compression import CompressionManager, viewer_router
from agno_compression.testing import Reply, ScriptInfo, ToolCall

SESSION = "deploy-review"
DAYS = 6


def read_deploy_log(day: int) -> str:
    """Read one day of the deployment log."""
    lines = [f"2026-11-{day:02d}T{h:02d}:00:00 deploy api-{h % 4} rollout ok in {30 + h}s" for h in range(24)]
    lines += [f"2026-11-{day:02d}T{h:02d}:30:00 deploy api-{h % 4} ERROR health check failed" for h in (4, 13)]
    return "\n".join(lines * 4)


_calls = [0]


def script(messages: list[Message], info: ScriptInfo) -> Reply:
    """Offline stand-in: read every day of the log, then answer."""
    _calls[0] += 1  # our own count: after a fold the earlier tool results are no longer in ``messages``
    day = _calls[0]
    if day <= DAYS:
        call = ToolCall("read_deploy_log", {"day": day}, id=f"call_day_{day}")
        return Reply(text=f"Reading day {day}.", tool_calls=[call])
    return Reply(text="Two failed health checks a day, always on api-0 and api-1 after 04:00 and 13:00.")


def build(db_file: Path) -> tuple[Agent, CompressionManager, Any]:
    """The agent with the manager, and the AgentOS app with the viewer mounted."""
    db = SqliteDb(db_file=str(db_file))
    manager = CompressionManager(compress_at_tokens=6_000)
    agent = manager.attach(
        Agent(
            id="deploy-reviewer",
            name="Deploy reviewer",
            model=pick_model(script),
            tools=[read_deploy_log],
            db=db,
            system_message="You review deployment logs and report what failed.",
            telemetry=False,
        )
    )
    base = FastAPI(title="Deploy reviewer")
    # the viewer reads the agents' own database; hosts=[...] adds the names the app is reached under in production
    base.include_router(viewer_router(db, prefix="/compression", hosts=["127.0.0.1", "localhost"]))
    agent_os = AgentOS(id="deploy-os", agents=[agent], base_app=base, telemetry=False)
    return agent, manager, agent_os.get_app()


def main() -> None:
    db_file = database_path("agentos_viewer")
    agent, manager, app = build(db_file)
    result = agent.run("Review the deployment log of the last six days.", session_id=SESSION)
    print_answer("answer", answer_of(result))
    print_folds(manager, db_file, SESSION)

    from fastapi.testclient import TestClient

    client = TestClient(app, base_url="http://127.0.0.1:7777")
    listed = client.get("/compression/sessions").json()["sessions"]
    print(f"\nGET /compression/sessions: {[row['session_id'] for row in listed]}")
    session = client.get(f"/compression/sessions/{SESSION}").json()
    print(f"GET /compression/sessions/{SESSION}: {json.dumps(session['stats'])[:160]} ...")
    page = client.get(f"/compression/session/{SESSION}")
    print(f"GET /compression/session/{SESSION}: {page.status_code}, {len(page.text):,} characters of HTML")
    if "--serve" in sys.argv:
        import uvicorn

        print("Serving on http://127.0.0.1:7777/compression/ (Ctrl+C stops)")
        uvicorn.run(app, host="127.0.0.1", port=7777)


if __name__ == "__main__":
    main()
