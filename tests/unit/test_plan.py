"""The fold plan's invariants (docs/design.md 0-2) as properties over generated conversations, and its layout."""

from __future__ import annotations

import re

import pytest
from agno.media import Image
from agno.models.message import Message
from hypothesis import given, settings
from hypothesis import strategies as st

from agno_compression._messages import call_ids, result_ids
from agno_compression._plan import (
    HISTORY,
    PROGRESS,
    filter_folded,
    find_current_user,
    is_summary,
    make_summary_message,
    pair_violations,
    plan_fold,
    recent_start,
    summary_kind,
)
from tests.strategies import conversation, examples


def _call(i: int) -> Message:
    return Message(
        role="assistant",
        tool_calls=[{"id": f"c{i}", "type": "function", "function": {"name": "cat", "arguments": "{}"}}],
    )


def _result(i: int) -> Message:
    return Message(role="tool", tool_call_id=f"c{i}", content=f"out {i}")


def _oracle_current(messages: list[Message]) -> Message | None:
    """The run's input: the newest user message of this run not appended after tool results (media carriers)."""
    found = None
    after_tools = False
    for m in messages:
        if is_summary(m):
            continue
        if m.role == "user" and not m.from_history and not after_tools:
            found = m
        tool_of_this_run = m.role == "tool" and not m.from_history
        after_tools = tool_of_this_run or (after_tools and m.role == "user" and not m.from_history)
    return found


def _last_batch(messages: list[Message], user: Message | None) -> list[Message]:
    start = 0 if user is None else next(i for i, m in enumerate(messages) if m is user) + 1
    idx = [i for i in range(start, len(messages)) if call_ids(messages[i])]
    return messages[idx[-1] :] if idx else []


@settings(max_examples=examples(1500), deadline=None)
@given(conversation())
def test_partition_is_complete_and_ordered(messages: list[Message]) -> None:
    plan = plan_fold(messages)
    summaries = [m for m in messages if is_summary(m)]
    current = [plan.current] if plan.current is not None else []
    parts = [*plan.system, *plan.history, *plan.before, *current, *plan.steps, *plan.kept, *summaries]
    assert sorted(map(id, parts)) == sorted(map(id, messages)), "every message is in exactly one part"
    order = {id(m): i for i, m in enumerate(messages)}
    for part in (plan.system, plan.history, plan.steps, plan.kept, plan.folded):
        assert [order[id(m)] for m in part] == sorted(order[id(m)] for m in part)


@settings(max_examples=examples(1500), deadline=None)
@given(conversation())
def test_view_never_sends_an_orphan(messages: list[Message]) -> None:
    plan = plan_fold(messages)
    view = plan.view(make_summary_message("A", HISTORY), make_summary_message("B", PROGRESS))
    assert pair_violations(view) == []


@settings(max_examples=examples(1500), deadline=None)
@given(conversation())
def test_nothing_from_after_the_current_user_message_is_placed_before_it(messages: list[Message]) -> None:
    plan = plan_fold(messages)
    if plan.current is None:
        assert not plan.steps and plan.progress_summary is None
        return
    position = next(i for i, m in enumerate(messages) if m is plan.current)
    later = {id(m) for m in messages[position + 1 :]}
    view = plan.view(make_summary_message("A", HISTORY), make_summary_message("B", PROGRESS))
    head = view[: next(i for i, m in enumerate(view) if m is plan.current)]
    assert not any(id(m) in later for m in head), "a later message was moved before the current user message"
    assert all(id(m) not in later for m in plan.history), "a later message was folded into the history summary"
    assert summary_kind(view[view.index(plan.current) + 1]) == PROGRESS if plan.steps else True


