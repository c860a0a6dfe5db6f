"""Detecting a provider's server-side compaction on agno's real model classes (built, never called), and finding
the compaction blocks a message holds (``agno_compression._provider_compaction``)."""

from __future__ import annotations

from typing import Any

import pytest
from agno.models.anthropic import Claude
from agno.models.message import Message
from agno.models.openai import OpenAIChat, OpenAIResponses

from agno_compression._provider_compaction import (
    ANTHROPIC_COMPACT,
    OPENAI_COMPACTION,
    compaction_blocks,
    holds_compaction,
    provider_compaction,
)
from agno_compression.testing import Reply, ScriptedModel

COMPACT = {"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 100_000}}]}
CLEAR = {"edits": [{"type": "clear_tool_uses_20250919"}]}
OPENAI = [{"type": "compaction", "compact_threshold": 200_000}]


def claude(**options: Any) -> Claude:
    return Claude(id="claude-sonnet-4-6", api_key="offline", **options)


def responses(**options: Any) -> OpenAIResponses:
    return OpenAIResponses(id="gpt-5.4-mini", api_key="offline", **options)


@pytest.mark.parametrize(
    "options",
    [
        {"context_management": COMPACT},  # agno's own field
        {"context_management": COMPACT, "betas": ["compact-2026-01-12"]},
        {"request_params": {"context_management": COMPACT}},
        {"request_params": {"extra_body": {"context_management": COMPACT}}},
        {"context_management": {"edits": [*CLEAR["edits"], {"type": "compact_20260112"}]}},
        {"context_management": {"edits": [{"type": "compact_20270101"}]}},  # a later version of the edit
    ],
)
def test_claude_with_a_compact_edit_is_anthropic_compact(options: dict[str, Any]) -> None:
    assert provider_compaction(claude(**options)) == ANTHROPIC_COMPACT


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"betas": ["compact-2026-01-12"]},  # the beta header alone compacts nothing
        {"context_management": CLEAR},  # context editing is not compaction
        {"context_management": COMPACT, "request_params": {"context_management": None}},  # request_params wins
        {"request_params": {"context_management": OPENAI}},  # OpenAI's shape on Claude
    ],
)
def test_claude_without_a_compact_edit_is_not_detected(options: dict[str, Any]) -> None:
    assert provider_compaction(claude(**options)) is None


@pytest.mark.parametrize(
    "options",
    [
        {"request_params": {"context_management": OPENAI}},
        {"request_params": {"context_management": OPENAI[0]}},  # one entry, not in a list
        {"extra_body": {"context_management": OPENAI}},
        {"request_params": {"extra_body": {"context_management": OPENAI}}},
        {"request_params": {"context_management": [{"type": "other"}, *OPENAI]}},
    ],
)
def test_openai_responses_with_a_compaction_entry_is_openai_compaction(options: dict[str, Any]) -> None:
    assert provider_compaction(responses(**options)) == OPENAI_COMPACTION


def test_openai_responses_subclasses_are_detected_too() -> None:
    from agno.models.azure.openai_responses import AzureOpenAIResponses

    model = AzureOpenAIResponses(id="gpt-5.4-mini", api_key="offline", request_params={"context_management": OPENAI})
    assert provider_compaction(model) == OPENAI_COMPACTION


@pytest.mark.parametrize(
    "model",
    [
        responses(),
        responses(request_params={"context_management": [{"type": "other"}]}),
        responses(request_params={"context_management": COMPACT}),  # Anthropic's shape on OpenAI
        responses(extra_body={"context_management": OPENAI}, request_params={"extra_body": {}}),  # replaced whole
        OpenAIChat(id="gpt-4o", api_key="offline", request_params={"context_management": OPENAI}),  # no compaction
        ScriptedModel(script=lambda messages, info: Reply(text="ok")),
        None,
    ],
    ids=["plain", "other-entry", "anthropic-shape", "extra-body-replaced", "chat-completions", "scripted", "none"],
)
def test_other_models_are_not_detected(model: Any) -> None:
    assert provider_compaction(model) is None


def test_the_request_agno_builds_decides_when_given() -> None:
    model = claude(context_management=COMPACT)
    request = model._prepare_request_kwargs("system", messages=[])  # what agno's invoke sends with the messages
    assert provider_compaction(model, request) == ANTHROPIC_COMPACT
    assert provider_compaction(model, {k: v for k, v in request.items() if k != "context_management"}) is None
    model = responses(request_params={"context_management": OPENAI})
    assert provider_compaction(model, model.get_request_params(messages=[])) == OPENAI_COMPACTION
    assert provider_compaction(responses(), responses().get_request_params(messages=[])) is None
    assert provider_compaction(responses(), {"extra_body": {"context_management": OPENAI}}) == OPENAI_COMPACTION


BLOCK = {"type": "compaction", "content": "Summary of the work so far.", "encrypted_content": "opaque"}


def test_compaction_blocks_are_found_where_agno_keeps_them() -> None:
    stored = Message(
        role="assistant",
        content="Reading on.",
        provider_data={"content_blocks": [BLOCK, {"type": "text", "text": "Reading on."}]},
    )
    assert compaction_blocks(stored) == [BLOCK] and holds_compaction(stored)
    both = Message(role="assistant", provider_data={"content_blocks": [BLOCK], "server_tool_blocks": [BLOCK]})
    assert compaction_blocks(both) == [BLOCK, BLOCK]
    listed = Message(role="assistant", content=[BLOCK, {"type": "text", "text": "x"}])
    assert compaction_blocks(listed) == [BLOCK]
    item = Message(role="assistant", provider_data={"output": [{"type": "compaction", "encrypted_content": "e"}]})
    assert holds_compaction(item)


@pytest.mark.parametrize(
    "message",
    [
        Message(role="assistant", content="plain text"),
        Message(role="assistant", content="x", provider_data={"content_blocks": [{"type": "text", "text": "x"}]}),
        Message(role="assistant", content="x", provider_data={"signature": "s", "response_id": "resp_1"}),
        Message(role="tool", content="compaction", tool_call_id="t1"),
        Message(role="user", content=[{"type": "text", "text": "compaction"}]),
    ],
)
def test_messages_without_a_compaction_block_hold_none(message: Message) -> None:
    assert compaction_blocks(message) == [] and not holds_compaction(message)


def test_a_parsed_claude_response_keeps_its_compaction_block() -> None:
    """What agno 3.1.10's Claude keeps of a response that starts with a compaction block: the block, verbatim, in
    ``provider_data["content_blocks"]`` (replayed on the next request) and, with its unset fields as ``None``, in
    ``server_tool_blocks``."""
    from anthropic.types.beta import BetaMessage

    response = BetaMessage.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [BLOCK, {"type": "text", "text": "Reading on."}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )
    parsed = claude(context_management=COMPACT)._parse_provider_response(response)
    assert parsed.provider_data is not None and parsed.provider_data["content_blocks"][0] == BLOCK  # exactly
    message = Message(role="assistant", content=parsed.content, provider_data=parsed.provider_data)
    found = compaction_blocks(message)
    assert len(found) == 2 and all({k: v for k, v in block.items() if v is not None} == BLOCK for block in found)
