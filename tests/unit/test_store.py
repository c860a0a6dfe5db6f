"""SQLAlchemyStore on SQLite files and PostgreSQL; ``filter_folded`` as properties."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agno.models.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, inspect, text

from agno_compression import CompressionRecord, SQLAlchemyStore, StoreError
from agno_compression._plan import SYSTEM_ROLES, filter_folded, is_summary, pair_violations
from agno_compression._sessions import stored_ids_of
from agno_compression._stores import TABLE_NAME, SessionCompression, load_counted
from tests.helpers import DbTarget, db_target
from tests.strategies import conversation, examples


def row(session: str, ids: list[str], summary: str | None = "s", **kw: Any) -> CompressionRecord:
    return CompressionRecord(session_id=session, folded_ids=ids, summary=summary, strategy="extractive", **kw)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SQLAlchemyStore:
    target = db_target(request.param, tmp_path, request, file="store.db")
    return SQLAlchemyStore.from_url(target.url, schema=target.schema)


def test_union_of_rows_and_newest_summary(store: SQLAlchemyStore) -> None:
    assert store.load("s") == SessionCompression(frozenset(), None, 0) and store.events("s") == []  # no table yet
    first = store.record(row("s", ["a", "b"], "first", run_id="r1", tokens_before=900, tokens_after=300))
    second = store.record(
        row("s", ["b", "c"], "second", run_id="r2", summarizer_model="m", summarizer_usage={"input_tokens": 5})
    )
    store.record(row("other", ["z"], "elsewhere"))
    assert second > first
    state = store.load("s")
    assert state.folded_ids == {"a", "b", "c"}
    assert state.summary == "second" and state.folds == 2 and state.newest_id == second
    events = store.events("s")
    assert [e.summary for e in events] == ["first", "second"]
    assert events[0].tokens_before == 900 and events[0].run_id == "r1" and events[0].schema_version == 1
    assert events[1].summarizer_usage == {"input_tokens": 5} and events[1].summarizer_model == "m"


def test_table_creation_is_idempotent(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    for _ in range(3):
        s = SQLAlchemyStore.from_url(url)
        s.ensure_table()
        s.ensure_table()
    s.record(row("s", ["a"]))
    assert inspect(create_engine(url)).has_table(TABLE_NAME)
    assert SQLAlchemyStore.from_url(url).load("s").folded_ids == {"a"}


def test_every_value_is_a_bound_parameter(store: SQLAlchemyStore) -> None:
    nasty = "x'); DROP TABLE agno_compression_events; --"
    store.record(row(nasty, [nasty, 'quote"d'], summary=nasty, run_id=nasty, owner_id=nasty))
    state = store.load(nasty)
    assert state.folded_ids == {nasty, 'quote"d'} and state.summary == nasty
    assert store.load("x").folds == 0


def test_a_store_sees_rows_other_writers_add_after_its_first_load(store: SQLAlchemyStore) -> None:
    """Loads reuse the rows a store parsed before: rows another store (process) appends still count."""
    other = SQLAlchemyStore(store.engine, table_name=store.table.name, schema=store.schema)
    first = store.record(row("s", ["a"], "first", run_id="r1"))
    assert store.load("s").folded_ids == {"a"}
    other.record(row("s", ["b"], "second", run_id="r2"))
    loaded = store.load("s")
    assert loaded.folded_ids == {"a", "b"} and loaded.summary == "second" and loaded.folds == 2
    assert store.load("s", stored_ids=frozenset({"r1"})) == SessionCompression(frozenset({"a"}), "first", 1, first)
    assert store.load("s", stored_ids=frozenset({"r1", "r2"})) == loaded


def test_a_long_session_keeps_one_summary_in_memory(store: SQLAlchemyStore) -> None:
    """A store keeps each session's parsed rows between loads, but only the newest summary: the one a load merges."""
    for i in range(30):
        store.record(row("s", [f"m{i}"], f"summary {i} " * 100, run_id=f"r{i}"))
        assert store.load("s").summary == f"summary {i} " * 100
    kept = [r for r in store._parsed["s"].rows.values() if r[3]]
    assert len(kept) == 1 and kept[0][3].startswith("summary 29 ")
    # a row that does not count (its run was never stored) needs an older summary: read again, not from memory
    counted = store.load("s", stored_ids=frozenset(f"r{i}" for i in range(29)))
    assert counted.summary == "summary 28 " * 100 and counted.folds == 29


