"""What each provider bills for a prompt: one dated row per provider and model family, chosen from the agno model.

A row says how the provider caches (``breakpoints``: Anthropic writes entries only where the request marks
``cache_control``; ``prefix``: OpenAI and Gemini cache any long enough leading part by themselves), what a
cached read and a cache write cost as a share of the normal input price, the minimum cacheable prompt, the step
in which cached tokens are counted, the breakpoint limit and lookback, the entry lifetime, and which usage
field reports what. Every row cites the provider's page it was read from and the day it was checked; the
figures are the providers' own and change with them, so a user can pass their own ``PriceModel``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import ConfigError

BREAKPOINTS = "breakpoints"
"""Entries are written only at blocks the request marks with ``cache_control`` (Anthropic)."""
PREFIX = "prefix"
"""The provider caches the leading part of every long enough prompt by itself (OpenAI, Gemini)."""
NONE = "none"
"""No prompt caching at all: every token billed in full."""
CACHING = (BREAKPOINTS, PREFIX, NONE)

ANTHROPIC_DOCS = "https://platform.claude.com/docs/en/build-with-claude/prompt-caching"
ANTHROPIC_PRICING = "https://platform.claude.com/docs/en/about-claude/pricing"
OPENAI_DOCS = "https://platform.openai.com/docs/guides/prompt-caching"
OPENAI_PRICING = "https://platform.openai.com/docs/pricing"
GEMINI_DOCS = "https://ai.google.dev/gemini-api/docs/caching"
GEMINI_PRICING = "https://ai.google.dev/gemini-api/docs/pricing"


@dataclass(frozen=True, kw_only=True)
class PriceModel:
    """How one provider and model family bills input tokens, with and without its prompt cache.

    Rates are shares of the model's normal input price, so a bill is in "input tokens at full price". Build one
    with different figures (``PriceModel(...)`` or ``dataclasses.replace(row, read_rate=...)``) and pass it as
    ``CompressionManager(price_model=...)`` when your contract differs from the list price.
    """

    provider: str
    """``"anthropic"``, ``"openai"``, ``"google"`` or any other name (``"generic"`` is the fallback)."""
    family: str
    """The model family the row covers, e.g. ``"claude-sonnet-4-5"`` or ``"gpt-5"``."""
    caching: str
    """``"breakpoints"``, ``"prefix"`` or ``"none"``."""
    read_rate: float
    """A cached token read, as a share of the input price (0.1 = a tenth)."""
    write_rate: float = 1.0
    """A token written to the cache (5-minute entry), as a share of the input price; 1.0 where writes are free."""
    long_write_rate: float | None = None
    """A token written to a 1-hour entry, where the provider offers one."""
    ttl_seconds: float = 300.0
    """How long an entry lives after its last use."""
    long_ttl_seconds: float | None = None
    min_tokens: int = 1024
    """The shortest prefix the provider caches; below it nothing is written or read."""
    step: int = 1
    """Cached tokens are counted in multiples of this (OpenAI: 128)."""
    max_breakpoints: int = 0
    """``cache_control`` markers a request may carry (Anthropic: 4)."""
    lookback_blocks: int = 0
    """How many blocks before a breakpoint the provider looks for an existing entry (Anthropic: 20)."""
    input_includes_cache: bool = True
    """Whether the usage's input count (agno's ``metrics.input_tokens``) includes cached and written tokens. Anthropic
    reports them apart (``input_tokens`` is only what follows the last breakpoint); OpenAI and Gemini include them."""
    usage_fields: str = ""
    """Which usage fields report what, in the provider's own names."""
    matches: tuple[str, ...] = ()
    """Model id prefixes this row covers (the longest matching prefix wins); empty: the provider's default row."""
    source: str = ""
    """The provider page the figures were read from."""
    checked: str = ""
    """The day the figures were checked against ``source`` (ISO date)."""
    notes: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        for name, expected, ok in _CHECKS:
            value = getattr(self, name)
            if not ok(value):
                raise ConfigError(f"PriceModel.{name} must be {expected}, got {value!r}")

    @property
    def caches(self) -> bool:
        """Whether this provider bills any cached token below the full price."""
        return self.caching != NONE and self.read_rate < 1.0

    def billed(self, uncached: float, read: float = 0, written: float = 0, written_long: float = 0) -> float:
        """Input billed, in tokens at full price, for a prompt split as the provider's usage reports it."""
        long_rate = self.long_write_rate if self.long_write_rate is not None else self.write_rate
        return uncached + read * self.read_rate + written * self.write_rate + written_long * long_rate


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _count(low: int, high: int | None = None) -> Any:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low and (high is None or v <= high)


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _rate(value: Any) -> bool:
    return _number(value) and 0 <= value <= MAX_RATE


