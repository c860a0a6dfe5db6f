"""Token counting that works offline.

``TokenCounter`` counts a prompt (messages plus tool definitions) the way a chat
provider sees it, with a backend chosen per model and overridable:

* ``TiktokenBackend``: exact o200k/cl100k counts, rank files read from local files only
  (a configured directory, tiktoken's cache, or the ``bpe-openai`` wheel); never downloads.
* ``HFTokenizerBackend``: a Hugging Face ``tokenizer.json`` (needs the ``tokenizers`` package).
* ``GeminiCountBackend``: Gemini's own ``countTokens`` through ``google-genai``; a network
  call, so only used when passed explicitly; results are cached by text hash.
* ``EstimateBackend``: a script-aware estimate (no files, no network) used when nothing
  exact is available. ``TokenCounter.calibrate`` corrects it from provider-reported usage.

Any object with a ``name`` and a ``count(text)`` method (``TextCounter``) can be a backend.
Counting never raises: a failing backend falls back to the estimate with one warning.
Per-message counts are cached by message id and content, so counting a long prompt
again after one new message costs about one message.
"""

from ._backends import EstimateBackend, GeminiCountBackend, HFTokenizerBackend, TextCounter, TiktokenBackend
from ._counter import TokenCounter, count_tokens, encoding_for_model
from ._estimate import estimate_tokens
from ._ranks import load_encoding

__all__ = [
    "EstimateBackend",
    "GeminiCountBackend",
    "HFTokenizerBackend",
    "TextCounter",
    "TiktokenBackend",
    "TokenCounter",
    "count_tokens",
    "encoding_for_model",
    "estimate_tokens",
    "load_encoding",
]
