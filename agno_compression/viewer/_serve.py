"""``agno-compression serve``: a small read-only viewer of a database's sessions (the standard library's server).

``/`` lists the sessions, newest first, searchable (``?q=``, no script needed); ``/session/<id>`` is the same page
``report`` writes. The database is opened read-only for every request (a SQLite file without leaving a side file)
and closed after it, so the list follows what agents write meanwhile. Only GET and HEAD are served, only to the
``Host`` names of where it listens, with the headers of ``_http`` (no framing, no sniffing, no referrer); its log
lines show request text through ``visible_line``.
"""

from __future__ import annotations

import logging
import socket
import sys
from datetime import datetime, timezone
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

import typer

from .._databases import close_db, fail, open_db, reading, source_label
from .._visible import visible_line
from ._http import HEADERS, REFUSED, WILDCARDS, allowed_hosts, host_allowed, host_name
from ._page import e, plural, shell
from ._report import report_page, session_rows

log = logging.getLogger("agno_compression")


def _matches(row: dict[str, Any], query: str) -> bool:
    words = query.lower().split()
    text = " ".join(str(row.get(k, "")) for k in ("session_id", "owner", "request")).lower()
    return all(w in text for w in words)


def _when(stamp: Any) -> str:
    if not isinstance(stamp, (int, float)) or stamp <= 0:
        return "-"
    return datetime.fromtimestamp(stamp, timezone.utc).strftime("%Y-%m-%d %H:%M")


def index_page(rows: list[dict[str, Any]], query: str, source: str) -> str:
    """The list of sessions (``rows`` from ``inspect``'s listing, newest first), filtered by ``query``."""
    shown = [r for r in rows if _matches(r, query)] if query.strip() else rows
    body = []
    for r in shown:
        # a lone surrogate in an id has no UTF-8: its bytes go as they are, and come back the same way
        link = "/session/" + quote(str(r["session_id"]), safe="", errors="surrogatepass")
        body.append(
            f'<tr data-session="{e(r["session_id"])}"><td class="text mono"><a href="{e(link)}">{e(r["session_id"])}'
            f'</a></td><td class="text">{e(r["owner"])}</td><td class="text">{e(r.get("request", ""))}</td>'
            f'<td class="num">{r["runs"]:,}</td><td class="num">{r["folds"]:,}</td>'
            f'<td class="num">{r["tokens_saved"]:,}</td><td class="num">{_when(r.get("updated_at"))}</td></tr>'
        )
    matched = f"{len(shown):,} of {plural(len(rows), 'session')} match{'es' if len(shown) == 1 else ''}"
    found = matched if query.strip() else plural(len(rows), "session")
    table = (
        '<table class="sessions"><thead><tr><th>session</th><th>owner</th><th>first request</th>'
        '<th class="num">runs</th><th class="num">folds</th><th class="num">tokens saved</th>'
        f'<th class="num">updated (UTC)</th></tr></thead><tbody>{"".join(body)}</tbody></table>'
        if shown
        else '<p class="muted">No session matches.</p>'
    )
    return shell(
        f"Sessions · {source} · agno-compression",
        '<header><div class="eyebrow">agno-compression · sessions</div>'
        f'<h1>Sessions in <span class="id">{e(source)}</span></h1>'
        f'<p class="meta">{e(found)} · newest first · read-only</p></header><section class="card">'
        '<form class="search" method="get" action="/" role="search"><label class="muted" for="q">Search</label>'
        f'<input id="q" name="q" value="{e(query)}" placeholder="session id, owner or request" autofocus>'
        f'<button type="submit">Search</button></form>{table}</section>',
    )


def error_page(status: HTTPStatus, message: str) -> str:
    return shell(
        f"{status.value} {status.phrase}",
        f'<header><div class="eyebrow"><a href="/">All sessions</a></div><h1>{status.value} {e(status.phrase)}</h1>'
        f'<p class="meta">{e(message)}</p></header>',
    )