def _ttl(value: Any) -> bool:
    return _number(value) and 0 < value <= MAX_TTL


MAX_RATE = 10
"""A rate is a share of the input price: list prices run from 0.025 (reads) to 2 (1-hour writes)."""
MAX_TTL = 7 * 86_400
"""The longest cache lifetime a row may name (providers offer 5 minutes to 24 hours)."""
MAX_BREAKPOINTS = 4
"""Anthropic allows at most four ``cache_control`` markers in one request."""

_CHECKS: tuple[tuple[str, str, Any], ...] = (
    ("provider", "a non-empty string", lambda v: _text(v) and bool(v.strip())),
    ("family", "a string", _text),
    ("caching", f"one of {', '.join(CACHING)}", lambda v: _text(v) and v in CACHING),
    ("read_rate", f"a number from 0 to {MAX_RATE}", _rate),
    ("write_rate", f"a number from 0 to {MAX_RATE}", _rate),
    ("long_write_rate", f"None or a number from 0 to {MAX_RATE}", lambda v: v is None or _rate(v)),
    ("ttl_seconds", f"seconds above 0, at most {MAX_TTL}", _ttl),
    ("long_ttl_seconds", f"None or seconds above 0, at most {MAX_TTL}", lambda v: v is None or _ttl(v)),
    ("min_tokens", "an int >= 0", _count(0)),
    ("step", "an int >= 1", _count(1)),
    ("max_breakpoints", f"an int from 0 to {MAX_BREAKPOINTS}", _count(0, MAX_BREAKPOINTS)),
    ("lookback_blocks", "an int >= 0", _count(0)),
    ("input_includes_cache", "True or False", lambda v: isinstance(v, bool)),
    ("usage_fields", "a string", _text),
    (
        "matches",
        "a tuple of non-empty model id prefixes",
        lambda v: isinstance(v, tuple) and all(_text(m) and m for m in v),
    ),
    ("source", "a string", _text),
    ("checked", "a string (ISO date)", _text),
    ("notes", "a string", _text),
)
"""Each field, what it accepts, and the check: a wrong figure is a ``ConfigError`` naming it, never a NaN in a bill."""


_ANTHROPIC_USAGE = (
    "input_tokens: tokens after the last cache breakpoint (neither read nor written); cache_read_input_tokens: "
    "read from the cache; cache_creation_input_tokens: written (split in cache_creation.ephemeral_5m_input_tokens "
    "and ephemeral_1h_input_tokens); the whole prompt is their sum. agno: metrics.input_tokens, "
    "cache_read_tokens, cache_write_tokens."
)
_OPENAI_USAGE = (
    "prompt_tokens: the whole prompt; prompt_tokens_details.cached_tokens: the part read from the cache (included "
    "in prompt_tokens). agno: metrics.input_tokens (whole prompt), cache_read_tokens."
)
_GEMINI_USAGE = (
    "usage_metadata.prompt_token_count: the whole prompt; cached_content_token_count: the part served from the "
    "cache (included). agno: metrics.input_tokens (whole prompt), cache_read_tokens."
)


def _anthropic(family: str, matches: tuple[str, ...], *, min_tokens: int, read: float = 0.1) -> PriceModel:
    return PriceModel(
        provider="anthropic",
        family=family,
        caching=BREAKPOINTS,
        read_rate=read,
        write_rate=1.25,
        long_write_rate=2.0,
        ttl_seconds=300.0,
        long_ttl_seconds=3600.0,
        min_tokens=min_tokens,
        max_breakpoints=4,
        lookback_blocks=20,
        input_includes_cache=False,
        usage_fields=_ANTHROPIC_USAGE,
        matches=matches,
        source=f"{ANTHROPIC_DOCS}; {ANTHROPIC_PRICING}",
        checked=CHECKED,
    )


