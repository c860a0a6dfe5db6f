"""Streamed token usage, counted once.

agno adds up the usage of every chunk of a streamed model call (``Model._populate_stream_data``).
That is right for providers that report usage once per call or as increments, and wrong for
providers that report running totals (Gemini, Perplexity, some OpenAI-compatible servers): summing
running totals counts the prompt once per chunk. agno avoids that for Gemini and Perplexity by
reading only the chunk that carries a ``finish_reason``, which drops a trailing usage-only chunk and
records nothing at all for a stream that breaks off before its end.

``fix_stream_usage(model)`` makes a model's streamed calls report the provider's own totals. Every
usage report of one stream goes through a ``StreamUsage``, which turns it into the amount agno
should add: for running totals the increment over what was already counted (replace, do not sum),
for increments the report itself. agno's sum then equals the provider's last totals, also when the
stream is cut. ``CompressionManager.attach()`` applies it to the models that need it.

How each provider reports (the automatic choice of ``style``):

==============================  ===============  ==========================================================
agno model                      style            why
==============================  ===============  ==========================================================
``Gemini``                      ``cumulative``   running totals in every chunk, sometimes a last usage-only
                                                 chunk without candidates
``Perplexity``                  ``cumulative``   running totals in every chunk
``OpenAIResponses`` (+ subcls)  ``final``        once, in ``response.completed``, ``response.incomplete``
                                                 or ``response.failed`` (agno reads only the first)
``OpenAILike`` subclasses,      ``detect``       depends on the server behind it: once at the end, or
``OpenAIChat`` with a                            running totals in every chunk (vLLM's
``base_url``, ``LiteLLM``,                       ``continuous_usage_stats``, some proxies)
``WatsonX``, ``Cerebras``,
``HuggingFace``,
``AzureAIFoundry``
``OpenAIChat`` (api.openai.com) nothing to fix   once, in a final usage-only chunk
``AzureOpenAI``, ``Claude``,    nothing to fix   one usage event per call
``AwsBedrock``, ``Ollama``,
``Groq``, ``MistralChat``,
``Cohere``, ``Llama``,
``GeminiInteractions``
==============================  ===============  ==========================================================

``detect`` decides per report: a report that repeats the prompt tokens already counted and is
nowhere below what was counted is a running total (an incremental reporter never bills the prompt
twice); anything else is added. It is exact for servers that report once, incrementally or
cumulatively, which is why it is the choice for backends agno cannot know.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from agno.metrics import BaseMetrics, MessageMetrics

from ._exceptions import ConfigError

__all__ = [
    "USAGE_STYLES",
    "StreamUsage",
    "fix_stream_usage",
    "stream_usage_style",
    "usage_increment",
]

USAGE_STYLES = ("cumulative", "incremental", "final", "detect")
"""How a provider reports a streamed call's usage.

``cumulative``: every report is the call's running total; the last one is the call's usage.
``final``: usage comes once, at the end; like ``cumulative``, a later report replaces an earlier one.
``incremental``: every report is new usage; the call's usage is their sum (what agno does anyway).
``detect``: decide per report (see the module docstring); the automatic choice for unknown backends.
"""

TOKEN_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(BaseMetrics) if f.name != "cost")
"""The integer counters of agno's metrics (input, output, total, audio, cache, reasoning tokens)."""

_STYLE_ATTR = "_agno_compression_stream_usage"
_REPORT_ATTR = "_agno_compression_usage_report"
_FIXED_FROM = "_agno_compression_fixed_from"

M = TypeVar("M")


def _check_style(style: object) -> str:
    if not isinstance(style, str) or style not in USAGE_STYLES:
        raise ConfigError(f"style must be one of {', '.join(USAGE_STYLES)}, got {style!r}")
    return style


# --- pure arithmetic on usage reports ------------------------------------------------------------


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _counters(values: dict[str, int]) -> MessageMetrics:
    out = MessageMetrics()
    for name, value in values.items():
        setattr(out, name, value)
    return out


def _copy(report: MessageMetrics) -> MessageMetrics:
    """The counters, cost and provider metrics of ``report``, without its timer or timings."""
    out = _counters({f: getattr(report, f) or 0 for f in TOKEN_FIELDS})
    out.cost = report.cost
    out.provider_metrics = dict(report.provider_metrics) if report.provider_metrics else None
    return out


