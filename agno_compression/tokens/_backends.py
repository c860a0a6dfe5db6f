"""Token backends: each counts the tokens of one string its own way.

``TiktokenBackend`` (exact o200k/cl100k from local rank files; ``fast=True``: counted by ``bpe-openai``'s
Rust counter), ``HFTokenizerBackend`` (a Hugging
Face ``tokenizer.json``), ``GeminiCountBackend`` (Gemini's own count, a network call) and
``EstimateBackend`` (the fitted estimate); ``TextCounter`` is the protocol they share.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .._exceptions import ConfigError, TokenCountError
from ._estimate import estimate_tokens
from ._ranks import load_encoding

log = logging.getLogger("agno_compression")

_PROBE = "def f(x):\n    return x  # ünïcödé, 日本語, emoji 🙂, numbers 1234567 and   spaces\n"
"""A text whose count must agree between tiktoken and the Rust counter before the Rust counter is used."""


@runtime_checkable
class TextCounter(Protocol):
    """Counts the tokens of one string.

    A backend may also set ``exact = True`` when its counts are the provider's own; backends
    without that attribute are treated as estimates, which ``TokenCounter.calibrate`` corrects.
    """

    name: str

    def count(self, text: str) -> int: ...


@dataclass
class TiktokenBackend:
    """Exact counts with a tiktoken encoding loaded from local files (raises ``LookupError`` if none).

    With ``fast=True`` it counts with ``bpe-openai``'s Rust counter for the same encoding (a dependency; the rank
    files are checked to be the published ones, so the counts are the same): 1.6x faster on o200k, 2.5x on cl100k,
    never quadratic on long runs of one character. It is opt-in because that counter holds the GIL, which
    tiktoken releases: in a run whose model answers instantly, the thread that writes fold records then waits
    until the run ends. An encoding it lacks or a disagreement on a probe text keeps tiktoken; text it cannot
    take (lone surrogates) goes to tiktoken too.
    """

    encoding: str = "o200k_base"
    rank_files_dir: str | None = None
    _: KW_ONLY
    allow_packaged: bool = True
    exact: bool = True
    """False when the encoding only stands in for another provider's tokenizer."""
    fast: bool = False
    """Count with ``bpe-openai``'s Rust counter when it agrees with tiktoken (same counts, less time, GIL held)."""
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self._enc = load_encoding(self.encoding, self.rank_files_dir, allow_packaged=self.allow_packaged)
        self.name = f"tiktoken:{self.encoding}"
        self._fast = self._rust_count() if self.fast else None

    def _rust_count(self) -> Callable[[str], int] | None:
        """``bpe-openai``'s ``count`` for this encoding, or ``None`` when it is missing or disagrees with tiktoken."""
        try:
            from bpe_openai._bindings import supported_encodings, tokenizer_for_encoding

            if self.encoding not in supported_encodings():
                return None
            count: Callable[[str], int] = tokenizer_for_encoding(self.encoding).count
            agrees = count(_PROBE) == len(self._enc.encode_ordinary(_PROBE))
        except Exception as exc:  # an optional speed-up: tiktoken alone still counts exactly
            log.debug("agno-compression: bpe-openai's counter unavailable for %s: %s", self.encoding, exc)
            return None
        if not agrees:
            log.warning("agno-compression: bpe-openai disagrees with tiktoken on %s; tiktoken counts", self.encoding)
            return None
        return count

    def count(self, text: str) -> int:
        if self._fast is not None:
            try:
                return self._fast(text)
            except UnicodeEncodeError:  # lone surrogates: tiktoken takes them
                pass
        return len(self._enc.encode_ordinary(text))


@dataclass
class EstimateBackend:
    """A script-aware estimate fitted against o200k: no files, no network (see ``estimate_tokens``)."""

    name: str = "estimate"
    exact: bool = field(default=False, init=False)

    def count(self, text: str) -> int:
        return estimate_tokens(text)


@dataclass
class HFTokenizerBackend:
    """Exact counts with a Hugging Face ``tokenizer.json`` (needs the ``tokenizers`` package)."""

    path: str | os.PathLike[str]
    _: KW_ONLY
    add_special_tokens: bool = False
    exact: bool = True
    name: str = field(init=False)

    def __post_init__(self) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ConfigError(
                "HFTokenizerBackend needs the 'tokenizers' package: pip install tokenizers "
                "(or pip install 'agno[tokenizers]')"
            ) from exc
        path = Path(self.path)
        if not path.is_file():
            raise ConfigError(f"tokenizer file not found: {path}")
        try:
            self._tokenizer = Tokenizer.from_file(str(path))
        except Exception as exc:
            raise ConfigError(f"cannot load tokenizer file {path}: {exc}") from exc
        self.name = f"hf:{path.parent.name}/{path.name}" if path.parent.name else f"hf:{path.name}"

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=self.add_special_tokens).ids)


@dataclass
class GeminiCountBackend:
    """Gemini's own count (``models.count_tokens`` of a ``google.genai.Client``), cached by text hash.

    Every uncached text is one network call, so this backend is never chosen automatically.
    """

    client: Any
    model: str
    _: KW_ONLY
    cache_size: int = 10_000
    exact: bool = True
    name: str = field(init=False)

    def __post_init__(self) -> None:
        if not hasattr(getattr(self.client, "models", None), "count_tokens"):
            raise ConfigError("GeminiCountBackend needs a google.genai.Client (with .models.count_tokens)")
        if not self.model:
            raise ConfigError("GeminiCountBackend needs a model name")
        if self.cache_size < 0:
            raise ConfigError(f"cache_size must be >= 0, got {self.cache_size!r}")
        self.name = f"gemini:{self.model}"
        self._cache: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        if not text:
            return 0
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        response = self.client.models.count_tokens(model=self.model, contents=text)
        total = getattr(response, "total_tokens", None)
        if total is None:
            raise TokenCountError(f"Gemini countTokens for {self.model} returned no total_tokens")
        with self._lock:
            self._cache[key] = int(total)
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return int(total)
