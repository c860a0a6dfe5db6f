"""DESIGN invariants 1-5 as properties, through the manager's real fold path.

agno calls ``should_compress(messages, tools)`` and then ``compress(messages)`` (or their async twins) on the live
list before every model call; these tests do exactly that on generated live lists in the shapes agno builds for
OpenAI, Anthropic and Gemini (``tests.strategies.agno_conversation``), with every summarizer setting including
failing ones, and check on every example:

1. no orphan is sent (``pair_violations``) when a fold happened or the input was pair-safe;
2. system messages, the current user message, the last tool batch and a pending call reach the model verbatim
   (same objects, same content; a kept tool output may only carry the documented "chars omitted" shortening or,
   a file read, its outline);
3. nothing is lost: the post-hook (``restore_run_messages``) gives back every input message, in order, with its
   original content, and folded messages plus the live list cover the input;
4. a recorded fold holds exactly the folded ids together with its summary;
5. folded history never comes back on a later run's first call (``register_run`` + a store), the summary does;
and the manager never raises, never logs an internal failure, and never folds again on the next call when nothing
new arrived (no fold-every-call loop).
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from agno.models.message import Message
from hypothesis import given
from hypothesis import strategies as st

from agno_compression import CompressionManager, CompressionRecord, LLMSummarizer
from agno_compression._messages import call_ids, result_ids
from agno_compression._plan import HISTORY, SYSTEM_ROLES, is_summary, pair_violations, summary_kind
from agno_compression._shortening import OUTLINED
from agno_compression._stores import SessionCompression
from agno_compression.testing import FailingSummarizer, ScriptedModel
from agno_compression.tokens import TokenCounter
from tests.reliability._profile import count, share
from tests.strategies import agno_conversation

COUNTER = TokenCounter("gpt-4o")
"""One exact o200k counter for every example (its cache is keyed by message id and content)."""

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
]

INTERNAL_FAILURES = ("fold failed", "token count failed", "could not restore", "could not load", "on_fold callback")


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def warnings_log() -> Iterator[_Collect]:
    handler = _Collect()
    logger = logging.getLogger("agno_compression")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


_LLM_MODEL = ScriptedModel(script=lambda m, i: "## Key facts\n- src/app.py exit 1\n## Next step\n- rerun")


def _summarizer(name: str) -> Any:
    if name.startswith("failing-"):
        return FailingSummarizer(name.split("-", 1)[1])
    if name == "llm":
        _LLM_MODEL.requests.clear()
        return LLMSummarizer(model=_LLM_MODEL)
    return name


SUMMARIZERS = st.sampled_from(
    ["extractive"] * 3 + ["pipeline", "mask", "failing-raise", "failing-blank", "failing-garbage", "llm"]
)
BUDGETS = st.sampled_from([256, 300, 600, 1_500, 4_000, 30_000])


@dataclass
class MemoryStore:
    """A ``CompressionStore`` in memory, preloaded with a session's earlier folds."""

    rows: list[CompressionRecord] = field(default_factory=list)

    def record(self, row: CompressionRecord) -> int:
        row.id = len(self.rows) + 1
        self.rows.append(copy.deepcopy(row))
        return row.id

    def load(self, session_id: str) -> SessionCompression:
        rows = [r for r in self.rows if r.session_id == session_id]
        ids = frozenset(i for r in rows for i in r.folded_ids)
        summary = next((r.summary for r in reversed(rows) if r.summary), None)
        return SessionCompression(ids, summary, len(rows), rows[-1].id if rows else None)

    def events(self, session_id: str) -> list[CompressionRecord]:
        return [r for r in self.rows if r.session_id == session_id]


# --- what must hold ---------------------------------------------------------------------------------------------


def _snapshot(messages: Sequence[Message]) -> list[tuple[Message, Any, Any, Any, Any]]:
    return [(m, m.role, copy.deepcopy(m.content), copy.deepcopy(m.tool_calls), m.compressed_content) for m in messages]


def current_user(messages: Sequence[Message]) -> int | None:
    """The run's input: the newest user message of this run that does not follow tool results (agno appends media
    and retry guidance there; those belong to the batch)."""
    found, after_tools = None, False
    for i, m in enumerate(messages):
        if is_summary(m):
            continue
        if m.role == "user" and not m.from_history and not after_tools and not m.temporary:
            found = i
        tool_of_this_run = m.role == "tool" and not m.from_history  # a history result has no carrier in this run
        after_tools = tool_of_this_run or (after_tools and m.role == "user" and not m.from_history)
    return found