def _minus(report: MessageMetrics, counted: MessageMetrics) -> MessageMetrics:
    """What must be added to ``counted`` so that it equals ``report`` (numbers may go down: the report wins)."""
    out = _counters({f: (getattr(report, f) or 0) - (getattr(counted, f) or 0) for f in TOKEN_FIELDS})
    if report.cost is not None:
        out.cost = report.cost - (counted.cost or 0.0)
    if report.provider_metrics:
        before = counted.provider_metrics or {}
        out.provider_metrics = {
            k: v - before[k] if _is_number(v) and _is_number(before.get(k)) else v
            for k, v in report.provider_metrics.items()
        }
    return out


def is_running_total(report: MessageMetrics, counted: MessageMetrics) -> bool:
    """True when ``report`` repeats the prompt already counted and is nowhere below it: a running total.

    An incremental reporter bills the prompt once; a report carrying the same prompt tokens again
    can only be a total that includes what was counted before.
    """
    prompt = counted.input_tokens or 0
    return (
        prompt > 0
        and (report.input_tokens or 0) == prompt
        and all((getattr(report, f) or 0) >= (getattr(counted, f) or 0) for f in TOKEN_FIELDS)
    )


def usage_increment(report: MessageMetrics, counted: MessageMetrics, style: str) -> MessageMetrics:
    """The amount agno should add for ``report``, given what this stream has ``counted`` so far."""
    _check_style(style)
    if style == "incremental" or (style == "detect" and not is_running_total(report, counted)):
        return _copy(report)
    return _minus(report, counted)


def is_zero(amount: MessageMetrics) -> bool:
    """True when adding ``amount`` changes nothing."""
    return (
        all(not getattr(amount, f) for f in TOKEN_FIELDS)
        and not amount.cost
        and not any(not _is_number(v) or v for v in (amount.provider_metrics or {}).values())
    )


@dataclass
class StreamUsage:
    """One streamed call's usage: ``add`` turns each provider report into the amount agno should add.

    The amounts always sum to ``counted``; for ``cumulative``/``final`` that is the last report seen.
    """

    style: str = "detect"
    """One of ``USAGE_STYLES``."""
    counted: MessageMetrics = field(default_factory=MessageMetrics)
    """What the amounts returned so far add up to."""
    reports: int = 0
    """How many reports were added."""

    def __post_init__(self) -> None:
        _check_style(self.style)

    def add(self, report: MessageMetrics) -> MessageMetrics:
        amount = usage_increment(report, self.counted, self.style)
        self.counted = self.counted + amount
        self.reports += 1
        return amount


# --- where each provider's raw chunks carry usage ------------------------------------------------


@dataclass(frozen=True)
class _Reader:
    """Reads a raw stream chunk's usage report, where agno's own parsing drops some of them."""

    arg: str
    """Name of the raw chunk's parameter in the provider's ``_parse_provider_response_delta``."""
    read: Callable[[Any, Any], MessageMetrics | None]
    """``read(model, chunk)``: the chunk's report in agno's terms, or None."""


def _read_gemini(model: Any, chunk: Any) -> MessageMetrics | None:
    # agno reads usage only inside candidates and only on the finishing chunk: read it from every chunk.
    meta = getattr(chunk, "usage_metadata", None)
    return model._get_metrics(meta) if meta is not None else None


def _read_chat(model: Any, chunk: Any) -> MessageMetrics | None:
    # With collect_metrics_on_completion (Perplexity) agno skips usage-only chunks; read every one.
    usage = getattr(chunk, "usage", None)
    return model._get_metrics(usage) if usage else None


_END_EVENTS = ("response.completed", "response.incomplete", "response.failed")


def _read_responses(model: Any, event: Any) -> MessageMetrics | None:
    # agno reads usage only from response.completed; a truncated (incomplete) response is billed too.
    if getattr(event, "type", None) not in _END_EVENTS:
        return None
    usage = getattr(getattr(event, "response", None), "usage", None)
    return model._get_metrics(usage) if usage is not None else None


_GEMINI = _Reader("response_delta", _read_gemini)
_CHAT = _Reader("response_delta", _read_chat)
_RESPONSES = _Reader("stream_event", _read_responses)


@dataclass(frozen=True)
class _Provider:
    style: str | None
    """The automatic style; None when agno already counts this provider's streams right."""
    reader: _Reader | None = None


_DETECT = _Provider("detect")
_RIGHT = _Provider(None)