@settings(max_examples=examples(1500), deadline=None)
@given(conversation())
def test_system_current_user_and_last_batch_reach_the_model_verbatim(messages: list[Message]) -> None:
    plan = plan_fold(messages)
    view = plan.view(make_summary_message("A", HISTORY), make_summary_message("B", PROGRESS))
    ids = {id(m) for m in view}
    user = _oracle_current(messages)
    assert plan.current is user, "the current user message is the run's input, not a media carrier"
    must = [m for m in messages if m.role in ("system", "developer")]
    if user is not None:
        must.append(user)
    made = {c for m in messages for c in call_ids(m)}
    must += [m for m in _last_batch(messages, user) if (m.role != "tool" or result_ids(m) & made) and not is_summary(m)]
    for m in must:
        assert id(m) in ids, f"{m.role} message {m.id} was folded"
    assert view[len(plan.system)].content == "A", "the history summary sits right after the system messages"


@settings(max_examples=examples(800), deadline=None)
@given(conversation())
def test_a_pending_call_is_never_folded(messages: list[Message]) -> None:
    plan = plan_fold(messages)
    answered = {c for m in messages for c in result_ids(m)}
    callers = [m for m in messages if call_ids(m)]
    if callers and any(c not in answered for c in call_ids(callers[-1])):
        pending = callers[-1]
        assert pending in plan.kept or pending in plan.before
        # the results that did arrive for it stay with it
        arrived = [m for m in messages if result_ids(m) & set(call_ids(pending))]
        assert all(r in plan.kept or r in plan.before for r in arrived)


def _pending_history_call() -> tuple[Message, Message]:
    """An earlier run's assistant message with two calls, only one of them answered."""
    pending = Message(
        role="assistant",
        from_history=True,
        tool_calls=[
            {"id": "p1", "type": "function", "function": {"name": "approve", "arguments": "{}"}},
            {"id": "p2", "type": "function", "function": {"name": "approve", "arguments": "{}"}},
        ],
    )
    return pending, Message(role="tool", tool_call_id="p1", content="yes", from_history=True)


def test_a_pending_call_before_the_last_batch_rule_is_kept() -> None:
    """No batch after the current user: the pending call in history is kept by the pending rule alone."""
    pending, arrived = _pending_history_call()
    old = [Message(role="user", content="old", from_history=True), _call(1), _result(1)]
    messages = [Message(role="system", content="s"), *old, pending, arrived]
    plan = plan_fold(messages)
    assert plan.current is None
    assert pending in plan.kept and arrived in plan.kept
    assert pending not in plan.folded


def test_a_pending_call_in_history_is_kept_before_the_current_user_message() -> None:
    """A call still waiting from an earlier run sits before the current user: only the pending rule keeps it.

    The last-batch rule cannot: there is no batch after the current user message.
    """
    pending, arrived = _pending_history_call()
    old = Message(role="user", content="deploy it", from_history=True)
    user = Message(role="user", content="status?")
    messages = [Message(role="system", content="s"), old, pending, arrived, user]
    plan = plan_fold(messages)
    assert plan.current is user
    assert plan.before == (pending, arrived), "the pending call and the result that did arrive stay, in order"
    assert plan.history == (old,)
    view = plan.view(make_summary_message("A"), None)
    assert [m.content for m in view] == ["s", "A", None, "yes", "status?"]


def test_late_result_keeps_its_call_by_pair_closure() -> None:
    """A result that arrives after a later batch: keeping the last batch keeps that result, so its call stays too."""
    user = Message(role="user", content="go")
    late = Message(role="tool", tool_call_id="c1", content="late output")
    messages = [Message(role="system", content="s"), user, _call(1), _call(2), _result(2), late]
    plan = plan_fold(messages)
    assert late in plan.kept
    assert messages[2] in plan.kept, "the call of a kept result is kept (pair closure)"
    assert pair_violations(plan.view(None, make_summary_message("B", PROGRESS))) == []


def test_fold_of_a_simple_run() -> None:
    system = Message(role="system", content="be brief")
    old_user = Message(role="user", content="old", from_history=True)
    old_answer = Message(role="assistant", content="old answer", from_history=True)
    user = Message(role="user", content="fix the bug")
    calls = [_call(i) for i in range(3)]
    results = [_result(i) for i in range(3)]
    messages = [system, old_user, old_answer, user]
    for c, r in zip(calls, results, strict=True):
        messages += [c, r]
    plan = plan_fold(messages)
    assert plan.history == (old_user, old_answer)
    assert plan.current is user
    assert plan.steps == (calls[0], results[0], calls[1], results[1])
    assert plan.kept == (calls[2], results[2])
    view = plan.view(make_summary_message("A"), make_summary_message("B", PROGRESS))
    assert [m.content for m in view[:4]] == ["be brief", "A", "fix the bug", "B"]
    assert [m.role for m in view[4:]] == ["assistant", "tool"]


