"""``agno-compression serve``: a small read-only viewer of a database's sessions, and the pages every viewer shows.

``/`` lists the sessions, newest first, searchable (``?q=``, no script needed); ``/session/<id>`` is the same page
``report`` writes; ``/sessions`` and ``/sessions/<id>`` are the same as JSON. The routes are ``viewer_router``'s
(``_router``: one implementation, also mounted in an AgentOS app), served here by uvicorn on one FastAPI app that
adds what a server of its own owes: every answer, an unknown page's or a refused method's too, carries the headers
of ``_http`` and is refused (421) under a ``Host`` that is not one of where it listens; its log lines show request
text through ``visible_line``. The database is opened read-only for every request (a SQLite file without leaving a
side file) and closed after it, so the list follows what agents write meanwhile.
"""

from __future__ import annotations

import logging
import socket
import sys
import threading
from http import HTTPStatus
from typing import Any

import typer

from .._databases import fail, source_label
from .._visible import visible_line
from ._http import HEADERS, REFUSED, WILDCARDS, allowed_hosts, host_allowed, host_name
from ._router import viewer_router
from ._site import error_page

log = logging.getLogger("agno_compression")


def machine_names() -> list[str]:
    """This machine's own names, which a viewer listening on every interface answers to besides its addresses."""
    return [n for n in (socket.gethostname(), socket.getfqdn()) if n]


def viewer_app(spec: str, *, schema: str | None = None, host: str = "127.0.0.1") -> Any:
    """The FastAPI app ``serve`` runs: ``viewer_router``'s routes at ``/``, and for every other answer (an unknown
    page, a refused method, an error) the same page, headers and ``Host`` rule."""
    from fastapi import FastAPI, Request
    from fastapi.responses import HTMLResponse
    from starlette.exceptions import HTTPException

    every_interface = host_name(host) in WILDCARDS
    allowed = allowed_hosts(host, machine_names() if every_interface else ())
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    app.include_router(
        viewer_router(spec, prefix="", schema=schema, hosts=allowed, any_address=every_interface, authenticate=False)
    )

    def page(status: int, message: str, headers: Any = None) -> HTMLResponse:
        code = HTTPStatus(status)
        return HTMLResponse(error_page(code, message), status_code=status, headers={**(headers or {}), **HEADERS})

    @app.exception_handler(HTTPException)
    async def _error(request: Request, exc: HTTPException) -> HTMLResponse:
        if exc.status_code == HTTPStatus.METHOD_NOT_ALLOWED:
            return page(exc.status_code, "read-only", exc.headers)
        if exc.status_code == HTTPStatus.NOT_FOUND and exc.detail == "Not Found":  # no route: name the path
            return page(exc.status_code, f"no page {request.url.path}")
        return page(exc.status_code, str(exc.detail), exc.headers)

    @app.middleware("http")
    async def _guard_and_log(request: Request, call_next: Any) -> Any:
        if not host_allowed(request.headers.get("host"), allowed, every_interface=every_interface):
            # another name for this address: a page of that name must not read the sessions (DNS rebinding)
            response: Any = page(REFUSED, "this viewer answers only to the names of where it listens")
        else:
            response = await call_next(request)
            for name, value in HEADERS.items():
                response.headers[name] = value
        raw = request.scope.get("raw_path") or request.url.path.encode()
        target = raw.decode("latin-1") + (f"?{request.url.query}" if request.url.query else "")
        client = request.client.host if request.client else "-"
        line = f'"{request.method} {target} HTTP/{request.scope.get("http_version", "1.1")}" {response.status_code}'
        sys.stderr.write(f"{client} {visible_line(line)}\n")
        return response

    return app


class ViewerServer:
    """A viewer listening on ``host:port`` (bound when made, so a taken port fails at once), served by uvicorn:
    ``serve_forever`` until ``shutdown``; ``server_address`` is where it listens (port 0: the one it got)."""

    def __init__(self, app: Any, host: str, port: int) -> None:
        import uvicorn

        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        self.socket = socket.socket(family, kind, proto)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind(address)
            self.socket.listen(128)
        except OSError:
            self.socket.close()
            raise
        self.server_address = self.socket.getsockname()
        config = uvicorn.Config(
            app, log_level="warning", access_log=False, lifespan="off", ws="none", server_header=False
        )
        self.server = uvicorn.Server(config)
        self._done = threading.Event()

    def serve_forever(self) -> None:
        try:
            self.server.run(sockets=[self.socket])
        finally:
            self._done.set()

    def shutdown(self) -> None:
        self.server.should_exit = True
        self._done.wait(30)

    def server_close(self) -> None:
        self.socket.close()


def make_server(spec: str, *, schema: str | None = None, host: str = "127.0.0.1", port: int = 8321) -> ViewerServer:
    """A server (not started) for the sessions of ``spec``; ``server.server_address`` has the port it got."""
    return ViewerServer(viewer_app(spec, schema=schema, host=host), host, port)


def serve(spec: str, *, schema: str | None = None, host: str = "127.0.0.1", port: int = 8321) -> None:
    """Serve until interrupted (Ctrl+C)."""
    try:
        server = make_server(spec, schema=schema, host=host, port=port)
    except ImportError as exc:
        raise fail(f"serve needs FastAPI and uvicorn ({exc}); pip install 'agno-compression[viewer]'") from exc
    except OSError as exc:
        raise fail(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from exc
    bound_host, bound_port = server.server_address[:2]
    where = f"http://{bound_host}:{bound_port}/"
    typer.echo(visible_line(f"Serving the sessions of {source_label(spec)} at {where} (read-only; Ctrl+C stops)"))
    if bound_host not in ("127.0.0.1", "::1", "localhost"):
        typer.echo(visible_line(f"Note: --host {host} lets other machines read these sessions."), err=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
