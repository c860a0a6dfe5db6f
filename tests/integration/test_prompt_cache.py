"""Prompt caching that the provider actually applies, through agno's real ``Claude`` and ``OpenAIChat`` with their
real SDK clients against loopback servers that bill by the providers' documented rules
(``agno_compression.eval.AnthropicServer`` / ``OpenAIServer``; the rules are tested in tests/unit/test_pricing.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.models.anthropic import Claude
from agno.models.openai import OpenAIChat, OpenAILike
from agno.team import Team

from agno_compression import CompressionManager
from agno_compression.eval._loopback import AnthropicServer, BilledCall, OpenAIServer
from agno_compression.pricing import anthropic_blocks
from agno_compression.testing import Reply, run_in_mode
from agno_compression.tokens import TokenCounter
from tests.fakes import FileLoop, read_file

MODES = ("sync", "async", "stream", "async-stream")
SYSTEM = "You are a careful engineer. " + " ".join(f"Rule {i}: keep file_{i}.py tidy and tested." for i in range(120))
TASK = "Read the source files one by one and tell me which function to fix."
COUNT = TokenCounter("gpt-4o")


@pytest.fixture
def anthropic() -> Iterator[AnthropicServer]:
    with AnthropicServer(FileLoop()) as server:
        yield server


def claude(server: AnthropicServer, model_id: str = "claude-sonnet-4-5", **options: Any) -> Claude:
    return Claude(id=model_id, api_key="offline", client_params={"base_url": server.url}, **options)


def agent(tmp_path: Path, model: Any, manager: CompressionManager | None = None, session: str = "s1") -> Agent:
    built = Agent(
        model=model,
        tools=[read_file],
        system_message=SYSTEM,
        db=SqliteDb(db_file=str(tmp_path / "agent.db")),
        session_id=session,
        add_history_to_context=True,
        telemetry=False,
    )
    return manager.attach(built) if manager is not None else built


def markers(call: BilledCall) -> list[tuple[str, int, str]]:
    """Every cache_control in a request body: (where, index, ttl)."""
    out = []
    body = call.body
    for i, tool in enumerate(body.get("tools") or ()):
        if "cache_control" in tool:
            out.append(("tool", i, tool["cache_control"].get("ttl", "5m")))
    system = body.get("system")
    for i, block in enumerate(system if isinstance(system, list) else ()):
        if "cache_control" in block:
            out.append(("system", i, block["cache_control"].get("ttl", "5m")))
    position = 0
    for message in body["messages"]:
        content = message["content"] if isinstance(message["content"], list) else [message["content"]]
        for block in content:
            if isinstance(block, dict) and "cache_control" in block:
                out.append(("message", position, block["cache_control"].get("ttl", "5m")))
            position += 1
    return out


def kept_prefix(call: BilledCall) -> int:
    """Tokens of the request up to and including the task's text block."""
    blocks, _ = anthropic_blocks(call.body, COUNT.count_text)
    offset = len(call.body.get("tools") or ()) + len(call.body.get("system") or ())
    position = 0
    found = None
    for message in call.body["messages"]:
        content = (
            message["content"]
            if isinstance(message["content"], list)
            else [{"type": "text", "text": message["content"]}]
        )
        for block in content:
            if message["role"] == "user" and isinstance(block, dict) and block.get("text") == TASK:
                found = offset + position
            position += 1
    assert found is not None
    return sum(b.tokens for b in blocks[: found + 1])