# Keyed by "module.qualname" so that no provider SDK has to be imported to look a model up.
_PROVIDERS: dict[str, _Provider] = {
    "agno.models.google.gemini.Gemini": _Provider("cumulative", _GEMINI),
    "agno.models.perplexity.perplexity.Perplexity": _Provider("cumulative", _CHAT),
    "agno.models.openai.responses.OpenAIResponses": _Provider("final", _RESPONSES),
    "agno.models.azure.openai_chat.AzureOpenAI": _RIGHT,
    "agno.models.openai.like.OpenAILike": _Provider("detect", _CHAT),
    "agno.models.openai.chat.OpenAIChat": _Provider("detect", _CHAT),  # api.openai.com itself: see _provider_of
    "agno.models.litellm.chat.LiteLLM": _DETECT,
    "agno.models.ibm.watsonx.WatsonX": _DETECT,
    "agno.models.cerebras.cerebras.Cerebras": _DETECT,
    "agno.models.huggingface.huggingface.HuggingFace": _DETECT,
    "agno.models.azure.ai_foundry.AzureAIFoundry": _DETECT,
    "agno.models.anthropic.claude.Claude": _RIGHT,
    "agno.models.aws.bedrock.AwsBedrock": _RIGHT,
    "agno.models.ollama.chat.Ollama": _RIGHT,
    "agno.models.groq.groq.Groq": _RIGHT,
    "agno.models.mistral.mistral.MistralChat": _RIGHT,
    "agno.models.cohere.chat.Cohere": _RIGHT,
    "agno.models.meta.llama.Llama": _RIGHT,
    "agno.models.google.gemini_interactions.GeminiInteractions": _RIGHT,
}
_OPENAI_CHAT = "agno.models.openai.chat.OpenAIChat"


def _entry_of(cls: type) -> tuple[str, _Provider] | None:
    """The nearest class in ``cls``'s MRO that the table knows (fixed subclasses keep their base's name)."""
    for klass in cls.__mro__:
        key = f"{klass.__module__}.{klass.__qualname__}"
        if key in _PROVIDERS:
            return key, _PROVIDERS[key]
    return None


def _official_openai(model: Any) -> bool:
    url = (getattr(model, "client_params", None) or {}).get("base_url") or getattr(model, "base_url", None)
    url = url or os.environ.get("OPENAI_BASE_URL")
    return url is None or "api.openai.com" in str(url)


def _provider_of(model: Any) -> _Provider | None:
    """How ``model``'s provider reports streamed usage; None for a model class the table does not know."""
    entry = _entry_of(type(model))
    if entry is None:
        return None
    key, provider = entry
    if key == _OPENAI_CHAT and _official_openai(model):
        return _RIGHT  # OpenAI sends usage once, in the last chunk: agno's sum is that report
    return provider


def stream_usage_style(model: Any) -> str | None:
    """The style ``model``'s streamed usage is normalised with: the one set by ``fix_stream_usage(style=)``,
    else the automatic choice (``"detect"`` for model classes not in the table); None when nothing needs fixing.
    """
    chosen = getattr(model, _STYLE_ATTR, None)
    if chosen is not None:
        return str(chosen)
    provider = _provider_of(model)
    if provider is None:
        return "detect"
    return provider.style


# --- per-instance patch --------------------------------------------------------------------------