def test_media_carried_after_tool_results_belongs_to_the_batch() -> None:
    """agno appends a user message with a tool's images after the results: it is not the current user message."""
    user = Message(role="user", content="describe the charts")
    messages = [Message(role="system", content="s"), user]
    for i in range(3):
        media = Message(
            role="user",
            content="The tool call above generated the attached media.",
            images=[Image(url=f"https://example.com/{i}.png")],
        )
        messages += [_call(i), _result(i), media]
    assert find_current_user(messages) == 1
    plan = plan_fold(messages)
    assert plan.current is user
    assert plan.kept == tuple(messages[-3:]), "the last batch keeps its media message"
    assert messages[4] in plan.steps, "an earlier batch's media message is folded with its batch"


def test_the_reply_after_the_question_is_not_moved_before_it() -> None:
    """LangMem's test_last_human_message_not_summarized shape: [..history.., "Message 3", assistant "Response 3"]."""
    history = []
    for i in (1, 2):
        history += [
            Message(role="user", content=f"Message {i}", from_history=True),
            Message(role="assistant", content=f"Response {i}", from_history=True),
        ]
    question = Message(role="user", content="Message 3")
    reply = Message(role="assistant", content="Response 3")
    plan = plan_fold([*history, question, reply])
    view = plan.view(make_summary_message("A"), None)
    assert [m.content for m in view] == ["A", "Message 3", "Response 3"]
    assert reply not in plan.history


def test_the_input_after_history_ending_in_a_tool_result_is_the_current_user_message() -> None:
    """A stored run that ended on a tool result (stop_after_tool_call): the next run's input still counts."""
    history = [Message(role="user", content="old", from_history=True), _call(1), _result(1)]
    for m in history[1:]:
        m.from_history = True
    question = Message(role="user", content="next question")
    plan = plan_fold([Message(role="system", content="s"), *history, question])
    assert plan.current is question
    assert plan.history == tuple(history)


def test_later_folds_leave_the_prefix_alone() -> None:
    """After a run's first fold only the progress summary changes: the history summary is not rewritten."""
    a = make_summary_message("A")
    user = Message(role="user", content="go")
    b = make_summary_message("B", PROGRESS)
    messages = [Message(role="system", content="s"), a, user, b, _call(1), _result(1), _call(2), _result(2)]
    plan = plan_fold(messages)
    assert plan.history == () and plan.history_summary is a
    assert plan.progress_summary is b and plan.steps == tuple(messages[4:6])
    assert plan.unchanged_view()[:3] == messages[:3]


def test_previous_summary_is_absorbed_not_kept() -> None:
    old = make_summary_message("old")
    user = Message(role="user", content="go")
    plan = plan_fold([Message(role="system", content="s"), old, user])
    assert plan.history_summary is old and plan.previous_summary is old
    assert old not in plan.kept and old not in plan.folded
    assert not plan.has_work


def test_pair_violations_reports_orphans_and_missing_results() -> None:
    call = Message(role="assistant", tool_calls=[{"id": "a", "function": {"name": "x", "arguments": "{}"}}])
    later = Message(role="assistant", tool_calls=[{"id": "b", "function": {"name": "x", "arguments": "{}"}}])
    orphan = Message(role="tool", tool_call_id="zzz", content="?")
    kinds = [v.kind for v in pair_violations([orphan, call, later])]
    assert kinds == ["orphan_result", "missing_result"]


