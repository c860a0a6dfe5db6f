"""The fold plan's invariants (DESIGN.md 1 and 2) as properties over generated conversations."""

from __future__ import annotations

from agno.models.message import Message
from hypothesis import given, settings

from agno_compression import pair_violations, plan_fold
from agno_compression._plan import call_ids, is_summary, make_summary_message, result_ids
from tests.strategies import conversation


def _current_user(messages: list[Message]) -> Message | None:
    users = [m for m in messages if m.role == "user" and not m.from_history and not is_summary(m)]
    return users[-1] if users else None


def _last_batch(messages: list[Message]) -> list[Message]:
    user = _current_user(messages)
    start = 0 if user is None else next(i for i, m in enumerate(messages) if m is user) + 1
    idx = [i for i in range(start, len(messages)) if call_ids(messages[i])]
    return messages[idx[-1] :] if idx else []


@settings(max_examples=1500, deadline=None)
@given(conversation())
def test_partition_is_complete_and_ordered(messages: list[Message]) -> None:
    plan = plan_fold(messages)
    summaries = [m for m in messages if is_summary(m)]
    parts = [*plan.system, *plan.folded, *plan.kept, *summaries]
    assert sorted(map(id, parts)) == sorted(map(id, messages)), "every message is in exactly one part"
    order = {id(m): i for i, m in enumerate(messages)}
    for part in (plan.system, plan.folded, plan.kept):
        assert [order[id(m)] for m in part] == sorted(order[id(m)] for m in part)


@settings(max_examples=1500, deadline=None)
@given(conversation())
def test_view_never_sends_an_orphan(messages: list[Message]) -> None:
    view = plan_fold(messages).view(make_summary_message("summary"))
    assert pair_violations(view) == []


@settings(max_examples=1500, deadline=None)
@given(conversation())
def test_system_current_user_and_last_batch_reach_the_model_verbatim(messages: list[Message]) -> None:
    plan = plan_fold(messages)
    view = plan.view(make_summary_message("summary"))
    ids = {id(m) for m in view}
    must = [m for m in messages if m.role in ("system", "developer")]
    user = _current_user(messages)
    if user is not None:
        must.append(user)
    made = {c for m in messages for c in call_ids(m)}
    must += [m for m in _last_batch(messages) if m.role != "tool" or result_ids(m) & made]
    for m in must:
        assert id(m) in ids, f"{m.role} message {m.id} was folded"
    # the summary sits right after the system messages
    assert view[len(plan.system)].content == "summary"


@settings(max_examples=800, deadline=None)
@given(conversation())
def test_a_pending_call_is_never_folded(messages: list[Message]) -> None:
    plan = plan_fold(messages)
    answered = {c for m in messages for c in result_ids(m)}
    callers = [m for m in messages if call_ids(m)]
    if callers and any(c not in answered for c in call_ids(callers[-1])):
        assert callers[-1] in plan.kept


def test_fold_of_a_simple_run() -> None:
    system = Message(role="system", content="be brief")
    old_user = Message(role="user", content="old", from_history=True)
    old_answer = Message(role="assistant", content="old answer", from_history=True)
    user = Message(role="user", content="fix the bug")
    calls = [
        Message(
            role="assistant",
            tool_calls=[{"id": f"c{i}", "type": "function", "function": {"name": "cat", "arguments": "{}"}}],
        )
        for i in range(3)
    ]
    results = [Message(role="tool", tool_call_id=f"c{i}", content=f"out {i}") for i in range(3)]
    messages = [system, old_user, old_answer, user]
    for c, r in zip(calls, results, strict=False):
        messages += [c, r]
    plan = plan_fold(messages)
    assert plan.folded == (old_user, old_answer, calls[0], results[0], calls[1], results[1])
    assert plan.kept == (user, calls[2], results[2])
    view = plan.view(make_summary_message("S"))
    assert [m.role for m in view] == ["system", "user", "user", "assistant", "tool"]


def test_previous_summary_is_absorbed_not_kept() -> None:
    old = make_summary_message("old")
    user = Message(role="user", content="go")
    plan = plan_fold([Message(role="system", content="s"), old, user])
    assert plan.previous_summary is old
    assert old not in plan.kept and old not in plan.folded
    assert not plan.has_work


def test_pair_violations_reports_orphans_and_missing_results() -> None:
    call = Message(role="assistant", tool_calls=[{"id": "a", "function": {"name": "x", "arguments": "{}"}}])
    later = Message(role="assistant", tool_calls=[{"id": "b", "function": {"name": "x", "arguments": "{}"}}])
    orphan = Message(role="tool", tool_call_id="zzz", content="?")
    kinds = [v.kind for v in pair_violations([orphan, call, later])]
    assert kinds == ["orphan_result", "missing_result"]
