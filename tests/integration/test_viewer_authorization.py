"""The viewer answers each caller exactly what AgentOS's own session routes answer that caller.

A real AgentOS app (agno's ``AgentOS`` with JWT authorization, the viewer in its ``base_app``), two users with a
session each, and a matrix of callers: scoped and unscoped tokens, a token without ``sub``, the admin scope, user
isolation on and off, managed roles (token scopes not trusted: a role decides), and a service account. For every
cell the viewer's list (JSON and page) shows the sessions AgentOS's ``GET /sessions`` shows, with the same status,
and one session's JSON and page answer as AgentOS's ``GET /sessions/<id>`` does. The two bypasses the review found
(another user's sessions under isolation; a token that merely claims a scope under managed roles) are cells here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.os import AgentOS
from fastapi import FastAPI
from fastapi.testclient import TestClient

from agno_compression import CompressionManager, viewer_router
from agno_compression.testing import Reply, ScriptedModel
from tests.fakes import SIGNING, bearer

USERS = {"alice": "s-alice", "bob": "s-bob"}


def _agent(db: Any) -> Agent:
    agent = CompressionManager(compress_at_tokens=3_000).attach(
        Agent(id="reviewer", model=ScriptedModel(script=lambda messages, info: Reply(text="Noted.")), db=db)
    )
    for user, session in USERS.items():
        agent.run(f"Remember the deploy notes of {user}.", user_id=user, session_id=session)
    return agent


def _app(tmp_path: Path, *, isolation: bool, roles: bool) -> Any:
    from agno.os.authz.authorization import Authorization

    db = SqliteDb(db_file=str(tmp_path / "os.db"))
    agent = _agent(db)
    base = FastAPI()
    base.include_router(viewer_router(db))
    authz = Authorization(verification_keys=[SIGNING], algorithm="HS256", db=db if roles else None)
    if roles:
        authz.define_role("admin", ["agent_os:admin"])
        authz.define_role("reader", ["sessions:read"])
        authz.define_role("runner", ["agents:*:run"])
        authz.assign("alice", "reader")
        authz.assign("bob", "runner")
        authz.seed(admin="root")
    os_app = AgentOS(
        agents=[agent], db=db, base_app=base, authorization=authz, user_isolation=isolation, telemetry=False
    )
    return os_app.get_app()


CALLERS = {
    "alice reader": ("alice", ("sessions:read",)),
    "bob reader": ("bob", ("sessions:read",)),
    "alice no scope": ("alice", ()),
    "alice other scope": ("alice", ("agents:read",)),
    "no sub, reader": (None, ("sessions:read",)),
    "admin": ("root", ("agent_os:admin",)),
    "bob claims admin": ("bob", ("agent_os:admin",)),
    "bob claims reader": ("bob", ("sessions:read",)),
    "stranger claims reader": ("mallory", ("sessions:read",)),
    "root no scope": ("root", ()),
}


def _ids(response: Any, viewer: bool) -> set[str] | None:
    if response.status_code != 200:
        return None
    body = response.json()
    return {s["session_id"] for s in (body["sessions"] if viewer else body["data"])}


def _compare(http: TestClient, headers: dict[str, str], cell: str) -> None:
    theirs, ours = http.get("/sessions", headers=headers), http.get("/compression/sessions", headers=headers)
    assert ours.status_code == theirs.status_code, (cell, "list", theirs.status_code, ours.status_code, ours.text)
    assert _ids(ours, True) == _ids(theirs, False), (cell, "list")
    page = http.get("/compression/", headers=headers)
    assert page.status_code == theirs.status_code, (cell, "list page")
    for session in USERS.values():
        if theirs.status_code == 200:
            assert (session in page.text) == (session in (_ids(theirs, False) or set())), (cell, "page", session)
        theirs_one = http.get(f"/sessions/{session}", headers=headers)
        for path in (f"/compression/sessions/{session}", f"/compression/session/{session}"):
            ours_one = http.get(path, headers=headers)
            assert ours_one.status_code == theirs_one.status_code, (cell, path, theirs_one.status_code, ours_one.text)


@pytest.mark.parametrize("isolation", [False, True], ids=["shared", "isolated"])
def test_scoped_tokens_see_what_agentos_shows_them(tmp_path: Path, isolation: bool) -> None:
    http = TestClient(_app(tmp_path, isolation=isolation, roles=False), base_url="http://127.0.0.1:7777")
    assert http.get("/compression/sessions").status_code == http.get("/sessions").status_code == 401
    for cell, (sub, scopes) in CALLERS.items():
        _compare(http, bearer(sub, *scopes), f"{cell} ({'isolated' if isolation else 'shared'})")
    if isolation:  # the first bypass: alice reads only her own session, bob's is not found
        alice = bearer("alice", "sessions:read")
        assert _ids(http.get("/compression/sessions", headers=alice), True) == {"s-alice"}
        assert http.get("/compression/sessions/s-bob", headers=alice).status_code == 404
        assert http.get("/compression/sessions", headers=bearer(None, "sessions:read")).status_code == 403


@pytest.mark.parametrize("isolation", [False, True], ids=["shared", "isolated"])
def test_under_managed_roles_the_role_decides_not_the_tokens_claim(tmp_path: Path, isolation: bool) -> None:
    http = TestClient(_app(tmp_path, isolation=isolation, roles=True), base_url="http://127.0.0.1:7777")
    for cell, (sub, scopes) in CALLERS.items():
        _compare(http, bearer(sub, *scopes), f"{cell} (roles, {'isolated' if isolation else 'shared'})")
    # the second bypass: bob's role grants no sessions:read; his token merely claims it, or the admin scope
    assert http.get("/compression/sessions", headers=bearer("bob", "sessions:read")).status_code == 403
    assert http.get("/compression/sessions", headers=bearer("bob", "agent_os:admin")).status_code == 403
    # and alice's role grants it though her token carries no scope
    assert http.get("/compression/sessions", headers=bearer("alice")).status_code == 200


def test_a_service_account_reads_as_its_scopes_allow(tmp_path: Path) -> None:
    http = TestClient(_app(tmp_path, isolation=False, roles=False), base_url="http://127.0.0.1:7777")
    admin = bearer("root", "agent_os:admin")
    for name, scopes in (("reader-bot", ["sessions:read"]), ("runner-bot", ["agents:run"])):
        made = http.post(
            "/service-accounts",
            headers=admin,
            json={"name": name, "scopes": [{"scope": s, "effect": "allow"} for s in scopes]},
        )
        assert made.status_code == 201, made.text
        _compare(http, {"Authorization": f"Bearer {made.json()['token']}"}, name)
