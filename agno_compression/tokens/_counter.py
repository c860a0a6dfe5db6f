"""``TokenCounter``: prompts counted the way a chat provider sees them, per model, cached per message.

The backend is chosen per model (tiktoken o200k/cl100k from local rank files, exact for OpenAI
models and a stand-in for others) unless one is given. Messages, tool calls and tool schemas are
rendered by ``agno_compression._messages``; this module adds OpenAI's chat-format overheads.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

from agno.models.message import Message

from .._exceptions import ConfigError
from .._messages import (
    TOOLS_FOOTER,
    TOOLS_HEADER,
    content_text,
    render_function,
    schema_text,
    tool_call_texts,
    tool_schema,
)
from ._backends import EstimateBackend, HFTokenizerBackend, TextCounter, TiktokenBackend
from ._keys import forget_seen, media_tokens, message_key, reference, stable_hash
from ._ranks import _RANK_FILES

log = logging.getLogger("agno_compression")

# --- OpenAI chat-format accounting -------------------------------------------------------
# Plain messages follow OpenAI's published recipe (3 tokens per message + the role, +1 for a
# name, 3 to prime the reply). Tool calls and tool results have no published recipe; the
# constants below approximate the ``functions.<name>`` call envelope and the call reference.
MESSAGE_OVERHEAD = 4
"""Tokens around every message: the 3-token message envelope plus the role token."""
NAME_OVERHEAD = 1
"""Extra tokens when a message carries a ``name`` (plus the name itself)."""
TOOL_CALL_OVERHEAD = 7
"""Tokens around one tool call in an assistant message (plus its name and arguments)."""
TOOL_RESULT_OVERHEAD = 2
"""Tokens linking a tool result to its call."""
PROMPT_OVERHEAD = 3
"""Tokens that prime the assistant's reply, once per request."""
_SEEN_LIMIT = 4096
"""Message objects remembered by identity per counter (weakly: an entry goes when its message does)."""
_TOOL_MEMO_LIMIT = 256
"""Tool definitions remembered by identity per counter (weakly where they allow it), least recently used dropped."""


# --- which encoding for which model ----------------------------------------------------------
def _model_id(model: Any) -> str | None:
    """The id of ``model``: a string as given, or the ``id`` of an agno ``Model``."""
    if model is None or isinstance(model, str):
        return model or None
    model_id = getattr(model, "id", None)
    return str(model_id) if model_id else None


def _tiktoken_encoding_name(model: str) -> str | None:
    """tiktoken's encoding for ``model`` if tiktoken knows it as an OpenAI model, else ``None``."""
    try:
        import tiktoken.model
    except ImportError:
        return None
    name = model.lower().rsplit("/", 1)[-1]
    try:
        return tiktoken.model.encoding_name_for_model(name)
    except KeyError:
        return None


def encoding_for_model(model: Any) -> str:
    """The tiktoken encoding name used for ``model`` (o200k for current and non-OpenAI models)."""
    name = _model_id(model)
    if not name:
        return "o200k_base"
    known = _tiktoken_encoding_name(name)
    if known is None:
        return "o200k_base"
    # r50k/p50k models are retired; cl100k is the nearest encoding shipped offline.
    return known if known in _RANK_FILES else "cl100k_base"


def _is_openai_model(model: Any) -> bool:
    """Whether tiktoken's count is the provider's exact count for ``model`` (no model: o200k)."""
    name = _model_id(model)
    return name is None or _tiktoken_encoding_name(name) is not None


