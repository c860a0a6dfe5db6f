"""Whether a model's provider compacts the prompt itself (server-side compaction), and where its blocks are.

Two providers compact a long prompt on their own servers when the request asks them to:

* Anthropic (beta ``compact-2026-01-12``): ``context_management={"edits": [{"type": "compact_20260112", ...}]}``.
  The response then starts with a ``compaction`` content block (its ``content`` summarizes what came before); sent
  back on later requests, the API drops every block before it.
  https://platform.claude.com/docs/en/build-with-claude/compaction
* OpenAI's Responses API: ``context_management=[{"type": "compaction", "compact_threshold": N}]``. The output then
  carries an encrypted ``compaction`` item that must reach the next request: appended to the input, or held by the
  server behind ``previous_response_id``.
  https://developers.openai.com/api/docs/guides/compaction

agno 3.1.10 passes either through: ``Claude(context_management=...)`` (its own field, also in
``request_params``), ``OpenAIResponses(request_params={"context_management": [...]})`` (no field of its own), or
``extra_body``. ``Claude`` keeps every response block in ``provider_data["content_blocks"]`` (and the ones it does
not parse in ``provider_data["server_tool_blocks"]``) and replays ``content_blocks`` verbatim, compaction block
included. ``OpenAIResponses`` drops the compaction item from the parsed response: it reaches the next call only
through ``previous_response_id`` chaining (a reasoning model with ``store`` not ``False``).

Pure: reads attributes and dicts, imports no provider SDK. ``_trigger`` uses it to leave such a model's calls to
the provider (docs/cost.md, "Provider compaction").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .pricing import provider_of

ANTHROPIC_COMPACT = "anthropic-compact"
"""Anthropic's ``context_management`` edit ``compact_*`` (``compact_20260112``)."""
OPENAI_COMPACTION = "openai-compaction"
"""OpenAI Responses' ``context_management`` entry ``compaction``."""

WHY = {
    ANTHROPIC_COMPACT: "Anthropic's server-side compaction (context_management edit compact_20260112)",
    OPENAI_COMPACTION: "OpenAI's server-side compaction (context_management entry 'compaction')",
}
"""What each kind is, as a log line names it."""

COMPACTION_TYPE = "compaction"
"""The ``type`` of Anthropic's compaction content block and of OpenAI's compaction output item alike."""
_EDIT_PREFIX = "compact_"
"""Anthropic versions its edits by date (``compact_20260112``): a later version is compaction too."""
_UNSET = object()


def provider_compaction(model: Any, request: Mapping[str, Any] | None = None) -> str | None:
    """``ANTHROPIC_COMPACT`` or ``OPENAI_COMPACTION`` when ``model``'s requests turn on its provider's server-side
    compaction, else ``None``.

    ``request``: the keyword arguments agno built for the call (``Claude._prepare_request_kwargs``,
    ``OpenAIResponses.get_request_params``), when at hand; they are what is sent, so they decide. Otherwise the
    model's own settings are read the way agno merges them: its ``context_management`` field (Claude), then
    ``request_params`` (applied last, so a ``None`` there turns it off), then ``extra_body`` (merged into the JSON
    body by the SDK, last of all).
    """
    if model is None:
        return None
    setting = _setting(request) if request is not None else _model_setting(model)
    if provider_of(model) == "anthropic" and _anthropic_compacts(setting):
        return ANTHROPIC_COMPACT
    if _is_responses(model) and _openai_compacts(setting):
        return OPENAI_COMPACTION
    return None


def _setting(request: Mapping[str, Any]) -> Any:
    """The ``context_management`` a request sends: its own, or the one ``extra_body`` puts over it."""
    value = request.get("context_management")
    extra = request.get("extra_body")
    if isinstance(extra, Mapping) and "context_management" in extra:
        value = extra["context_management"]
    return value


def _model_setting(model: Any) -> Any:
    value = getattr(model, "context_management", None)  # Claude's own field; OpenAIResponses has none
    params = getattr(model, "request_params", None)
    if isinstance(params, Mapping):
        value = params.get("context_management", value)
    # extra_body: the model's own, unless request_params replaces it (``dict.update`` takes the key whole)
    extra = params.get("extra_body", _UNSET) if isinstance(params, Mapping) else _UNSET
    extra = getattr(model, "extra_body", None) if extra is _UNSET else extra
    if isinstance(extra, Mapping) and "context_management" in extra:
        value = extra["context_management"]
    return value


def _anthropic_compacts(setting: Any) -> bool:
    """A ``context_management`` with a ``compact_*`` edit (``clear_tool_uses_*`` and ``clear_thinking_*`` edit
    the prompt but are not compaction)."""
    edits = setting.get("edits") if isinstance(setting, Mapping) else None
    return any(_type_of(edit).startswith(_EDIT_PREFIX) for edit in _items(edits))


def _openai_compacts(setting: Any) -> bool:
    """A ``context_management`` list with a ``compaction`` entry (one entry alone, not in a list, too)."""
    entries = [setting] if isinstance(setting, Mapping) else setting
    return any(_type_of(entry) == COMPACTION_TYPE for entry in _items(entries))


def _is_responses(model: Any) -> bool:
    """agno's ``OpenAIResponses`` or a subclass (Azure, OpenRouter, ...), known by name: no SDK import."""
    return any(
        k.__name__ == "OpenAIResponses" and k.__module__ == "agno.models.openai.responses" for k in type(model).__mro__
    )


def _items(value: Any) -> Iterable[Any]:
    return value if isinstance(value, (list, tuple)) else ()


def _type_of(item: Any) -> str:
    kind = item.get("type") if isinstance(item, Mapping) else getattr(item, "type", None)
    return kind if isinstance(kind, str) else ""


def compaction_blocks(message: Any) -> list[Any]:
    """The provider compaction blocks (or items) a message holds, as stored, in order: in list-shaped ``content``
    and in any list of ``provider_data`` (agno's Claude: ``content_blocks``, ``server_tool_blocks``; one block
    can be in both, so it may come twice)."""
    found = [item for item in _items(getattr(message, "content", None)) if _type_of(item) == COMPACTION_TYPE]
    data = getattr(message, "provider_data", None)
    for value in data.values() if isinstance(data, Mapping) else ():
        found.extend(item for item in _items(value) if _type_of(item) == COMPACTION_TYPE)
    return found


def holds_compaction(message: Any) -> bool:
    """True when ``message`` carries a provider compaction block: a fold must not drop or rewrite it."""
    return bool(compaction_blocks(message))
