"""``viewer_router``: the session viewer as a FastAPI router, for an AgentOS app's ``base_app`` and for ``serve``.

Read-only by default: GET and HEAD only. Under ``prefix`` (``/compression`` by default):

- ``/`` the session list page (``?q=`` searches), ``/session/<id>`` a session's page (``report``'s page);
- ``/sessions`` the session list as JSON, ``/sessions/<id>`` a session's runs, folds and stats as JSON;
- with ``write=True`` only (never ``serve``'s): ``POST /sessions/<id>/fold`` folds the session's history now
  (``CompressionManager.fold_session``), authorized as AgentOS's own session write (``_access``). Its body must be
  JSON sent as ``application/json``: a form another site's page posts cannot be (only a script can, and a browser
  asks the server first), so a page elsewhere cannot fold with the credentials a browser holds.

The rules of ``_http`` hold for every route: a ``Host`` that is not one of the viewer's names is refused (421, no
session data), and every answer carries its headers (no framing, no sniffing, no referrer, no script). Mounted in
an AgentOS app, the routes ask for the same credentials as AgentOS's own routes: agno's own authentication
dependency (``OS_SECURITY_KEY`` as a bearer token), and under JWT authorization the decision and the user isolation
AgentOS's own session routes apply to the same caller (``_access``). Session text is untrusted: the
pages escape it (``_page``), the JSON escapes what ``_visible`` marks.
"""

# No ``from __future__ import annotations``: FastAPI reads the routes' annotations (``Request``, imported inside
# ``viewer_router`` so that FastAPI is only needed when a router is made) at definition time.
import json
import math
from collections.abc import Iterable
from http import HTTPStatus
from typing import Any

from .._visible import json_text, visible_line
from ._http import HEADERS, REFUSED, allowed_hosts, host_allowed

DEFAULT_PREFIX = "/compression"
"""Where an AgentOS app gets the viewer when no ``prefix`` is given (AgentOS's own routes stay as they are)."""
FOLD = "/fold"
"""The fold route's last part: ``POST {prefix}/sessions/<id>/fold``."""
MAX_BODY = 64 * 1024
"""The largest body a fold request may send (its instructions are a few lines)."""


def fold_options(body: Any) -> tuple[str | None, bool, float] | str:
    """``(instructions, apply, wait)`` from a fold request's JSON body, or what is wrong with it."""
    if not isinstance(body, dict):
        return 'the body must be a JSON object: {"instructions": ..., "apply": ..., "wait": ...}'
    unknown = sorted(set(body) - {"instructions", "apply", "wait"})
    if unknown:
        return f"unknown field {unknown[0]!r}; a fold takes instructions, apply and wait"
    instructions, apply, wait = body.get("instructions"), body.get("apply", True), body.get("wait", 0)
    if instructions is not None and not isinstance(instructions, str):
        return "instructions must be text or null"
    if not isinstance(apply, bool):
        return "apply must be true or false"
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not math.isfinite(wait) or wait < 0:
        return "wait must be a number of seconds >= 0"
    return instructions, apply, float(wait)


