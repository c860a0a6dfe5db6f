"""Kept call arguments shortened in context: long strings cut, the call otherwise unchanged."""

from __future__ import annotations

import json

from agno_compression._shortening import shorten_call


def test_only_long_string_arguments_are_cut_and_the_call_keeps_its_id_and_name() -> None:
    content = "\n".join(f"line_{i} = {i}" for i in range(400))
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "Write", "arguments": json.dumps({"file_path": "/a.py", "content": content})},
    }
    cut = shorten_call(call, 0.1)
    args = json.loads(cut["function"]["arguments"])
    assert cut["id"] == "c1" and cut["function"]["name"] == "Write" and args["file_path"] == "/a.py"
    assert len(args["content"]) < len(content) / 5 and args["content"].startswith("line_0 = 0")
    assert call["function"]["arguments"] == json.dumps({"file_path": "/a.py", "content": content}), "a copy"


def test_calls_without_long_json_strings_come_back_as_they_are() -> None:
    short = {"id": "c", "function": {"name": "Bash", "arguments": json.dumps({"command": "ls"})}}
    raw = {"id": "c", "function": {"name": "Bash", "arguments": "not json " * 100}}
    assert shorten_call(short, 0.1) is short
    assert shorten_call(raw, 0.1) is raw
    assert shorten_call("odd", 0.1) == "odd"