def must_stay(messages: Sequence[Message]) -> list[Message]:
    """System, current user, the last tool batch of this run (call + its results), the pending last caller with the
    results that did arrive for it."""
    keep = [m for m in messages if m.role in SYSTEM_ROLES]
    cu = current_user(messages)
    callers = [i for i, m in enumerate(messages) if call_ids(m)]
    if cu is not None:
        keep.append(messages[cu])
        mine = [i for i in callers if i > cu]
        if mine:
            ids = set(call_ids(messages[mine[-1]]))
            keep.append(messages[mine[-1]])
            keep += [m for m in messages[mine[-1] + 1 :] if result_ids(m) & ids]
    if callers:
        last = messages[callers[-1]]
        answered = {c for m in messages[callers[-1] + 1 :] for c in result_ids(m)}
        if any(c not in answered for c in call_ids(last)):
            keep.append(last)
            keep += [m for m in messages[callers[-1] + 1 :] if result_ids(m) & set(call_ids(last))]
    return keep


def check_view(
    before: list[tuple[Message, Any, Any, Any, Any]], view: Sequence[Message], folded: Sequence[Message]
) -> None:
    """Invariants 1-3 on what the model would receive after one should_compress/compress."""
    inputs = [m for m, *_ in before]
    order = {id(m): i for i, m in enumerate(inputs)}
    summaries = [m for m in view if is_summary(m)]
    did_fold = bool(folded)
    # 1. no orphan, when a fold rewrote the list or the input was pair-safe to begin with
    if did_fold or not pair_violations(inputs):
        assert pair_violations(view) == [], f"orphan sent: {pair_violations(view)}"
    # 2. verbatim: same objects, same content, system first, summary right after, input order kept
    ids = {id(m) for m in view}
    for m in must_stay(inputs):
        assert id(m) in ids, f"{m.role} message {m.id} was folded away"
    system = [m for m in inputs if m.role in SYSTEM_ROLES]
    if did_fold:
        assert [id(m) for m in view[: len(system)]] == [id(m) for m in system], "system messages not first"
        # the history summary right after the system messages, the progress summary right after the current user
        assert 1 <= len(summaries) <= 2, f"{len(summaries)} summaries"
        assert any(m not in inputs for m in summaries), "the fold did not write a new summary"
        cu = current_user(inputs)
        for m in summaries:
            at = next(i for i, x in enumerate(view) if x is m)
            if summary_kind(m) == HISTORY:
                assert at == len(system), "history summary not right after system"
            else:
                assert cu is not None and view[at - 1] is inputs[cu], "progress summary not right after the question"
    else:
        assert [id(m) for m in view] == [id(m) for m in inputs], "no fold, yet the list changed"
    rest = [order[id(m)] for m in view if not is_summary(m)]
    assert rest == sorted(rest), "messages reordered"
    assert not (ids & {id(m) for m in folded}), "a folded message is still in context"
    kept_tools = {id(m) for m in must_stay(inputs) if m.role == "tool"}
    for m, role, content, tool_calls, compressed in before:
        assert m.role == role and m.content == content and m.tool_calls == tool_calls, f"{m.id} changed"
        if m.compressed_content != compressed and id(m) in ids and m.role != "tool":
            raise AssertionError(f"{role} message rewritten in context")
        # Known bug (test_kept_multimodal_tool_output_is_sent_as_is below): an output that did not
        # need cutting gets its own text as compressed_content; tolerated here, tracked there.
        changed = m.compressed_content not in (compressed, m.get_content_string())
        if id(m) in kept_tools and changed:  # cut head and tail, or a file read cut to its outline
            shortened = str(m.compressed_content)
            assert " chars omitted ...]" in shortened or shortened.startswith(OUTLINED), "kept tool output rewritten"
    # 3. the live list plus the folded messages cover the input
    covered = ids | {id(m) for m in folded}
    assert all(id(m) in covered for m in inputs if not is_summary(m)), "a message fell out of the ledger"


def check_restore(manager: CompressionManager, live: list[Message], inputs: Sequence[Message]) -> None:
    """3. the post-hook puts every original back, in order, so agno stores all of them."""
    run_output = SimpleNamespace(messages=list(live))
    manager.restore_run_messages(run_output, SimpleNamespace(messages=live))
    expected = [m for m in inputs if not is_summary(m) and m.add_to_agent_memory]
    assert [id(m) for m in run_output.messages] == [id(m) for m in expected], "restored run is not the input"


