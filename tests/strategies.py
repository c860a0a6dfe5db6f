"""Hypothesis strategies: conversations in the shapes agno builds for OpenAI, Anthropic and Gemini."""

from __future__ import annotations

from typing import Any

from agno.models.message import Message
from hypothesis import strategies as st

from agno_compression._plan import make_summary_message

TEXT = st.one_of(
    st.none(),
    st.just(""),
    st.text(max_size=60),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=30),
)
CONTENT = st.one_of(
    TEXT,
    st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=20)}), max_size=2),
    st.just([{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]),
)


@st.composite
def batch(draw: Any, counter: list[int], *, history: bool, pending: bool = False) -> list[Message]:
    """An assistant message with 1-3 (parallel) calls and its results; some may fail."""
    n = draw(st.integers(1, 3))
    ids = []
    for _ in range(n):
        counter[0] += 1
        ids.append(f"call_{counter[0]}")
    calls = [
        {
            "id": i,
            "type": "function",
            "function": {"name": draw(st.sampled_from(["ls", "cat", "run"])), "arguments": "{}"},
        }
        for i in ids
    ]
    out = [Message(role="assistant", content=draw(TEXT), tool_calls=calls, from_history=history)]
    answered = ids if not pending else ids[: draw(st.integers(0, n - 1))]
    gemini_style = draw(st.booleans()) and len(answered) > 1
    if gemini_style:
        # Gemini: one tool message carrying several results.
        out.append(
            Message(
                role="tool",
                content=draw(CONTENT),
                tool_call_id=answered[0],
                tool_calls=[{"tool_call_id": i, "content": "x"} for i in answered],
                from_history=history,
            )
        )
    else:
        for i in answered:
            out.append(
                Message(
                    role="tool",
                    content=draw(CONTENT),
                    tool_call_id=i,
                    tool_name="ls",
                    tool_call_error=draw(st.booleans()),
                    from_history=history,
                )
            )
    return out


@st.composite
def conversation(draw: Any) -> list[Message]:
    """system?, history runs, an optional old summary, current user, this run's batches, maybe a pending call."""
    counter = [0]
    msgs: list[Message] = []
    if draw(st.booleans()):
        msgs.append(Message(role="system", content=draw(TEXT)))
    for _ in range(draw(st.integers(0, 3))):
        msgs.append(Message(role="user", content=draw(CONTENT), from_history=True))
        for _ in range(draw(st.integers(0, 2))):
            msgs += draw(batch(counter, history=True))
        msgs.append(Message(role="assistant", content=draw(TEXT), from_history=True))
    if draw(st.booleans()):
        msgs.insert(1 if msgs and msgs[0].role == "system" else 0, make_summary_message("old summary"))
    has_user = draw(st.booleans()) or True
    if has_user:
        msgs.append(Message(role="user", content=draw(CONTENT)))
    for _ in range(draw(st.integers(0, 5))):
        msgs += draw(batch(counter, history=False))
        if draw(st.integers(0, 9)) == 0:
            msgs.append(Message(role=draw(st.sampled_from(["function", "observer", "assistant"])), content="odd"))
    if draw(st.integers(0, 4)) == 0:
        msgs += draw(batch(counter, history=False, pending=True))
    if draw(st.integers(0, 6)) == 0:
        # a tool result whose call is nowhere (corrupt history)
        pos = draw(st.integers(0, len(msgs)))
        msgs.insert(pos, Message(role="tool", content="stray", tool_call_id="call_nowhere"))
    if draw(st.integers(0, 9)) == 0:
        msgs.append(Message(role="tool", content="é" * draw(st.integers(5000, 20000)), tool_call_id="call_huge"))
    return msgs
