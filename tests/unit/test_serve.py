"""``agno-compression serve`` over HTTP: the sessions of a database, newest first and searchable, each one's page;
read-only and on 127.0.0.1 unless told otherwise. (tests/browser/ drives it from Chromium.)"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from typer.testing import CliRunner

from agno_compression._cli import app
from agno_compression.testing import Reply, ScriptedModel
from agno_compression.viewer._serve import make_server
from tests.helpers import DbTarget
from tests.scenarios import multi_run_session


@contextmanager
def serving(spec: str, schema: str | None = None, host: str = "127.0.0.1") -> Iterator[str]:
    """``serve`` of ``spec`` on a free port, listening where ``host`` says, in a thread."""
    server = make_server(spec, schema=schema, host=host, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def get(url: str, method: str = "GET") -> tuple[int, str, Any]:
    """Status, body and headers (looked up case-insensitively, as HTTP names them)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=60) as answer:
            return answer.status, answer.read().decode("utf-8"), answer.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8"), exc.headers


def _chat(db: object, session_id: str, text: str) -> None:
    Agent(model=ScriptedModel(script=lambda m, i: Reply(text="ok")), db=db, session_id=session_id, telemetry=False).run(
        text
    )


@pytest.fixture(scope="module")
def three_sessions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Sessions written a second apart (agno keeps whole seconds): ops-review (with folds), then two chats."""
    path = tmp_path_factory.mktemp("serve") / "agent.db"
    multi_run_session(str(path), runs=2)
    db = SqliteDb(db_file=str(path))
    time.sleep(1.1)
    _chat(db, "weekly <sync> & notes", "Summarize the weekly sync.")
    time.sleep(1.1)
    _chat(db, "newest", "Plan the release.")
    db.db_engine.dispose()
    return path


def test_the_list_is_newest_first_and_searchable(three_sessions: Path) -> None:
    with serving(str(three_sessions)) as base:
        status, page, headers = get(base + "/")
        assert status == 200 and headers["Content-Type"].startswith("text/html")
        assert "default-src 'none'" in headers["Content-Security-Policy"]
        order = [page.index(f'data-session="{s}"') for s in ("newest", "weekly &lt;sync&gt; &amp; notes", "ops-review")]
        assert order == sorted(order), "newest first"
        assert "3 sessions" in page
        _, found, _ = get(base + "/?q=" + quote("WEEKLY sync"))
        assert "weekly &lt;sync&gt; &amp; notes" in found and "ops-review" not in found and "1 of 3 sessions" in found
        _, by_request, _ = get(base + "/?q=release")
        assert 'data-session="newest"' in by_request and "ops-review" not in by_request
        _, none, _ = get(base + "/?q=nothing-like-this")
        assert "No session matches" in none


def test_each_session_opens_on_the_page_report_writes(three_sessions: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert (
        CliRunner()
        .invoke(app, ["report", "--db", str(three_sessions), "--session", "ops-review", "--out", str(out)])
        .exit_code
        == 0
    )
    with serving(str(three_sessions)) as base:
        _, listing, _ = get(base + "/")
        assert 'href="/session/weekly%20%3Csync%3E%20%26%20notes"' in listing
        status, page, _ = get(base + "/session/ops-review")
        assert status == 200

        tiles = '<section class="tiles"'  # the header differs: a link back to the list, the time it was made
        written = out.read_text(encoding="utf-8")
        assert page[page.index(tiles) :] == written[written.index(tiles) :]
        assert '<a href="/">All sessions</a>' in page
        status, odd, _ = get(base + "/session/" + quote("weekly <sync> & notes", safe=""))
        assert status == 200 and "weekly &lt;sync&gt; &amp; notes" in odd


def test_the_pages_and_json_name_the_database_never_the_servers_directory(three_sessions: Path) -> None:
    directory = str(three_sessions.parent)
    with serving(str(three_sessions)) as base:
        for path in ("/", "/sessions", "/session/ops-review", "/sessions/ops-review"):
            status, body, _ = get(base + path)
            assert status == 200 and directory not in body, path
        _, listing, _ = get(base + "/sessions")
        assert json.loads(listing)["source"] == three_sessions.name


def test_unknown_pages_are_404_and_writes_are_refused(three_sessions: Path) -> None:
    with serving(str(three_sessions)) as base:
        assert get(base + "/session/nope")[0] == 404
        assert get(base + "/session/%FF%ED%A0%80")[0] == 404, "bytes that are no UTF-8: no such session"
        assert get(base + "/etc/passwd")[0] == 404
        assert get(base + "/", method="POST")[0] == 405
        assert get(base + "/session/ops-review", method="DELETE")[0] == 405
        status, body, headers = get(base + "/", method="HEAD")
        assert status == 200 and body == "" and int(headers["Content-Length"]) > 0


def test_it_listens_on_127_0_0_1_unless_told(three_sessions: Path) -> None:
    server = make_server(str(three_sessions), port=0)
    try:
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.server_close()
    assert "127.0.0.1" in CliRunner().invoke(app, ["serve", "--help"], env={"COLUMNS": "200"}).stdout


def test_a_bad_database_fails_before_listening(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["serve", "--db", str(tmp_path / "missing.db"), "--port", "0"])
    assert result.exit_code == 2 and "no such file" in result.stderr
    assert CliRunner().invoke(app, ["serve", "--db", "x.db", "--port", "70000"]).exit_code == 2


def test_it_serves_a_postgresql_database(postgres_db: DbTarget) -> None:
    db = postgres_db.open()
    _chat(db, "pg-session", "Hello from PostgreSQL.")
    with serving(postgres_db.url, schema=postgres_db.schema) as base:
        _, listing, _ = get(base + "/")
        assert 'data-session="pg-session"' in listing
        assert get(base + "/session/pg-session")[0] == 200


# --- the trust boundary: only this viewer's names, no framing, a log that shows request text as text -------------

import http.client  # noqa: E402
import socket  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402

from agno_compression.viewer._http import HEADERS  # noqa: E402
from tests.strategies import HOSTILE_TEXT, examples  # noqa: E402
from tests.unit.test_visible import ACTED_ON  # noqa: E402


def ask(base: str, path: str = "/", host: str | None = "127.0.0.1", method: str = "GET") -> tuple[int, str, Any]:
    """One request with exactly the ``Host`` header given (``None``: none at all), as curl -H 'Host: ...' sends."""
    port = int(base.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.putrequest(method, path, skip_host=True)
        if host is not None:
            conn.putheader("Host", host)
        conn.endheaders()
        answer = conn.getresponse()
        return answer.status, answer.read().decode("utf-8"), answer.headers
    finally:
        conn.close()


def test_another_host_name_gets_no_session_data(three_sessions: Path) -> None:
    with serving(str(three_sessions)) as base:
        port = base.rsplit(":", 1)[1]
        for host in ("127.0.0.1", f"127.0.0.1:{port}", f"localhost:{port}", "LOCALHOST", f"[::1]:{port}"):
            status, page, _ = ask(base, host=host)
            assert status == 200 and 'data-session="ops-review"' in page, host
        for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1.evil.example:{port}", "", None):
            for path in ("/", "/session/ops-review", "/?q=ops"):
                status, page, headers = ask(base, path, host=host)
                if host is None:  # HTTP/1.1 without a Host at all: the HTTP parser refuses it before the viewer
                    assert status == 400 and "data-session" not in page, (path, status)
                    continue
                assert status == 421, (host, path, status)
                assert "ops-review" not in page and "newest" not in page and "data-session" not in page
                assert headers["X-Frame-Options"] == "DENY"
        assert ask(base, "/", host="evil.example", method="HEAD")[0] == 421


def test_every_answer_cannot_be_framed_sniffed_or_leak_a_referrer(three_sessions: Path) -> None:
    with serving(str(three_sessions)) as base:
        answers = [
            ask(base, "/"),
            ask(base, "/session/ops-review"),
            ask(base, "/session/nope"),
            ask(base, "/", method="POST"),
            ask(base, "/", host="evil.example"),
        ]
        assert [status for status, _, _ in answers] == [200, 200, 404, 405, 421]
        for _, _, headers in answers:
            for name, value in HEADERS.items():
                assert headers[name] == value, name
            assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]


def test_a_host_option_adds_its_name_and_every_interface_answers_addresses(three_sessions: Path) -> None:
    with serving(str(three_sessions), host="localhost") as base:
        assert ask(base, host="localhost")[0] == 200 and ask(base, host="evil.example")[0] == 421
    with serving(str(three_sessions), host="0.0.0.0") as base:
        assert ask(base, host="192.168.7.20:8321")[0] == 200, "a browser on the network asks by address"
        assert ask(base, host=socket.gethostname())[0] == 200, "or by this machine's name"
        assert ask(base, host="evil.example")[0] == 421


def _raw_request(base: str, target: bytes) -> None:
    port = int(base.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        while sock.recv(65536):
            pass


def test_the_log_shows_request_text_as_text(three_sessions: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with serving(str(three_sessions)) as base:
        # raw controls in a request line: the HTTP parser refuses the request (uvicorn logs that, without its text)
        _raw_request(base, "/\x1b[2J\x1b]0;pwned\x07/exe.\u202etxt/\x9b31m".encode())
        # the same, percent-encoded as a browser sends it: logged as it was sent, never decoded into controls
        _raw_request(base, b"/%1b[2J%1b]0;pwned%07/exe.%E2%80%AEtxt/%C2%9B31m")
    log = capsys.readouterr().err
    assert ACTED_ON.search(log) is None, repr(log)
    assert "Invalid HTTP request" in log
    assert '"GET /%1b[2J%1b]0;pwned%07/exe.%E2%80%AEtxt/%C2%9B31m HTTP/1.1" 404' in log


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(HOSTILE_TEXT)
def test_no_request_puts_a_raw_control_in_the_log(
    three_sessions: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    target = b"/" + text.encode("utf-8", "surrogatepass").replace(b"\r", b"").replace(b"\n", b"").replace(b" ", b"+")
    with serving(str(three_sessions)) as base:
        _raw_request(base, target)
    log = capsys.readouterr().err
    assert log and ACTED_ON.search(log) is None, repr(log)