@pytest.mark.parametrize("mode", MODES)
def test_after_the_first_call_every_call_reads_the_kept_prefix(
    tmp_path: Path, anthropic: AnthropicServer, mode: str
) -> None:
    manager = CompressionManager(compress_at_tokens=4_000)
    output = run_in_mode(agent(tmp_path, claude(anthropic), manager), TASK, mode)
    assert output.status.value == "COMPLETED" and manager.stats["folds"] >= 2
    calls = anthropic.calls
    assert all(c.error is None for c in calls)
    changed = [i for i in range(1, len(calls)) if calls[i].body.get("tools") != calls[i - 1].body.get("tools")]
    assert len(changed) <= 1  # the search tool, once the session has folded
    for i in range(1, len(calls)):
        if i not in changed:
            assert calls[i].usage.read >= kept_prefix(calls[i]), (i, calls[i].usage)
    assert all(len(markers(c)) <= 4 for c in calls)


def claude_on(platform: str, server: AnthropicServer) -> Any:
    """agno's Claude class of ``platform``, its SDK client pointed at the loopback server (offline credentials)."""
    if platform == "vertex":
        from agno.models.vertexai.claude import Claude as VertexClaude

        return VertexClaude(
            id="claude-sonnet-4-5@20250929",
            region="us-east5",
            project_id="offline",
            base_url=f"{server.url}/v1",
            client_params={"access_token": "offline"},
        )
    if platform == "bedrock":
        from agno.models.aws.claude import Claude as BedrockClaude

        return BedrockClaude(
            id="anthropic.claude-sonnet-4-5-20250929-v1:0",
            aws_access_key="offline",
            aws_secret_key="offline",
            aws_region="us-east-1",
            client_params={"base_url": server.url},
        )
    return claude(server)


# Bedrock streams in AWS's binary event-stream encoding, which the loopback server does not speak: sync and async
@pytest.mark.parametrize(
    ("platform", "mode"), [("vertex", "sync"), ("vertex", "async-stream"), ("bedrock", "sync"), ("bedrock", "async")]
)
def test_the_bedrock_and_vertex_claude_classes_get_the_same_breakpoints(
    tmp_path: Path, anthropic: AnthropicServer, platform: str, mode: str
) -> None:
    manager = CompressionManager(compress_at_tokens=4_000)
    output = run_in_mode(agent(tmp_path, claude_on(platform, anthropic), manager), TASK, mode)
    assert output.status.value == "COMPLETED" and manager.stats["folds"] >= 2
    calls = anthropic.calls
    assert all(markers(c) for c in calls) and all(len(markers(c)) <= 4 for c in calls)
    assert all(calls[i].usage.read >= kept_prefix(calls[i]) for i in range(1, len(calls)))


def test_fold_calls_read_the_kept_prefix_where_automatic_caching_alone_does_not(tmp_path: Path) -> None:
    billed = {}
    for caching in (True, False):
        with AnthropicServer(FileLoop()) as server:
            manager = CompressionManager(compress_at_tokens=4_000, prompt_caching=caching)
            model = claude(server, request_params={"cache_control": {"type": "ephemeral"}})
            run_in_mode(agent(tmp_path, model, manager, session=f"s-{caching}"), TASK, "sync")
            calls = server.calls
            # fold calls (call_index is 1-based) whose tool list is the previous call's: not the search tool's reveal
            folds = [e.call_index - 1 for e in manager.events]
            fold_reads = [
                calls[i].usage.read for i in folds if i > 0 and calls[i].body["tools"] == calls[i - 1].body["tools"]
            ]
            billed[caching] = server.billed()
        if caching:
            assert all(read > 0 for read in fold_reads)
        else:
            assert fold_reads and all(read == 0 for read in fold_reads)
    assert billed[True] < billed[False]


