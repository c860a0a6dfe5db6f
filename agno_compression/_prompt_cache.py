"""Helping the provider's prompt cache where agno's model classes leave it unused, at what the user is billed.

* agno's ``Claude`` (and the AWS Bedrock and Vertex AI Claude classes, which share its request building) puts
  ``cache_control`` only on the system prompt (``cache_system_prompt``) and the last tool (``cache_tools``): no
  conversation block is ever cached, so every history token is billed in full. The manager places breakpoints
  itself (``_breakpoints``): where the fold keeps the prompt byte-identical for the rest of the run, on the
  newest block, and where the lookback needs a bridge; within the four-marker limit, after any the user set.
* agno's ``OpenAIChat`` and ``OpenAIResponses`` (OpenAI's own API, not the compatible backends) get
  ``prompt_cache_key`` = the session id, which routes a session's requests to the same cache, unless the user
  set one.
* Gemini's implicit cache needs nothing: a fold keeps the leading part of the prompt as it was.

The model instance is wrapped once (``_prepare_request_kwargs`` notes the live list of the call, the client
the request is sent with is a thin proxy that adds the markers; ``get_request_params`` for OpenAI); each call
is served by the manager folding its live list, with that manager's ``prompt_caching`` and price model. The
user's own request objects are never changed: marked blocks are copies.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any

from agno.models.message import Message

from ._archive import SEARCH_TOOL_NAME
from ._breakpoints import content_blocks, layout_of, mark_messages, plan_breakpoints
from ._recovery import manager_of, managers_of
from ._runs import RunState
from .pricing import BREAKPOINTS, PriceModel, price_model_for, provider_of

log = logging.getLogger("agno_compression")

_GUARD = "_agno_compression_prompt_cache"
_NOTED: ContextVar[tuple[list[Message], dict[str, Any]] | None] = ContextVar("agno_compression_request", default=None)
"""The live list and request keywords of the Anthropic request being built (set and taken in one synchronous
stretch of agno's ``invoke``: ``_prepare_request_kwargs`` then the client call)."""
MAX_SESSIONS = 1_024
"""Sessions whose last model call time is remembered (for a chat turn's breakpoints)."""


def breakpoints_apply(model: Any) -> bool:
    """Whether ``model`` is one of agno's Claude classes, whose requests we can mark."""
    return provider_of(model) == "anthropic" and callable(getattr(type(model), "_prepare_request_kwargs", None))


def cache_key_applies(model: Any) -> bool:
    """Whether ``model`` sends to OpenAI's own API (``OpenAIChat``/``OpenAIResponses`` without another base URL)."""
    if provider_of(model) != "openai" or type(model).__name__ not in ("OpenAIChat", "OpenAIResponses"):
        return False
    base = str(getattr(model, "base_url", None) or "")
    return not base or "api.openai.com" in base


def guard_prompt_cache(model: Any) -> None:
    """Wrap ``model`` once so the manager folding a call's live list can mark its request."""
    if model is None or getattr(model, _GUARD, False):
        return
    if breakpoints_apply(model):
        _wrap_anthropic(model)
    elif provider_of(model) == "openai" and callable(getattr(type(model), "get_request_params", None)):
        _wrap_openai(model)
    setattr(model, _GUARD, True)


def _call(model: Any, name: str) -> Callable[..., Any]:
    """The class's method, looked up at call time (a later class change, fix_stream_usage, still applies)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(type(model), name)(model, *args, **kwargs)

    return call


def _wrap_anthropic(model: Any) -> None:
    prepare = _call(model, "_prepare_request_kwargs")

    def prepare_request_kwargs(*args: Any, **kwargs: Any) -> Any:
        request = prepare(*args, **kwargs)
        messages = kwargs.get("messages", args[3] if len(args) > 3 else None)
        _NOTED.set((messages, request) if isinstance(messages, list) and isinstance(request, dict) else None)
        return request

    model._prepare_request_kwargs = prepare_request_kwargs
    for name in ("get_client", "get_async_client"):
        if callable(getattr(type(model), name, None)):
            setattr(model, name, _client_getter(model, _call(model, name)))


def _client_getter(model: Any, get: Callable[[], Any]) -> Callable[[], Any]:
    def get_client() -> Any:
        return _Client(get(), lambda request: _marked(model, request))

    return get_client


def _marked(model: Any, request: dict[str, Any]) -> dict[str, Any]:
    """The request agno is sending, with the breakpoints of the manager folding its live list."""
    noted = _NOTED.get()
    _NOTED.set(None)
    if noted is None:
        return request
    messages, prepared = noted
    # only the request these keywords were prepared for (a user's own client call passes through)
    if any(request.get(key) is not value for key, value in prepared.items()):
        return request
    manager = manager_of(model, messages)
    if manager is None:
        return request
    try:
        return manager._caching.mark(model, messages, request)
    except Exception as exc:  # a request is never lost to caching
        log.warning(
            "agno-compression: could not place cache breakpoints, sending the request as agno built it: %s", exc
        )
        return request


class _Messages:
    """``client.messages`` (or ``client.beta.messages``) whose ``create`` and ``stream`` get the markers."""

    def __init__(self, inner: Any, mark: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self._inner = inner
        self._mark = mark

    def create(self, **kwargs: Any) -> Any:
        return self._inner.create(**self._mark(kwargs))

    def stream(self, **kwargs: Any) -> Any:
        return self._inner.stream(**self._mark(kwargs))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Beta:
    def __init__(self, inner: Any, mark: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self._inner = inner
        self.messages = _Messages(inner.messages, mark)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Client:
    """The SDK client agno asked for, with ``messages`` and ``beta.messages`` marked; everything else is its own."""

    def __init__(self, inner: Any, mark: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self._inner = inner
        self._mark = mark

    @property
    def messages(self) -> _Messages:
        return _Messages(self._inner.messages, self._mark)

    @property
    def beta(self) -> _Beta:
        return _Beta(self._inner.beta, self._mark)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _wrap_openai(model: Any) -> None:
    params = _call(model, "get_request_params")

    def get_request_params(*args: Any, **kwargs: Any) -> Any:
        request = params(*args, **kwargs)
        run_response = kwargs.get("run_response")
        session_id = getattr(run_response, "session_id", None)
        if not session_id or not isinstance(request, dict) or not cache_key_applies(model):
            return request
        extra = request.get("extra_body")
        if "prompt_cache_key" in request or (isinstance(extra, Mapping) and "prompt_cache_key" in extra):
            return request  # the user's own key
        if not any(manager._caching.enabled for manager in managers_of(model)):
            return request
        return {**request, "prompt_cache_key": str(session_id)}

    model.get_request_params = get_request_params


class PromptCaching:
    """One manager's side of it: the price model of each model, and the markers of each request."""

    def __init__(self, *, enabled: bool, price_model: PriceModel | None) -> None:
        self.enabled = enabled
        self.price_model = price_model
        self._lock = threading.Lock()
        self._last_call: OrderedDict[str, float] = OrderedDict()
        self._announced: set[int] = set()

    def price_for(self, model: Any) -> PriceModel:
        """The user's price model, or the table's row for ``model``."""
        return self.price_model if self.price_model is not None else price_model_for(model)

    def announce(self, model: Any, who: str) -> None:
        """Say once per model what the manager does for its cache (the log names the choice and the option)."""
        if model is None or id(model) in self._announced:
            return
        self._announced.add(id(model))
        price = self.price_for(model)
        if breakpoints_apply(model):
            what = "places cache breakpoints" if self.enabled else "places no cache breakpoints"
        elif cache_key_applies(model):
            what = "sends prompt_cache_key (the session id)" if self.enabled else "sends no prompt_cache_key"
        else:
            what = "leaves the provider's own caching as it is"
        log.info(
            "agno-compression: %s: %s (prompt_caching=%s); billed by %s/%s: reads %gx, writes %gx, minimum %d tokens",
            who,
            what,
            self.enabled,
            price.provider,
            price.family,
            price.read_rate,
            price.write_rate,
            price.min_tokens,
        )

    def _pays(self, state: RunState, request: Mapping[str, Any], price: PriceModel) -> bool:
        """Whether marking the newest block pays: in a tool loop the next call comes at once; a chat turn pays only
        when this session's previous call came within the entry's lifetime (the next one likely will too)."""
        now = time.monotonic()
        session = state.context.session_id if state.context is not None else None
        with self._lock:
            previous = self._last_call.pop(session, None) if session else None
            if session:
                self._last_call[session] = now
                while len(self._last_call) > MAX_SESSIONS:
                    self._last_call.popitem(last=False)
        own_tools = [t for t in request.get("tools") or () if t.get("name") != SEARCH_TOOL_NAME]
        if own_tools or state.calls > 1:
            return True
        return previous is not None and now - previous <= price.ttl_seconds

    def mark(self, model: Any, messages: list[Message], request: dict[str, Any]) -> dict[str, Any]:
        """``request`` with our breakpoints (or as it is when prompt caching is off or does not pay)."""
        price = self.price_for(model)
        state = _state_of(model, messages)
        if not self.enabled or price.caching != BREAKPOINTS or state is None or not request.get("messages"):
            return request
        sent = request["messages"]
        layout = layout_of(request.get("tools"), request.get("system"), sent, request.get("cache_control"))
        tail = self._pays(state, request, price)
        stable = _stable_position(messages, state, layout.messages_start)
        previous = state.cache_tail[0] if state.cache_tail and state.cache_tail[1] == len(state.events) else None
        marks = plan_breakpoints(
            layout,
            stable=stable if tail else None,
            previous_tail=previous,
            system_end=layout.messages_start - 1 if tail and layout.messages_start > 0 else None,
            tail=tail,
            limit=price.max_breakpoints,
            lookback=price.lookback_blocks,
        )
        state.cache_tail = (layout.last_markable, len(state.events)) if layout.last_markable is not None else None
        if not marks:
            return request
        return {**request, "messages": mark_messages(sent, marks, layout.messages_start)}


def _state_of(model: Any, messages: list[Message]) -> RunState | None:
    manager = manager_of(model, messages)
    return manager._runs.find(messages) if manager is not None else None


def _stable_position(messages: Sequence[Message], state: RunState, start: int) -> int | None:
    """The position of the current user message's last block: agno's own formatting of the prompt up to it,
    counted (so block counts follow agno's merging and media blocks exactly)."""
    from agno.utils.models.claude import format_messages

    current = state.current
    index = next((i for i, m in enumerate(messages) if m is current), None)
    if index is None:
        return None
    prefix = [m for m in messages[: index + 1] if m.role not in ("system", "developer")]
    formatted, _ = format_messages(prefix, compress_tool_results=True, append_trailing_user_message=False)
    count = sum(len(content_blocks(m)) for m in formatted)
    return start + count - 1 if count else None