# --- the counter ----------------------------------------------------------------------------
class TokenCounter:
    """Counts prompts for one model, caching each message's count.

    The backend is chosen from ``model`` (tiktoken o200k/cl100k from local rank files; exact for
    OpenAI models, a stand-in for others), or a Hugging Face ``tokenizer_file``, or ``backend``.
    Counting never raises: if the backend is unavailable or fails, the counter switches to
    ``EstimateBackend`` and logs one warning. Counts from non-exact backends are multiplied by a
    correction factor learned with ``calibrate``.
    """

    def __init__(
        self,
        model: Any = None,
        *,
        backend: TextCounter | None = None,
        rank_files_dir: str | os.PathLike[str] | None = None,
        cache_size: int = 2_048,
        allow_packaged: bool = True,
        tokenizer_file: str | os.PathLike[str] | None = None,
        calibration_alpha: float = 0.5,
    ) -> None:
        _check_counter_config(backend, tokenizer_file, cache_size, calibration_alpha)
        self.model = _model_id(model)
        self._rank_files_dir = str(rank_files_dir) if rank_files_dir else None
        self._allow_packaged = allow_packaged
        self._backend: TextCounter | None = backend
        if tokenizer_file is not None:
            self._backend = HFTokenizerBackend(tokenizer_file)
        self._cache: OrderedDict[int, int] = OrderedDict()
        self._cache_size = cache_size
        self._tool_memo: OrderedDict[int, tuple[Callable[[], Any], Hashable, dict[str, Any]]] = OrderedDict()
        self._seen: dict[int, tuple[Any, ...]] = {}
        self._last_tools: tuple[tuple[Callable[[], Any], ...], int] | None = None
        self._lock = threading.RLock()
        self._warned = False
        self._alpha = calibration_alpha
        self._correction = 1.0
        self._calibrations = 0

    # backend choice and fallback
    @property
    def backend(self) -> TextCounter:
        """The backend in use (resolved on first use)."""
        backend = self._backend
        if backend is None:
            with self._lock:
                if self._backend is None:
                    self._backend = self._auto_backend()
                backend = self._backend
        return backend

    @property
    def exact(self) -> bool:
        """Whether counts are the provider's own (calibration does not apply then)."""
        return bool(getattr(self.backend, "exact", False))

    @property
    def correction(self) -> float:
        """The factor applied to counts of a non-exact backend (1.0 until ``calibrate`` is called).

        A real tokenizer that is not the provider's own (o200k for a Claude model) is scaled up when the provider
        counts more, never down: the provider's counts wander a few percent around it from call to call, and the
        budget must hold in both counts. Only the estimate is scaled down as well.
        """
        if self.exact:
            return 1.0
        if self._correction < 1.0 and not isinstance(self.backend, EstimateBackend):
            return 1.0
        return self._correction

    def _auto_backend(self) -> TextCounter:
        encoding = encoding_for_model(self.model)
        try:
            return TiktokenBackend(
                encoding,
                self._rank_files_dir,
                allow_packaged=self._allow_packaged,
                exact=_is_openai_model(self.model),
            )
        except Exception as exc:
            return self._fall_back(f"tiktoken:{encoding}", exc)

    def _fall_back(self, failed: str, exc: BaseException) -> TextCounter:
        """Switch to the estimate, warning once per counter."""
        estimate = EstimateBackend()
        with self._lock:
            self._backend = estimate
            self._cache.clear()
            self._seen.clear()
            self._last_tools = None
            if not self._warned:
                self._warned = True
                log.warning(
                    "agno-compression: token backend %s unavailable (%s: %s); falling back to the %r backend "
                    "(script-aware estimate, corrected by calibrate())",
                    failed,
                    type(exc).__name__,
                    exc,
                    estimate.name,
                )
        return estimate

    def _raw_text(self, text: str) -> int:
        """Backend count of ``text`` before correction."""
        if not text:
            return 0
        backend = self.backend
        try:
            return int(backend.count(text))
        except Exception as exc:
            if isinstance(backend, EstimateBackend):
                return max(1, len(text) // 4)
            return self._fall_back(backend.name, exc).count(text)

    def _corrected(self, raw: int) -> int:
        if raw <= 0 or self.exact:
            return raw
        return max(1, round(raw * self.correction))

    # counting
    def count_text(self, text: str) -> int:
        """Tokens of one string (cached: summarizers count the same lines fold after fold)."""
        if not text:
            return 0
        return self._corrected(self._cached(("text", len(text), hash(text)), lambda: self._raw_text(text)))

    def _measure_message(self, message: Message) -> int:
        """Raw tokens of one message in OpenAI's chat format: envelope, name, content, tool calls, media."""
        total = MESSAGE_OVERHEAD + self._raw_text(content_text(message, True))
        if message.name:
            total += NAME_OVERHEAD + self._raw_text(message.name)
        for name, arguments in tool_call_texts(message):
            total += TOOL_CALL_OVERHEAD + self._raw_text(name) + self._raw_text(arguments)
        if message.role == "tool":
            total += TOOL_RESULT_OVERHEAD
        return total + media_tokens(message, self.model)

    def _cached(self, key: Hashable, compute: Any) -> int:
        """``compute()`` through the LRU cache under ``key`` (kept as its 64-bit hash: an entry holds two ints)."""
        if not self._cache_size:
            return int(compute())
        key = hash(key)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        value = int(compute())
        with self._lock:
            self._cache[key] = value
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return value

    def _raw_message(self, message: Message) -> int:
        return self._cached(message_key(message), lambda: self._measure_message(message))

    def _raw_messages(self, messages: Iterable[Message]) -> int:
        """Raw tokens of many messages, measuring only those not seen before.

        Two cache levels: message objects already counted are recognised by identity (the same
        object with the same content, compressed content, tool calls, role and name objects),
        which costs a dict lookup; other messages go through the cache keyed by id and content
        (``message_key``), which also serves copies such as agno's history messages.
        """
        if not self._cache_size:
            return sum(self._measure_message(m) for m in messages)
        total = 0
        unseen: list[Message] = []
        seen = self._seen
        for message in messages:
            entry = seen.get(id(message))
            if (
                entry is not None
                and entry[0]() is message
                and entry[1] is message.content
                and entry[2] is message.compressed_content
                and entry[3] is message.tool_calls
                and entry[4] is message.images
                and entry[5] == message.role
                and entry[6] == message.name
            ):
                total += entry[7]
            else:
                unseen.append(message)
        for message in unseen:
            value = self._raw_message(message)
            self._remember(message, value)
            total += value
        return total

    def _remember(self, message: Message, value: int) -> None:
        """Record ``message``'s raw count under its identity (see ``_raw_messages``).

        The entry refers to the message weakly and goes when the message does, so a long-lived counter keeps
        no message of a finished run alive (what agno keeps, it keeps).
        """
        key = id(message)
        try:
            ref = weakref.ref(message, functools.partial(forget_seen, self._seen, key))
        except TypeError:  # no weak references: counted through the content cache each time
            return
        with self._lock:
            self._seen[key] = (
                ref,
                message.content,
                message.compressed_content,
                message.tool_calls,
                message.images,
                message.role,
                message.name,
                value,
            )
            while len(self._seen) > _SEEN_LIMIT:
                del self._seen[next(iter(self._seen))]

    def _tool_key(self, tool: Any) -> tuple[Hashable, dict[str, Any]]:
        """Cache key and schema of a tool definition, memoized by object identity.

        Tool definitions are treated as immutable once counted: an agno ``Function`` or a schema
        dict is rendered and hashed the first time this counter sees that object.
        """
        memo = self._tool_memo.get(id(tool))
        if memo is not None and memo[0]() is tool:
            return memo[1], memo[2]
        schema = tool_schema(tool)
        key = ("tool", stable_hash(schema))
        with self._lock:
            self._tool_memo[id(tool)] = (reference(tool), key, schema)
            while len(self._tool_memo) > _TOOL_MEMO_LIMIT:
                self._tool_memo.popitem(last=False)
        return key, schema

    def _raw_tools(self, tools: Sequence[Any] | None) -> int:
        """Raw tokens of tool definitions; the same tool objects as last time cost one comparison each."""
        if not tools:
            return 0
        last = self._last_tools
        if last is not None and _same_objects(last[0], tools):
            return last[1]
        total = self._cached(("tools-envelope",), lambda: self._raw_text(TOOLS_HEADER + TOOLS_FOOTER))
        for tool in tools:
            key, schema = self._tool_key(tool)
            total += self._cached(key, lambda schema=schema: self._raw_text(render_function(schema)))
        self._last_tools = (tuple(map(reference, tools)), total)
        return total

    def count_message(self, message: Message) -> int:
        """Tokens of one message including its envelope (cached by id and content)."""
        return self._corrected(self._raw_message(message))

    def count_messages(self, messages: Iterable[Message]) -> int:
        """Tokens of a list of messages, plus the reply priming."""
        return self._corrected(self._raw_messages(messages) + PROMPT_OVERHEAD)

    def count_tools(self, tools: Sequence[Any] | None) -> int:
        """Tokens of tool definitions (agno ``Function`` objects or schema dicts)."""
        return self._corrected(self._raw_tools(tools))

    def count_prompt(
        self, messages: Iterable[Message], tools: Sequence[Any] | None = None, *, output_schema: Any = None
    ) -> int:
        """Tokens of a whole request: messages with their overheads, tool definitions, response format."""
        raw = self._raw_messages(messages) + PROMPT_OVERHEAD + self._raw_tools(tools)
        schema = schema_text(output_schema)
        if schema:
            raw += self._cached(("schema", hash(schema)), lambda: self._raw_text(schema))
        return self._corrected(raw)

    # calibration
    def calibrate(self, estimated_prompt_tokens: int, reported_prompt_tokens: int) -> float:
        """Learn from one provider-reported usage; return the correction factor now in effect.

        ``estimated_prompt_tokens`` is what this counter returned for the prompt (correction
        included) and ``reported_prompt_tokens`` what the provider billed for it. The first
        report sets the factor; later ones move it by ``calibration_alpha`` (an exponential
        moving ratio). Exact backends ignore calibration; invalid numbers are ignored.
        """
        if self.exact:
            return 1.0
        try:
            estimated, reported = float(estimated_prompt_tokens), float(reported_prompt_tokens)
        except (TypeError, ValueError):
            return self._correction
        if not (estimated > 0 and reported > 0 and math.isfinite(estimated) and math.isfinite(reported)):
            return self._correction
        with self._lock:
            # the estimate was made with the factor applied then: the learned ratio is the provider's to the raw count
            target = min(4.0, max(0.25, self.correction * reported / estimated))
            if self._calibrations == 0:
                self._correction = target
            else:
                self._correction += self._alpha * (target - self._correction)
            self._calibrations += 1
            return self._correction

    def reset_calibration(self) -> None:
        """Forget all calibration (factor back to 1.0)."""
        with self._lock:
            self._correction = 1.0
            self._calibrations = 0


def _same_objects(first: Sequence[Callable[[], Any]], second: Sequence[Any]) -> bool:
    """Whether ``first`` (references, see ``reference``) refers to the very objects of ``second``, in order."""
    return len(first) == len(second) and all(a() is b for a, b in zip(first, second, strict=True))


def _check_counter_config(backend: Any, tokenizer_file: Any, cache_size: Any, calibration_alpha: Any) -> None:
    """Raise ``ConfigError`` for ``TokenCounter`` arguments that cannot work."""
    if backend is not None and not isinstance(backend, TextCounter):
        raise ConfigError(f"backend must have a name and a count(text) method, got {backend!r}")
    if backend is not None and tokenizer_file is not None:
        raise ConfigError("pass either backend or tokenizer_file, not both")
    if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 0:
        raise ConfigError(f"cache_size must be an int >= 0, got {cache_size!r}")
    if not isinstance(calibration_alpha, (int, float)) or not 0 < calibration_alpha <= 1:
        raise ConfigError(f"calibration_alpha must be in (0, 1], got {calibration_alpha!r}")


_shared: dict[tuple[str, bool], TokenCounter] = {}
_shared_lock = threading.Lock()


def _shared_counter(model: Any) -> TokenCounter:
    key = (encoding_for_model(model), _is_openai_model(model))
    with _shared_lock:
        if key not in _shared:
            _shared[key] = TokenCounter(model)
        return _shared[key]


def count_tokens(text_or_messages: str | Message | Iterable[Message], model: Any = None) -> int:
    """Count the tokens of a string, a message or a list of messages for ``model`` (default o200k)."""
    counter = _shared_counter(model)
    if isinstance(text_or_messages, str):
        return counter.count_text(text_or_messages)
    if isinstance(text_or_messages, Message):
        return counter.count_message(text_or_messages)
    return counter.count_messages(list(text_or_messages))