@pytest.mark.parametrize(
    "options",
    [
        {"cache_system_prompt": True},
        {"cache_tools": True},
        {"cache_system_prompt": True, "cache_tools": True, "request_params": {"cache_control": {"type": "ephemeral"}}},
        {"cache_system_prompt": True, "extended_cache_time": True},
        {"request_params": {"cache_control": {"type": "ephemeral", "ttl": "1h"}}},
        {  # (agno's cache_tools marks the last tool 5m whatever extended_cache_time says: not combined here)
            "cache_system_prompt": True,
            "extended_cache_time": True,
            "request_params": {"cache_control": {"type": "ephemeral", "ttl": "1h"}},
        },
    ],
    ids=["system", "tools", "system+tools+automatic", "system-1h", "automatic-1h", "all-1h"],
)
def test_the_users_own_cache_settings_are_kept_and_never_broken(
    tmp_path: Path, anthropic: AnthropicServer, options: dict[str, Any]
) -> None:
    manager = CompressionManager(compress_at_tokens=4_000)
    output = run_in_mode(agent(tmp_path, claude(anthropic, **options), manager), TASK, "sync")
    assert output.status.value == "COMPLETED"
    for call in anthropic.calls:
        assert call.error is None  # the server rejects > 4 markers and a 1h entry after a 5m one
        found = markers(call)
        assert len(found) + (1 if "cache_control" in call.body else 0) <= 4 or "cache_control" in call.body
        assert len({(w, i) for w, i, _ in found}) == len(found)
        if options.get("cache_system_prompt"):
            assert ("system", 0) in {(w, i) for w, i, _ in found}
        if options.get("cache_tools"):
            assert any(w == "tool" for w, _, _ in found)
        if "request_params" in options:
            assert call.body["cache_control"] == options["request_params"]["cache_control"]


def test_with_prompt_caching_off_a_run_that_never_folds_sends_what_agno_sends(tmp_path: Path) -> None:
    bodies = []
    for manager in (None, CompressionManager(compress_at_tokens=100_000, prompt_caching=False)):
        with AnthropicServer(FileLoop(reads=3)) as server:
            run_in_mode(agent(tmp_path, claude(server), manager, session=f"s{len(bodies)}"), TASK, "sync")
            bodies.append([c.body for c in server.calls])
    assert bodies[0] == bodies[1]


@pytest.mark.parametrize("mode", ["sync", "async-stream"])
def test_a_team_leader_and_its_members_get_breakpoints(tmp_path: Path, mode: str) -> None:
    with AnthropicServer(FileLoop(reads=10)) as server:
        member = Agent(name="reader", model=claude(server), tools=[read_file], system_message=SYSTEM, telemetry=False)
        team = Team(
            name="lead",
            model=claude(server),
            members=[member],
            db=SqliteDb(db_file=str(tmp_path / "team.db")),
            instructions=SYSTEM,
            telemetry=False,
            tools=[read_file],
        )
        CompressionManager(compress_at_tokens=4_000).attach(team)
        run_in_mode(team, TASK, mode)
        assert all(c.error is None for c in server.calls)
        assert sum(1 for c in server.calls if markers(c)) >= len(server.calls) - 1


def test_a_chat_turn_without_tools_gets_no_breakpoint_unless_the_session_is_active(tmp_path: Path) -> None:
    with AnthropicServer(lambda body: Reply(text="Sure.")) as server:
        manager = CompressionManager(compress_at_tokens=8_000)
        chat = manager.attach(
            Agent(
                model=claude(server),
                system_message=SYSTEM,
                db=SqliteDb(db_file=str(tmp_path / "c.db")),
                session_id="chat",
                add_history_to_context=True,
                telemetry=False,
            )
        )
        chat.run("Hello.")
        chat.run("And then?")
        assert markers(server.calls[0]) == []  # a first turn: the next may come much later
        assert markers(server.calls[1])  # the previous came seconds ago: the next likely will too


# --- calibration with cached usage -------------------------------------------------------------------------


