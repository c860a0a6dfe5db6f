"""Redis for the storage tests: the local server when reachable, a clear skip when not."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

REDIS_URL = os.environ.get("AGNO_COMPRESSION_REDIS_URL", "redis://127.0.0.1:6379/0")


def redis_unavailable() -> str | None:
    """Why Redis cannot be used here, or None when it can."""
    try:
        import redis
    except ImportError:
        return "redis is not installed (pip install 'agno-compression[redis]')"
    try:
        client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1)
        client.ping()
        client.close()
    except Exception as exc:
        return f"Redis is not reachable at {REDIS_URL} ({exc})"
    return None


@dataclass(frozen=True)
class RedisTarget:
    url: str
    prefix: str
    """agno's ``db_prefix``, unique per test: every key of the test starts with it."""


@pytest.fixture
def redis_prefix() -> Iterator[RedisTarget]:
    """A unique key prefix on the local Redis; its keys are deleted afterwards."""
    reason = redis_unavailable()
    if reason:
        pytest.skip(reason)
    import redis

    prefix = f"agc_test_{uuid.uuid4().hex[:12]}"
    yield RedisTarget(REDIS_URL, prefix)
    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()