def is_json(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` header says JSON (``application/json``, parameters allowed)."""
    return (content_type or "").split(";", 1)[0].strip().lower() == "application/json"


def viewer_router(
    db: Any,
    *,
    prefix: str = DEFAULT_PREFIX,
    hosts: Iterable[str] = (),
    any_address: bool = False,
    schema: str | None = None,
    settings: Any = None,
    authenticate: bool = True,
    write: bool = False,
    manager: Any = None,
) -> Any:
    """A FastAPI ``APIRouter`` serving the sessions of ``db`` read-only: the list, each session's page and both as
    JSON (``include_router`` it into the ``base_app`` of an ``AgentOS``).

    ``db`` is an agno db (the agents' own) or a ``--db`` spec (a SQLite file or a URL, opened read-only for each
    request; ``schema`` as ``--schema``). ``hosts`` are the names the app is reached under besides the loopback
    ones (a deployment's own domain); ``any_address`` also answers a plain IP address. ``settings`` are the
    AgentOS app's ``AgnoAPISettings`` (default: read from the environment, as AgentOS does), whose security key
    the routes require; ``authenticate=False`` leaves them open (``serve``, which has no key).

    ``write=True`` adds ``POST {prefix}/sessions/<id>/fold`` (body ``{"instructions": str | null, "apply": bool,
    "wait": seconds}``, sent as ``application/json``), answered with ``FoldResult.to_dict()``: 404 for no such
    session, 409 while a run of it is going, else 200. ``manager`` folds (default: ``CompressionManager()``, the
    extractive summary); under AgentOS the caller needs what AgentOS's own session write asks.
    """
    try:
        from fastapi import APIRouter, Depends, Request
        from fastapi.exceptions import HTTPException
        from fastapi.responses import HTMLResponse, Response
    except ImportError as exc:  # the viewer extra
        raise ImportError(f"viewer_router needs FastAPI ({exc}); pip install 'agno-compression[viewer]'") from exc
    from ._access import authorize, scoped_user
    from ._site import Viewer, error_page, session_id_of  # the pages: only once a router is made

    if write and manager is None:
        from .._manager import CompressionManager

        manager = CompressionManager()

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

    def folding(request: Request) -> bool:
        return write and request.method == "POST" and request.url.path.endswith(FOLD)

    async def check_access(request: Request) -> None:
        """What AgentOS's own ``GET /sessions`` (``/sessions/<id>``) would answer this caller (``_access``); for a
        fold, what its session write (``PATCH /sessions/<id>``) would."""
        if folding(request):
            await authorize(request, fold_target(request), write=True)
        else:
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

    def fold_target(request: Request) -> str:
        """The session a fold request names: the path between ``/sessions/`` and ``/fold``."""
        return requested_id(request, "/sessions/")[: -len(FOLD)]

    def fold_now(session_id: str, options: tuple[str | None, bool, float], user: str | None) -> Any:
        """``fold_session`` on the db (a ``--db`` spec opened for this request, writable to apply), after the
        check AgentOS's session writes make: a caller scoped to a user finds only that user's sessions."""
        from .._databases import close_db, open_db, reading
        from ._report import _owned

        instructions, apply, wait = options
        with reading(viewer.spec or viewer.source):
            db = viewer.db if viewer.db is not None else open_db(str(viewer.spec), schema=schema, writable=apply)
            try:
                if user is not None:
                    _owned(db, session_id, viewer.spec or viewer.source, user)
                return manager.fold_session(db, session_id, instructions, apply=apply, wait=wait, user_id=user)
            finally:
                if viewer.db is None:
                    close_db(db)

    async def fold(request: Request, session_id: str) -> Response:
        from starlette.concurrency import run_in_threadpool

        from .._requested_fold import BUSY, NO_SESSION

        if not is_json(request.headers.get("content-type")):  # a cross-site form cannot send it
            return as_json({"detail": "send the fold's options as JSON (Content-Type: application/json)"}, 415)
        declared = request.headers.get("content-length", "")
        raw = b"" if declared.isdigit() and int(declared) > MAX_BODY else await request.body()
        if len(raw) > MAX_BODY or (declared.isdigit() and int(declared) > MAX_BODY):  # not read, or too long
            return as_json({"detail": f"the body is over {MAX_BODY:,} bytes"}, 413)
        try:
            options = fold_options(json.loads(raw) if raw.strip() else {})
        except ValueError:
            return as_json({"detail": "the body is not JSON"}, 400)
        if isinstance(options, str):
            return as_json({"detail": options}, 422)
        try:
            result = await run_in_threadpool(fold_now, fold_target(request), options, scoped_user(request))
        except Exception as exc:
            status, message = failed(exc, request.url.path, True)
            return as_json({"detail": message}, status)
        answer = {NO_SESSION: 404, BUSY: 409}.get(result.status, 200)
        return as_json(result.to_dict(), answer)

    router.add_api_route(f"{root}/", index, methods=read, response_class=HTMLResponse)
    if root:
        router.add_api_route(root, index, methods=read, response_class=HTMLResponse)
    router.add_api_route(f"{root}/index.html", index, methods=read, response_class=HTMLResponse)
    router.add_api_route(f"{root}/session/{{session_id:path}}", page, methods=read, response_class=HTMLResponse)
    router.add_api_route(f"{root}/sessions", sessions, methods=read)
    router.add_api_route(f"{root}/sessions/{{session_id:path}}", session, methods=read)
    if write:
        router.add_api_route(f"{root}/sessions/{{session_id:path}}{FOLD}", fold, methods=["POST"])
    return router
