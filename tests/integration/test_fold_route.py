"""Folding a session on request over HTTP, inside agno's own AgentOS app: ``viewer_router(db, write=True)``'s
``POST /compression/sessions/<id>/fold``, and AgentOS's own ``POST /agents/<id>/sessions/<id>/compact`` on an agent
whose compression is agno-compression's.

The fold writes one record; the next run (through AgentOS's run route) is sent the summary and none of the folded
messages. The read-only viewer has no such route. A caller AgentOS would not let write the session (its session
write, ``PATCH /sessions/<id>``) is refused as AgentOS refuses it, cell by cell. A cross-site form post (no JSON
content type) is refused. Every answer carries the viewer's headers.
"""

from __future__ import annotations

import json
import subprocess
import sys
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
from agno_compression._compat import route_compaction
from agno_compression._stores import store_for
from agno_compression._stores._leases import RUN, leases_of
from agno_compression.testing import Reply, ScriptedModel, ScriptInfo, ToolCall
from agno_compression.viewer._http import HEADERS
from tests.fakes import SIGNING, bearer

SESSION = "deploy/review <1>"  # a slash and markup: the route takes the whole id
QUOTED = "deploy%2Freview%20%3C1%3E"
KEY = "s3cret-key"


def read_log(day: int) -> str:
    """Read one day of the deployment log."""
    return "\n".join(f"2026-11-{day:02d}T{h:02d}:00 deploy api-{h % 4} rollout ok in {30 + h}s" for h in range(60))


def script(messages: list[Message], info: ScriptInfo) -> Reply:
    own = [m for m in messages if m.role == "tool" and not m.from_history]
    if len(own) < 3:
        return Reply(text=f"Reading day {len(own) + 1}.", tool_calls=[ToolCall("read_log", {"day": len(own) + 1})])
    return Reply(text="Two failed health checks a day.")


def _agent(db: Any, model: ScriptedModel) -> tuple[Agent, CompressionManager]:
    manager = CompressionManager(compress_at_tokens=16_000, payback_calls=None)  # nothing folds by itself
    agent = Agent(id="reviewer", model=model, tools=[read_log], db=db, add_history_to_context=True, telemetry=False)
    return manager.attach(agent), manager


def _app(db_file: Path, *, write: bool = True, settings: AgnoAPISettings | None = None) -> dict[str, Any]:
    """The app as docs/agentos.md builds it, after two runs of ``SESSION`` (nothing folded yet)."""
    db = SqliteDb(db_file=str(db_file))
    model = ScriptedModel(script=script)
    agent, manager = _agent(db, model)
    agent.run("Review the deployment log.", session_id=SESSION)
    agent.run("And the next days.", session_id=SESSION)
    manager.flush_records()
    base = FastAPI()
    base.include_router(viewer_router(db, settings=settings, write=write, manager=manager))
    os_app = AgentOS(agents=[agent], base_app=base, settings=settings, telemetry=False)
    client = TestClient(os_app.get_app(), base_url="http://127.0.0.1:7777")
    return {"client": client, "db": db, "model": model, "manager": manager, "agent": agent}


@pytest.fixture
def served(tmp_path: Path) -> dict[str, Any]:
    return _app(tmp_path / "os.db")


def _post(client: TestClient, body: Any, session: str = QUOTED, **kw: Any) -> Any:
    return client.post(f"/compression/sessions/{session}/fold", json=body, **kw)


def _records(db: Any) -> list[Any]:
    return store_for(db).events(SESSION)


