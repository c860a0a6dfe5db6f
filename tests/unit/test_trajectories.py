"""Loading recorded agent runs (tau-bench, OpenHands, SWE-agent, TapeAgents, OpenAI chat) as agno messages."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from agno.models.message import Message

from agno_compression._exceptions import ConfigError
from agno_compression.eval import (
    Trajectory,
    TrajectoryFormatError,
    iter_shared_trajectories,
    load_trajectories,
)

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "trajectories"


@pytest.fixture
def shared() -> Path:
    """The shared trajectory folder beside the repository, or skip."""
    if not SHARED.is_dir():
        pytest.skip(f"shared trajectory data not found at {SHARED} (only present beside the dev checkout)")
    return SHARED


def assert_valid(trajectory: Trajectory) -> None:
    """Ids, str content, and tool calls paired with exactly one result (a final call may be pending)."""
    messages = trajectory.messages
    assert [m.id for m in messages] == [f"{trajectory.name}:{i}" for i in range(len(messages))]
    assert all(isinstance(m.content, str) for m in messages)
    assert all(m.role in {"system", "user", "assistant", "tool"} for m in messages)
    calls: dict[str, int] = {}  # call id -> index of its assistant message
    results: Counter[str] = Counter()
    for index, message in enumerate(messages):
        for call in message.tool_calls or []:
            assert message.role == "assistant"
            assert call["type"] == "function" and isinstance(call["function"]["arguments"], str)
            assert call["id"] not in calls, f"{trajectory.name}: duplicate call id {call['id']}"
            calls[call["id"]] = index
        if message.role == "tool":
            assert message.tool_call_id in calls, f"{trajectory.name}:{index} answers no earlier call"
            assert message.tool_name
            results[message.tool_call_id] += 1
    last_with_calls = max(calls.values(), default=-1)
    for call_id, index in calls.items():
        pending_allowed = index == last_with_calls and all(m.role == "tool" for m in messages[index + 1 :])
        assert results[call_id] == 1 or (results[call_id] == 0 and pending_allowed), f"{trajectory.name}: {call_id}"


def write_json(tmp_path: Path, name: str, data: Any) -> Path:
    """``data`` as a JSON file in ``tmp_path``."""
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- real files


@pytest.mark.parametrize(
    ("folder", "source", "runs", "first_roles"),
    [
        ("tau-bench", "tau-bench", 200, {("system", "user")}),
        ("openhands", "openhands", 9, {("system", "user"), ("user", "assistant")}),
        ("swe-agent", "swe-agent", 22, {("system", "user")}),
        ("tapeagents", "tapeagents", 8, {("user", "assistant")}),
    ],
)
def test_shared_folder(shared: Path, folder: str, source: str, runs: int, first_roles: set[tuple[str, str]]) -> None:
    trajectories = load_trajectories(shared / folder)
    assert len(trajectories) == runs
    assert {t.source for t in trajectories} == {source}
    assert {(t.messages[0].role, t.messages[1].role) for t in trajectories} == first_roles
    assert len({t.name for t in trajectories}) == runs
    for trajectory in trajectories:
        assert_valid(trajectory)
        assert any(m.role == "user" for m in trajectory.messages)


def test_tau_bench_keeps_calls_and_results(shared: Path) -> None:
    raw = json.loads((shared / "tau-bench" / "gpt-4o-airline.json").read_text())
    trajectories = load_trajectories(shared / "tau-bench" / "gpt-4o-airline.json")
    first = trajectories[0]
    assert first.name == f"gpt-4o-airline#{raw[0]['task_id']}-{raw[0]['trial']}"
    assert [m.role for m in first.messages] == [m["role"] for m in raw[0]["traj"]]
    tool = next(m for m in first.messages if m.role == "tool")
    original = next(m for m in raw[0]["traj"] if m["role"] == "tool")
    assert (tool.tool_call_id, tool.tool_name) == (original["tool_call_id"], original["name"])
    assert tool.content == original["content"]
    assert sum(m.role == "tool" for t in trajectories for m in t.messages) == 1164
    # The recording reuses call ids within a run; repeats get a suffix so each id has one result.
    ids = [c["id"] for m in first.messages for c in m.tool_calls or []]
    assert ids.count("call_HGn16KZh9oNCruxsMJ4gYXan") == 1 and "call_HGn16KZh9oNCruxsMJ4gYXan_2" in ids


def test_openhands_runs(shared: Path) -> None:
    folder = shared / "openhands"
    swe = load_trajectories(folder / "evaluation__benchmarks__multi_swe_bench__examples__output.jsonl")
    assert [t.name.split("#")[1] for t in swe] == [f"ponylang__ponyc-{n}" for n in (4595, 4593, 4588)]
    first = swe[0].messages
    assert [m.role for m in first[:4]] == ["system", "user", "assistant", "tool"]
    assert first[2].tool_calls == [
        {
            "id": "toolu_01",
            "type": "function",
            "function": {"name": "execute_bash", "arguments": '{"command": "ls -l /workspace/ponylang__ponyc__0.1"}'},
        }
    ]
    assert first[3].tool_call_id == "toolu_01" and first[3].tool_name == "execute_bash"
    assert first[-1].tool_calls and first[-1].tool_calls[0]["function"]["name"] == "finish"  # final pending call
    assert max(len(str(m.content)) for t in swe for m in t.messages if m.role == "tool") > 20_000  # not truncated
    # An error observation with no cause is kept as a user message, not an orphan tool result.
    assert any(m.role == "user" and str(m.content).startswith("Parameter 'command'") for m in swe[1].messages)

    old_style = load_trajectories(folder / "tests__unit__resolver__mock_output__output.jsonl")
    assert [m.role for m in old_style[0].messages] == ["user", *["assistant", "tool"] * 3, "assistant"]

    chat = load_trajectories(folder / "tests__runtime__trajs__basic_interactions.json")
    assert [m.role for m in chat[0].messages] == ["user", "assistant"] * 3


def test_swe_agent_history(shared: Path) -> None:
    folder = shared / "swe-agent"
    calling = load_trajectories(folder / "trajectories__demonstrations__function_calling_simple.traj")[0]
    assert [m.role for m in calling.messages[:4]] == ["system", "user", "assistant", "tool"]
    assert calling.messages[3].tool_name == "find_file"
    plain = load_trajectories(folder / "trajectories__demonstrations__ctf__pwn__warmup.traj")[0]
    raw = json.loads((folder / "trajectories__demonstrations__ctf__pwn__warmup.traj").read_text())["history"]
    assert [(m.role, m.content) for m in plain.messages] == [(m["role"], m["content"]) for m in raw]
    assert not any(m.tool_calls for m in plain.messages)


def test_tapeagents_steps(shared: Path) -> None:
    path = shared / "tapeagents" / "l1_task000.json"
    steps = json.loads(path.read_text())["steps"]
    messages = load_trajectories(path)[0].messages
    assert messages[0].role == "user" and messages[0].content == steps[0]["content"]
    search = next(m for m in messages if m.tool_calls and m.tool_calls[0]["function"]["name"] == "search")
    assert search.tool_calls is not None and search.tool_calls[0]["id"] == "call_3"
    assert json.loads(search.tool_calls[0]["function"]["arguments"])["query"] == steps[3]["query"]
    page = next(m for m in messages if m.role == "tool" and m.tool_name == "open_url")
    assert page.content == next(s["text"] for s in steps if s["kind"] == "page_observation")
    serp = next(m for m in messages if m.role == "tool" and m.tool_name == "search")
    assert steps[5]["serp"][0]["url"] in str(serp.content)


def test_iter_shared_and_deterministic(shared: Path) -> None:
    trajectories = list(iter_shared_trajectories(shared))
    counts = Counter(t.source for t in trajectories)
    assert counts == {"tau-bench": 200, "openhands": 9, "swe-agent": 22, "tapeagents": 8}
    again = load_trajectories(shared / "tapeagents")
    assert [m.model_dump() for t in again for m in t.messages] == [
        m.model_dump() for t in trajectories if t.source == "tapeagents" for m in t.messages
    ]


# --------------------------------------------------------------------------- synthetic files


def test_openhands_parallel_calls_and_unanswered_call(tmp_path: Path) -> None:
    def action(event_id: int, call_id: str, response: str) -> dict[str, Any]:
        metadata = {"function_name": "execute_bash", "tool_call_id": call_id, "model_response": {"id": response}}
        return {"id": event_id, "source": "agent", "action": "run", "args": {"command": call_id, "thought": "t"},
                "tool_call_metadata": metadata}  # fmt: skip

    def observation(event_id: int, cause: int) -> dict[str, Any]:
        return {"id": event_id, "source": "agent", "observation": "run", "cause": cause, "content": f"out {cause}"}

    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "go"}},
        action(1, "a", "r1"),
        action(2, "b", "r1"),
        observation(3, 1),
        observation(4, 2),
        action(5, "c", "r2"),  # never answered, and not the last turn
        {"id": 6, "source": "agent", "action": "message", "args": {"content": "done"}},
        {"id": 7, "source": "environment", "observation": "agent_state_changed", "content": ""},
    ]
    [trajectory] = load_trajectories(write_json(tmp_path, "run.json", events))
    assert trajectory.source == "openhands" and trajectory.name == "run#0"
    roles = [(m.role, len(m.tool_calls or [])) for m in trajectory.messages]
    assert roles == [("user", 0), ("assistant", 2), ("tool", 0), ("tool", 0), ("assistant", 0), ("assistant", 0)]
    assert [m.tool_call_id for m in trajectory.messages[2:4]] == ["a", "b"]
    assert trajectory.messages[4].content == 't\nexecute_bash({"command": "c"})'  # dropped call kept as text
    assert_valid(trajectory)


def test_openai_chat_round_trip(tmp_path: Path) -> None:
    chat: list[dict[str, Any]] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"q": 1}'}}],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "weather", "content": "sunny " * 1000},
        {"role": "assistant", "content": "Sunny."},
    ]

    def back(message: Message) -> dict[str, Any]:
        out: dict[str, Any] = {"role": message.role, "content": message.content}
        if message.tool_calls:
            out["tool_calls"] = message.tool_calls
        if message.role == "tool":
            out |= {"tool_call_id": message.tool_call_id, "name": message.tool_name}
        return out

    for name, data in [("chat.json", chat), ("wrapped.json", {"messages": chat})]:
        [trajectory] = load_trajectories(write_json(tmp_path, name, data))
        assert trajectory.source == "openai-chat"
        assert [back(m) for m in trajectory.messages] == chat
        assert_valid(trajectory)


def test_non_string_content_is_json(tmp_path: Path) -> None:
    chat = [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"role": "assistant", "content": {"answer": 42}}]  # fmt: skip
    [trajectory] = load_trajectories(write_json(tmp_path, "c.json", chat))
    assert [m.content for m in trajectory.messages] == ["a\nb", '{"answer": 42}']


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("broken.json", '[{"role": "user", "content": "hi"', "cannot read as JSON"),
        ("unknown.json", '{"foo": 1}', "unrecognised structure"),
        ("bad_tau.json", '[{"task_id": 1, "traj": [{"role": "wizard", "content": "x"}]}]', "tau-bench"),
        ("bad_tool.json", '[{"role": "tool", "content": "no id"}]', "tool_call_id"),
    ],
)
def test_malformed_file_names_file(tmp_path: Path, name: str, text: str, problem: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TrajectoryFormatError) as caught:
        load_trajectories(path)
    assert str(path) in str(caught.value) and problem in str(caught.value)
    assert isinstance(caught.value, ConfigError)


def test_directory_skips_other_files(tmp_path: Path) -> None:
    (tmp_path / "LICENSE").write_text("MIT")
    (tmp_path / "SOURCE.txt").write_text("repo")
    (tmp_path / "config.json").write_text('{"not": "a run"}')
    (tmp_path / "nested").mkdir()
    write_json(tmp_path / "nested", "a.json", [{"role": "user", "content": "x"}])
    assert [t.name for t in load_trajectories(tmp_path)] == ["a#0"]
    with pytest.raises(FileNotFoundError):
        load_trajectories(tmp_path / "missing")


# --- mini-swe-agent (``*.traj.json``) and unknown roles -------------------------------------------------


def mini_swe_agent_traj(steps: int = 10) -> dict[str, Any]:
    """A mini-swe-agent run as its ``save_traj`` writes it: bash actions in assistant text, outputs as user turns."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer shell."},
        {
            "role": "user",
            "content": "<pr_description>\nQuerySet.count() ignores the filter when a union is involved.\n"
            "</pr_description>\n\n<instructions>Solve the issue by editing source files.</instructions>",
        },
    ]
    for step in range(steps):
        command = f"grep -rn 'def count' django/db/models/query_{step}.py | head -100"
        messages.append(
            {
                "role": "assistant",
                "content": f"THOUGHT: I need to look at file {step} to find where count() drops the filter.\n\n"
                f"```bash\n{command}\n```",
                "extra": {"response": {"usage": {"prompt_tokens": 1000 + step, "completion_tokens": 40}}},
            }
        )
        body = "\n".join(f"django/db/models/query_{step}.py:{n}:    def count_{n}(self): return 0" for n in range(80))
        messages.append({"role": "user", "content": f"<returncode>0</returncode>\n<output>\n{body}\n</output>"})
    diff = "diff --git a/django/db/models/query.py b/django/db/models/query.py\n-        return 0\n+        return n\n"
    messages.append(
        {
            "role": "assistant",
            "content": "THOUGHT: Fixed.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && "
            "git diff --cached\n```",
        }
    )
    messages.append({"role": "user", "content": diff})
    messages.append({"role": "exit", "content": diff, "extra": {"exit_status": "Submitted", "submission": diff}})
    return {
        "info": {
            "exit_status": "Submitted",
            "submission": diff,
            "model_stats": {"instance_cost": 0.42, "api_calls": steps + 1},
            "mini_version": "1.14.0",
            "config": {"agent": {"step_limit": 250}, "model": {"model_name": "gemini/gemini-2.5-pro"}},
        },
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1",
    }


