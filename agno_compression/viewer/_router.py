"""``viewer_router``: the session viewer as a FastAPI router, for an AgentOS app's ``base_app`` and for ``serve``.

Read-only: GET and HEAD only. Under ``prefix`` (``/compression`` by default):

- ``/`` the session list page (``?q=`` searches), ``/session/<id>`` a session's page (``report``'s page);
- ``/sessions`` the session list as JSON, ``/sessions/<id>`` a session's runs, folds and stats as JSON.

The rules of ``_http`` hold for every route: a ``Host`` that is not one of the viewer's names is refused (421, no
session data), and every answer carries its headers (no framing, no sniffing, no referrer, no script). Mounted in
an AgentOS app, the routes ask for the same credentials as AgentOS's own routes: agno's own authentication
dependency (``OS_SECURITY_KEY`` as a bearer token), and under JWT authorization the decision and the user isolation
AgentOS's own session routes apply to the same caller (``_access``). Session text is untrusted: the
pages escape it (``_page``), the JSON escapes what ``_visible`` marks.
"""

# No ``from __future__ import annotations``: FastAPI reads the routes' annotations (``Request``, imported inside
# ``viewer_router`` so that FastAPI is only needed when a router is made) at definition time.
from collections.abc import Iterable
from http import HTTPStatus
from typing import Any

from .._visible import json_text, visible_line
from ._http import HEADERS, REFUSED, allowed_hosts, host_allowed

DEFAULT_PREFIX = "/compression"
"""Where an AgentOS app gets the viewer when no ``prefix`` is given (AgentOS's own routes stay as they are)."""


def viewer_router(
    db: Any,
    *,
    prefix: str = DEFAULT_PREFIX,
    hosts: Iterable[str] = (),
    any_address: bool = False,
    schema: str | None = None,
    settings: Any = None,
    authenticate: bool = True,
) -> Any:
    """A FastAPI ``APIRouter`` serving the sessions of ``db`` read-only: the list, each session's page and both as
    JSON (``include_router`` it into the ``base_app`` of an ``AgentOS``).

    ``db`` is an agno db (the agents' own) or a ``--db`` spec (a SQLite file or a URL, opened read-only for each
    request; ``schema`` as ``--schema``). ``hosts`` are the names the app is reached under besides the loopback
    ones (a deployment's own domain); ``any_address`` also answers a plain IP address. ``settings`` are the
    AgentOS app's ``AgnoAPISettings`` (default: read from the environment, as AgentOS does), whose security key
    the routes require; ``authenticate=False`` leaves them open (``serve``, which has no key).
    """
    try:
        from fastapi import APIRouter, Depends, Request
        from fastapi.exceptions import HTTPException
        from fastapi.responses import HTMLResponse, Response
    except ImportError as exc:  # the viewer extra
        raise ImportError(f"viewer_router needs FastAPI ({exc}); pip install 'agno-compression[viewer]'") from exc
    from ._access import authorize, scoped_user
    from ._site import Viewer, error_page, session_id_of  # the pages: only once a router is made

    if not isinstance(prefix, str) or (prefix and (not prefix.startswith("/") or prefix.endswith("/"))):
        raise ValueError(f"prefix must be '' or a path such as '/compression' (no trailing slash), got {prefix!r}")
    root = prefix
    viewer = Viewer(db, schema)
    allowed = allowed_hosts("127.0.0.1", hosts)

    def check_host(request: Request) -> None:
        if not host_allowed(request.headers.get("host"), allowed, every_interface=any_address):
            # a page under another name for this address must not read the sessions (DNS rebinding)
            raise HTTPException(REFUSED, "this viewer answers only to the names it is served under", HEADERS)

    def session_in(request: Request) -> str | None:
        """The session a request names (its page or its JSON), ``None`` for the list."""
        path = request.url.path
        under = next((u for u in ("/session/", "/sessions/") if path.startswith(root + u)), None)
        return requested_id(request, under) if under is not None else None

    async def check_access(request: Request) -> None:
        """What AgentOS's own ``GET /sessions`` (``/sessions/<id>``) would answer this caller (``_access``)."""
        await authorize(request, session_in(request))

    dependencies = [Depends(check_host)]  # first: a refused name learns nothing, not even whether a key is set
    if authenticate:
        from agno.os.auth import get_authentication_dependency
        from agno.os.settings import AgnoAPISettings

        dependencies.append(Depends(get_authentication_dependency(settings or AgnoAPISettings())))
        dependencies.append(Depends(check_access))
    router = APIRouter(dependencies=dependencies, include_in_schema=False)
    read = ["GET", "HEAD"]

    def html(page: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(page, status_code=status, headers=HEADERS)

    def as_json(value: Any, status: int = 200) -> Response:
        return Response(json_text(value), status_code=status, media_type="application/json", headers=HEADERS)

    def failed(exc: Exception, path: str, session: bool) -> tuple[HTTPStatus, str]:
        import typer

        if isinstance(exc, typer.Exit):  # the CLI's one-line errors (on stderr): no such session, an unreadable db
            status = HTTPStatus.NOT_FOUND if session else HTTPStatus.INTERNAL_SERVER_ERROR
            return status, "no such session" if session else "see the server's log for the reason"
        import logging

        logging.getLogger("agno_compression").exception("agno-compression viewer: %s failed", visible_line(path))
        return HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}; see the server's log"

    def requested_id(request: Request, under: str) -> str:
        """The session id in the path as its link quoted it (the raw path: a lone surrogate's bytes as they are)."""
        raw = request.scope.get("raw_path")
        path = raw.decode("latin-1") if raw else request.url.path
        return session_id_of(path[len(root + under) :])

    def index(request: Request, q: str = "") -> HTMLResponse:
        try:
            return html(viewer.index(q, root, scoped_user(request)))
        except Exception as exc:
            status, message = failed(exc, request.url.path, False)
            return html(error_page(status, message, root), status)

    def page(request: Request, session_id: str) -> HTMLResponse:
        try:
            return html(viewer.session(requested_id(request, "/session/"), root, scoped_user(request)))
        except Exception as exc:
            status, message = failed(exc, request.url.path, True)
            return html(error_page(status, message, root), status)

    def sessions(request: Request) -> Response:
        try:
            return as_json({"source": viewer.source, "sessions": viewer.rows(scoped_user(request))})
        except Exception as exc:
            status, message = failed(exc, request.url.path, False)
            return as_json({"detail": message}, status)

    def session(request: Request, session_id: str) -> Response:
        try:
            return as_json(viewer.session_data(requested_id(request, "/sessions/"), scoped_user(request)))
        except Exception as exc:
            status, message = failed(exc, request.url.path, True)
            return as_json({"detail": message}, status)

    router.add_api_route(f"{root}/", index, methods=read, response_class=HTMLResponse)
    if root:
        router.add_api_route(root, index, methods=read, response_class=HTMLResponse)
    router.add_api_route(f"{root}/index.html", index, methods=read, response_class=HTMLResponse)
    router.add_api_route(f"{root}/session/{{session_id:path}}", page, methods=read, response_class=HTMLResponse)
    router.add_api_route(f"{root}/sessions", sessions, methods=read)
    router.add_api_route(f"{root}/sessions/{{session_id:path}}", session, methods=read)
    return router
