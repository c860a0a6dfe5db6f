"""Where the manager's Anthropic cache breakpoints go (``_breakpoints``: pure planning on request layouts)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agno_compression._breakpoints import (
    LONG,
    SHORT,
    Layout,
    layout_of,
    mark_messages,
    plan_breakpoints,
    reach,
    ttl_order_holds,
)


def layout(kinds: str, marks: dict[int, str] | None = None, automatic: str | None = None, start: int = 2) -> Layout:
    names = {"t": "tool", "s": "text", "x": "text", "u": "tool_use", "r": "tool_result", "k": "thinking"}
    return Layout(kinds=tuple(names[k] for k in kinds), marks=marks or {}, automatic=automatic, messages_start=start)


def test_the_tail_the_stable_end_and_the_system_end_in_that_order() -> None:
    plan = plan_breakpoints(layout("tsxxurur"), stable=3, system_end=1)
    assert plan == {7: SHORT, 3: SHORT, 1: SHORT}


def test_never_more_than_the_limit_counting_the_users_markers_and_automatic_caching() -> None:
    plan = plan_breakpoints(layout("tsxxurur", marks={0: SHORT, 1: SHORT}, automatic=SHORT), stable=3, system_end=1)
    assert plan == {3: SHORT}  # tool and system marked by the user, the tail by automatic caching: one slot left


def test_no_duplicate_of_a_users_marker() -> None:
    assert plan_breakpoints(layout("tsxxur", marks={3: SHORT}), stable=3) == {5: SHORT}


def test_a_bridge_when_the_tail_cannot_reach_the_previous_tail() -> None:
    kinds = "ts" + "x" * 30
    assert 8 in plan_breakpoints(layout(kinds), stable=2, previous_tail=8)
    assert 25 not in plan_breakpoints(layout(kinds), stable=2, previous_tail=25)  # within reach


def test_a_run_of_tool_results_is_one_lookback_position() -> None:
    kinds = ("text",) * 5 + ("tool_result",) * 40
    assert reach(kinds, len(kinds) - 1) == 0


def test_thinking_blocks_are_never_marked() -> None:
    plan = plan_breakpoints(layout("tsxuk"), stable=2)
    assert 4 not in plan and 3 in plan


def test_ours_take_one_hour_before_a_users_one_hour_marker() -> None:
    assert plan_breakpoints(layout("tsxxurur", automatic=LONG), stable=3) == {3: LONG}


def test_a_request_whose_own_markers_break_the_order_is_left_alone() -> None:
    assert plan_breakpoints(layout("tsxxur", marks={0: SHORT, 1: LONG}), stable=3) == {}


def test_layout_and_marks_of_a_real_request_body() -> None:
    tools = [{"name": "read"}, {"name": "write", "cache_control": {"type": "ephemeral"}}]
    system = [{"type": "text", "text": "sys"}]
    shared_block = {"type": "text", "text": "task"}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [shared_block]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "1", "name": "read", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "1", "content": "x"}]},
    ]
    found = layout_of(tools, system, messages, {"type": "ephemeral", "ttl": "1h"})
    assert found.kinds == ("tool", "tool", "text", "text", "tool_use", "tool_result")
    assert found.marks == {1: SHORT} and found.automatic == LONG and found.messages_start == 3
    marked = mark_messages(messages, {3: SHORT, 5: LONG}, found.messages_start)
    assert marked[0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert marked[2]["content"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert "cache_control" not in shared_block and marked[1] is messages[1]  # copies, never the caller's objects


@given(
    st.lists(st.sampled_from("xurk"), min_size=1, max_size=60),
    st.dictionaries(st.integers(0, 61), st.sampled_from([SHORT, LONG]), max_size=3),
    st.sampled_from([None, SHORT, LONG]),
    st.integers(0, 61),
    st.integers(0, 61),
)
def test_the_plan_never_breaks_the_providers_rules(
    kinds: list[str], users: dict[int, str], automatic: str | None, stable: int, previous: int
) -> None:
    base = layout("ts" + "".join(kinds))
    n = len(base.kinds)
    users = {p: t for p, t in users.items() if p < n}
    given_layout = Layout(kinds=base.kinds, marks=users, automatic=automatic, messages_start=2)
    plan = plan_breakpoints(
        given_layout, stable=stable if stable < n else None, previous_tail=previous % n, system_end=1
    )
    taken = dict(users)
    if automatic is not None and given_layout.last_markable is not None:
        taken.setdefault(given_layout.last_markable, automatic)
    assert not set(plan) & set(users)
    assert all(given_layout.kinds[p] not in ("thinking", "") for p in plan)
    if ttl_order_holds(taken) and len(taken) <= 4:
        assert len(taken) + len(plan) <= 4
        assert ttl_order_holds({**taken, **plan})