def test_messages_agno_adds_after_tool_results_are_not_the_run_input() -> None:
    """A temporary message, and a chain of carriers after results (media, then retry guidance), belong to the batch;
    a summary between them changes nothing. Without such messages the run's input is the newest user message."""
    user = Message(role="user", content="go")
    media = Message(role="user", content="The tool call above generated the attached media.")
    guidance = Message(role="user", content="retry with a smaller page")
    note = Message(role="user", content="note for this call only", temporary=True)
    first = [Message(role="system", content="s"), user, _call(1), _result(1)]
    assert find_current_user([*first, media, guidance]) == 1
    assert find_current_user([*first, media, make_summary_message("B", PROGRESS), guidance]) == 1
    assert find_current_user([*first, make_summary_message("B", PROGRESS), guidance]) == 1, "look back one by one"
    assert find_current_user([Message(role="system", content="s"), user, note]) == 1, "temporary: not the input"
    # the look-back stops at the first message: a summary there is skipped, nothing wraps around to the end
    assert find_current_user([make_summary_message("A"), user, _call(1), _result(1)]) == 1
    later = Message(role="user", content="and then this")
    assert find_current_user([Message(role="system", content="s"), user, later]) == 2
    history = Message(role="user", content="old", from_history=True)
    assert find_current_user([history]) is None


def test_unchanged_view_keeps_the_summaries_in_context_and_drops_nothing() -> None:
    a = make_summary_message("A")
    b = make_summary_message("B", PROGRESS)
    user = Message(role="user", content="go")
    messages = [Message(role="system", content="s"), a, user, b, _call(1), _result(1)]
    plan = plan_fold(messages)
    assert not plan.has_work
    assert plan.unchanged_view() == messages
    # once a span is folded its summary is absorbed: the unchanged view leaves it out
    folding = plan_fold([*messages, _call(2), _result(2)])
    assert folding.steps and [m.content for m in folding.unchanged_view()][:3] == ["s", "A", "go"]
    assert b not in folding.unchanged_view()
    old = Message(role="user", content="old", from_history=True)
    with_history = plan_fold([Message(role="system", content="s"), a, old, user])
    assert with_history.history == (old,) and a not in with_history.unchanged_view(), "an absorbed summary goes"


def test_pair_violations_name_the_message_and_the_call() -> None:
    orphan = Message(role="tool", tool_call_id="zzz", content="?")
    call = Message(role="assistant", tool_calls=[{"id": "a", "function": {"name": "x", "arguments": "{}"}}])
    later = Message(role="assistant", tool_calls=[{"id": "b", "function": {"name": "x", "arguments": "{}"}}])
    last = Message(role="assistant", tool_calls=[{"id": "c", "function": {"name": "x", "arguments": "{}"}}])
    found = pair_violations([orphan, call, later, last])
    assert [(v.index, v.kind, v.call_id) for v in found] == [
        (0, "orphan_result", "zzz"),
        (1, "missing_result", "a"),
        (2, "missing_result", "b"),
    ], "every unanswered call but the last is reported, with its index and id"
    strict = pair_violations([orphan, call, later, last], allow_pending_last=False)
    assert [(v.index, v.call_id) for v in strict][-1] == (3, "c")


def test_ids_of_calls_and_results_skip_entries_without_one() -> None:
    no_id = {"type": "function", "function": {"name": "x", "arguments": "{}"}}
    assert call_ids(Message(role="assistant", tool_calls=[no_id, {"id": "a", "function": {}}])) == ["a"]
    assert result_ids(Message(role="tool", content="x")) == set(), "no call id: answers nothing"
    gemini = Message(role="tool", content="x", tool_calls=[{"content": "r"}, {"tool_call_id": "g1", "content": "r"}])
    assert result_ids(gemini) == {"g1"}


def test_only_our_marker_makes_a_summary() -> None:
    other = Message(role="user", content="x", custom_field="set by another library")
    assert not is_summary(other) and summary_kind(other) is None
    odd = Message(role="user", content="s")
    odd.agno_compression_summary = True  # an older marker value: a history summary
    assert is_summary(odd) and summary_kind(odd) == HISTORY


