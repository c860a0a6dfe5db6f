"""A stored session's timeline: folds at the calls they came before, lanes per member, one "saved", and "without
compression" counted like "with"."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from agno.db.sqlite import SqliteDb
from typer.testing import CliRunner

from agno_compression import CompressionRecord, stats
from agno_compression._cli import app
from agno_compression._databases import _session, open_db
from agno_compression._stores import store_for
from agno_compression.testing import loop_agent
from agno_compression.viewer._timeline import REASONS, Timeline, build_timeline, fold_reason
from tests.scenarios import Scenario, hostile_session


def _timeline(scenario: Scenario, **kw: object) -> tuple[Timeline, list[CompressionRecord]]:
    db = open_db(scenario.db_file)
    records = store_for(db).events(scenario.session_id)
    return build_timeline(_session(db, scenario.session_id, scenario.db_file), records, **kw), records  # type: ignore[arg-type]


def test_each_fold_sits_before_the_call_it_came_before(multi_scenario: Scenario) -> None:
    t, _ = _timeline(multi_scenario)
    assert len(t.lanes) == 1 and len(t.lanes[0].runs) == 3
    assert len(t.folds) == len(multi_scenario.events) >= 6
    assert [f.call for f in t.folds] == [n + 1 for n in multi_scenario.requests_before]
    calls = {c.number: c for c in t.lanes[0].calls}
    for fold in t.folds:
        assert not fold.estimated
        assert calls[fold.call].sent == fold.record.tokens_after, "the call after a fold is sent what the fold left"
    assert {f.run for f in t.folds} == {1, 2, 3}, "every run folds, the later ones their loaded history too"
    calls_in_run = [f.call - t.lanes[0].runs[f.run - 1].first_call + 1 for f in t.folds]  # type: ignore[operator,index]
    assert [e.call_index for e in multi_scenario.events] == calls_in_run, "the FoldEvent says it too"
    assert {e.budget for e in multi_scenario.events} == {3_000} == {f.record.budget for f in t.folds}
    assert t.budget == 3_000 and _timeline(multi_scenario, budget=5_000)[0].budget == 5_000, "--budget draws its line"


def test_inspect_says_which_call_of_its_run_each_fold_came_before(multi_scenario: Scenario) -> None:
    t, _ = _timeline(multi_scenario)
    shown = json.loads(
        CliRunner()
        .invoke(app, ["inspect", "--db", multi_scenario.db_file, "--session", multi_scenario.session_id, "--json"])
        .stdout
    )
    first_call = {r.run_id: r.first_call for r in t.lanes[0].runs}
    placed = [first_call[run["run_id"]] + f["before_call"] - 1 for run in shown["runs"] for f in run["folds"]]
    assert placed == [f.call for f in t.folds]
    assert [f["reason"] for run in shown["runs"] for f in run["folds"]] == [f.reason for f in t.folds]


def test_records_older_than_call_index_are_placed_by_prompt_size(multi_scenario: Scenario) -> None:
    db = open_db(multi_scenario.db_file)
    old = [
        dataclasses.replace(r, call_index=None, budget=None) for r in store_for(db).events(multi_scenario.session_id)
    ]
    t = build_timeline(_session(db, multi_scenario.session_id, multi_scenario.db_file), old)
    assert [f.call for f in t.folds] == [n + 1 for n in multi_scenario.requests_before]
    assert all(f.estimated and f.reason == "unknown" for f in t.folds)
    told = build_timeline(_session(db, multi_scenario.session_id, multi_scenario.db_file), old, budget=3_000)
    assert [f.reason for f in told.folds] == [fold_reason(r) for r in store_for(db).events(multi_scenario.session_id)]


def test_without_compression_is_what_was_sent_plus_what_earlier_folds_removed(multi_scenario: Scenario) -> None:
    t, _ = _timeline(multi_scenario)
    lane = t.lanes[0]
    first = t.folds[0].call
    assert all(c.without == c.sent for c in lane.calls if c.number < first), "the same count before any fold"
    assert all(c.without >= c.sent for c in lane.calls)
    removed = 0
    for fold in t.folds:  # one context: the runs load the session's history
        removed += fold.saved
        call = lane.calls[fold.call - 1]
        assert call.without == call.sent + removed
        assert call.without == fold.record.tokens_before + removed - fold.saved
    assert all(r.history for r in lane.runs[1:]) and not lane.runs[0].history


def test_a_run_without_history_carries_no_earlier_savings(tmp_path: Path) -> None:
    db = SqliteDb(db_file=str(tmp_path / "fresh.db"))
    loop = loop_agent(steps=6, db=db, session_id="s", history=False, compress_at_tokens=1_500)
    loop.run("first")
    loop.run("second")
    loop.manager.flush_records()
    t, _ = _timeline(Scenario(str(tmp_path / "fresh.db"), "s"))
    second = t.lanes[0].runs[1]
    assert not second.history
    assert second.calls[0].without == second.calls[0].sent


def test_tokens_saved_is_the_one_stats_and_inspect_report(multi_scenario: Scenario) -> None:
    t, _ = _timeline(multi_scenario)
    listed = json.loads(CliRunner().invoke(app, ["inspect", "--db", multi_scenario.db_file, "--json"]).stdout)
    assert (
        t.stats.tokens_saved == stats(SqliteDb(db_file=multi_scenario.db_file), multi_scenario.session_id).tokens_saved
    )
    assert t.stats.tokens_saved == listed[0]["tokens_saved"] == sum(f.saved for f in t.folds)
    assert t.stats.folds == listed[0]["folds"] == len(t.folds)


def test_team_members_have_their_own_lane_and_the_leader_its_folds(team_scenario: Scenario) -> None:
    t, _ = _timeline(team_scenario)
    leader, member = t.lanes
    assert (leader.kind, leader.member, leader.name) == ("team", False, "QA lead")
    assert (member.member, member.name, len(member.runs), len(member.calls)) == (True, "Tester", 10, 20)
    assert len(leader.calls) == 11 and t.calls == 31
    assert [f.lane for f in t.folds] == [0] * len(team_scenario.events) and len(t.folds) == 3
    assert [f.call for f in t.folds] == [n + 1 for n in team_scenario.requests_before]
    assert all(c.without == c.sent for c in member.calls), "nothing folded in the members' runs"


def test_why_each_fold_happened() -> None:
    record = CompressionRecord("s", ["m"], "summary", "extractive", tokens_before=5_000, tokens_after=1_000)
    assert fold_reason(record) == "unknown"
    assert fold_reason(record, budget=6_000) == "early"
    assert fold_reason(dataclasses.replace(record, budget=4_000), budget=6_000) == "budget", "the record's own wins"
    assert fold_reason(dataclasses.replace(record, strategy="overflow:extractive", budget=9_000)) == "overflow"


def test_searches_of_folded_history_and_shortened_outputs_are_found(tmp_path: Path) -> None:
    scenario = hostile_session(str(tmp_path / "hostile.db"))
    t, _ = _timeline(scenario)
    assert len(t.searches) == 1
    search = t.searches[0]
    assert json.loads(search.arguments) == {"query": "row 1.7"} and "row 1.7" in search.answer
    assert search.call.number >= t.folds[0].call, "searched once something was folded"
    assert [s.message.tool_name for s in t.shortened] == ["fetch"] and not t.shortened[0].masked
    assert len(t.shortened[0].message.compressed_content or "") < len(str(t.shortened[0].message.content))


# --- folds made between runs: on request ---------------------------------------------------------------------------


def requested_fold_session(db_file: str, session_id: str = "asked") -> Scenario:
    """Two runs, a fold on request (``fold_session``), then a third run that loads its summary; one agent id."""
    db = SqliteDb(db_file=db_file)
    loop = loop_agent(steps=4, db=db, session_id=session_id, compress_at_tokens=3_000, agent_kw={"id": "reviewer"})
    loop.run("Read the first log.")
    loop.run("Read the second log.")
    loop.manager.flush_records()
    result = loop.manager.fold_session(loop.agent, session_id, "keep the chunk numbers")
    assert result.folded, result.message
    loop.run("Read the third log.")
    scenario = Scenario(db_file, session_id, [n for n, _, _ in loop.folds], [e for _, e, _ in loop.folds])
    return scenario.finish(loop.manager, db)


def test_a_fold_on_request_sits_between_the_runs_before_the_next_runs_first_call(tmp_path: Path) -> None:
    scenario = requested_fold_session(str(tmp_path / "asked.db"))
    t, records = _timeline(scenario)
    (asked,) = [f for f in t.folds if f.record.run_id is None]
    assert asked.reason == "request" and REASONS["request"] == "on request"
    assert asked.record.strategy == "request:extractive" and asked.record.call_index is None
    lane = t.lanes[asked.lane or 0]
    assert (asked.lane, asked.after, asked.run) == (0, 2, 3), "after run 2, in front of run 3"
    third = lane.runs[2]
    assert asked.call == third.calls[0].number, "before the next run's first call, which loaded its summary"
    assert third.history and asked in lane.folds and len(t.folds) == len(records) == t.stats.folds
    first = lane.calls[asked.call - 1]
    assert first.without - first.sent >= asked.saved > 0, "what it removed counts in 'without compression'"
    assert {m.id for m in asked.folded} == set(asked.record.folded_ids) and not asked.missing

    shown = json.loads(
        CliRunner()
        .invoke(app, ["inspect", "--db", scenario.db_file, "--session", scenario.session_id, "--json"])
        .stdout
    )
    listed = [(i, f) for i, run in enumerate(shown["runs"]) for f in run["folds"] if f["reason"] == "request"]
    assert [(i, f["record_id"], f["before_call"]) for i, f in listed] == [(1, asked.record.id, None)], "after run 2"
    assert sum(len(run["folds"]) for run in shown["runs"]) == len(records), "inspect lists every fold once"
    text = CliRunner().invoke(app, ["inspect", "--db", scenario.db_file, "--session", scenario.session_id])
    assert "on request" in text.stdout and "request:extractive" in text.stdout


def test_why_a_fold_was_asked_for() -> None:
    record = CompressionRecord("s", ["m"], "summary", "request:extractive", tokens_before=5_000, budget=3_000)
    assert fold_reason(record) == "request", "not 'budget': nobody's budget called for it"
    assert fold_reason(dataclasses.replace(record, strategy="agent:mask->extractive")) == "agent"
    assert REASONS["agent"] == "the agent asked"
    from agno_compression._events import FoldEvent
    from agno_compression._tracing import reason

    def event(strategy: str) -> FoldEvent:
        return FoldEvent(strategy, ["m"], [], [], "summary", 5_000, 1_000, budget=3_000)

    assert [reason(event(s)) for s in ("agent:extractive", "request:extractive", "extractive")] == [
        "agent",
        "request",
        "budget",
    ], "fold spans say why as the page does"
