"""Token counting that works offline.

``TokenCounter`` counts a prompt (messages plus tool definitions) the way a chat
provider sees it. Exact counts come from tiktoken encodings whose rank files are
found locally (never downloaded during a run); without them a script-aware
estimate is used and one warning names the fallback.

Per-message counts are cached by message id and content, so counting a long
prompt again after one new message costs about one message.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from agno.models.message import Message

from ._exceptions import ConfigError

log = logging.getLogger("agno_compression")

_RANK_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}
# Tokens a chat provider adds around each message (role marker, separators).
MESSAGE_OVERHEAD = 4
PROMPT_OVERHEAD = 3
_encoding_lock = threading.Lock()
_encodings: dict[str, Any] = {}


def encoding_for_model(model: str | None) -> str:
    """The tiktoken encoding name used for ``model`` (o200k for current models)."""
    name = (model or "").lower()
    if any(old in name for old in ("gpt-3.5", "gpt-4-", "gpt-4 ", "text-embedding", "davinci")) or name == "gpt-4":
        return "cl100k_base"
    return "o200k_base"


def _tiktoken_cache_dir() -> Path:
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if os.environ.get(var):
            return Path(os.environ[var])
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def _packaged_rank_file(name: str) -> Path | None:
    """A rank file shipped by the ``bpe-openai`` wheel, found without importing it."""
    try:
        files = metadata.files("bpe-openai") or []
    except metadata.PackageNotFoundError:
        return None
    for entry in files:
        if entry.name == f"{name}.tiktoken.gz":
            return Path(str(entry.locate()))
    return None


def _read_rank_bytes(name: str, rank_files_dir: Path | None) -> bytes | None:
    candidates: list[Path] = []
    if rank_files_dir is not None:
        candidates += [rank_files_dir / f"{name}.tiktoken", rank_files_dir / f"{name}.tiktoken.gz"]
    candidates.append(_tiktoken_cache_dir() / hashlib.sha1(_RANK_URLS[name].encode()).hexdigest())
    packaged = _packaged_rank_file(name)
    if packaged is not None:
        candidates.append(packaged)
    for path in candidates:
        if path.is_file():
            data = path.read_bytes()
            return gzip.decompress(data) if path.suffix == ".gz" else data
    return None


def load_encoding(name: str, rank_files_dir: str | os.PathLike[str] | None = None) -> Any:
    """Load a tiktoken encoding from local rank files only; raise ``LookupError`` if none is found.

    Looks in ``rank_files_dir``, tiktoken's own cache directory and the ``bpe-openai``
    package, checks the file against tiktoken's expected hash, and never touches the network.
    """
    if name not in _RANK_URLS:
        raise ConfigError(f"unknown encoding {name!r}; expected one of {sorted(_RANK_URLS)}")
    key = f"{name}:{rank_files_dir}"
    with _encoding_lock:
        if key in _encodings:
            return _encodings[key]
        import tiktoken
        import tiktoken.load
        import tiktoken_ext.openai_public as public

        data = _read_rank_bytes(name, Path(rank_files_dir) if rank_files_dir else None)
        if data is None:
            raise LookupError(f"no local rank file for {name}")
        # tiktoken's constructors read rank files through load_tiktoken_bpe(url, hash); we
        # hand it a private cache holding the verified bytes so no download can happen.
        with tempfile.TemporaryDirectory(prefix="agno-compression-tiktoken-") as tmp:
            Path(tmp, hashlib.sha1(_RANK_URLS[name].encode()).hexdigest()).write_bytes(data)
            previous = os.environ.get("TIKTOKEN_CACHE_DIR")
            os.environ["TIKTOKEN_CACHE_DIR"] = tmp
            try:
                spec = getattr(public, name)()
            finally:
                if previous is None:
                    os.environ.pop("TIKTOKEN_CACHE_DIR", None)
                else:
                    os.environ["TIKTOKEN_CACHE_DIR"] = previous
        encoding = tiktoken.Encoding(**spec)
        _encodings[key] = encoding
        return encoding


@runtime_checkable
class TextCounter(Protocol):
    """Counts the tokens of one string."""

    name: str

    def count(self, text: str) -> int: ...


@dataclass
class TiktokenBackend:
    """Exact counts with a tiktoken encoding loaded from local files."""

    encoding: str = "o200k_base"
    rank_files_dir: str | None = None
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self._enc = load_encoding(self.encoding, self.rank_files_dir)
        self.name = f"tiktoken:{self.encoding}"

    def count(self, text: str) -> int:
        return len(self._enc.encode(text, disallowed_special=()))


@dataclass
class EstimateBackend:
    """A character-class estimate: no files, no network."""

    name: str = "estimate"

    def count(self, text: str) -> int:
        if not text:
            return 0
        ascii_chars = sum(1 for ch in text if ord(ch) < 128)
        other = len(text) - ascii_chars
        # ASCII text averages ~4 chars per o200k token; most other scripts ~1.5.
        return max(1, round(ascii_chars / 4 + other / 1.5))


def _default_backend(model: str | None, rank_files_dir: str | None) -> TextCounter:
    encoding = encoding_for_model(model)
    try:
        return TiktokenBackend(encoding=encoding, rank_files_dir=rank_files_dir)
    except Exception as exc:
        log.warning("agno-compression: tiktoken %s unavailable offline (%s); falling back to estimate", encoding, exc)
        return EstimateBackend()


def message_text(message: Message, *, use_compressed_content: bool = True) -> str:
    """The text of ``message`` as a provider would receive it (tool results may be compressed)."""
    content: Any
    if use_compressed_content and message.role == "tool" and message.compressed_content is not None:
        content = message.compressed_content
    else:
        content = message.content
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    elif isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                parts.append(str(part.get("text", "")) if part.get("type", "text") == "text" else "")
            else:
                parts.append(str(part))
        text = "\n".join(p for p in parts if p)
    else:
        text = json.dumps(content, default=str) if isinstance(content, dict) else str(content)
    if message.tool_calls:
        calls = []
        for call in message.tool_calls:
            fn = call.get("function", call) if isinstance(call, dict) else {}
            calls.append(f"{fn.get('name', '')}({fn.get('arguments', '')})")
        text = f"{text}\n" + "\n".join(calls) if text else "\n".join(calls)
    return text


class TokenCounter:
    """Counts prompts for one model family, caching each message's count.

    ``backend`` overrides the automatic choice (tiktoken o200k/cl100k by model name, else
    an estimate). Counting never raises: a failing backend falls back to the estimate with
    one warning.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        backend: TextCounter | None = None,
        rank_files_dir: str | None = None,
        cache_size: int = 50_000,
    ) -> None:
        if cache_size < 0:
            raise ConfigError(f"cache_size must be >= 0, got {cache_size!r}")
        self.model = model
        self._backend: TextCounter | None = backend
        self._rank_files_dir = rank_files_dir
        self._cache: OrderedDict[tuple[Any, ...], int] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    @property
    def backend(self) -> TextCounter:
        if self._backend is None:
            self._backend = _default_backend(self.model, self._rank_files_dir)
        return self._backend

    def count_text(self, text: str) -> int:
        try:
            return self.backend.count(text)
        except Exception as exc:
            log.warning("agno-compression: token backend %s failed (%s); using estimate", self.backend.name, exc)
            self._backend = EstimateBackend()
            return self._backend.count(text)

    def count_message(self, message: Message) -> int:
        text = message_text(message)
        key = (message.id, message.role, hash(text))
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
        value = self.count_text(text) + MESSAGE_OVERHEAD
        with self._lock:
            self._cache[key] = value
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return value

    def count_messages(self, messages: Iterable[Message]) -> int:
        return sum(self.count_message(m) for m in messages) + PROMPT_OVERHEAD

    def count_tools(self, tools: Sequence[Any] | None) -> int:
        if not tools:
            return 0
        total = 0
        for tool in tools:
            # agno sends a Function as {"type": "function", "function": <its dict>}; count that shape.
            schema = {"type": "function", "function": tool.to_dict()} if hasattr(tool, "to_dict") else tool
            text = json.dumps(schema, sort_keys=True, default=str)
            key = ("tool", hash(text))
            with self._lock:
                cached = self._cache.get(key)
            if cached is None:
                cached = self.count_text(text)
                with self._lock:
                    self._cache[key] = cached
            total += cached
        return total

    def count_prompt(self, messages: Iterable[Message], tools: Sequence[Any] | None = None) -> int:
        """Tokens of a whole request: messages with their overheads plus tool definitions."""
        return self.count_messages(messages) + self.count_tools(tools)


def count_tokens(text_or_messages: str | Message | Iterable[Message], model: str | None = None) -> int:
    """Count the tokens of a string, a message or a list of messages for ``model`` (default o200k)."""
    counter = _shared_counter(model)
    if isinstance(text_or_messages, str):
        return counter.count_text(text_or_messages)
    if isinstance(text_or_messages, Message):
        return counter.count_message(text_or_messages)
    return counter.count_messages(list(text_or_messages))


_shared: dict[str, TokenCounter] = {}


def _shared_counter(model: str | None) -> TokenCounter:
    key = encoding_for_model(model)
    if key not in _shared:
        _shared[key] = TokenCounter(model)
    return _shared[key]