def assert_no_internal_failure(log: _Collect) -> None:
    bad = [r.getMessage() for r in log.records if any(k in r.getMessage() for k in INTERNAL_FAILURES)]
    assert not bad, bad


def _drive(manager: CompressionManager, live: list[Message], tools: Any, mode: str) -> None:
    if mode == "sync":
        if manager.should_compress(live, tools):
            manager.compress(live)
        return

    async def go() -> None:
        if await manager.ashould_compress(live, tools):
            await manager.acompress(live)

    asyncio.run(go())


# --- the properties -----------------------------------------------------------------------------------------------


@share(0.55)
@given(
    messages=agno_conversation(),
    budget=BUDGETS,
    summarizer=SUMMARIZERS,
    mode=st.sampled_from(["sync", "sync", "async"]),
    with_tools=st.booleans(),
)
def test_manager_fold_keeps_every_invariant(
    messages: list[Message], budget: int, summarizer: str, mode: str, with_tools: bool, warnings_log: _Collect
) -> None:
    warnings_log.records.clear()
    before = _snapshot(messages)
    folds: list[tuple[Any, list[Message]]] = []
    manager = CompressionManager(
        compress_at_tokens=budget,
        summarizer=_summarizer(summarizer),
        persist=False,
        token_counter=COUNTER,
        on_fold=lambda e, f: folds.append((e, list(f))),
    )
    live = list(messages)
    tools = TOOLS if with_tools else None
    _drive(manager, live, tools, mode)
    first = list(live)
    folded = [m for e, f in folds if e.summary for m in f]
    check_view(before, first, folded)
    for event, msgs in folds:
        assert event.folded_ids == [m.id for m in msgs]
        assert bool(event.summary) == bool(event.folded_ids) or event.strategy in ("mask", "shorten")
    if summarizer.startswith("failing-") and folded:
        assert all(e.strategy.removeprefix("tight:") == f"{summarizer}->extractive" for e, _ in folds if e.summary)
        assert manager.strategy.summarizer.calls == len([e for e, _ in folds if e.summary])  # type: ignore[union-attr]
    # the next model call with nothing new: no second fold (no fold-every-call loop)
    summary_folds = len([e for e, _ in folds if e.summary])
    _drive(manager, live, tools, mode)
    assert len([e for e, _ in folds if e.summary]) == summary_folds, "folded again with nothing new"
    assert summary_folds <= 1
    check_restore(manager, live, messages)
    assert_no_internal_failure(warnings_log)
    count("manager_fold")


@st.composite
def earlier_folds(draw: Any) -> tuple[list[Message], set[str], str | None, bool]:
    """A live list at a new run's first call, plus the folded ids and summary a store holds for the session."""
    messages = draw(agno_conversation(max_batches=3))
    history = [m for m in messages if m.from_history]
    folded = {m.id for m in history if draw(st.booleans())}
    if draw(st.integers(0, 5)) == 0:
        folded.add("id-of-a-message-from-another-run")
    summary = draw(st.one_of(st.none(), st.just("## Steps\n- earlier summary of this session")))
    return messages, folded, summary, draw(st.booleans())


