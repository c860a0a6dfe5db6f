"""Attaching must never make an agno feature work worse: other compression managers, offloading, agno's
Compaction on context overflow, and config round trips (``to_dict`` / ``from_dict(strict=True)``).

Real agno Agents, Teams and SqliteDb files; the provider is the real Gemini client against a local server
(as in ``test_recovery``) or the scripted model.
"""

from __future__ import annotations

import hashlib
import logging
import warnings
from pathlib import Path
from typing import Any

import pytest
from agno.agent import Agent
from agno.compaction import Compaction
from agno.compression.manager import CompressionManager as AgnoCompressionManager
from agno.db.sqlite import SqliteDb
from agno.models.message import Message
from agno.registry import Registry
from agno.run.base import RunStatus
from agno.team import Team

from agno_compression import CompressionManager, ConfigError, full_messages
from agno_compression.testing import Reply, ScriptedModel, ScriptInfo, ToolCall
from agno_compression.tokens._ranks import _RANK_FILES, _read_rank_bytes
from tests.integration.test_recovery import SECRET, STEPS, Server, gemini, gemini_handler, log_chunk, read_chunk, serve


def scripted(text: str = "ok") -> ScriptedModel:
    return ScriptedModel(script=lambda m, i: Reply(text=text))


def snapshot(*nodes: Any) -> list[tuple[Any, ...]]:
    """Everything attach() may change on an Agent or Team (and its model)."""
    return [
        (
            n.compression_manager,
            n.compress_tool_results,
            list(n.tools) if isinstance(n.tools, list) else n.tools,
            list(n.pre_hooks or []),
            list(n.post_hooks or []),
            n.instructions,
            dict(vars(n.model)) if n.model is not None else None,
            type(n.model),
        )
        for n in nodes
    ]


# --- another compression manager is replaced with a warning (row 6) -------------------------------------


def test_replacing_agnos_own_compression_manager_warns_naming_it(caplog: pytest.LogCaptureFixture) -> None:
    theirs = AgnoCompressionManager(model=scripted(), compress_tool_results_limit=2)
    agent = Agent(name="researcher", model=scripted(), compression_manager=theirs, compress_tool_results=True)
    ours = CompressionManager()
    with pytest.warns(UserWarning, match=r"Agent 'researcher'.*agno\.compression\.manager\.CompressionManager"):
        ours.attach(agent)
    assert agent.compression_manager is ours
    assert any("replaces" in r.message and "researcher" in r.message for r in caplog.records)


def test_replacing_another_agno_compression_manager_in_a_team_member_warns() -> None:
    member = Agent(name="writer", model=scripted())
    team = Team(name="desk", model=scripted(), members=[member])
    CompressionManager().attach(member)
    with pytest.warns(UserWarning, match=r"Team 'desk' > Agent 'writer'.*agno_compression"):
        CompressionManager().attach(team)


def test_attaching_the_same_manager_again_is_silent() -> None:
    manager = CompressionManager()
    agent = manager.attach(Agent(name="a", model=scripted()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        manager.attach(agent)
        manager.attach(Agent(name="fresh", model=scripted()))  # nothing to replace: no warning either


# --- offloading is refused for the team and every member, before anything changes (row 7) ---------------


def test_offloading_member_deep_in_a_team_is_refused_before_anything_changes(tmp_path: Path) -> None:
    db = SqliteDb(db_file=str(tmp_path / "t.db"))
    first = Agent(name="reader", model=scripted(), tools=[read_chunk])
    offloader = Agent(name="fetcher", model=scripted(), offload_tool_results=True)
    sub = Team(name="sub", model=scripted(), members=[offloader])
    team = Team(name="research", model=scripted(), members=[first, sub], db=db, tools=[read_chunk])
    before = snapshot(team, first, sub, offloader)
    with pytest.raises(ConfigError, match=r"Team 'research' > Team 'sub' > Agent 'fetcher'.*offload_tool_results"):
        CompressionManager(output_guidance=True).attach(team)
    assert snapshot(team, first, sub, offloader) == before, "attach() changed something before refusing"
    team.run("hello")  # agno still runs the team as it was configured
    assert first.compression_manager is None


def test_offloading_team_is_refused_and_its_members_untouched(tmp_path: Path) -> None:
    member = Agent(name="reader", model=scripted())
    team = Team(
        name="research", model=scripted(), members=[member], db=SqliteDb(db_file=str(tmp_path / "t.db")),
        offload_tool_results=True,
    )  # fmt: skip
    before = snapshot(team, member)
    with pytest.raises(ConfigError, match=r"Team 'research' has offload_tool_results=True"):
        CompressionManager().attach(team)
    assert snapshot(team, member) == before
    out = team.run("hello")
    assert out is not None and out.status == RunStatus.completed, "agno cannot run the untouched team"


def test_members_left_out_are_not_checked() -> None:
    offloader = Agent(name="fetcher", model=scripted(), offload_tool_results=True)
    team = Team(name="research", model=scripted(), members=[offloader])
    CompressionManager().attach(team, include_members=False)
    assert team.compression_manager is not None and offloader.compression_manager is None


# --- agno's Compaction(on_context_overflow=True) answers "prompt too long" itself (row 5) -----------------


@pytest.fixture
def agno_counts_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """agno's Compaction counts with tiktoken, which would download its rank files: give it local ones."""
    cache = tmp_path / "tiktoken"
    cache.mkdir()
    for name, spec in _RANK_FILES.items():
        data = _read_rank_bytes(name, None)
        assert data is not None, f"no local rank file for {name} (bpe-openai missing?)"
        (cache / hashlib.sha1(spec.url.encode()).hexdigest()).write_bytes(data)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))