def test_a_deleted_row_no_longer_counts(store: SQLAlchemyStore) -> None:
    """Loads reuse the merge of the rows parsed before, but only while the session's rows are the same ones."""
    first = store.record(row("s", ["a"], "first"))
    store.record(row("s", ["b"], "second"))
    assert store.load("s").folded_ids == {"a", "b"}
    with store.engine.begin() as conn:
        conn.execute(store.table.delete().where(store.table.c.id != first))
    assert store.load("s") == SessionCompression(frozenset({"a"}), "first", 1, first)


def test_a_row_deleted_and_replaced_under_its_id_is_read_again(tmp_path: Path) -> None:
    """SQLite reuses the highest id after a delete: the row's created_at tells the new row from the one parsed."""
    store = SQLAlchemyStore.from_url(f"sqlite:///{tmp_path / 'x.db'}")
    store.record(row("s", ["a"], "kept"))
    gone = store.record(row("s", ["b"], "deleted", created_at=1.0))
    assert store.load("s").folded_ids == {"a", "b"}
    with store.engine.begin() as conn:
        conn.execute(text(f"delete from {TABLE_NAME} where id = {gone}"))
    assert store.record(row("s", ["c"], "new", created_at=2.0)) == gone
    loaded = store.load("s")
    assert loaded.folded_ids == {"a", "c"} and loaded.summary == "new"


def test_a_dropped_table_reads_empty_and_the_next_fold_creates_it_again(store: SQLAlchemyStore) -> None:
    store.record(row("s", ["a"]))
    assert store.load("s").folds == 1
    name = f'"{store.schema}".{TABLE_NAME}' if store.schema else TABLE_NAME
    with store.engine.begin() as conn:
        conn.execute(text(f"drop table {name}"))
    fresh = SQLAlchemyStore(store.engine, schema=store.schema)
    empty = SessionCompression(frozenset(), None, 0)
    assert store.load("s") == empty and fresh.load("s") == empty and store.events("s") == []
    fresh.record(row("s", ["b"]))
    assert store.load("s").folded_ids == {"b"}


def test_a_fold_on_a_known_table_is_one_insert(tmp_path: Path) -> None:
    """The table is checked once per process and database: a new store's first fold is its INSERT alone."""
    from sqlalchemy import event

    url = f"sqlite:///{tmp_path / 'x.db'}"
    SQLAlchemyStore.from_url(url).record(row("s", ["a"]))
    writer, reader = SQLAlchemyStore.from_url(url), SQLAlchemyStore.from_url(url)
    statements: list[str] = []
    for store in (writer, reader):
        event.listen(store.engine, "before_cursor_execute", lambda conn, cursor, sql, *rest: statements.append(sql))
    writer.record(row("s", ["b"]))
    assert [s.split()[0] for s in statements] == ["INSERT"], statements
    statements.clear()
    assert reader.load("s").folded_ids == {"a", "b"}
    assert [s.split()[0] for s in statements] == ["SELECT"], statements


def test_bad_table_name_is_rejected(tmp_path: Path) -> None:
    from agno_compression import ConfigError

    with pytest.raises(ConfigError):
        SQLAlchemyStore.from_url(f"sqlite:///{tmp_path / 'x.db'}", table_name="evil; drop")


def test_unreachable_database_raises_store_error() -> None:
    store = SQLAlchemyStore.from_url("postgresql+psycopg://postgres@127.0.0.1:1/none?connect_timeout=2")
    with pytest.raises(StoreError) as info:
        store.record(row("s", ["a"]))
    assert info.value.__cause__ is not None
    with pytest.raises(StoreError):
        store.load("s")


def test_read_only_database_raises_store_error_and_still_loads(tmp_path: Path) -> None:
    """SQLite opened read-only (``mode=ro``): refused even to root, unlike a chmod-ed directory."""
    path = tmp_path / "x.db"
    SQLAlchemyStore.from_url(f"sqlite:///{path}").record(row("s", ["a"], summary="first"))
    read_only = SQLAlchemyStore.from_url(f"sqlite:///file:{path}?mode=ro&uri=true")
    with pytest.raises(StoreError) as info:
        read_only.record(row("s", ["b"]))
    assert "readonly" in str(info.value.__cause__).replace("-", "").replace(" ", "").lower()
    loaded = read_only.load("s")
    assert set(loaded.folded_ids) == {"a"} and loaded.summary == "first", "a failed write leaves no row"