def test_the_route_folds_and_the_next_run_is_sent_the_summary_not_the_folded_messages(served: dict[str, Any]) -> None:
    client, db, model = served["client"], served["db"], served["model"]
    dry = _post(client, {"apply": False})
    assert dry.status_code == 200, dry.text
    planned = dry.json()
    assert planned["status"] == "dry_run" and planned["record_id"] is None and _records(db) == []
    assert planned["tokens_before"] > planned["tokens_after"] > 0 and planned["folded_messages"] >= 8
    for name, value in HEADERS.items():
        assert dry.headers[name] == value, name

    done = _post(client, {"instructions": "keep the api-3 rollouts first", "wait": 0.5})
    assert done.status_code == 200 and done.headers["content-type"] == "application/json", done.text
    folded = done.json()
    assert folded["status"] == "folded" and folded["folded"] and folded["record_id"] is not None
    assert "keep the api-3 rollouts first" in folded["summary"]
    (record,) = _records(db)
    assert record.run_id is None and record.strategy == "request:extractive" and record.budget == 16_000
    assert (record.id, record.tokens_before, record.tokens_after) == (
        folded["record_id"],
        folded["tokens_before"],
        folded["tokens_after"],
    )
    assert stats(db, SESSION).folds == 1
    shown = client.get(f"/compression/sessions/{QUOTED}").json()
    assert [f["reason"] for run in shown["runs"] for f in run["folds"]] == ["request"], "the viewer says why"
    assert "on request" in client.get(f"/compression/session/{QUOTED}").text

    again = _post(client, {})
    assert again.status_code == 200 and again.json()["status"] == "nothing_to_fold" and len(_records(db)) == 1

    before = len(model.requests)
    ran = client.post("/agents/reviewer/runs", data={"message": "What next?", "stream": "false", "session_id": SESSION})
    assert ran.status_code == 200, ran.text
    sent = model.requests[before].messages
    texts = [str(m.content) for m in sent]
    assert any(t.startswith("[Summary of earlier conversation") and "api-3 rollouts" in t for t in texts)
    assert not [m for m in sent if m.id in set(record.folded_ids)], "no folded message is sent again"
    assert not any(t == "Review the deployment log." for t in texts)


def test_no_session_is_404_and_a_run_going_on_is_409(served: dict[str, Any]) -> None:
    client, db = served["client"], served["db"]
    missing = _post(client, {}, session="nope")
    assert missing.status_code == 404 and missing.json()["status"] == "no_session"
    assert missing.headers["X-Frame-Options"] == "DENY"
    leases = leases_of(store_for(db))
    assert leases.take(SESSION, "a-run", RUN, 60)
    try:
        busy = _post(client, {"wait": 0.2})
        assert busy.status_code == 409 and busy.json()["status"] == "busy" and "going" in busy.json()["message"]
    finally:
        leases.release(SESSION, "a-run")
    assert _records(db) == []


