"""Who may read which sessions through the viewer in an AgentOS app: the answer AgentOS's own session routes give.

The viewer's routes live in the app's ``base_app``, which AgentOS's JWT middleware authenticates but does not
authorize (it knows no scope for routes it did not make). So each viewer request asks that same middleware the
question AgentOS asks for ``GET /sessions`` (the list) or ``GET /sessions/<id>`` (one session): its route gate with
its own scope mappings and authorization provider (token scopes, managed roles, a custom provider), the strict scope
check it applies to service accounts and the internal token, and then agno's user isolation
(``get_scoped_user_id``): a caller who may read only their own sessions sees only those, and any other session is
"no such session", as on AgentOS's ``/sessions/<id>``. Nothing is decided here that AgentOS does not decide.

A write (the fold route, ``viewer_router(write=True)``) asks the question AgentOS asks for ``PATCH /sessions/<id>``
(its session write: ``sessions:write`` by default), with the same user isolation: a caller who may write only their
own sessions finds any other session "not found", as AgentOS's session writes answer.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote
from weakref import WeakKeyDictionary

from ._http import HEADERS

SCOPED_USER = "agno_compression_user_id"
"""The ``request.state`` attribute holding whose sessions the caller may read (``None``: every user's)."""

_gates: WeakKeyDictionary[Any, Any] = WeakKeyDictionary()


def jwt_gate(app: Any) -> Any:
    """The app's ``JWTMiddleware`` instance (AgentOS's authentication and route gate), or ``None`` without one."""
    if app in _gates:
        return _gates[app]
    from agno.os.middleware.jwt import JWTMiddleware

    found, layer, seen = None, getattr(app, "middleware_stack", None), 0
    while layer is not None and seen < 64:  # each middleware wraps the next as ``.app``
        if isinstance(layer, JWTMiddleware):
            found = layer
            break
        layer, seen = getattr(layer, "app", None), seen + 1
    if getattr(app, "middleware_stack", None) is not None:  # built: the answer holds for the app's life
        _gates[app] = found
    return found


WRITE = "PATCH"
"""The method of AgentOS's session write whose authorization a fold gets (``PATCH /sessions/<id>``)."""


async def authorize(request: Any, session_id: str | None = None, *, write: bool = False) -> None:
    """Raise the ``HTTPException`` AgentOS answers ``GET /sessions`` (or ``/sessions/<id>``; with ``write``, its
    session write ``PATCH /sessions/<id>``) with for this caller; else note on ``request.state`` whose sessions the
    caller reads or writes (``SCOPED_USER``)."""
    from agno.os.auth import build_insufficient_permissions_detail
    from agno.os.middleware.user_scope import get_scoped_user_id
    from agno.os.scopes import has_required_scopes
    from fastapi.exceptions import HTTPException

    route = "/sessions" if session_id is None else f"/sessions/{quote(session_id, safe='') or '-'}"
    method = WRITE if write else "GET"
    gate, state = jwt_gate(request.app), request.state
    if gate is not None and not getattr(state, "security_key_verified", False):  # the key: AgentOS's unscoped root
        scopes = list(getattr(state, "scopes", None) or [])
        if getattr(state, "service_account_name", None) is not None or getattr(state, "is_internal_service", False):
            # a service account's token scopes are its ACL, checked strictly (agno.os.auth._provider_for)
            required = gate._get_required_scopes(method, route)
            if required and not has_required_scopes(scopes, required, admin_scope=gate.admin_scope):
                raise HTTPException(403, build_insufficient_permissions_detail(required), HEADERS)
        elif gate.authorization:
            origins = getattr(request.app.state, "cors_allowed_origins", None)
            denied = await gate._acheck_scopes(request, method, route, scopes, request.headers.get("origin"), origins)
            if denied is not None:
                raise HTTPException(denied.status_code, _detail(denied), HEADERS)
    setattr(state, SCOPED_USER, get_scoped_user_id(request))  # 403 when isolation is on and no identity is known


def scoped_user(request: Any) -> str | None:
    """Whose sessions this request may read (or write), as ``authorize`` found (``None``: every user's)."""
    return getattr(request.state, SCOPED_USER, None)


def _detail(response: Any) -> str:
    try:
        return str(json.loads(bytes(response.body))["detail"])
    except Exception:
        return "Forbidden"