def test_unwritable_location_raises_store_error(tmp_path: Path) -> None:
    """A database path under a regular file can never be created, whoever runs the tests."""
    (tmp_path / "not-a-dir").write_text("a file, not a directory")
    store = SQLAlchemyStore.from_url(f"sqlite:///{tmp_path / 'not-a-dir' / 'x.db'}")
    with pytest.raises(StoreError):
        store.record(row("s", ["a"]))
    with pytest.raises(StoreError, match="cannot read compression records of session 's'"):
        store.load("s")
    with pytest.raises(StoreError, match="cannot read compression records of session 's'"):
        store.events("s")


def test_for_agno_db_needs_a_sql_engine() -> None:
    from agno.db.in_memory import InMemoryDb

    with pytest.raises(StoreError, match="InMemoryDb"):
        SQLAlchemyStore.for_agno_db(InMemoryDb())


def test_for_agno_db_uses_the_postgres_schema(postgres_db: DbTarget) -> None:
    db = postgres_db.open()
    store = SQLAlchemyStore.for_agno_db(db)
    store.record(row("s", ["a"]))
    with store.engine.connect() as conn:
        n = conn.execute(text(f'select count(*) from "{postgres_db.schema}".{TABLE_NAME}')).scalar()
    assert n == 1


# --- filter_folded: pure and pair-safe -------------------------------------------------------------------


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversation(), st.data(), st.one_of(st.none(), st.text(min_size=1, max_size=20)))
def test_filter_folded_properties(msgs: list[Message], data: st.DataObject, summary: str | None) -> None:
    ids = [m.id for m in msgs]
    folded = set(data.draw(st.lists(st.sampled_from(ids), unique=True) if ids else st.just([])))
    before = [(m.id, m.content, m.role) for m in msgs]
    out = filter_folded(msgs, folded, summary)
    assert [(m.id, m.content, m.role) for m in msgs] == before, "input list mutated"
    # no folded history message comes back
    assert not any(m.from_history and m.id in folded for m in out)
    # no new pairing problem: a clean list stays clean
    if not pair_violations([m for m in msgs if not is_summary(m)]):
        assert pair_violations(out) == []
    # the result is the input, in order, minus dropped messages, plus at most one summary
    rest = [m for m in out if not is_summary(m)]
    positions = [next(i for i, x in enumerate(msgs) if x is m) for m in rest]
    assert positions == sorted(positions)
    # only history messages or tool-paired current messages are dropped; user/system never unless folded history
    for m in msgs:
        if not is_summary(m) and m not in rest:
            assert m.from_history or m.role in ("assistant", "tool")
            assert m.role not in SYSTEM_ROLES
    sums = [i for i, m in enumerate(out) if is_summary(m)]
    if summary:
        assert len(sums) == 1 and out[sums[0]].content == summary
        assert all(m.role in SYSTEM_ROLES for m in out[: sums[0]])
        lead = next((i for i, m in enumerate(rest) if m.role not in SYSTEM_ROLES), len(rest))
        assert sums[0] == lead, "summary not right after the leading system messages"
    else:
        assert sums == []


def test_filter_folded_drops_a_whole_tool_batch_and_keeps_the_rest() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    sys_m = Message(role="system", content="sys")
    old_user = Message(role="user", content="old", from_history=True)
    asst = Message(role="assistant", tool_calls=[call], from_history=True)
    res = Message(role="tool", tool_call_id="c1", content="files", from_history=True)
    answer = Message(role="assistant", content="done", from_history=True)
    user = Message(role="user", content="now")
    out = filter_folded([sys_m, old_user, asst, res, answer, user], {res.id, old_user.id}, "S")
    assert [m.content for m in out] == ["sys", "S", "done", "now"]
    assert is_summary(out[1])
    # a current-run message with a folded id is never dropped
    same = Message(role="user", content="now", id=old_user.id)
    assert filter_folded([same], {same.id}, None) == [same]


