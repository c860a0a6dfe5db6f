"""The session viewer inside an AgentOS app, built as docs/observing.md and cookbook/agentos_viewer.py show:
``viewer_router(db)`` included in the FastAPI app given to ``AgentOS(base_app=...)``.

Through agno's own AgentOS app and an HTTP client: the session list, one session's JSON (runs, folds, stats) and its
page; a foreign ``Host`` refused with no session data; AgentOS's security key required by the viewer's routes as by
AgentOS's own; AgentOS's routes unchanged. Then the page in Chromium, from a real uvicorn server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.models.message import Message
from agno.os import AgentOS
from agno.os.settings import AgnoAPISettings
from fastapi import FastAPI
from fastapi.testclient import TestClient

from agno_compression import CompressionManager, stats, viewer_router
from agno_compression.testing import Reply, ScriptedModel, ScriptInfo, ToolCall
from agno_compression.viewer._http import HEADERS

SESSION = "deploy <review> & notes"  # session text is untrusted: markup in an id must stay text
KEY = "s3cret-key"


def read_log(day: int) -> str:
    """Read one day of the deployment log."""
    return "\n".join(f"2026-11-{day:02d}T{h:02d}:00 deploy api-{h % 4} rollout ok in {30 + h}s" for h in range(90))


def script(messages: list[Message], info: ScriptInfo) -> Reply:
    done = sum(1 for m in messages if m.role == "tool" and not m.from_history)
    calls = [m for m in messages if m.role == "assistant" and m.tool_calls and not m.from_history]
    day = json.loads(calls[-1].tool_calls[-1]["function"]["arguments"])["day"] + 1 if calls else 1
    if day <= 8 and done < 20:
        return Reply(text=f"Reading day {day}.", tool_calls=[ToolCall("read_log", {"day": day})])
    return Reply(text="Two failed health checks a day.")


def agent_os(db_file: Path, settings: AgnoAPISettings | None = None) -> tuple[Any, Agent, Any]:
    """The app as the docs build it, after one run that folds."""
    db = SqliteDb(db_file=str(db_file))
    manager = CompressionManager(compress_at_tokens=3_000)
    agent = manager.attach(
        Agent(id="reviewer", name="Reviewer", model=ScriptedModel(script=script), tools=[read_log], db=db)
    )
    agent.run("Review the deployment log.", session_id=SESSION)
    assert manager.events, "the run folds"
    base = FastAPI()
    base.include_router(viewer_router(db, settings=settings))
    os_app = AgentOS(agents=[agent], base_app=base, settings=settings, telemetry=False)
    return os_app.get_app(), agent, db


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    app, _, db = agent_os(tmp_path_factory.mktemp("agentos") / "os.db")
    return app, db


def client(app: Any, host: str = "127.0.0.1:7777") -> TestClient:
    return TestClient(app, base_url=f"http://{host}")


def test_the_session_list_json_and_page(served: tuple[Any, Any]) -> None:
    app, db = served
    http = client(app)
    listed = http.get("/compression/sessions")
    assert listed.status_code == 200 and listed.headers["content-type"] == "application/json"
    rows = listed.json()["sessions"]
    assert [r["session_id"] for r in rows] == [SESSION] and rows[0]["folds"] == stats(db, SESSION).folds > 0

    quoted = "deploy%20%3Creview%3E%20%26%20notes"
    one = http.get(f"/compression/sessions/{quoted}")
    assert one.status_code == 200
    data = one.json()
    assert data["session_id"] == SESSION and data["stats"]["folds"] == stats(db, SESSION).folds
    folds = [f for run in data["runs"] for f in run["folds"]]
    assert len(folds) == data["stats"]["folds"]
    assert all(f["reason"] in ("budget", "early") and f["tokens_after"] < f["tokens_before"] for f in folds)

    page = http.get(f"/compression/session/{quoted}")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "deploy &lt;review&gt; &amp; notes" in page.text and "<review>" not in page.text
    assert '<a href="/compression/">All sessions</a>' in page.text
    for name, value in HEADERS.items():
        assert page.headers[name] == value, name

    index = http.get("/compression/", params={"q": "review"})
    assert index.status_code == 200 and f'href="/compression/session/{quoted}"' in index.text
    assert http.get("/compression/session/nope").status_code == 404
    assert http.get("/compression/sessions/nope").status_code == 404
    assert http.post("/compression/sessions").status_code == 405, "read-only"
    # AgentOS's own routes are AgentOS's, untouched
    assert http.get("/sessions", params={"type": "agent"}).status_code == 200


def test_a_foreign_host_gets_no_session_data(served: tuple[Any, Any]) -> None:
    app, _ = served
    for host in ("evil.example", "evil.example:7777", "127.0.0.1.evil.example"):
        http = client(app, host)
        for path in ("/compression/", "/compression/sessions", "/compression/sessions/x", "/compression/session/x"):
            answer = http.get(path)
            assert answer.status_code == 421, (host, path)
            assert "deploy" not in answer.text and "review" not in answer.text
            assert answer.headers["X-Frame-Options"] == "DENY"


def test_the_security_key_of_agentos_is_required(tmp_path: Path) -> None:
    app, _, _ = agent_os(tmp_path / "os.db", AgnoAPISettings(os_security_key=KEY))
    http = client(app)
    for path in ("/compression/sessions", "/compression/session/x", "/compression/"):
        assert http.get(path).status_code == 401, path
        assert http.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 401, path
    assert http.get("/sessions").status_code == 401, "as AgentOS's own routes"
    good = {"Authorization": f"Bearer {KEY}"}
    assert http.get("/compression/sessions", headers=good).json()["sessions"][0]["session_id"] == SESSION
    assert http.get("/sessions", headers=good).status_code == 200


def test_the_key_from_the_environment_as_agentos_reads_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OS_SECURITY_KEY", KEY)
    app, _, _ = agent_os(tmp_path / "os.db")  # no settings given: both read OS_SECURITY_KEY
    http = client(app)
    assert http.get("/compression/sessions").status_code == 401
    assert http.get("/compression/sessions", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200


def test_options_are_checked(tmp_path: Path) -> None:
    db = SqliteDb(db_file=str(tmp_path / "x.db"))
    for bad in ("compression", "/compression/", 3):
        with pytest.raises(ValueError, match="prefix"):
            viewer_router(db, prefix=bad)


# --- the page in Chromium, from a real server ----------------------------------------------------------------------


@pytest.fixture
def uvicorn_server(served: tuple[Any, Any]) -> Iterator[str]:
    from tests._app_server import serving

    app, _ = served
    with serving(app) as url:
        yield url


def test_the_page_in_chromium(uvicorn_server: str, tmp_path: Path) -> None:
    from tests.browser._chromium import browser, why_not

    reason = why_not()
    if reason is not None:
        pytest.skip(reason)
    with browser() as context:
        page = context.new_page()
        page.goto(uvicorn_server + "/compression/")
        assert page.locator("tr[data-session]").count() == 1
        page.get_by_role("link", name=SESSION).click()
        page.wait_for_url("**/compression/session/**")
        assert page.locator("h1 .id").inner_text() == SESSION
        assert page.locator("svg").count() >= 1
        page.screenshot(path=str(tmp_path / "agentos.png"))
        page.get_by_role("link", name="All sessions").click()
        page.wait_for_url("**/compression/")


def test_jwt_authorization_asks_for_what_agentos_session_routes_ask(tmp_path: Path) -> None:
    import time

    import jwt
    from agno.os.authz.authorization import Authorization

    signing = "k" * 40
    db = SqliteDb(db_file=str(tmp_path / "os.db"))
    agent = CompressionManager(compress_at_tokens=3_000).attach(
        Agent(id="reviewer", model=ScriptedModel(script=script), tools=[read_log], db=db)
    )
    agent.run("Review the deployment log.", session_id=SESSION)
    base = FastAPI()
    base.include_router(viewer_router(db))
    authorization = Authorization(verification_keys=[signing], algorithm="HS256")
    app = AgentOS(agents=[agent], base_app=base, authorization=authorization, telemetry=False).get_app()
    http = client(app)

    def bearer(*scopes: str) -> dict[str, str]:
        claims = {"sub": "user-1", "scopes": list(scopes), "exp": int(time.time()) + 600}
        return {"Authorization": f"Bearer {jwt.encode(claims, signing, algorithm='HS256')}"}

    assert http.get("/compression/sessions").status_code == 401
    assert http.get("/sessions").status_code == 401
    for scopes, status in (((), 403), (("agents:read",), 403), (("sessions:read",), 200), (("agent_os:admin",), 200)):
        assert http.get("/compression/sessions", headers=bearer(*scopes)).status_code == status, scopes
        assert http.get("/sessions", headers=bearer(*scopes)).status_code == status, ("AgentOS's own", scopes)