def test_calibration_reads_the_whole_prompt_so_folds_and_budget_are_unchanged_by_caching(tmp_path: Path) -> None:
    points = {}
    for caching in ({}, {"request_params": {"cache_control": {"type": "ephemeral"}}}):
        with AnthropicServer(FileLoop(reads=16)) as server:
            manager = CompressionManager(compress_at_tokens=4_000, prompt_caching=bool(caching))
            a = agent(tmp_path, claude(server, **caching), manager, session=f"k{bool(caching)}")
            run_in_mode(a, TASK, "sync")
            counter = manager.counter_for(a.model)
            points[bool(caching)] = ([e.call_index for e in manager.events], round(counter.correction, 2))
            assert all(c.usage.prompt <= 4_000 * 1.15 for c in server.calls)
            reads = sum(c.usage.read for c in server.calls)
            assert (reads > 0) == bool(caching)
    assert points[True] == points[False]
    assert points[True][1] > 0.8  # the reported prompt is the whole prompt, not the uncached tail


# --- OpenAI: prompt_cache_key ----------------------------------------------------------------------------------


def openai_agent(tmp_path: Path, server: OpenAIServer, manager: CompressionManager | None, model: Any = None) -> Agent:
    # the loopback server stands in for api.openai.com: the client is pointed at it, the model's base_url is unset
    model = model or OpenAIChat(id="gpt-5", api_key="offline", client_params={"base_url": f"{server.url}/v1"})
    return agent(tmp_path, model, manager, session="sess-42")


@pytest.mark.parametrize("mode", MODES)
def test_openai_requests_carry_the_session_id_as_prompt_cache_key(tmp_path: Path, mode: str) -> None:
    with OpenAIServer(FileLoop(reads=4)) as server:
        run_in_mode(openai_agent(tmp_path, server, CompressionManager(compress_at_tokens=4_000)), TASK, mode)
        assert [c.body.get("prompt_cache_key") for c in server.calls] == ["sess-42"] * len(server.calls)
        assert sum(c.usage.read for c in server.calls) > 0


def test_openai_the_users_own_key_is_kept_and_off_sends_none(tmp_path: Path) -> None:
    with OpenAIServer(FileLoop(reads=2)) as server:
        model = OpenAIChat(
            id="gpt-5",
            api_key="offline",
            client_params={"base_url": f"{server.url}/v1"},
            request_params={"prompt_cache_key": "mine"},
        )
        run_in_mode(openai_agent(tmp_path, server, CompressionManager(), model), TASK, "sync")
        assert {c.body.get("prompt_cache_key") for c in server.calls} == {"mine"}
    with OpenAIServer(FileLoop(reads=2)) as server:
        run_in_mode(openai_agent(tmp_path, server, CompressionManager(prompt_caching=False)), TASK, "sync")
        assert all("prompt_cache_key" not in c.body for c in server.calls)


def test_openai_compatible_backends_get_no_prompt_cache_key(tmp_path: Path) -> None:
    with OpenAIServer(FileLoop(reads=2)) as server:
        model = OpenAILike(id="local-model", api_key="offline", base_url=f"{server.url}/v1")
        run_in_mode(openai_agent(tmp_path, server, CompressionManager(), model), TASK, "sync")
        assert all("prompt_cache_key" not in c.body for c in server.calls)
        assert json.dumps(server.calls[0].body)  # sent as agno built it


# --- usage read as the provider reports it: stats and the session page ---------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async-stream"])
def test_stats_count_the_whole_prompt_and_the_cache_as_the_provider_reported_it(
    tmp_path: Path, anthropic: AnthropicServer, mode: str
) -> None:
    manager = CompressionManager(compress_at_tokens=4_000)
    run_in_mode(agent(tmp_path, claude(anthropic), manager), TASK, mode)
    calls = anthropic.calls
    assert manager.stats["prompt_tokens"] == sum(c.usage.prompt for c in calls)
    assert manager.stats["cache_read_tokens"] == sum(c.usage.read for c in calls) > 0
    assert manager.stats["cache_write_tokens"] == sum(c.usage.written + c.usage.written_long for c in calls) > 0
    assert manager.stats["billed_input_tokens"] == pytest.approx(anthropic.billed(), abs=len(calls))