def test_a_run_without_user_input_keeps_its_last_batch() -> None:
    """A list input with no user message: the last batch is found even at the very start of the list."""
    messages = [_call(1), _result(1), Message(role="assistant", content="done")]
    plan = plan_fold(messages)
    assert plan.current is None and plan.kept == tuple(messages) and not plan.has_work
    pending = Message(role="assistant", tool_calls=[{"id": "p", "function": {"name": "approve", "arguments": "{}"}}])
    assert plan_fold([Message(role="system", content="s"), pending]).kept == (pending,)
    assert find_current_user([]) is None


def test_a_progress_summary_is_never_also_a_kept_message() -> None:
    b = make_summary_message("B", PROGRESS)
    reply = Message(role="assistant", content="answer")
    user = Message(role="user", content="go")
    plan = plan_fold([Message(role="system", content="s"), user, b, reply])
    assert plan.kept == (reply,) and plan.progress_summary is b
    assert [m.content for m in plan.unchanged_view()] == ["s", "go", "B", "answer"]


def test_filter_folded_puts_the_summary_after_every_system_message() -> None:
    system = [Message(role="system", content="s"), Message(role="developer", content="d")]
    out = filter_folded([*system, Message(role="user", content="go")], [], "S")
    assert [m.content for m in out] == ["s", "d", "S", "go"]
    only_system = filter_folded(system, [], "S")
    assert [m.content for m in only_system] == ["s", "d", "S"]


def _history(*messages: Message) -> list[Message]:
    for m in messages:
        m.from_history = True
    return list(messages)


def _runs_with_a_current_user() -> list[list[Message]]:
    """Lists whose current user message sits first, after a system message, and between summaries."""
    user = Message(role="user", content="go")
    old = [Message(role="user", content="old", from_history=True), *_history(_call(1), _result(1))]
    return [
        [user, _call(2), _result(2)],
        [Message(role="system", content="s"), user, Message(role="assistant", content="ok")],
        [make_summary_message("A"), *old, user, make_summary_message("B", PROGRESS), _call(3), _result(3)],
    ]


def test_plan_fold_given_the_current_index_plans_as_when_it_finds_it() -> None:
    for messages in _runs_with_a_current_user():
        found = find_current_user(messages)
        assert found is not None
        assert plan_fold(messages, current=found) == plan_fold(messages)
    no_user = [Message(role="system", content="s"), _call(1), _result(1)]
    assert plan_fold(no_user, current=None) == plan_fold(no_user)


def test_plan_fold_rejects_a_current_that_is_not_a_user_message() -> None:
    messages = [Message(role="system", content="s"), Message(role="user", content="go"), _call(1), _result(1)]
    for bad in (-2, 0, 2, len(messages)):
        with pytest.raises(ValueError, match=re.escape(f"current must index a user message, got {bad!r}")):
            plan_fold(messages, current=bad)


def test_a_finished_batch_just_before_the_current_user_message_is_history() -> None:
    """No batch after the current user: the last batch of the previous run is folded, not kept as this run's."""
    call, result = _history(_call(1), _result(1))
    user, reply = Message(role="user", content="go"), Message(role="assistant", content="done")
    plan = plan_fold([Message(role="system", content="s"), call, result, user, reply])
    assert plan.history == (call, result)
    assert plan.current is user and plan.kept == (reply,)


def test_a_pending_call_first_in_the_list_is_kept() -> None:
    pending, arrived = _pending_history_call()
    user = Message(role="user", content="status?")
    plan = plan_fold([pending, arrived, user])
    assert plan.before == (pending, arrived) and plan.current is user and plan.history == ()


def test_a_carrier_right_after_the_first_batch_is_not_the_run_input() -> None:
    carrier = Message(role="user", content="the image the tool returned", images=[Image(url="https://x/y.png")])
    assert find_current_user([_call(1), _result(1), carrier]) is None


def test_a_summary_message_is_a_user_message_agno_does_not_store() -> None:
    for kind in (HISTORY, PROGRESS):
        message = make_summary_message("text", kind)
        assert message.role == "user" and message.content == "text"
        assert message.add_to_agent_memory is False, "agno must not store a summary with the run"
        assert summary_kind(message) == kind
    with pytest.raises(ValueError, match=re.escape("summary kind must be 'history' or 'progress', got 'other'")):
        make_summary_message("text", "other")