@share(0.30)
@given(case=earlier_folds(), budget=BUDGETS, mode=st.sampled_from(["sync", "async"]))
def test_later_run_never_sees_folded_history(
    case: tuple[list[Message], set[str], str | None, bool], budget: int, mode: str, warnings_log: _Collect
) -> None:
    warnings_log.records.clear()
    messages, folded_ids, summary, history = case
    store = MemoryStore()
    if folded_ids or summary:
        store.record(CompressionRecord(session_id="s", folded_ids=sorted(folded_ids), summary=summary, strategy="x"))
    store.record(
        CompressionRecord(session_id="other", folded_ids=[m.id for m in messages], summary="NOT MINE", strategy="x")
    )
    folds: list[tuple[Any, list[Message]]] = []
    manager = CompressionManager(
        compress_at_tokens=budget, store=store, token_counter=COUNTER, on_fold=lambda e, f: folds.append((e, list(f)))
    )
    live = list(messages)
    run_context = SimpleNamespace(messages=live, session_id="s", run_id="r-new")
    owner = SimpleNamespace(id="agent-1", db=None, add_history_to_context=history)
    manager.register_run(run_context=run_context, agent=owner)
    before = _snapshot(messages)
    # the first call: earlier folds applied before anything is counted
    state_ready = manager.should_compress(live, None) if mode == "sync" else asyncio.run(manager.ashould_compress(live))
    loaded = [m for m in live if not is_summary(m)]
    sent_history = {m.id for m in loaded if m.from_history}
    assert not (sent_history & folded_ids), "folded history came back"
    sums = [m for m in live if is_summary(m)]
    if folded_ids or summary:
        assert [m.content for m in sums] == ([summary] if history and summary else []), "wrong summary loaded"
        if sums:
            head = 0
            while live[head].role in SYSTEM_ROLES:
                head += 1
            assert live[head] is sums[0], "summary not right after the system messages"
    else:
        assert [id(m) for m in live] == [id(m) for m in messages], "nothing stored, yet the list changed"
    if not pair_violations(messages):
        assert pair_violations(live) == [], "filtering left an orphan"
    # this run's own messages stay unless tool-paired with folded history (only possible with a reused call id)
    history_calls = {c for m in messages if m.from_history for c in [*call_ids(m), *result_ids(m)]}
    grew = True
    while grew:  # partners of partners: a reused id links a whole batch of this run to the history
        grew = False
        for m in messages:
            ids = {*call_ids(m), *result_ids(m)}
            if ids & history_calls and not ids <= history_calls:
                history_calls |= ids
                grew = True
    for m in messages:
        if not m.from_history and not is_summary(m) and not ({*call_ids(m), *result_ids(m)} & history_calls):
            assert m in loaded, f"a message of this run ({m.role}) was dropped"
    for m, role, content, tool_calls, _ in before:
        assert (m.role, m.content, m.tool_calls) == (role, content, tool_calls)
    if state_ready:
        if mode == "sync":
            manager.compress(live)
        else:
            asyncio.run(manager.acompress(live))
    # 4. every recorded fold holds exactly the folded ids, with its summary, for this session only
    manager.flush_records()  # records are written on the manager's writer thread; the post-hook would wait for them
    new_rows = [r for r in store.rows if r.run_id == "r-new"]
    summary_folds = [e for e, _ in folds if e.summary and e.folded_ids]
    assert [(r.folded_ids, r.summary, r.session_id) for r in new_rows] == [
        (e.folded_ids, e.summary, "s") for e in summary_folds
    ]
    assert all(r.owner_id == "agent-1" and r.owner_type == "agent" for r in new_rows)
    check_restore(manager, live, messages)
    assert_no_internal_failure(warnings_log)
    count("later_run")


@share(0.15)
@given(messages=agno_conversation(max_batches=8), budget=BUDGETS)
def test_a_run_of_model_calls_folds_rarely(messages: list[Message], budget: int, warnings_log: _Collect) -> None:
    """Grow the list one batch at a time, calling the manager before each 'model call', as agno does."""
    warnings_log.records.clear()
    folds: list[Any] = []
    manager = CompressionManager(
        compress_at_tokens=budget, persist=False, token_counter=COUNTER, on_fold=lambda e, f: folds.append(e)
    )
    live: list[Message] = []
    calls = 0
    for m in messages:
        live.append(m)
        if m.role == "tool" or m is messages[-1]:
            calls += 1
            before = len(folds)
            if manager.should_compress(live, TOOLS):
                manager.compress(live)
            if any(e.summary for e in folds[before:]):
                assert pair_violations(live) == [], "a fold sent an orphan"
    summary_folds = [e for e in folds if e.summary]
    # at most one fold per model call, and never two in a row without new messages in between
    assert len(summary_folds) <= calls
    check_restore(manager, live, messages)
    assert_no_internal_failure(warnings_log)
    count("growing_run")


def test_kept_multimodal_tool_output_is_sent_as_is() -> None:
    image = [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]
    call = {"id": "c1", "type": "function", "function": {"name": "screenshot", "arguments": "{}"}}
    live = [
        Message(role="system", content="s"),
        Message(role="user", content="describe the page " * 400),  # the kept messages alone exceed the budget
        Message(role="assistant", tool_calls=[call]),
        Message(role="tool", tool_call_id="c1", tool_name="screenshot", content=image),
    ]
    manager = CompressionManager(compress_at_tokens=256, persist=False, token_counter=COUNTER)
    assert manager.should_compress(live, None)
    manager.compress(live)
    assert live[-1].content == image
    assert live[-1].compressed_content is None, "an image output was replaced by its JSON text"