def _components_filter(msgs: list[Message], folded: set[str], summary: str | None) -> list[Message]:
    """filter_folded by its definition: messages sharing a call id form one component, dropped whole."""
    from agno_compression._plan import call_ids, make_summary_message, result_ids

    live = [m for m in msgs if not is_summary(m)]
    parent = list(range(len(live)))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    first: dict[str, int] = {}
    for i, m in enumerate(live):
        for cid in [*call_ids(m), *result_ids(m)]:
            parent[find(i)] = find(first.setdefault(cid, i))
    dropped = {find(i) for i, m in enumerate(live) if m.from_history and m.id in folded}
    kept = [m for i, m in enumerate(live) if find(i) not in dropped]
    if summary:
        head = next((i for i, m in enumerate(kept) if m.role not in SYSTEM_ROLES), len(kept))
        kept.insert(head, make_summary_message(summary))
    return kept


@st.composite
def tangled(draw: Any) -> list[Message]:
    """Messages whose call ids are shared anyhow: across history and this run, several results per call,
    results in one Gemini-style message, calls without an id, summaries anywhere."""
    from agno_compression._plan import make_summary_message

    cid = st.sampled_from(["c1", "c2", "c3", "c4", "c5"])
    out: list[Message] = []
    for k in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["system", "user", "assistant", "calls", "tool", "gemini", "summary"]))
        history = draw(st.booleans())
        if kind == "summary":
            out.append(make_summary_message(f"old {k}"))
        elif kind == "calls":
            calls: list[dict[str, Any]] = [{"id": c, "type": "function"} for c in draw(st.lists(cid, max_size=3))]
            calls += draw(st.lists(st.just({"type": "function"}), max_size=1))  # no id: links nothing
            out.append(Message(role="assistant", tool_calls=calls, from_history=history))
        elif kind == "tool":
            out.append(Message(role="tool", tool_call_id=draw(st.one_of(st.none(), cid)), from_history=history))
        elif kind == "gemini":
            results = [{"tool_call_id": c} for c in draw(st.lists(cid, max_size=3))]
            out.append(Message(role="tool", tool_calls=results, from_history=history))
        else:
            out.append(Message(role=kind, content=f"m{k}", from_history=history))
    return out


@settings(max_examples=examples(500), deadline=None)
@given(tangled(), st.data(), st.one_of(st.none(), st.just("S")))
def test_filter_folded_drops_exactly_the_components_of_folded_history(
    msgs: list[Message], data: st.DataObject, summary: str | None
) -> None:
    ids = [m.id for m in msgs]
    folded = set(data.draw(st.lists(st.sampled_from(ids), unique=True) if ids else st.just([])))
    got = filter_folded(msgs, folded, summary)
    want = _components_filter(msgs, folded, summary)
    assert [m if not is_summary(m) else m.content for m in got] == [m if not is_summary(m) else m.content for m in want]


def test_rows_count_only_when_their_run_or_every_folded_message_was_stored(store: SQLAlchemyStore) -> None:
    """A run killed before agno stored it leaves rows behind: they must not filter or summarise later runs."""
    fresh = store.load("s")  # no table yet
    assert (fresh.folded_ids, fresh.summary, fresh.folds) == (frozenset(), None, 0)
    store.record(row("s", ["m1", "m2"], "run stored", run_id="r1", tokens_before=900, tokens_after=300))
    second = store.record(row("s", ["m3"], "messages stored", run_id="r-lost", tokens_before=500, tokens_after=450))
    store.record(row("s", ["m4", "m9"], "half stored", run_id="r-dead", tokens_before=100, tokens_after=300))
    store.record(row("s", ["m5"], None, run_id="r1", tokens_before=40))  # no summary: the newest with text stays
    stored = frozenset({"r1", "m3", "m4"})
    counted = store.load("s", stored_ids=stored)
    assert counted.folded_ids == {"m1", "m2", "m3", "m5"}
    assert counted.summary == "messages stored" and counted.folds == 3
    assert counted.tokens_saved == 690 and counted.newest_id is not None and counted.newest_id > second
    every = store.load("s")
    assert every.folded_ids == {"m1", "m2", "m3", "m4", "m5", "m9"} and every.folds == 4
    assert every.summary == "half stored" and every.tokens_saved == 690, "a fold that grew the prompt saves 0"
    assert load_counted(store, "s", stored) == counted and load_counted(store, "s", None) == every
    none = store.load("s", stored_ids=frozenset())  # agno stored nothing of these runs: no row counts
    assert (none.folded_ids, none.summary, none.folds, none.newest_id) == (frozenset(), None, 0, None)

    class EventsOnly:
        """Any other CompressionStore: counted from its events."""

        def load(self, session_id: str) -> Any:
            raise AssertionError("rows must be counted one by one")

        def events(self, session_id: str) -> list[CompressionRecord]:
            return store.events(session_id)

    assert load_counted(EventsOnly(), "s", stored) == counted  # type: ignore[arg-type]