def test_filter_folded_keeps_history_that_carries_other_extra_fields() -> None:
    other = Message(role="user", content="x", custom_field="set by another library", from_history=True)
    assert filter_folded([other], set(), None) == [other]


def test_filter_folded_drops_the_results_of_a_folded_call() -> None:
    call, result, user = *_history(_call(1), _result(1)), Message(role="user", content="go")
    assert filter_folded([call, result, user], [call.id], None) == [user], "given as a list, not a set"


def test_filter_folded_drops_the_calls_of_a_folded_gemini_result() -> None:
    """A Gemini tool message holds several results in ``tool_calls``: folding it folds every call it answers."""
    call = Message(
        role="assistant",
        tool_calls=[{"id": "g1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
    )
    results = Message(role="tool", content="r", tool_calls=[{"tool_call_id": "g1", "content": "r"}])
    call, results = _history(call, results)
    user = Message(role="user", content="go")
    assert filter_folded([call, results, user], {results.id}, None) == [user]


# --- the recent steps kept verbatim (keep_from, recent_start) ------------------------------------------------


@settings(max_examples=examples(800), deadline=None)
@given(conversation(), st.integers(0, 4000))
def test_a_verbatim_window_keeps_the_invariants_and_only_adds_to_what_is_kept(
    messages: list[Message], budget: int
) -> None:
    sizes = [len(m.get_content_string() or "") // 4 + 4 for m in messages]
    current = find_current_user(messages)
    start = recent_start(messages, sizes, budget, current)
    plain = plan_fold(messages, current)
    plan = plan_fold(messages, current, keep_from=start)
    view = plan.view(make_summary_message("A", HISTORY), make_summary_message("B", PROGRESS))
    assert pair_violations(view) == []
    assert {id(m) for m in plain.kept} <= {id(m) for m in plan.kept}
    assert {id(m) for m in plan.folded} <= {id(m) for m in plain.folded}
    if start is not None:
        made = {c for m in messages for c in call_ids(m)}
        answered = {c for m in messages for c in result_ids(m)}
        last = max((i for i, m in enumerate(messages) if call_ids(m)), default=None)
        broken = {c for i, m in enumerate(messages) if i != last and set(call_ids(m)) - answered for c in call_ids(m)}
        window = [  # stray results and broken calls (no result, not the pending one) are never sent
            m
            for i, m in enumerate(messages)
            if i >= start
            and m.role not in ("system", "developer")
            and not is_summary(m)
            and not (m.role == "tool" and not result_ids(m) & made)
            and (i == last or all(c in answered for c in call_ids(m)))
            and not result_ids(m) & broken
        ]
        assert all(id(m) in {id(v) for v in view} for m in window), "the window reaches the model verbatim"
        assert (
            sum(
                sizes[i]
                for i, m in enumerate(messages[start:], start)
                if i != current and not is_summary(m) and m.role not in ("system", "developer")
            )
            <= budget
        )


def test_the_window_takes_the_newest_whole_steps_that_fit() -> None:
    messages = [Message(role="system", content="s"), Message(role="user", content="task")]
    for i in range(5):
        messages += [_call(i), _result(i)]
    sizes = [10] * len(messages)
    start = recent_start(messages, sizes, 45, 1)
    assert start == len(messages) - 4, "two steps of 20 tokens fit in 45, the third does not"
    plan = plan_fold(messages, 1, keep_from=start)
    assert [m.tool_call_id for m in plan.kept if m.role == "tool"] == ["c3", "c4"]
    assert [m.tool_call_id for m in plan.steps if m.role == "tool"] == ["c0", "c1", "c2"]
    assert recent_start(messages, sizes, 5, 1) is None, "no whole step fits"


def test_keep_from_outside_the_list_is_refused() -> None:
    with pytest.raises(ValueError, match=r"keep_from must index the message list .* got 7"):
        plan_fold([Message(role="user", content="x")], keep_from=7)