def test_bad_bodies_are_refused_with_the_viewers_headers(served: dict[str, Any]) -> None:
    client, db = served["client"], served["db"]
    for body, status in (
        ([], 422),
        ({"apply": "yes"}, 422),
        ({"wait": -1}, 422),
        ({"wait": True}, 422),
        ({"instructions": 3}, 422),
        ({"force": True}, 422),
    ):
        answer = _post(client, body)
        assert answer.status_code == status, (body, answer.text)
        assert answer.headers["Content-Security-Policy"] == HEADERS["Content-Security-Policy"]
    broken = client.post(
        f"/compression/sessions/{QUOTED}/fold", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert broken.status_code == 400
    huge = _post(client, {"instructions": "x" * 70_000})
    assert huge.status_code == 413 and huge.headers["X-Content-Type-Options"] == "nosniff"
    assert _records(db) == []


def test_a_cross_site_form_post_cannot_fold(served: dict[str, Any]) -> None:
    """What a page on another site can send without asking first: a form (urlencoded, multipart or text/plain)."""
    client, db = served["client"], served["db"]
    path = f"/compression/sessions/{QUOTED}/fold"
    forms = [
        client.post(path, data={"apply": "true"}),
        client.post(path, files={"apply": ("a", b"true")}),
        client.post(path, content=b'{"apply": true}', headers={"Content-Type": "text/plain"}),
        client.post(path, content=b'{"apply": true}'),
    ]
    for answer in forms:
        assert answer.status_code == 415, answer.text
        assert answer.headers["X-Frame-Options"] == "DENY"
    assert _records(db) == []
    assert (
        _post(client, {"apply": True}, headers={"Content-Type": "application/json; charset=utf-8"}).status_code == 200
    )


def test_a_foreign_host_cannot_fold(served: dict[str, Any]) -> None:
    client, db = served["client"], served["db"]
    answer = client.post(
        f"http://evil.example/compression/sessions/{QUOTED}/fold", json={}, headers={"Host": "evil.example"}
    )
    assert answer.status_code == 421 and _records(db) == []


def test_the_read_only_viewer_has_no_fold_route(tmp_path: Path) -> None:
    app = _app(tmp_path / "os.db", write=False)
    client, db = app["client"], app["db"]
    answer = _post(client, {})
    assert answer.status_code in (404, 405), answer.text
    assert client.get(f"/compression/sessions/{QUOTED}").status_code == 200
    assert _records(db) == []


def test_the_security_key_of_agentos_is_required(tmp_path: Path) -> None:
    app = _app(tmp_path / "os.db", settings=AgnoAPISettings(os_security_key=KEY))
    client, db = app["client"], app["db"]
    assert _post(client, {}).status_code == 401
    assert _post(client, {}, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert _records(db) == []
    assert _post(client, {}, headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
    assert len(_records(db)) == 1


def test_agnos_compact_route_folds_with_agno_compressions_manager(served: dict[str, Any]) -> None:
    route_compaction()  # what attach does (idempotent): test_attach_routes_agnos_compaction checks that it does
    client, db, agent = served["client"], served["db"], served["agent"]
    agent.run("Review the ops log.", session_id="ops")  # AgentOS's path parameter takes no "/"
    agent.run("And the next days.", session_id="ops")
    answer = client.post("/agents/reviewer/sessions/ops/compact")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "compacted" and body["compacted"], body
    (record,) = store_for(db).events("ops")
    assert record.strategy == "request:extractive" and record.run_id is None
    assert body["record"]["messages_compacted"] == len(record.folded_ids)
    assert (body["record"]["tokens_before"], body["record"]["tokens_after"]) == (
        record.tokens_before,
        record.tokens_after,
    )
    twice = client.post("/agents/reviewer/sessions/ops/compact").json()
    assert twice["status"] == "nothing_to_fold" and not twice["compacted"] and len(store_for(db).events("ops")) == 1
    assert "on request" in client.get("/compression/session/ops").text
    assert _records(db) == [], "the other session is untouched"
    assert client.post("/agents/reviewer/sessions/nope/compact").status_code == 404


def test_an_agent_with_agnos_own_compaction_keeps_it(tmp_path: Path) -> None:
    from agno.compaction.types import CompactionStatus

    route_compaction()
    db = SqliteDb(db_file=str(tmp_path / "own.db"))
    agent = Agent(id="own", model=ScriptedModel(script=script), tools=[read_log], db=db, compaction=True)
    CompressionManager(compress_at_tokens=16_000).attach(agent)
    agent.run("Review the deployment log.", session_id="own")
    result = agent.compact("own")
    assert result.status == CompactionStatus.NOTHING_TO_FOLD and "uncompacted_runs" in result.message, "agno's"
    assert store_for(db).events("own") == [], "agno's Compaction answered, not a fold of ours"
    plain = Agent(id="plain", model=ScriptedModel(script=script), db=db)
    assert plain.compact("own").status in (CompactionStatus.NOT_ENABLED, CompactionStatus.NO_HISTORY)


def test_attach_routes_agnos_compaction() -> None:
    """In a fresh interpreter (the wrapper is process-wide): attaching a manager makes ``Agent.compact`` fold."""
    code = (
        "from agno.agent import Agent, _messages\n"
        "from agno_compression import CompressionManager\n"
        "assert not getattr(_messages.compact_session, '_agno_compression_routed', False)\n"
        "CompressionManager().attach(Agent(id='a'))\n"
        "assert getattr(_messages.compact_session, '_agno_compression_routed', False), "
        "'CompressionManager._wire must call _compat.route_compaction()'\n"
        "assert getattr(_messages.acompact_session, '_agno_compression_routed', False)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


# --- JWT authorization: the session write AgentOS would allow, or its refusal -------------------------------------


USERS = {"alice": "s-alice", "bob": "s-bob"}


def _jwt_app(tmp_path: Path, *, isolation: bool, roles: bool) -> TestClient:
    from agno.os.authz.authorization import Authorization

    db = SqliteDb(db_file=str(tmp_path / "jwt.db"))
    agent, manager = _agent(db, ScriptedModel(script=script))
    for user, session in USERS.items():
        agent.run(f"Review the deploy log of {user}.", user_id=user, session_id=session)
    base = FastAPI()
    base.include_router(viewer_router(db, write=True, manager=manager))
    authz = Authorization(verification_keys=[SIGNING], algorithm="HS256", db=db if roles else None)
    if roles:
        authz.define_role("admin", ["agent_os:admin"])
        authz.define_role("writer", ["sessions:read", "sessions:write"])
        authz.define_role("reader", ["sessions:read"])
        authz.assign("alice", "writer")
        authz.assign("bob", "reader")
        authz.seed(admin="root")
    os_app = AgentOS(
        agents=[agent], db=db, base_app=base, authorization=authz, user_isolation=isolation, telemetry=False
    )
    return TestClient(os_app.get_app(), base_url="http://127.0.0.1:7777")


CALLERS = {
    "alice writer": ("alice", ("sessions:write",)),
    "alice reader only": ("alice", ("sessions:read",)),
    "alice no scope": ("alice", ()),
    "alice deletes": ("alice", ("sessions:delete",)),
    "no sub, writer": (None, ("sessions:write",)),
    "admin": ("root", ("agent_os:admin",)),
    "bob claims admin": ("bob", ("agent_os:admin",)),
    "bob claims writer": ("bob", ("sessions:write",)),
    "stranger claims writer": ("mallory", ("sessions:write",)),
}


def _compare(http: TestClient, headers: dict[str, str], cell: str) -> None:
    """Each session: the fold route's status is AgentOS's own session write's (``PATCH /sessions/<id>``)."""
    for session in USERS.values():
        theirs = http.patch(f"/sessions/{session}", json={}, headers=headers)
        ours = http.post(f"/compression/sessions/{session}/fold", json={"apply": False}, headers=headers)
        assert ours.status_code == theirs.status_code, (cell, session, theirs.status_code, ours.status_code, ours.text)
        if ours.status_code == 200:
            assert ours.json()["status"] == "dry_run", (cell, session)
        else:
            assert "summary" not in ours.text and "deploy log" not in ours.text, (cell, session)


@pytest.mark.parametrize("isolation", [False, True], ids=["shared", "isolated"])
def test_a_caller_folds_only_what_agentos_lets_them_write(tmp_path: Path, isolation: bool) -> None:
    http = _jwt_app(tmp_path, isolation=isolation, roles=False)
    assert _post(http, {}, session="s-alice").status_code == http.patch("/sessions/s-alice", json={}).status_code
    for cell, (sub, scopes) in CALLERS.items():
        _compare(http, bearer(sub, *scopes), f"{cell} ({'isolated' if isolation else 'shared'})")
    reader = bearer("alice", "sessions:read")
    assert _post(http, {"apply": False}, session="s-alice", headers=reader).status_code == 403, "reading is not writing"
    if isolation:  # alice writes only her own session; bob's is not found, as AgentOS says
        writer = bearer("alice", "sessions:write")
        assert _post(http, {"apply": False}, session="s-alice", headers=writer).status_code == 200
        assert _post(http, {"apply": False}, session="s-bob", headers=writer).status_code == 404


@pytest.mark.parametrize("isolation", [False, True], ids=["shared", "isolated"])
def test_under_managed_roles_the_role_decides(tmp_path: Path, isolation: bool) -> None:
    http = _jwt_app(tmp_path, isolation=isolation, roles=True)
    for cell, (sub, scopes) in CALLERS.items():
        _compare(http, bearer(sub, *scopes), f"{cell} (roles, {'isolated' if isolation else 'shared'})")
    # bob's role reads; his token merely claims to write
    assert _post(http, {"apply": False}, session="s-bob", headers=bearer("bob", "sessions:write")).status_code == 403
    assert _post(http, {"apply": False}, session="s-alice", headers=bearer("alice")).status_code == 200


def test_a_service_account_folds_as_its_scopes_allow(tmp_path: Path) -> None:
    http = _jwt_app(tmp_path, isolation=False, roles=False)
    admin = bearer("root", "agent_os:admin")
    for name, scopes in (("writer-bot", ["sessions:write"]), ("reader-bot", ["sessions:read"])):
        made = http.post(
            "/service-accounts",
            headers=admin,
            json={
                "name": name,
                "scopes": [{"scope": s, "effect": "allow"} for s in scopes],
                "allow_privileged_scopes": True,  # sessions:write is privileged in AgentOS
            },
        )
        assert made.status_code == 201, made.text
        _compare(http, {"Authorization": f"Bearer {made.json()['token']}"}, name)


def test_the_fold_route_is_documented_as_json() -> None:
    """The body the route reads is the one docs/observing.md shows."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "observing.md").read_text(encoding="utf-8")
    assert "/fold" in doc and json.dumps({"instructions": None, "apply": True, "wait": 0}) in doc
