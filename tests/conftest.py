"""Shared fixtures. Real model requests are impossible here: only loopback connections are allowed."""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
TRAJECTORIES = SHARED / "trajectories"

for _key in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
    os.environ.pop(_key, None)
os.environ.setdefault("AGNO_TELEMETRY", "false")

_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: object) -> None:
    host = address[0] if isinstance(address, tuple) else None
    if isinstance(host, str):
        try:
            allowed = ipaddress.ip_address(host).is_loopback
        except ValueError:
            allowed = host == "localhost"
        if not allowed:
            raise ConnectionRefusedError(f"tests may not connect to {host}: only loopback is allowed")
    _real_connect(self, address)  # type: ignore[arg-type]


socket.socket.connect = _loopback_only  # type: ignore[method-assign]


@pytest.fixture(scope="session")
def trajectories_dir() -> Path:
    if not TRAJECTORIES.is_dir():
        pytest.skip(f"shared trajectories not found at {TRAJECTORIES} (a fresh clone has no ../shared)")
    return TRAJECTORIES