class Viewer:
    """The pages of one database, each read in a fresh read-only connection."""

    def __init__(self, spec: str, schema: str | None = None) -> None:
        self.spec = spec
        self.schema = schema
        self.source = source_label(spec)

    def index(self, query: str) -> str:
        with reading(self.spec):
            db = open_db(self.spec, schema=self.schema)
            try:
                return index_page(session_rows(db), query, self.source)
            finally:
                close_db(db)

    def session(self, session_id: str) -> str:
        with reading(self.spec):
            db = open_db(self.spec, schema=self.schema)
            try:
                return report_page(db, session_id, self.spec, back="/")
            finally:
                close_db(db)


def _session_id(quoted: str) -> str:
    """The id a ``/session/`` link names: ``index_page`` quotes a lone surrogate's bytes as they are."""
    try:
        return unquote(quoted, errors="surrogatepass")
    except UnicodeDecodeError:  # bytes of no id of ours (not UTF-8): an unknown session
        return unquote(quoted)


def machine_names() -> list[str]:
    """This machine's own names, which a viewer listening on every interface answers to besides its addresses."""
    return [n for n in (socket.gethostname(), socket.getfqdn()) if n]


def handler_for(viewer: Viewer, host: str = "127.0.0.1") -> type[BaseHTTPRequestHandler]:
    """A request handler class serving ``viewer``'s pages to requests for ``host`` (where it listens)."""
    every_interface = host_name(host) in WILDCARDS
    allowed = allowed_hosts(host, machine_names() if every_interface else ())

    class Handler(BaseHTTPRequestHandler):
        server_version = "agno-compression"

        def do_GET(self) -> None:
            self._answer(send_body=True)

        def do_HEAD(self) -> None:
            self._answer(send_body=False)

        def _refuse(self) -> None:
            self._send(HTTPStatus.METHOD_NOT_ALLOWED, error_page(HTTPStatus.METHOD_NOT_ALLOWED, "read-only"), True)

        do_POST = do_PUT = do_DELETE = do_PATCH = _refuse

        def _answer(self, send_body: bool) -> None:
            if not host_allowed(self.headers.get("Host"), allowed, every_interface=every_interface):
                # another name for this address: a page of that name must not read the sessions (DNS rebinding)
                message = "this viewer answers only to the names of where it listens"
                self._send(REFUSED, error_page(REFUSED, message), send_body)
                return
            url = urlsplit(self.path)
            status, page = HTTPStatus.OK, ""
            try:
                if url.path in ("/", "/index.html"):
                    page = viewer.index(parse_qs(url.query).get("q", [""])[0])
                elif url.path.startswith("/session/"):
                    page = viewer.session(_session_id(url.path[len("/session/") :]))
                else:
                    status, page = HTTPStatus.NOT_FOUND, error_page(HTTPStatus.NOT_FOUND, f"no page {url.path}")
            except typer.Exit:  # the CLI's one-line errors (on stderr): an unknown session, an unreadable database
                status = HTTPStatus.NOT_FOUND if url.path.startswith("/session/") else HTTPStatus.INTERNAL_SERVER_ERROR
                page = error_page(status, "see the server's terminal for the reason")
            except Exception as exc:  # a bug must not end the server: one line here, the page says 500
                log.exception("agno-compression serve: %s failed", visible_line(url.path))
                status = HTTPStatus.INTERNAL_SERVER_ERROR
                page = error_page(status, f"{type(exc).__name__}; see the server's terminal")
            self._send(status, page, send_body)

        def _send(self, status: HTTPStatus, page: str, send_body: bool) -> None:
            data = page.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in HEADERS.items():
                self.send_header(name, value)
            self.end_headers()
            if send_body:
                self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            sys.stderr.write(f"{self.address_string()} {visible_line(format % args)}\n")

    return Handler


def make_server(spec: str, *, schema: str | None = None, host: str = "127.0.0.1", port: int = 8321) -> Any:
    """A server (not started) for the sessions of ``spec``; ``server.server_address`` has the port it got."""
    server = ThreadingHTTPServer((host, port), handler_for(Viewer(spec, schema), host))
    server.daemon_threads = True
    return server


def serve(spec: str, *, schema: str | None = None, host: str = "127.0.0.1", port: int = 8321) -> None:
    """Serve until interrupted (Ctrl+C)."""
    try:
        server = make_server(spec, schema=schema, host=host, port=port)
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
