"""The viewer's site: the list of sessions, the error page, and reading one database for each request (``Viewer``).
What ``viewer_router`` answers with; the session page itself is ``_page``'s."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from http import HTTPStatus
from typing import Any
from urllib.parse import quote, unquote

from .._databases import close_db, database_name, open_db, reading
from ._page import e, plural, shell
from ._report import report_page, session_json, session_rows


def _matches(row: dict[str, Any], query: str) -> bool:
    words = query.lower().split()
    text = " ".join(str(row.get(k, "")) for k in ("session_id", "owner", "request")).lower()
    return all(w in text for w in words)


def _when(stamp: Any) -> str:
    if not isinstance(stamp, (int, float)) or stamp <= 0:
        return "-"
    return datetime.fromtimestamp(stamp, timezone.utc).strftime("%Y-%m-%d %H:%M")


def index_page(rows: list[dict[str, Any]], query: str, source: str, root: str = "") -> str:
    """The list of sessions (``rows`` from ``inspect``'s listing, newest first), filtered by ``query``; ``root`` is
    where the viewer's routes are mounted (``""``: at ``/``)."""
    shown = [r for r in rows if _matches(r, query)] if query.strip() else rows
    body = []
    for r in shown:
        # a lone surrogate in an id has no UTF-8: its bytes go as they are, and come back the same way
        link = f"{root}/session/" + quote(str(r["session_id"]), safe="", errors="surrogatepass")
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
        f'<form class="search" method="get" action="{e(root)}/" role="search">'
        '<label class="muted" for="q">Search</label>'
        f'<input id="q" name="q" value="{e(query)}" placeholder="session id, owner or request" autofocus>'
        f'<button type="submit">Search</button></form>{table}</section>',
    )


def error_page(status: HTTPStatus, message: str, root: str = "") -> str:
    return shell(
        f"{status.value} {status.phrase}",
        f'<header><div class="eyebrow"><a href="{e(root)}/">All sessions</a></div>'
        f"<h1>{status.value} {e(status.phrase)}</h1>"
        f'<p class="meta">{e(message)}</p></header>',
    )


class Viewer:
    """The pages and JSON of one database: a ``--db`` spec opened read-only for each request (and closed after it),
    or an agno db object used as it is (an AgentOS app's own db)."""

    def __init__(self, db: Any, schema: str | None = None) -> None:
        self.spec = db if isinstance(db, str) else None
        self.db = None if isinstance(db, str) else db
        self.schema = schema
        self.source = database_name(db) if isinstance(db, str) else _db_label(db)
        """The database as the pages and JSON name it (a file's name, never its directory)."""

    @contextmanager
    def opened(self) -> Iterator[Any]:
        """The agno db for one request; database errors become the CLI's one-line errors (``typer.Exit``)."""
        with reading(self.spec or self.source):
            if self.db is not None:
                yield self.db
                return
            assert self.spec is not None
            db = open_db(self.spec, schema=self.schema)
            try:
                yield db
            finally:
                close_db(db)

    # ``user_id``: whose sessions the caller may read (AgentOS's user isolation, ``_access``); None: every user's

    def rows(self, user_id: str | None = None) -> list[dict[str, Any]]:
        with self.opened() as db:
            return session_rows(db, user_id=user_id)

    def index(self, query: str, root: str = "", user_id: str | None = None) -> str:
        return index_page(self.rows(user_id), query, self.source, root)

    def session(self, session_id: str, root: str = "", user_id: str | None = None) -> str:
        with self.opened() as db:
            spec = self.spec or self.source
            return report_page(db, session_id, spec, back=f"{root}/", label=self.source, user_id=user_id)

    def session_data(self, session_id: str, user_id: str | None = None) -> dict[str, Any]:
        with self.opened() as db:
            return session_json(db, session_id, self.spec or self.source, with_stats=True, user_id=user_id)


def _db_label(db: Any) -> str:
    """How a page names an agno db object: its file's or its URL's database name, or its class."""
    where = getattr(db, "db_file", None) or getattr(db, "db_url", None)
    return database_name(str(where)) if where else type(db).__name__


def session_id_of(quoted: str) -> str:
    """The id a ``/session/`` link names: ``index_page`` quotes a lone surrogate's bytes as they are."""
    try:
        return unquote(quoted, errors="surrogatepass")
    except UnicodeDecodeError:  # bytes of no id of ours (not UTF-8): an unknown session
        return unquote(quoted)
