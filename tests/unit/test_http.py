"""The HTTP rules of a session viewer (``_http``): the ``Host`` names it answers and the headers of every answer."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agno_compression.viewer._http import CSP, HEADERS, LOOPBACK, allowed_hosts, host_allowed, host_name


def test_a_host_header_is_compared_without_port_case_or_trailing_dot() -> None:
    assert host_name("LocalHost:8321") == "localhost"
    assert host_name("127.0.0.1.:80") == "127.0.0.1"
    assert host_name("[::1]:8321") == "[::1]" and host_name("[::1]") == "[::1]"
    assert host_name("::1") == "[::1]", "--host ::1 names what a Host header spells [::1]"
    assert host_name(" Example.COM ") == "example.com"


def test_only_the_loopback_names_and_the_host_given() -> None:
    loopback = allowed_hosts("127.0.0.1")
    assert loopback == LOOPBACK == frozenset({"127.0.0.1", "localhost", "[::1]"})
    for good in ("127.0.0.1:8321", "localhost", "localhost:1", "[::1]:8321", "LOCALHOST."):
        assert host_allowed(good, loopback), good
    for bad in ("evil.example", "127.0.0.1.evil.example", "localhost.evil.example:8321", "10.0.0.5", "", " ", None):
        assert not host_allowed(bad, loopback), bad
    named = allowed_hosts("viewer.lan")
    assert host_allowed("viewer.lan:8321", named) and host_allowed("localhost", named)
    assert not host_allowed("evil.example", named)


def test_every_interface_answers_addresses_and_the_machines_names_only() -> None:
    allowed = allowed_hosts("0.0.0.0", ["build-box", "build-box.example.org"])
    assert host_allowed("192.168.1.20:8321", allowed, every_interface=True)
    assert host_allowed("[fe80::1]:8321", allowed, every_interface=True)
    assert host_allowed("build-box.example.org", allowed, every_interface=True)
    assert not host_allowed("evil.example", allowed, every_interface=True)
    assert not host_allowed("192.168.1.20", allowed), "an address is not enough when listening on one interface"


@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40))
def test_a_name_outside_the_list_is_never_answered(name: str) -> None:
    allowed = allowed_hosts("127.0.0.1")
    assert host_allowed(name, allowed) == (name.strip() != "" and host_name(name) in LOOPBACK)


def test_every_answer_refuses_framing_sniffing_and_referrers() -> None:
    assert "frame-ancestors 'none'" in CSP and "script-src" not in CSP and "default-src 'none'" in CSP
    assert HEADERS["Content-Security-Policy"] == CSP
    assert HEADERS["X-Frame-Options"] == "DENY"
    assert HEADERS["X-Content-Type-Options"] == "nosniff"
    assert HEADERS["Referrer-Policy"] == "no-referrer"