def test_stored_ids_are_the_runs_and_messages_agno_loaded() -> None:
    from agno.run.agent import RunOutput
    from agno.session import AgentSession

    asked, answered = Message(role="user", content="a"), Message(role="assistant", content="b")
    delegated = Message(role="assistant", content="member work")
    member = RunOutput(run_id="member-run", parent_run_id="r1", messages=[delegated])
    session = AgentSession(session_id="s", runs=[RunOutput(run_id="r1", messages=[asked, answered]), member])
    history = Message(role="user", content="loaded", from_history=True)
    new = Message(role="user", content="this run")
    assert stored_ids_of(session, [history, new]) == {
        "r1",
        "member-run",
        asked.id,
        answered.id,
        delegated.id,
        history.id,
    }
    assert stored_ids_of(None) is None
    assert stored_ids_of(AgentSession(session_id="s", runs=[])) is None, "nothing loaded: nothing to check against"


class _WatchedMessages(list[Message]):
    """A run's stored messages that count how often they are walked."""

    walks = 0

    def __iter__(self) -> Any:
        self.walks += 1
        return super().__iter__()


def test_stored_ids_walk_the_messages_only_for_an_id_that_is_not_a_run(tmp_path: Path) -> None:
    """A fold record names its run: loading a long session's folds must not read every stored message id."""
    from agno.run.agent import RunOutput
    from agno.session import AgentSession

    asked = Message(role="user", content="a")
    messages = _WatchedMessages([asked])
    session = AgentSession(session_id="s", runs=[RunOutput(run_id="r1", messages=messages)])
    store = SQLAlchemyStore.from_url(f"sqlite:///{tmp_path / 'f.db'}")
    store.record(CompressionRecord(session_id="s", run_id="r1", folded_ids=[asked.id], summary="x", strategy="x"))
    stored = stored_ids_of(session, [Message(role="user", content="this run")])
    assert stored is not None
    assert load_counted(store, "s", stored).folds == 1
    assert messages.walks == 0, "the record's run is stored: no message id was needed"
    store.record(CompressionRecord(session_id="s", run_id="killed", folded_ids=["gone"], summary="y", strategy="x"))
    assert load_counted(store, "s", stored).folds == 1, "a record of a run agno never stored does not count"
    assert messages.walks == 1 and asked.id in stored and "gone" not in stored
    assert load_counted(store, "s", stored).folds == 1 and messages.walks == 1, "the message ids are read once"


def test_stored_ids_of_a_workflow_session_hold_the_workflow_and_step_runs() -> None:
    """A workflow keeps its agents' runs inside each workflow run; a member run names a parent stored elsewhere."""
    from agno.run.agent import RunOutput
    from agno.run.workflow import WorkflowRunOutput
    from agno.session import WorkflowSession

    said = Message(role="assistant", content="step output")
    step = RunOutput(run_id="step-run", messages=[said])
    member = RunOutput(run_id="member-run", parent_run_id="team-run", messages=[])
    session = WorkflowSession(
        session_id="w", runs=[WorkflowRunOutput(run_id="workflow-run", step_executor_runs=[step, member])]
    )
    assert stored_ids_of(session) == {"workflow-run", "step-run", "member-run", "team-run", said.id}


@given(
    st.one_of(
        st.text(max_size=30),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
            lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
            max_leaves=8,
        ),
    ),
    st.one_of(st.none(), st.integers(), st.text(max_size=6), st.floats(allow_nan=True)),
)
def test_any_stored_value_reads_as_a_row_or_is_skipped_and_named(ids: object, count: object) -> None:
    from agno_compression._stores._base import BadRows, checked

    bad = BadRows()
    row = checked({"id": 3, "folded_ids": ids, "tokens_before": count, "summary": "s"}, "sess", bad)
    if row is None:
        (note,) = bad.notes("sess")
        assert note.startswith("record 3: ") and ("folded_ids" in note or "tokens_before" in note)
    else:
        assert all(isinstance(i, str) for i in row["folded_ids"])
        assert row["tokens_before"] is None or isinstance(row["tokens_before"], int)
        assert bad.notes("sess") == []