def test_the_session_page_bills_what_the_provider_reported(tmp_path: Path, anthropic: AnthropicServer) -> None:
    from agno_compression._stores import store_for
    from agno_compression.viewer._timeline import build_timeline

    manager = CompressionManager(compress_at_tokens=4_000)
    built = agent(tmp_path, claude(anthropic), manager)
    run_in_mode(built, TASK, "sync")
    manager.flush_records()
    db = built.db
    records = store_for(db).events("s1")  # type: ignore[union-attr]
    from agno.db.base import SessionType

    timeline = build_timeline(db.get_session("s1", session_type=SessionType.AGENT), records)
    assert timeline.cost_reported
    assert timeline.cost_with == pytest.approx(anthropic.billed(), rel=1e-6)
    assert timeline.cost_with < timeline.cost_without
    calls = [c for lane in timeline.lanes for c in lane.calls]
    assert [c.sent for c in calls] == [c.usage.prompt for c in anthropic.calls]
    assert [c.read for c in calls] == [c.usage.read for c in anthropic.calls]


def test_evaluate_bills_the_replays_through_the_provider() -> None:
    from agno.models.message import Message

    from agno_compression.eval import Trajectory, evaluate

    messages = [Message(role="system", content=SYSTEM), Message(role="user", content=TASK)]
    for i in range(40):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"m{i}.py"})},
        }
        messages += [
            Message(role="assistant", content=f"Reading m{i}.py.", tool_calls=[call]),
            Message(role="tool", tool_call_id=f"c{i}", tool_name="read_file", content=read_file(f"m{i}.py")),
        ]
    messages.append(Message(role="assistant", content="handler_m3_7 needs the fix."))
    rows = evaluate(
        [Trajectory(source="test", name="reads", messages=messages)], budgets=(4_000,), provider="anthropic"
    )
    (row,) = rows
    assert row.provider == "anthropic" and row.folds >= 1
    assert 0 < row.billed < row.billed_uncompressed
    assert row.to_dict()["billed_ratio"] == pytest.approx(row.billed / row.billed_uncompressed)


def test_gemini_requests_are_left_as_agno_builds_them() -> None:
    """Gemini's implicit cache needs a stable leading part, which the fold keeps: nothing to add, nothing wrapped."""
    from agno.models.google import Gemini

    from agno_compression._prompt_cache import guard_prompt_cache

    model = Gemini(id="gemini-2.5-flash", api_key="offline")
    before = dict(vars(model))
    guard_prompt_cache(model)
    assert {k: v for k, v in vars(model).items() if not k.startswith("_agno_compression")} == before


# --- images: counted as the provider bills them ---------------------------------------------------------------


def test_a_screenshot_is_counted_as_the_loopback_anthropic_bills_it(tmp_path: Path) -> None:
    """A 1280 x 720 screenshot sent through agno's Claude: Anthropic bills width x height / 750 (1,229) for it; the
    manager's counter counts the same, where it counted a flat 765 before (838 under)."""
    import io

    from agno.media import Image
    from agno.models.message import Message
    from PIL import Image as Picture

    from agno_compression.pricing._bodies import BLOCK_OVERHEAD

    out = io.BytesIO()
    Picture.new("RGB", (1280, 720)).save(out, "PNG")
    shot = Image(content=out.getvalue(), format="png")
    reported = []
    for images in ([], [shot]):
        with AnthropicServer(FileLoop(reads=1)) as server:
            a = agent(
                tmp_path, claude(server), CompressionManager(compress_at_tokens=64_000), session=f"i{len(images)}"
            )
            a.run(TASK, images=images)
            reported.append(server.calls[0].usage.prompt)
    counter = TokenCounter("claude-sonnet-4-5")
    ours = counter.count_message(Message(role="user", content=TASK, images=[shot]))
    ours -= counter.count_message(Message(role="user", content=TASK))
    assert reported[1] - reported[0] - BLOCK_OVERHEAD == ours == 1_229
