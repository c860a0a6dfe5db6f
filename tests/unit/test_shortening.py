"""Kept call arguments shortened in context: long strings cut, the call otherwise unchanged."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from agno_compression._shortening import level, shorten_call


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


def test_a_lower_floor_cuts_shorter_strings_and_never_below_it() -> None:
    text = "word " * 60  # 300 characters: under the usual floor, over a shared one
    call = {"id": "c", "function": {"name": "Note", "arguments": json.dumps({"text": text, "tag": "t"})}}
    assert shorten_call(call, 0.01) is call, "under the usual 400-character floor: left whole"
    args = json.loads(shorten_call(call, 0.01, floor=120)["function"]["arguments"])
    assert len(args["text"]) <= 120 < len(text) and args["text"].startswith("word") and args["tag"] == "t"


def test_calls_without_long_json_strings_come_back_as_they_are() -> None:
    short = {"id": "c", "function": {"name": "Bash", "arguments": json.dumps({"command": "ls"})}}
    raw = {"id": "c", "function": {"name": "Bash", "arguments": "not json " * 100}}
    assert shorten_call(short, 0.1) is short
    assert shorten_call(raw, 0.1) is raw
    assert shorten_call("odd", 0.1) == "odd"


@settings(deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=5_000), min_size=1, max_size=12), excess=st.integers(0, 40_000)
)
def test_level_cuts_the_largest_outputs_to_one_common_size_freeing_the_excess(sizes: list[int], excess: int) -> None:
    cap = level(sizes, excess)
    freed = sum(max(0, s - cap) for s in sizes)
    if excess <= 0:
        assert cap == max(sizes), "nothing to free: nothing cut"
    elif sum(sizes) < excess:
        assert cap == 0, "nothing can free more than everything: cut all the way"
    else:
        assert freed >= excess, "the excess goes"
        assert sum(max(0, s - (cap + 1)) for s in sizes) < excess, "no higher size would do"


def test_level_keeps_the_smaller_outputs_whole() -> None:
    assert level([4_000, 3_000, 500, 200], 3_000) == 2_000  # 4,000 and 3,000 both down to 2,000; 500 and 200 whole
    assert level([1_000, 1_000, 1_000], 0) == 1_000
