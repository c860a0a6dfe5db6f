"""What a provider bills for a prompt, prompt cache included.

* ``PriceModel`` and the dated table ``PRICE_MODELS`` (one row per provider and model family, each citing the
  provider's page), ``price_model_for(model)`` to pick the row of an agno model; ``GENERIC`` for any other.
* ``PromptCache``: the provider's cache as documented (Anthropic's breakpoints with their lookback, OpenAI's and
  Gemini's automatic prefix cache), billing one request after another as ``CacheUsage``.
* ``anthropic_blocks`` / ``openai_blocks``: a request body as the cache sees it.

``CompressionManager`` uses the row of the agent's model to decide when an early fold pays and where cache
breakpoints go; ``agno-compression eval``, the session page and the bench turn tokens into billed cost with it.
"""

from ._bodies import anthropic_blocks, openai_blocks, ttl_of
from ._cache import LONG, SHORT, Block, CacheError, CacheUsage, PromptCache, chain, reported_usage
from ._table import (
    BREAKPOINTS,
    GENERIC,
    NONE,
    PREFIX,
    PRICE_MODELS,
    PriceModel,
    price_model_for,
    provider_named,
    provider_of,
)

__all__ = [
    "BREAKPOINTS",
    "GENERIC",
    "LONG",
    "NONE",
    "PREFIX",
    "PRICE_MODELS",
    "SHORT",
    "Block",
    "CacheError",
    "CacheUsage",
    "PriceModel",
    "PromptCache",
    "anthropic_blocks",
    "chain",
    "openai_blocks",
    "price_model_for",
    "provider_named",
    "provider_of",
    "reported_usage",
    "ttl_of",
]
