"""The rules a viewer of sessions follows over HTTP (``serve``; any other server that shows the same pages): which
``Host`` values it answers and the headers every answer carries. Pure: no server, no socket.

A page on another site can point its own domain name at 127.0.0.1 (DNS rebinding) and read whatever a local server
answers, as the same origin. It cannot make the browser send a ``Host`` other than its own name, so a viewer answers
only the names of where it listens: the loopback names, the ``--host`` given and, listening on every interface,
a plain IP address or the machine's own names. Answers also refuse to be framed, sniffed or to leak a referrer.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Iterable
from http import HTTPStatus

PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'self'"
"""What a session page may load: its inline style and images, nothing else; no script at all."""
CSP = f"{PAGE_CSP}; frame-ancestors 'none'"
"""The page's policy as a header, where ``frame-ancestors`` counts (a ``<meta>`` policy cannot forbid framing)."""
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
"""The headers of every answer, an error's too."""
LOOPBACK = frozenset({"127.0.0.1", "localhost", "[::1]"})
"""How a browser on this machine names it, as a ``Host`` header spells each (an IPv6 address in brackets)."""
WILDCARDS = frozenset({"", "0.0.0.0", "::", "[::]"})
"""``--host`` values that listen on every interface."""
REFUSED = HTTPStatus.MISDIRECTED_REQUEST
"""The answer to a ``Host`` the viewer does not serve (421: this server is not that name)."""


def host_name(value: str) -> str:
    """A host as a ``Host`` header spells it: lower case, no port, no trailing dot, an IPv6 address in brackets."""
    name = value.strip().lower()
    if name.startswith("["):
        name = name[: name.find("]") + 1] if "]" in name else name
    elif name.count(":") == 1:
        name = name.split(":", 1)[0]
    elif name.count(":") > 1:  # an IPv6 address as --host gives it, without brackets or port
        name = f"[{name}]"
    return name.rstrip(".")


def allowed_hosts(host: str, names: Iterable[str] = ()) -> frozenset[str]:
    """The ``Host`` names a viewer listening on ``host`` answers: the loopback names, ``host`` itself and ``names``
    (the machine's own names, for a viewer listening on every interface)."""
    return LOOPBACK | {host_name(host)} | {host_name(n) for n in names}


def _ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


def host_allowed(header: str | None, allowed: Collection[str], *, every_interface: bool = False) -> bool:
    """Whether a request whose ``Host`` header is ``header`` is for this viewer. A missing or empty header is not;
    listening on every interface, a plain IP address is (a rebinding page has a domain name, never an address)."""
    if not header or not header.strip():
        return False
    name = host_name(header)
    return name in allowed or (every_interface and _ip_literal(name))
