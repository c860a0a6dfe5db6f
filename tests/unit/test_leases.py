"""Session leases (``_stores._leases``): a fold on request excludes another and sees runs; leases expire."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agno_compression import SQLAlchemyStore
from agno_compression._stores._leases import FOLD, RUN, Leases, LocalLeases, leases_of


@pytest.fixture(params=["local", "sqlite"])
def leases(request: pytest.FixtureRequest, tmp_path: Path) -> Leases:
    if request.param == "local":
        return LocalLeases()
    return SQLAlchemyStore.from_url(f"sqlite:///{tmp_path / 'l.db'}").leases


def test_one_fold_at_a_time_and_runs_alongside(leases: Leases) -> None:
    assert leases.take("s", FOLD, FOLD, 30)
    assert not leases.take("s", FOLD, FOLD, 30)
    assert leases.take("other", FOLD, FOLD, 30), "sessions are apart"
    assert leases.take("s", "run-1", RUN, 30) and leases.take("s", "run-2", RUN, 30)
    assert leases.take("s", "run-1", RUN, 30), "a run that runs again renews its lease"
    assert sorted(leases.live("s", RUN)) == ["run-1", "run-2"] and leases.live("s", FOLD) == [FOLD]
    leases.release("s", FOLD)
    leases.release("s", "run-1")
    assert leases.live("s", FOLD) == [] and leases.live("s", RUN) == ["run-2"]
    assert leases.take("s", FOLD, FOLD, 30)


def test_a_lease_of_a_process_that_died_expires(leases: Leases) -> None:
    assert leases.take("s", FOLD, FOLD, 0.05) and leases.take("s", "run", RUN, 0.05)
    time.sleep(0.1)
    assert leases.live("s", RUN) == [] and leases.live("s", FOLD) == []
    assert leases.take("s", FOLD, FOLD, 30), "an expired fold lease does not hold the session"


def test_a_sql_store_shares_its_leases_and_others_get_this_process_s(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    one, two = SQLAlchemyStore.from_url(url), SQLAlchemyStore.from_url(url)
    assert leases_of(one).take("s", FOLD, FOLD, 30)
    assert not leases_of(two).take("s", FOLD, FOLD, 30), "another store on the same database sees it"
    assert isinstance(leases_of(object()), LocalLeases)
