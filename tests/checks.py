"""Assertions shared by the tests: what every model request must satisfy."""

from __future__ import annotations

from agno.models.message import Message

from agno_compression._messages import call_ids
from agno_compression._plan import SYSTEM_ROLES, is_summary, pair_violations
from agno_compression.testing import RecordedRequest


def check_request(request: RecordedRequest, budget: int, *, user_text: str | None, system: str | None) -> None:
    """Under budget, no orphan, system + current user + last tool batch verbatim."""
    msgs = request.messages
    assert request.prompt_tokens <= budget, f"{request.prompt_tokens} tokens > {budget}"
    assert pair_violations(msgs) == [], "orphan or unanswered tool call sent"
    if system is not None:
        assert [m.content for m in msgs if m.role in SYSTEM_ROLES] == [system]
    users = [m for m in msgs if m.role == "user" and not is_summary(m) and not m.from_history]
    if user_text is not None:
        assert users and users[-1].content == user_text, "current user message missing or altered"
    callers = [i for i, m in enumerate(msgs) if call_ids(m)]
    current = max((i for i, m in enumerate(msgs) if m in users[-1:]), default=-1)
    if callers and callers[-1] > current:
        last = msgs[callers[-1]]
        results = [m for m in msgs[callers[-1] + 1 :] if m.role == "tool"]
        assert {m.tool_call_id for m in results} == set(call_ids(last)), "last tool batch incomplete"
        for m in results:
            assert m.compressed_content is None or "omitted" in m.compressed_content, "last batch rewritten"


def summaries(messages: list[Message]) -> list[Message]:
    return [m for m in messages if is_summary(m)]