def _openai(family: str, matches: tuple[str, ...], *, read: float, step: int = 128, write: float = 1.0) -> PriceModel:
    return PriceModel(
        provider="openai",
        family=family,
        caching=PREFIX,
        read_rate=read,
        write_rate=write,
        ttl_seconds=1800.0 if write > 1.0 else 300.0,
        min_tokens=1024,
        step=step,
        input_includes_cache=True,
        usage_fields=_OPENAI_USAGE,
        matches=matches,
        source=f"{OPENAI_DOCS}; {OPENAI_PRICING}",
        checked=CHECKED,
    )


def _gemini(family: str, matches: tuple[str, ...], *, min_tokens: int, read: float = 0.1) -> PriceModel:
    return PriceModel(
        provider="google",
        family=family,
        caching=PREFIX,
        read_rate=read,
        ttl_seconds=300.0,
        min_tokens=min_tokens,
        input_includes_cache=True,
        usage_fields=_GEMINI_USAGE,
        matches=matches,
        source=f"{GEMINI_DOCS}; {GEMINI_PRICING}",
        checked=CHECKED,
        notes="implicit caching: the provider promises no saving; a hit is billed at the cached rate",
    )


CHECKED = "2026-11-25"
"""When every row below was last checked against its source (the pages as stored on that day; the Anthropic
page's newest version lists Claude Opus 5.5, the OpenAI guide GPT-5.6, the Gemini page is dated 2026-07-07)."""

PRICE_MODELS: tuple[PriceModel, ...] = (
    # Anthropic: 5-minute writes 1.25x, 1-hour writes 2x, reads 0.1x except where noted; the minimum per model
    _anthropic("claude (unlisted model)", (), min_tokens=1024),
    _anthropic("claude-fable/mythos-5-1", ("claude-fable-5-1", "claude-mythos-5-1"), min_tokens=512, read=0.025),
    _anthropic("claude-opus/sonnet-5-5", ("claude-opus-5-5", "claude-sonnet-5-5"), min_tokens=512, read=0.05),
    _anthropic("claude-5", ("claude-opus-5", "claude-fable-5", "claude-mythos-5", "claude-haiku-5-5"), min_tokens=512),
    _anthropic(
        "claude-sonnet-5 / opus-4-8 / sonnet-4",
        ("claude-sonnet-5", "claude-opus-4-8", "claude-sonnet-4", "claude-opus-4", "claude-3-7-sonnet"),
        min_tokens=1024,
    ),
    _anthropic(
        "claude-opus-4-7 / haiku-3",
        ("claude-opus-4-7", "claude-mythos-preview", "claude-3-5-haiku", "claude-3-haiku"),
        min_tokens=2048,
    ),
    _anthropic(
        "claude-opus-4-5/4-6 / haiku-4-5", ("claude-opus-4-5", "claude-opus-4-6", "claude-haiku-4-5"), min_tokens=4096
    ),
    # OpenAI: automatic from 1,024 tokens, in 128-token steps before GPT-5.6; writes free before GPT-5.6
    _openai("openai (unlisted model)", (), read=0.5),
    _openai("gpt-4o / o1 / o3-mini", ("gpt-4o", "chatgpt-4o", "o1", "o3-mini"), read=0.5),
    _openai("gpt-4.1 / o3 / o4-mini", ("gpt-4.1", "o3", "o4-mini"), read=0.25),
    _openai("gpt-5", ("gpt-5",), read=0.1),
    _openai("gpt-5.6+", ("gpt-5.6", "gpt-5.7", "gpt-6"), read=0.1, step=1, write=1.25),
    # Gemini: implicit caching on 2.5 and newer models
    _gemini("gemini (unlisted model)", (), min_tokens=2048, read=0.25),
    _gemini("gemini-2.5", ("gemini-2.5",), min_tokens=2048),
    _gemini("gemini-3", ("gemini-3",), min_tokens=4096),
)
"""Every known row; ``price_model_for`` picks one. Anthropic: 512 tokens for the 5-series models, reads at 0.05x on
Opus 5.5 and Sonnet 5.5 (the pricing page's footnote) and 0.025x on Fable and Mythos 5.1. OpenAI: cached input is
half the input price on gpt-4o and o1, a quarter on gpt-4.1, o3 and o4-mini, a tenth on the gpt-5 family; GPT-5.6
and later bill writes at 1.25x. Gemini 2.5 and newer: implicit hits at a tenth."""