def _assistant_message(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if "assistant_message" in kwargs:
        return kwargs["assistant_message"]
    return args[1] if len(args) > 1 else None


def _counted(response: Any, usage: StreamUsage) -> Any:
    """Replace ``response``'s usage with the amount agno should add for it."""
    if not hasattr(response, "response_usage"):
        return response
    if hasattr(response, _REPORT_ATTR):
        report = getattr(response, _REPORT_ATTR)
        delattr(response, _REPORT_ATTR)
    else:
        report = response.response_usage
    if report is None:
        response.response_usage = None
        return response
    amount = usage.add(report)
    response.response_usage = None if is_zero(amount) else amount
    return response


def _keep_counted(message: Any, usage: StreamUsage) -> None:
    """A stream that ends in an exception: give its assistant message what was counted so far.

    agno copies a stream's totals into the assistant message only after the stream ends, and its
    ``finally`` adds that message's metrics to the run; without this a cut stream adds 0.
    """
    if message is None or not usage.reports:
        return
    if getattr(message, "metrics", None) is None:
        message.metrics = MessageMetrics()
    message.metrics = message.metrics + usage.counted


def _stream_usage(model: Any) -> StreamUsage:
    return StreamUsage(style=stream_usage_style(model) or "detect")


def _make_fixed_class(base: type) -> type:
    """A subclass of ``base`` whose streams go through ``StreamUsage``; same name, module and fields."""
    entry = _entry_of(base)
    reader = entry[1].reader if entry is not None else None

    def invoke_stream(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        usage = _stream_usage(self)
        try:
            for response in base.invoke_stream(self, *args, **kwargs):  # type: ignore[attr-defined]
                yield _counted(response, usage)
        except BaseException:  # also GeneratorExit: a consumer that stops reading ends the call too
            _keep_counted(_assistant_message(args, kwargs), usage)
            raise

    async def ainvoke_stream(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        usage = _stream_usage(self)
        try:
            async for response in base.ainvoke_stream(self, *args, **kwargs):  # type: ignore[attr-defined]
                yield _counted(response, usage)
        except BaseException:
            _keep_counted(_assistant_message(args, kwargs), usage)
            raise

    def __reduce_ex__(self: Any, protocol: Any) -> Any:
        # pickle and copy.copy find classes by name, which leads to ``base``: rebuild the fixed instance.
        return (_restore_fixed, (base, dict(self.__dict__)))

    namespace: dict[str, Any] = {
        "invoke_stream": invoke_stream,
        "ainvoke_stream": ainvoke_stream,
        "__reduce_ex__": __reduce_ex__,
        "__module__": base.__module__,
        "__qualname__": base.__qualname__,
        "__doc__": base.__doc__,
        _FIXED_FROM: base,
    }
    if reader is not None:

        def _parse_provider_response_delta(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = base._parse_provider_response_delta(self, *args, **kwargs)  # type: ignore[attr-defined]
            raw = args[0] if args else kwargs.get(reader.arg)
            # The Responses API returns (response, tool_use); the others a response.
            response = result[0] if isinstance(result, tuple) else result
            setattr(response, _REPORT_ATTR, reader.read(self, raw) if raw is not None else None)
            return result

        namespace["_parse_provider_response_delta"] = _parse_provider_response_delta
    return type(base.__name__, (base,), namespace)


_fixed_classes: dict[type, type] = {}
_classes_lock = threading.Lock()


def _fixed_class(base: type) -> type:
    with _classes_lock:
        fixed = _fixed_classes.get(base)
        if fixed is None:
            fixed = _fixed_classes[base] = _make_fixed_class(base)
        return fixed


def _restore_fixed(base: type, state: dict[str, Any]) -> Any:
    model: Any = object.__new__(base)
    model.__dict__.update(state)
    model.__class__ = _fixed_class(base)
    return model


def is_fixed(model: Any) -> bool:
    """True when ``fix_stream_usage`` was applied to ``model`` (or to the model it was copied from)."""
    return _FIXED_FROM in type(model).__dict__


def fix_stream_usage(model: M, *, style: str | None = None) -> M:
    """Make ``model``'s streamed calls report the provider's totals, counted once; returns the same object.

    ``style`` (one of ``USAGE_STYLES``) overrides the automatic choice, for OpenAI-compatible servers
    whose reporting agno cannot know. Without it a provider agno already counts right is left alone.
    Only this instance changes: its class becomes a same-named subclass of its class (made once per
    class) whose ``invoke_stream``/``ainvoke_stream`` normalise usage, so copies agno makes of the
    model (``Agent.deep_copy``, ``copy.deepcopy``) keep the fix and act on themselves. Applying it
    again does not wrap twice; it only changes the style when one is given.
    """
    from agno.models.base import Model

    if not isinstance(model, Model):
        raise ConfigError(f"fix_stream_usage() takes an agno Model, got {type(model).__name__}")
    if style is not None:
        _check_style(style)
    if not is_fixed(model):
        if style is None and stream_usage_style(model) is None:
            return model
        model.__class__ = _fixed_class(type(model))
    if style is not None:
        setattr(model, _STYLE_ATTR, style)
    return model


def fix_known_stream_usage(*models: Any) -> None:
    """What ``attach()`` applies: fix each of ``models`` whose provider is known to need it (others: untouched)."""
    for model in models:
        provider = _provider_of(model)
        if provider is not None and provider.style is not None and not is_fixed(model):
            fix_stream_usage(model)