def test_mini_swe_agent_trajectory_is_a_recording(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data = mini_swe_agent_traj()
    path = tmp_path / "django__django-11999.traj.json"
    path.write_text(json.dumps(data))
    (run,) = load_trajectories(path)
    assert run.source == "mini-swe-agent" and run.name == "django__django-11999.traj#0"
    assert_valid(run)
    expected = [m for m in data["messages"] if m["role"] != "exit"]
    assert [(m.role, m.content) for m in run.messages] == [(m["role"], m["content"]) for m in expected]
    assert "```bash" in str(run.messages[2].content) and "<returncode>0" in str(run.messages[3].content)
    assert not [r for r in caplog.records if r.levelname == "WARNING"], "exit is the format's own record"
    # detected by its last ``exit`` message even without ``trajectory_format``
    del data["trajectory_format"]
    path.write_text(json.dumps(data))
    assert load_trajectories(path)[0].source == "mini-swe-agent"


def test_unknown_roles_in_a_chat_file_are_skipped_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "task"},
        {"role": "observer", "content": "note 1"},
        {"role": "assistant", "content": "a"},
        {"role": "observer", "content": "note 2"},
        {"role": "function_log", "content": "x"},
        {"role": "user", "content": "more"},
    ]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"messages": messages}))
    with caplog.at_level("WARNING", logger="agno_compression"):
        (run,) = load_trajectories(path)
    assert [m.content for m in run.messages] == ["s", "task", "a", "more"]
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1 and str(path) in warned[0], warned
    assert "'observer' (2)" in warned[0] and "'function_log' (1)" in warned[0]
    # a message that is not a chat message at all still fails the file
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "t"}, {"role": 5}]}))
    with pytest.raises(TrajectoryFormatError, match=r"chat\.json"):
        load_trajectories(path)


def test_cli_eval_reads_a_mini_swe_agent_run(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agno_compression._cli import app

    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps(mini_swe_agent_traj(steps=14)))
    result = CliRunner().invoke(app, ["eval", str(path), "-b", "2000", "--json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["rows"]
    assert row["model_calls"] >= 15 and row["peak_prompt_uncompressed"] > 2000 >= row["peak_prompt"]
    assert row["folds"] >= 1 and row["pair_violations"] == 0