GENERIC = PriceModel(
    provider="generic",
    family="any",
    caching=PREFIX,
    read_rate=0.1,
    min_tokens=1024,
    input_includes_cache=True,
    usage_fields="assumed: the input count is the whole prompt, cached tokens included",
    notes="a provider with no row: an automatic prefix cache at 0.1x, as most providers bill",
)
"""The row for a model whose provider has none."""

_PROVIDER_OF_CLASS = (
    ("agno.models.anthropic", "anthropic"),
    ("agno.models.aws.claude", "anthropic"),
    ("agno.models.vertexai.claude", "anthropic"),
    ("agno.models.azure.openai_chat", "openai"),
    ("agno.models.openai.chat", "openai"),
    ("agno.models.openai.responses", "openai"),
    ("agno.models.google", "google"),
)


def provider_of(model: Any) -> str | None:
    """``"anthropic"``, ``"openai"`` or ``"google"`` for an agno model of those providers' classes, else None.

    OpenAI-compatible classes (``OpenAILike``: DeepSeek, Groq, a local server...) are other providers with their
    own prices, except Azure OpenAI, which bills OpenAI's models the same way.
    """
    for klass in type(model).__mro__:
        module = getattr(klass, "__module__", "") or ""
        for prefix, provider in _PROVIDER_OF_CLASS:
            if module == prefix or module.startswith(prefix + "."):
                return provider
        if module == "agno.models.openai.like":
            return None
    return None


def provider_named(name: str | None, model_id: str | None = None) -> str | None:
    """The provider of a stored run, from agno's ``model_provider`` name (``"Anthropic"``, ``"AwsBedrock"``...)
    and its model id."""
    text = f"{name or ''} {model_id or ''}".lower()
    if "anthropic" in text or "claude" in text:
        return "anthropic"
    if "openai" in text or "azure" in text:
        return "openai"
    if "google" in text or "gemini" in text or "vertex" in text:
        return "google"
    return None


def price_model_for(model: Any = None, *, provider: str | None = None, model_id: str | None = None) -> PriceModel:
    """The row for an agno model (its class names the provider, its ``id`` the family), or for ``provider`` and
    ``model_id`` given by name; ``GENERIC`` when nothing matches."""
    provider = provider or (provider_of(model) if model is not None else None)
    model_id = (model_id if model_id is not None else str(getattr(model, "id", "") or "")).lower()
    # AWS and Vertex ids carry a vendor prefix and a version suffix: "anthropic.claude-sonnet-4-5-20250929-v1:0"
    model_id = model_id.split("anthropic.", 1)[-1].split("/")[-1]
    rows = [row for row in PRICE_MODELS if row.provider == provider]
    if not rows:
        return GENERIC
    best = next(row for row in rows if not row.matches)
    length = -1
    for row in rows:
        for prefix in row.matches:
            if _names_family(model_id, prefix) and len(prefix) > length:
                best, length = row, len(prefix)
    return best


def _names_family(model_id: str, prefix: str) -> bool:
    """Whether ``model_id`` is ``prefix`` or continues it past a name boundary: ``claude-opus-4-5-20251101`` and
    ``gpt-5.1`` are of ``claude-opus-4-5`` and ``gpt-5``; ``claude-opus-4-50`` and ``o10`` are not of
    ``claude-opus-4-5`` and ``o1``."""
    return model_id.startswith(prefix) and (len(model_id) == len(prefix) or not model_id[len(prefix)].isalnum())
