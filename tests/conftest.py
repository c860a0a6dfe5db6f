"""Shared fixtures. Real model requests are impossible here: only loopback connections are allowed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agno_compression.testing import block_network, drop_api_keys
from tests.helpers import DbTarget, fresh_namespace
from tests.scenarios import Scenario, corpus_session, multi_run_session, team_session

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
TRAJECTORIES = SHARED / "trajectories"

drop_api_keys()
os.environ.setdefault("AGNO_TELEMETRY", "false")
block_network("tests may not connect to {host}: only loopback is allowed")


@pytest.fixture(scope="session")
def trajectories_dir() -> Path:
    if not TRAJECTORIES.is_dir():
        pytest.skip(f"shared trajectories not found at {TRAJECTORIES} (a fresh clone has no ../shared)")
    return TRAJECTORIES


@pytest.fixture
def postgres_db() -> Iterator[DbTarget]:
    """A fresh schema on the local PostgreSQL, dropped afterwards (a skip with the reason when unreachable)."""
    with fresh_namespace("postgres") as target:
        yield target


@pytest.fixture
def mysql_db() -> Iterator[DbTarget]:
    """A fresh database on the local MySQL/MariaDB, dropped afterwards (a skip with the reason when unreachable)."""
    with fresh_namespace("mysql") as target:
        yield target


@pytest.fixture
def redis_db() -> Iterator[DbTarget]:
    """A fresh key prefix on the local Redis, its keys deleted afterwards (a skip with the reason when unreachable)."""
    with fresh_namespace("redis") as target:
        yield target


@pytest.fixture(scope="session")
def multi_scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    """A three-run agent session on SQLite with known fold positions (tests/scenarios.py)."""
    return multi_run_session(str(tmp_path_factory.mktemp("multi") / "multi.db"))


@pytest.fixture(scope="session")
def team_scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    """A Team session on SQLite whose leader folds, with known fold positions (tests/scenarios.py)."""
    return team_session(str(tmp_path_factory.mktemp("team") / "team.db"))


@pytest.fixture(scope="session")
def corpus_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite session whose agent name, user message, model text and tool outputs carry the hostile corpus
    (tests/scenarios.py: escapes, bidi controls, NUL, markup, a 2 MB line, lone surrogates)."""
    from agno.db.sqlite import SqliteDb

    path = tmp_path_factory.mktemp("corpus") / "corpus.db"
    corpus_session(SqliteDb(db_file=str(path)))
    return path