SUMMARY = "## Summary\nEight chunks of the build log were read; every file compiled."


@pytest.mark.parametrize(
    ("compaction", "shared"),
    [(True, False), (True, True), (False, False)],
    ids=["agno-compaction", "agno-compaction-model-shared-with-another-agent", "no-compaction"],
)
def test_agnos_compaction_on_overflow_acts_when_configured(
    httpserver: Any,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    compaction: bool,
    shared: bool,
    agno_counts_offline: None,
) -> None:
    server = Server(limit=1_000_000)
    serve(httpserver, gemini_handler(server))
    db = SqliteDb(db_file=str(tmp_path / "c.db"))
    model = gemini(httpserver)
    manager = CompressionManager(compress_at_tokens=200_000)  # never folds by itself: only recovery can act
    if shared:  # another agent on the same model instance, attached first: the model gets the overflow wrapper
        manager.attach(Agent(name="other", model=model, db=db, telemetry=False))
    agent = Agent(
        name="builder",
        model=model,
        tools=[read_chunk],
        db=db,
        session_id="s",
        add_history_to_context=True,
        telemetry=False,
        compaction=Compaction(on_context_overflow=True, model=scripted(SUMMARY)) if compaction else None,
    )
    with caplog.at_level(logging.INFO, logger="agno_compression"):
        manager.attach(agent)
    first = agent.run("Read every chunk of the build log.")
    assert first.status == RunStatus.completed and len(server.accepted) == STEPS + 1
    server.limit = 8_000  # the second run's history alone is larger: the provider rejects it
    second = agent.run("Did anything fail?")
    assert second.status == RunStatus.completed, second.content
    assert server.rejected, "the provider never rejected a request: the test proves nothing"
    assert all(size <= server.limit for size in server.accepted[STEPS + 1 :])
    records = db.get_compactions_for_session("s")
    if compaction:
        assert any("agno's compaction answers" in r.message and "builder" in r.message for r in caplog.records)
        assert len(records) == 1 and second.compaction is not None, "agno's compaction did not run and record"
        assert manager.stats["overflow_retries"] == 0
        assert not any(e.strategy.startswith("overflow:") for e in manager.events)
    else:
        assert records == [] and manager.stats["overflow_retries"] >= 1
    stored = [m.content for m in full_messages(db, "s") if m.role == "tool"]
    assert stored == [read_chunk(i) for i in range(STEPS)], "nothing lost"


# --- to_dict / from_dict(registry, strict=True) round trips; the search tool stays (row 4) ---------------


def searching_script(messages: list[Message], info: ScriptInfo) -> Reply:
    if info.call_index < 10:
        return Reply(tool_calls=[ToolCall("log_chunk", {"index": info.call_index})])
    if info.call_index == 10:
        return Reply(tool_calls=[ToolCall("search_folded_history", {"query": "tls_handshake ETIMEDOUT"})])
    return Reply(text="Found: " + str(messages[-1].content))


def test_agent_round_trips_through_a_registry_and_keeps_the_search_tool(tmp_path: Path) -> None:
    db = SqliteDb(db_file=str(tmp_path / "a.db"))
    model = ScriptedModel(script=searching_script)
    agent = Agent(name="builder", id="builder", model=model, tools=[log_chunk], db=db, telemetry=False)
    CompressionManager(compress_at_tokens=2_500).attach(agent)
    config = agent.to_dict()
    assert [t["name"] for t in config["tools"]] == ["log_chunk"]
    loaded = Agent.from_dict(config, registry=Registry(tools=[log_chunk], models=[model], dbs=[db]), strict=True)
    manager = CompressionManager(compress_at_tokens=2_500)
    manager.attach(loaded)
    out = loaded.run("Why did the build fail?", session_id="one")
    assert out.status == RunStatus.completed
    assert "search_folded_history" in [t.get("function", t)["name"] for t in model.requests[10].tools]
    assert SECRET in str(out.content), "the search tool did not answer after rehydration"
    assert manager.stats["folds"] >= 1
    assert [t["name"] for t in loaded.to_dict()["tools"]] == ["log_chunk"], "a second save differs"


def test_team_round_trips_through_a_registry_and_keeps_the_search_tool(tmp_path: Path) -> None:
    db = SqliteDb(db_file=str(tmp_path / "t.db"))
    member = Agent(name="helper", id="helper", model=scripted(), tools=[read_chunk], db=db, telemetry=False)
    model = ScriptedModel(script=searching_script)
    team = Team(name="lead", id="lead", model=model, members=[member], tools=[log_chunk], db=db, telemetry=False)
    CompressionManager(compress_at_tokens=2_500).attach(team)
    config = team.to_dict()
    assert [t["name"] for t in config["tools"]] == ["log_chunk"]
    # the registry holds the user's own (unattached) member, as a saved-config loader would
    fresh = Agent(name="helper", id="helper", model=scripted(), tools=[read_chunk], db=db, telemetry=False)
    registry = Registry(tools=[log_chunk, read_chunk], models=[model], dbs=[db], agents=[fresh])
    loaded = Team.from_dict(config, registry=registry, strict=True)
    manager = CompressionManager(compress_at_tokens=2_500)
    manager.attach(loaded)
    out = loaded.run("Why did the build fail?", session_id="t1")
    assert out.status == RunStatus.completed, out.content
    assert "search_folded_history" in [t.get("function", t)["name"] for t in model.requests[10].tools]
    assert SECRET in str(out.content)
    assert manager.stats["folds"] >= 1 and loaded.members[0].compression_manager is manager  # type: ignore[union-attr,index]
