"""Loading recordings of native tool-calling agents (Claude Code, Gemini CLI) as agno messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agno_compression.eval import load_trajectories

from .test_trajectories import assert_valid, write_json


def write_jsonl(tmp_path: Path, name: str, records: list[dict[str, Any]]) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def calls_of(message: Any) -> list[tuple[str, str, dict[str, Any]]]:
    return [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message.tool_calls or []]


# --------------------------------------------------------------------------- Claude Code


def cc(kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    """A Claude Code session record: ``user`` or ``assistant`` (``message_id`` names the model response)."""
    message: dict[str, Any] = {"role": kind, "content": content}
    if "message_id" in extra:
        message = {"id": extra.pop("message_id"), "type": "message", "model": "claude-sonnet-4-5", **message}
    return {
        "type": kind,
        "uuid": f"u{id(message)}",
        "sessionId": "s1",
        "isSidechain": False,
        "message": message,
        **extra,
    }


def tool_use(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def tool_result(call_id: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content, **extra}


SOURCE = "def main():\n    return load_config('settings.toml')\n"


def claude_code_session() -> list[dict[str, Any]]:
    return [
        {"type": "summary", "summary": "Config loader", "leafUuid": "x"},
        {"type": "file-history-snapshot", "messageId": "m0", "snapshot": {}},
        cc("user", "Make main() read settings.json instead"),
        # one model response written as three records (thinking, text, tool_use) and a parallel call after its result
        cc("assistant", [{"type": "thinking", "thinking": "Let me look.", "signature": "sig"}], message_id="msg_1"),
        cc("assistant", [{"type": "text", "text": "I'll read the file first."}], message_id="msg_1"),
        cc("assistant", [tool_use("toolu_1", "Read", file_path="/repo/app.py")], message_id="msg_1"),
        cc("user", [tool_result("toolu_1", f"     1→{SOURCE}")], toolUseResult={"type": "text"}),
        cc("assistant", [tool_use("toolu_2", "Grep", pattern="load_config")], message_id="msg_1"),
        cc("user", [tool_result("toolu_2", [{"type": "text", "text": "Permission denied"}], is_error=True)]),
        {"type": "progress", "data": {"message": {"type": "assistant"}}, "parentToolUseID": "toolu_2"},
        # a subagent's record inside the main file: the main agent never saw it
        {**cc("assistant", [{"type": "text", "text": "subagent notes"}], message_id="msg_side"), "isSidechain": True},
        cc(
            "assistant",
            [
                tool_use("toolu_3", "Write", file_path="/repo/app.py", content="x"),
                tool_use("toolu_4", "Bash", command="pytest"),
            ],
            message_id="msg_2",
        ),
        cc(
            "user",
            [
                tool_result("toolu_3", "File written"),
                tool_result(
                    "toolu_4",
                    [
                        {"type": "text", "text": "1 passed"},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}},
                    ],
                ),
                {"type": "text", "text": "[Request interrupted by user]"},
            ],
        ),
        {"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted"},
        {**cc("user", "shown in the transcript only"), "isVisibleInTranscriptOnly": True},
        cc(
            "user",
            [
                {"type": "text", "text": "Here is the screenshot"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j"}},
            ],
        ),
        cc("assistant", [{"type": "text", "text": "Done: main() reads settings.json."}], message_id="msg_3"),
    ]


def test_claude_code_session(tmp_path: Path) -> None:
    [trajectory] = load_trajectories(write_jsonl(tmp_path, "session.jsonl", claude_code_session()))
    assert trajectory.source == "claude-code" and trajectory.name == "session#0"
    messages = trajectory.messages
    roles = ["user", "assistant", "tool", "tool", "assistant", "tool", "tool", "user", "assistant"]
    assert [m.role for m in messages] == roles
    assert messages[1].content == "I'll read the file first."  # thinking dropped, the response's records merged
    assert calls_of(messages[1]) == [
        ("toolu_1", "Read", {"file_path": "/repo/app.py"}),
        ("toolu_2", "Grep", {"pattern": "load_config"}),
    ]
    assert (messages[2].tool_call_id, messages[2].tool_name, messages[2].content) == (
        "toolu_1",
        "Read",
        f"     1→{SOURCE}",
    )
    assert (messages[3].content, messages[3].tool_call_error) == ("Permission denied", True)
    assert [c[1] for c in calls_of(messages[4])] == ["Write", "Bash"] and messages[4].content == ""
    assert messages[6].content == "1 passed\n[image: image/png]"
    # the interrupt notice and the next prompt went to the model as one user turn
    assert messages[7].content == "[Request interrupted by user]\n\nHere is the screenshot\n[image: image/jpeg]"
    assert "subagent notes" not in json.dumps([m.content for m in messages])
    assert_valid(trajectory)


def test_claude_code_subagent_file_is_its_own_run(tmp_path: Path) -> None:
    records = [
        {**cc("user", "Explore the repository"), "isSidechain": True, "agentId": "a1"},
        {**cc("assistant", [tool_use("toolu_9", "Glob", pattern="**/*.py")], message_id="m9"), "isSidechain": True},
        {**cc("user", [tool_result("toolu_9", "app.py")]), "isSidechain": True},
        {**cc("assistant", [{"type": "text", "text": "One module: app.py"}], message_id="m10"), "isSidechain": True},
    ]
    [trajectory] = load_trajectories(write_jsonl(tmp_path, "agent-a1.jsonl", records))
    assert [m.role for m in trajectory.messages] == ["user", "assistant", "tool", "assistant"]
    assert_valid(trajectory)


def test_claude_code_stream_json(tmp_path: Path) -> None:
    def event(kind: str, content: Any, parent: str | None = None, **message: Any) -> dict[str, Any]:
        return {
            "type": kind,
            "message": {"role": kind, "content": content, **message},
            "parent_tool_use_id": parent,
            "session_id": "s2",
        }

    records = [
        {
            "type": "system",
            "subtype": "init",
            "session_id": "s2",
            "tools": ["Read", "Edit"],
            "model": "claude-opus-4-1",
        },
        event("assistant", [tool_use("toolu_a", "Task", prompt="find the bug")], id="m1"),
        event("assistant", [tool_use("toolu_sub", "Read", file_path="/x")], parent="toolu_a", id="m_sub"),
        event("user", [tool_result("toolu_sub", "subagent read")], parent="toolu_a"),
        event("user", [tool_result("toolu_a", [{"type": "text", "text": "bug in x.py:3"}])]),
        event("assistant", [tool_use("toolu_b", "Edit", file_path="/x", old_string="a", new_string="b")], id="m2"),
        event("user", [tool_result("toolu_b", "The file /x has been updated.")]),
        event("assistant", [{"type": "text", "text": "Fixed."}], id="m3"),
        {"type": "result", "subtype": "success", "result": "Fixed.", "num_turns": 3},
    ]
    [trajectory] = load_trajectories(write_jsonl(tmp_path, "stream.jsonl", records))
    assert trajectory.source == "claude-code"
    roles = [(m.role, [c[1] for c in calls_of(m)]) for m in trajectory.messages]
    assert roles == [("assistant", ["Task"]), ("tool", []), ("assistant", ["Edit"]), ("tool", []), ("assistant", [])]
    assert trajectory.messages[1].content == "bug in x.py:3"  # the subagent's own calls are not the main agent's
    assert_valid(trajectory)


# --------------------------------------------------------------------------- Gemini CLI


def gemini_call(
    call_id: str,
    name: str,
    args: dict[str, Any],
    response: Any,
    status: str = "success",
    extra_parts: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    result = [{"functionResponse": {"id": call_id, "name": name, "response": response}}, *(extra_parts or [])]
    return {
        "id": call_id,
        "name": name,
        "args": args,
        "result": result,
        "status": status,
        "resultDisplay": "shown",
        "displayName": name,
        "description": "a tool",
    }


def gemini_session() -> dict[str, Any]:
    read = gemini_call("read_file-1", "read_file", {"absolute_path": "/repo/app.py"}, {"output": SOURCE})
    failed = gemini_call(
        "replace-2",
        "replace",
        {"file_path": "/repo/app.py", "old_string": "toml", "new_string": "json"},
        {"error": "Failed to edit: 0 occurrences found"},
        status="error",
    )
    image = gemini_call(
        "read_file-3",
        "read_file",
        {"absolute_path": "/repo/logo.png"},
        {"output": "Binary content provided"},
        extra_parts=[{"inlineData": {"mimeType": "image/png", "data": "iVBOR"}}],
    )
    cancelled = {
        "id": "run_shell_command-4",
        "name": "run_shell_command",
        "args": {"command": "rm -rf build"},
        "status": "cancelled",
    }
    return {
        "sessionId": "9f2c",
        "projectHash": "ab12",
        "startTime": "2026-01-01T00:00:00Z",
        "lastUpdated": "2026-01-01T00:10:00Z",
        "messages": [
            {"id": "1", "type": "user", "content": "Make main() read settings.json"},
            {"id": "2", "type": "gemini", "content": "", "thoughts": [{"subject": "Plan", "description": "read it"}]},
            {
                "id": "3",
                "type": "gemini",
                "content": "Reading the file.",
                "toolCalls": [read, failed],
                "model": "gemini-2.5-pro",
                "thoughts": [{"subject": "x", "description": "y"}],
                "tokens": {"input": 10, "output": 5},
            },
            {"id": "4", "type": "info", "content": "Request cancelled."},
            {"id": "5", "type": "gemini", "content": "", "toolCalls": [image, cancelled]},
            {"id": "6", "type": "user", "content": [{"text": "and the logo?"}, {"text": "it is in /repo"}]},
            {"id": "7", "type": "error", "content": "API error 429"},
            {"id": "8", "type": "gemini", "content": "The logo is a PNG; main() now reads settings.json."},
        ],
    }


def test_gemini_cli_session(tmp_path: Path) -> None:
    [trajectory] = load_trajectories(write_json(tmp_path, "session-2026-01-01T00-00-9f2c.json", gemini_session()))
    assert trajectory.source == "gemini-cli" and trajectory.name == "session-2026-01-01T00-00-9f2c#0"
    messages = trajectory.messages
    assert [m.role for m in messages] == ["user", "assistant", "tool", "tool", "assistant", "tool", "user", "assistant"]
    assert calls_of(messages[1]) == [
        ("read_file-1", "read_file", {"absolute_path": "/repo/app.py"}),
        ("replace-2", "replace", {"file_path": "/repo/app.py", "old_string": "toml", "new_string": "json"}),
    ]
    assert (messages[2].content, messages[2].tool_name, messages[2].tool_call_error) == (SOURCE, "read_file", None)
    assert (messages[3].content, messages[3].tool_call_error) == ("Failed to edit: 0 occurrences found", True)
    # the cancelled call never ran: it is kept as text, the image read is described
    assert [c[1] for c in calls_of(messages[4])] == ["read_file"]
    assert messages[4].content == 'run_shell_command({"command": "rm -rf build"})'
    assert messages[5].content == "Binary content provided\n[image/png attachment]"
    assert messages[6].content == "and the logo?\nit is in /repo"
    assert_valid(trajectory)


def test_gemini_cli_jsonl_keeps_the_last_copy_of_a_message(tmp_path: Path) -> None:
    session = gemini_session()
    header = {k: v for k, v in session.items() if k != "messages"}
    first, _, third = session["messages"][:3]
    records = [
        header,
        first,
        {**third, "toolCalls": []},
        {"$set": {"lastUpdated": "2026-01-01T00:11:00Z"}},
        third,
        session["messages"][-1],
    ]
    [trajectory] = load_trajectories(write_jsonl(tmp_path, "session-x.jsonl", records))
    assert trajectory.source == "gemini-cli"
    assert [m.role for m in trajectory.messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert_valid(trajectory)


# --------------------------------------------------------------------------- OpenAI Responses items / Codex rollouts


def codex_rollout() -> list[dict[str, Any]]:
    def item(payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": "2026-01-01T00:00:00Z", "type": "response_item", "payload": payload}

    def message(role: str, kind: str, body: str) -> dict[str, Any]:
        return item({"type": "message", "role": role, "content": [{"type": kind, "text": body}]})

    shell_output = json.dumps({"output": SOURCE, "metadata": {"exit_code": 0, "duration_seconds": 0.1}})
    patch = "*** Begin Patch\n*** Update File: app.py\n-toml\n+json\n*** End Patch"
    return [
        {"type": "session_meta", "payload": {"id": "c1", "cwd": "/repo", "instructions": "You are Codex."}},
        message("user", "input_text", "<environment_context><cwd>/repo</cwd></environment_context>"),
        message("user", "input_text", "Make main() read settings.json"),
        {"type": "turn_context", "payload": {"model": "gpt-5-codex"}},
        item({"type": "reasoning", "summary": [], "encrypted_content": "gAAAA"}),
        message("assistant", "output_text", "Reading both files."),
        item(
            {"type": "function_call", "name": "shell", "arguments": '{"command": ["cat", "app.py"]}', "call_id": "c_1"}
        ),
        item({"type": "function_call", "name": "shell", "arguments": '{"command": ["ls"]}', "call_id": "c_2"}),
        item({"type": "function_call_output", "call_id": "c_1", "output": shell_output}),
        item({"type": "function_call_output", "call_id": "c_2", "output": "app.py\nsettings.json"}),
        {"type": "event_msg", "payload": {"type": "token_count"}},
        item(
            {"type": "custom_tool_call", "name": "apply_patch", "input": patch, "call_id": "c_3", "status": "completed"}
        ),
        item({"type": "custom_tool_call_output", "call_id": "c_3", "output": "Success. Updated: M app.py"}),
        message("assistant", "output_text", "main() now reads settings.json."),
    ]


def test_codex_rollout(tmp_path: Path) -> None:
    [trajectory] = load_trajectories(write_jsonl(tmp_path, "rollout-2026-01-01T00-00-00-c1.jsonl", codex_rollout()))
    assert trajectory.source == "openai-responses"
    messages = trajectory.messages
    assert [m.role for m in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert messages[0].content == "You are Codex."
    assert messages[1].content.endswith("\n\nMake main() read settings.json")  # one request, one user turn
    assert [c[0] for c in calls_of(messages[2])] == ["c_1", "c_2"] and messages[2].content == "Reading both files."
    assert (messages[3].content, messages[3].tool_name) == (SOURCE, "shell")  # Codex's JSON wrapper unwrapped
    assert calls_of(messages[5]) == [("c_3", "apply_patch", {"input": codex_rollout()[11]["payload"]["input"]})]
    assert_valid(trajectory)


def test_bare_responses_items(tmp_path: Path) -> None:
    items = [r["payload"] for r in codex_rollout() if r["type"] == "response_item"]
    for name, data in [("items.json", items), ("request.json", {"model": "gpt-5", "input": items})]:
        [trajectory] = load_trajectories(write_json(tmp_path, name, data))
        assert trajectory.source == "openai-responses"
        assert [m.role for m in trajectory.messages][:3] == ["user", "assistant", "tool"]
        assert_valid(trajectory)


# --------------------------------------------------------------------------- through the replay


def long_claude_code_session(steps: int) -> list[dict[str, Any]]:
    """A Claude Code session reading whole files and rewriting one, long enough to fold at a small budget."""
    records = [cc("user", "Rename load_config to read_settings everywhere")]
    for step in range(steps):
        body = "\n".join(f"{n:6}→def handler_{step}_{n}(config): return load_config(config)" for n in range(60))
        records.append(
            cc(
                "assistant",
                [tool_use(f"toolu_r{step}", "Read", file_path=f"/repo/mod_{step}.py")],
                message_id=f"r{step}",
            )
        )
        records.append(cc("user", [tool_result(f"toolu_r{step}", body)]))
        records.append(
            cc(
                "assistant",
                [
                    tool_use(
                        f"toolu_e{step}",
                        "Edit",
                        file_path=f"/repo/mod_{step}.py",
                        old_string="load_config",
                        new_string="read_settings",
                    )
                ],
                message_id=f"e{step}",
            )
        )
        records.append(cc("user", [tool_result(f"toolu_e{step}", f"The file /repo/mod_{step}.py has been updated.")]))
    records.append(cc("assistant", [{"type": "text", "text": "Renamed in every module."}], message_id="end"))
    return records


@pytest.mark.parametrize("budget", [2000])
def test_cli_eval_replays_a_claude_code_session(tmp_path: Path, budget: int) -> None:
    from typer.testing import CliRunner

    from agno_compression._cli import app

    path = write_jsonl(tmp_path, "session.jsonl", long_claude_code_session(steps=8))
    result = CliRunner().invoke(app, ["eval", str(path), "-b", str(budget), "--json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["rows"]
    assert row["model_calls"] == 17 and row["peak_prompt_uncompressed"] > budget >= row["peak_prompt"]
    assert row["folds"] >= 1 and row["pair_violations"] == 0
