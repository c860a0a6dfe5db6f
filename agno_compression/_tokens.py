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

Counting never raises: a failing backend falls back to the estimate with one warning.
Per-message counts are cached by message id and content, so counting a long prompt
again after one new message costs about one message.

How the estimate was fitted: text is split into chunks with a ``re`` approximation of
o200k's pre-tokenizer (words with an optional leading space or punctuation, 1-3 digit
groups, punctuation runs, newline and space runs). Each chunk gets a class (the script of
its first letter, whether it follows a space, digits, ASCII punctuation, CJK punctuation,
other symbols, whitespace) and costs ``per_chunk + chars / chars_per_token`` tokens. The two
numbers per class were fitted by weighted least squares on single chunks against o200k,
over Python's reference documentation and standard library, tau-bench tool JSON, gettext
catalogs and vim tutorials in 25 languages, and hand-written prose in English, Chinese,
Japanese, Russian and Arabic. The accuracy samples in the tests were not used for fitting.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import math
import os
import re
import tempfile
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from agno.models.message import Message

from ._exceptions import ConfigError, TokenCountError

__all__ = [
    "MESSAGE_OVERHEAD",
    "NAME_OVERHEAD",
    "PROMPT_OVERHEAD",
    "TOOL_CALL_OVERHEAD",
    "TOOL_RESULT_OVERHEAD",
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
    "message_text",
    "render_tools",
]

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
IMAGE_TOKENS = 765
"""An image at ``auto``/``high`` detail whose size is unknown (1024x1024: 85 + 4 tiles x 170)."""
IMAGE_TOKENS_LOW = 85
"""An image at ``low`` detail."""
AUDIO_TOKENS_PER_SECOND = 25
_SEEN_LIMIT = 4096
"""Message objects remembered by identity per counter (they and their contents stay alive until evicted)."""
_TOOLS_HEADER = "# Tools\n\n## functions\n\nnamespace functions {\n\n"
_TOOLS_FOOTER = "} // namespace functions"


# --- rank files: local only ----------------------------------------------------------------
@dataclass(frozen=True)
class _RankFile:
    url: str
    sha256: str


_RANK_FILES = {
    "o200k_base": _RankFile(
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": _RankFile(
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}
_encoding_lock = threading.Lock()
_encodings: dict[tuple[str, str | None, bool, str], Any] = {}


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


def _tiktoken_cache_dir() -> Path | None:
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            return Path(os.environ[var]) if os.environ[var] else None
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


def _rank_candidates(name: str, rank_files_dir: Path | None, allow_packaged: bool) -> list[Path]:
    """Where a rank file for ``name`` may be, in the order they are tried."""
    candidates: list[Path] = []
    if rank_files_dir is not None:
        candidates += [rank_files_dir / f"{name}.tiktoken", rank_files_dir / f"{name}.tiktoken.gz"]
    cache_dir = _tiktoken_cache_dir()
    if cache_dir is not None:
        candidates.append(cache_dir / hashlib.sha1(_RANK_FILES[name].url.encode()).hexdigest())
    if allow_packaged:
        packaged = _packaged_rank_file(name)
        if packaged is not None:
            candidates.append(packaged)
    return candidates


def _read_rank_bytes(name: str, rank_files_dir: Path | None, allow_packaged: bool = True) -> bytes | None:
    """The first local rank file for ``name`` whose sha256 is the published one."""
    for path in _rank_candidates(name, rank_files_dir, allow_packaged):
        if not path.is_file():
            continue
        try:
            data = path.read_bytes()
            if path.suffix == ".gz":
                data = gzip.decompress(data)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            log.debug("agno-compression: cannot read rank file %s: %s", path, exc)
            continue
        if hashlib.sha256(data).hexdigest() == _RANK_FILES[name].sha256:
            return data
        log.debug("agno-compression: rank file %s does not match the published hash; skipped", path)
    return None


def load_encoding(
    name: str, rank_files_dir: str | os.PathLike[str] | None = None, *, allow_packaged: bool = True
) -> Any:
    """Load a tiktoken encoding from local rank files only; raise ``LookupError`` if none is found.

    Looks in ``rank_files_dir`` (``<name>.tiktoken`` or ``<name>.tiktoken.gz``), tiktoken's own
    cache directory and, if ``allow_packaged``, the ``bpe-openai`` package. A file is used only
    if its sha256 is the published one, so tiktoken never has a reason to download.
    """
    if name not in _RANK_FILES:
        raise ConfigError(f"unknown encoding {name!r}; expected one of {sorted(_RANK_FILES)}")
    directory = Path(rank_files_dir) if rank_files_dir else None
    key = (name, str(directory) if directory else None, allow_packaged, str(_tiktoken_cache_dir()))
    with _encoding_lock:
        if key in _encodings:
            return _encodings[key]
        data = _read_rank_bytes(name, directory, allow_packaged)
        if data is None:
            raise LookupError(f"no local rank file for {name}")
        encoding = _encoding_from_verified_bytes(name, data)
        _encodings[key] = encoding
        return encoding


def _encoding_from_verified_bytes(name: str, data: bytes) -> Any:
    """Build tiktoken's official encoding ``name`` from rank bytes already checked against the hash.

    tiktoken's constructors read rank files through ``load_tiktoken_bpe(url, hash)``; they get a
    private cache directory holding the verified bytes, so the read succeeds without a download.
    """
    import tiktoken
    import tiktoken_ext.openai_public as public

    with tempfile.TemporaryDirectory(prefix="agno-compression-tiktoken-") as tmp:
        Path(tmp, hashlib.sha1(_RANK_FILES[name].url.encode()).hexdigest()).write_bytes(data)
        previous = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = tmp
        try:
            spec = getattr(public, name)()
        finally:
            if previous is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = previous
    return tiktoken.Encoding(**spec)


# --- backends ------------------------------------------------------------------------------
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
    """Exact counts with a tiktoken encoding loaded from local files (raises ``LookupError`` if none)."""

    encoding: str = "o200k_base"
    rank_files_dir: str | None = None
    _: KW_ONLY
    allow_packaged: bool = True
    exact: bool = True
    """False when the encoding only stands in for another provider's tokenizer."""
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self._enc = load_encoding(self.encoding, self.rank_files_dir, allow_packaged=self.allow_packaged)
        self.name = f"tiktoken:{self.encoding}"

    def count(self, text: str) -> int:
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


# --- the script-aware estimate ---------------------------------------------------------------
@dataclass(frozen=True)
class _ClassCost:
    """Tokens for one chunk of a class: ``per_chunk + chars / chars_per_token + extra / extra_per_token``."""

    per_chunk: float
    chars_per_token: float
    extra_per_token: float = math.inf


# Fitted against o200k (see the module docstring). "_sp": the word follows a space.
# "cjk" chunks count Han characters as chars and kana as extra; "symbol" chunks count
# astral-plane characters (emoji) as extra.
_COSTS: dict[str, _ClassCost] = {
    "latin": _ClassCost(0.9795, 14.63),
    "latin_sp": _ClassCost(0.9056, 26.37),
    "latin_ext": _ClassCost(0.0, 1.839),
    "latin_ext_sp": _ClassCost(0.842, 7.134),
    "greek": _ClassCost(0.6276, 2.183),
    "greek_sp": _ClassCost(0.1865, 2.649),
    "cyrillic": _ClassCost(0.9177, 3.414),
    "cyrillic_sp": _ClassCost(0.5966, 4.572),
    "hebrew": _ClassCost(0.8627, 2.54),
    "hebrew_sp": _ClassCost(0.2788, 2.378),
    "arabic": _ClassCost(0.4848, 2.496),
    "arabic_sp": _ClassCost(0.1451, 2.966),
    "devanagari": _ClassCost(0.5213, 2.286),
    "devanagari_sp": _ClassCost(0.2491, 3.08),
    "indic": _ClassCost(1.074, 2.186),
    "indic_sp": _ClassCost(0.4858, 2.497),
    "thai": _ClassCost(1.328, 2.552),
    "thai_sp": _ClassCost(0.4805, 2.531),
    "hangul": _ClassCost(0.6578, 1.394),
    "hangul_sp": _ClassCost(0.5971, 1.984),
    "other": _ClassCost(3.521, 3.283),
    "other_sp": _ClassCost(2.144, 7.587),
    "cjk": _ClassCost(0.7467, 1.226, 1.213),
    "digit": _ClassCost(1.005, math.inf),
    "punct": _ClassCost(0.883, 13.12),
    "cjk_punct": _ClassCost(0.9931, 153.4),
    "symbol": _ClassCost(0.6881, 2.492, 0.7501),
    "space": _ClassCost(1.0, math.inf),
    "newline": _ClassCost(0.9906, 113.1),
    "run": _ClassCost(0.0, 1.0),
}
_RATES: dict[str, tuple[float, float, float]] = {
    key: (cost.per_chunk, 1.0 / cost.chars_per_token, 1.0 / cost.extra_per_token) for key, cost in _COSTS.items()
}
_LOWER = r"[^\W\d_A-Z]"
_CHUNK_RE = re.compile(
    r"(?P<word>(?:[^\r\n\w]|_)?(?:[A-Z]*" + _LOWER + r"+|[A-Z]+" + _LOWER + r"*)"
    r"(?:'(?:[sdmtSDMT]|ll|ve|re|LL|VE|RE))?)"
    r"|(?P<digit>\d{1,3})"
    r"|(?P<punct> ?(?:[^\s\w]|_)+[\r\n/]*)"
    r"|(?P<newline>\s*[\r\n]+)"
    r"|(?P<space>\s+(?!\S)|\s+)"
)
_KANA_RE = re.compile("[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")
_ASTRAL_RE = re.compile("[\U00010000-\U0010ffff]")
# Script of a letter by code point: (first, end, script), checked in order.
_SCRIPT_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0000, 0x0080, "latin"),
    (0x0080, 0x0370, "latin_ext"),
    (0x1E00, 0x1F00, "latin_ext"),
    (0x0370, 0x0400, "greek"),
    (0x1F00, 0x2000, "greek"),
    (0x0400, 0x0530, "cyrillic"),
    (0x0590, 0x0600, "hebrew"),
    (0x0600, 0x0900, "arabic"),
    (0xFB50, 0xFE00, "arabic"),
    (0xFE70, 0xFF00, "arabic"),
    (0x0900, 0x0980, "devanagari"),
    (0x0980, 0x0E00, "indic"),
    (0x0E00, 0x0E80, "thai"),
    (0x1100, 0x1200, "hangul"),
    (0x3130, 0x3190, "hangul"),
    (0xAC00, 0xD7B0, "hangul"),
    (0x3040, 0x3100, "cjk"),
    (0x31F0, 0x3200, "cjk"),
    (0x3400, 0xA000, "cjk"),
    (0xF900, 0xFB00, "cjk"),
    (0xFF66, 0xFFA0, "cjk"),
    (0x20000, 0x40000, "cjk"),
)
_script_cache: dict[str, str] = {}


def _mark_folding_table() -> dict[int, str]:
    """Combining marks mapped to a letter of their own block.

    o200k counts marks as part of a word; Python's ``re`` does not, so without folding an Arabic
    word with a vowel sign or a Devanagari word would be split into several chunks.
    """
    table: dict[int, str] = {}
    for block in range(0x300, 0x3100, 0x80):
        letters = [chr(cp) for cp in range(block, block + 0x80) if chr(cp).isalpha()]
        stand_in = "a" if block < 0x370 or not letters else letters[0]
        for cp in range(block, block + 0x80):
            if unicodedata.category(chr(cp)).startswith("M"):
                table[cp] = stand_in
    table.update({cp: "a" for cp in range(0xFE20, 0xFE30)})
    return table


_FOLD = _mark_folding_table()


def _script(letter: str) -> str:
    """The script class of one letter."""
    script = _script_cache.get(letter)
    if script is None:
        code = ord(letter)
        script = next((name for first, end, name in _SCRIPT_RANGES if first <= code < end), "other")
        if len(_script_cache) < 100_000:
            _script_cache[letter] = script
    return script


def _word_terms(chunk: str) -> tuple[str, int, int]:
    """Class, chars and extra of a word chunk (an optional leading non-letter, then letters)."""
    first = chunk[0]
    start = 1 if first == "_" or not first.isalnum() else 0
    script = _script(chunk[start])
    size = len(chunk) - start
    if script == "cjk":
        kana = len(_KANA_RE.findall(chunk))
        return "cjk", size - kana, kana
    if script == "latin" and not chunk.isascii() and not chunk[start:].isascii():
        script = "latin_ext"
    return (script + "_sp" if start and chunk[0] == " " else script), size, 0


def _run_tokens(chunk: str) -> int | None:
    """Tokens of a run of one repeated character (``=====``, spaces, box drawing), else ``None``.

    o200k packs up to 128 spaces, 64 ASCII punctuation marks or 16 newlines, tabs or
    box-drawing characters into one token, far more than the per-class ratios assume.
    """
    core = chunk.strip(" \r\n") or chunk
    if len(core) < 8 or core.count(core[0]) != len(core):
        return None
    char = core[0]
    if char == " ":
        per_token = 128
    elif char.isascii():
        per_token = 16 if char.isspace() else 64
    elif 0x2500 <= ord(char) < 0x2580:
        per_token = 16
    else:
        return None
    return math.ceil(len(core) / per_token)


def _chunk_terms(kind: str | None, chunk: str) -> tuple[str, int, int]:
    """The cost class of one chunk and the sizes its cost depends on."""
    if kind == "word":
        return _word_terms(chunk)
    if kind == "digit":
        return "digit", len(chunk), 0
    size = len(chunk)
    run = _run_tokens(chunk) if size >= 8 else None
    if run is not None:
        return "run", run, 0
    if kind == "punct":
        if chunk.isascii():
            return "punct", size, 0
        first = ord(chunk.lstrip()[0])
        if 0x3000 <= first < 0x3040 or 0xFF00 <= first < 0xFFF0:
            return "cjk_punct", size, 0
        astral = len(_ASTRAL_RE.findall(chunk))
        return "symbol", size - astral, astral
    return ("newline" if kind == "newline" else "space"), size, 0


def _chunks(text: str) -> Iterable[tuple[str, int, int]]:
    """The cost terms of every chunk of ``text``."""
    for match in _CHUNK_RE.finditer(text.translate(_FOLD)):
        yield _chunk_terms(match.lastgroup, match.group())


def estimate_tokens(text: str) -> int:
    """Estimate o200k tokens of ``text`` from its chunks and their script classes (never raises)."""
    if not text:
        return 0
    total = 0.0
    rates = _RATES
    for key, size, extra in _chunks(text):
        per_chunk, per_char, per_extra = rates[key]
        total += per_chunk + size * per_char + (extra * per_extra if extra else 0.0)
    return max(1, round(total))


# --- what a provider sees of a message ---------------------------------------------------
def _content_text(message: Message, use_compressed_content: bool) -> str:
    """The text content of ``message`` (tool results may be compressed)."""
    content: Any
    if use_compressed_content and message.role == "tool" and message.compressed_content is not None:
        content = message.compressed_content
    else:
        content = message.content
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                parts.append(str(part.get("text", "")) if part.get("type", "text") == "text" else "")
            else:
                parts.append(str(part))
        return "\n".join(p for p in parts if p)
    return json.dumps(content, default=str) if isinstance(content, dict) else str(content)


def _tool_calls(message: Message) -> list[tuple[str, str]]:
    """``(name, arguments)`` of each tool call in ``message``, arguments as JSON text."""
    calls = []
    for call in message.tool_calls or []:
        fn = call.get("function", call) if isinstance(call, dict) else {}
        arguments = fn.get("arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False, default=str)
        calls.append((str(fn.get("name", "") or ""), arguments))
    return calls


def message_text(message: Message, use_compressed_content: bool = True) -> str:
    """The text of ``message`` as a provider would receive it (tool results may be compressed).

    Tool calls are appended as ``name(arguments)`` lines.
    """
    text = _content_text(message, use_compressed_content)
    calls = "\n".join(f"{name}({arguments})" for name, arguments in _tool_calls(message))
    if calls:
        return f"{text}\n{calls}" if text else calls
    return text


def _media_tokens(message: Message) -> int:
    """Tokens for images, audio and video attached to ``message`` (no file or network access)."""
    total = 0
    for image in message.images or []:
        total += IMAGE_TOKENS_LOW if getattr(image, "detail", None) == "low" else IMAGE_TOKENS
    if isinstance(message.content, list):
        for part in message.content:
            if isinstance(part, dict) and part.get("type") in ("image_url", "input_image", "image"):
                detail = part.get("image_url", {}).get("detail") if isinstance(part.get("image_url"), dict) else None
                total += IMAGE_TOKENS_LOW if (detail or part.get("detail")) == "low" else IMAGE_TOKENS
    for audio in message.audio or []:
        total += int((getattr(audio, "duration", None) or 0) * AUDIO_TOKENS_PER_SECOND)
    for video in message.videos or []:
        frames = max(1, int((getattr(video, "duration", None) or 0) * (getattr(video, "fps", None) or 1.0)))
        total += frames * IMAGE_TOKENS if getattr(video, "duration", None) else 0
    return total


def _stable_hash(value: Any) -> int:
    """A hash of any JSON-like value (strings hash directly; Python caches their hash)."""
    if value is None or isinstance(value, str):
        return hash(value)
    return hash(json.dumps(value, sort_keys=True, default=str))


def _call_key(call: Any) -> Hashable:
    """Cache key of one tool call: its name and arguments (strings hash once, then Python caches it)."""
    fn = call.get("function", call) if isinstance(call, dict) else None
    if not isinstance(fn, dict):
        return hash(str(call))
    arguments = fn.get("arguments")
    return (fn.get("name"), arguments if arguments is None or isinstance(arguments, str) else _stable_hash(arguments))


def _message_key(message: Message) -> Hashable:
    """Cache key of a message: its id plus everything that changes what the provider sees.

    Strings enter as their hash, which Python computes once per string object, so the key of
    a message already seen costs about a microsecond however long its content is.
    """
    content = message.content
    role = message.role
    calls = message.tool_calls
    media = None
    if message.images or message.audio or message.videos:
        media = (len(message.images or ()), len(message.audio or ()), len(message.videos or ()))
    return (
        message.id,
        role,
        message.name,
        hash(content) if content is None or isinstance(content, str) else _stable_hash(content),
        hash(message.compressed_content) if role == "tool" else None,
        tuple(_call_key(c) for c in calls) if calls else None,
        media,
    )


# --- tool definitions ----------------------------------------------------------------------
def _tool_schema(tool: Any) -> dict[str, Any]:
    """The function schema of an agno ``Function``, a ``{"type": "function", ...}`` dict or a plain dict."""
    schema = tool.to_dict() if hasattr(tool, "to_dict") else tool
    if not isinstance(schema, dict):
        return {"name": str(schema)}
    inner = schema.get("function")
    return inner if isinstance(inner, dict) else schema


def _render_type(schema: dict[str, Any], indent: int) -> str:
    """A JSON-schema type in the TypeScript-like form OpenAI shows the model."""
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        return " | ".join(_render_type({**schema, "type": k}, indent) for k in kind)
    if "enum" in schema:
        return " | ".join(json.dumps(item, ensure_ascii=False) for item in schema["enum"])
    if kind == "array":
        return f"{_render_type(schema.get('items') or {}, indent)}[]"
    if kind == "object" and schema.get("properties"):
        return "{\n" + _render_properties(schema, indent + 2) + "\n" + " " * indent + "}"
    for options in ("anyOf", "oneOf"):
        if options in schema:
            return " | ".join(_render_type(option, indent) for option in schema[options])
    return {"integer": "number", "object": "object"}.get(str(kind), str(kind))


def _render_properties(schema: dict[str, Any], indent: int) -> str:
    """The properties of an object schema, one ``name?: type,`` line each with its description."""
    required = set(schema.get("required") or ())
    lines = []
    for key, prop in (schema.get("properties") or {}).items():
        prop = prop if isinstance(prop, dict) else {}
        if prop.get("description"):
            lines.append(f"// {prop['description']}")
        optional = "" if key in required else "?"
        lines.append(f"{key}{optional}: {_render_type(prop, indent)},")
    return "\n".join(" " * indent + line for line in lines)


def _render_function(schema: dict[str, Any]) -> str:
    """One tool as OpenAI renders it for the model (a ``type name = (_: {...}) => any;`` block)."""
    lines = []
    if schema.get("description"):
        lines.append(f"// {schema['description']}")
    parameters = schema.get("parameters") or {}
    if parameters.get("properties"):
        lines += [f"type {schema.get('name', '')} = (_: {{", _render_properties(parameters, 0), "}) => any;"]
    else:
        lines.append(f"type {schema.get('name', '')} = () => any;")
    return "\n".join(lines) + "\n\n"


def render_tools(tools: Sequence[Any] | None) -> str:
    """Tool definitions as the text OpenAI puts in front of the conversation (empty without tools)."""
    if not tools:
        return ""
    return _TOOLS_HEADER + "".join(_render_function(_tool_schema(t)) for t in tools) + _TOOLS_FOOTER


def _schema_text(output_schema: Any) -> str:
    """A response format (JSON-schema dict or pydantic model class) as JSON text."""
    if output_schema is None:
        return ""
    schema = output_schema
    if isinstance(output_schema, type) and hasattr(output_schema, "model_json_schema"):
        schema = output_schema.model_json_schema()
    return json.dumps(schema, default=str)


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
        cache_size: int = 50_000,
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
        self._cache: OrderedDict[Hashable, int] = OrderedDict()
        self._cache_size = cache_size
        self._tool_memo: dict[int, tuple[Any, Hashable, dict[str, Any]]] = {}
        self._seen: dict[int, tuple[Any, ...]] = {}
        self._last_tools: tuple[tuple[Any, ...], int] | None = None
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
        """The factor applied to counts of a non-exact backend (1.0 until ``calibrate`` is called)."""
        return 1.0 if self.exact else self._correction

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
        return max(1, round(raw * self._correction))

    # counting
    def count_text(self, text: str) -> int:
        """Tokens of one string."""
        return self._corrected(self._raw_text(text))

    def _measure_message(self, message: Message) -> int:
        """Raw tokens of one message in OpenAI's chat format: envelope, name, content, tool calls, media."""
        total = MESSAGE_OVERHEAD + self._raw_text(_content_text(message, True))
        if message.name:
            total += NAME_OVERHEAD + self._raw_text(message.name)
        for name, arguments in _tool_calls(message):
            total += TOOL_CALL_OVERHEAD + self._raw_text(name) + self._raw_text(arguments)
        if message.role == "tool":
            total += TOOL_RESULT_OVERHEAD
        return total + _media_tokens(message)

    def _cached(self, key: Hashable, compute: Any) -> int:
        """``compute()`` through the LRU cache under ``key``."""
        if not self._cache_size:
            return int(compute())
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
        return self._cached(_message_key(message), lambda: self._measure_message(message))

    def _raw_messages(self, messages: Iterable[Message]) -> int:
        """Raw tokens of many messages, measuring only those not seen before.

        Two cache levels: message objects already counted are recognised by identity (the same
        object with the same content, compressed content, tool calls, role and name objects),
        which costs a dict lookup; other messages go through the cache keyed by id and content
        (``_message_key``), which also serves copies such as agno's history messages.
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
                and entry[0] is message
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
        """Record ``message``'s raw count under its identity (see ``_raw_messages``)."""
        with self._lock:
            self._seen[id(message)] = (
                message,
                message.content,
                message.compressed_content,
                message.tool_calls,
                message.images,
                message.role,
                message.name,
                value,
            )
            while len(self._seen) > min(self._cache_size, _SEEN_LIMIT):
                del self._seen[next(iter(self._seen))]

    def _tool_key(self, tool: Any) -> tuple[Hashable, dict[str, Any]]:
        """Cache key and schema of a tool definition, memoized by object identity.

        Tool definitions are treated as immutable once counted: an agno ``Function`` or a schema
        dict is rendered and hashed the first time this counter sees that object.
        """
        memo = self._tool_memo.get(id(tool))
        if memo is not None and memo[0] is tool:
            return memo[1], memo[2]
        schema = _tool_schema(tool)
        key = ("tool", _stable_hash(schema))
        if len(self._tool_memo) >= 4096:
            self._tool_memo.clear()
        self._tool_memo[id(tool)] = (tool, key, schema)
        return key, schema

    def _raw_tools(self, tools: Sequence[Any] | None) -> int:
        """Raw tokens of tool definitions; the same tool objects as last time cost one comparison each."""
        if not tools:
            return 0
        last = self._last_tools
        if last is not None and _same_objects(last[0], tools):
            return last[1]
        total = self._cached(("tools-envelope",), lambda: self._raw_text(_TOOLS_HEADER + _TOOLS_FOOTER))
        for tool in tools:
            key, schema = self._tool_key(tool)
            total += self._cached(key, lambda schema=schema: self._raw_text(_render_function(schema)))
        self._last_tools = (tuple(tools), total)
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
        schema = _schema_text(output_schema)
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
            target = min(4.0, max(0.25, self._correction * reported / estimated))
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


def _same_objects(first: Sequence[Any], second: Sequence[Any]) -> bool:
    """Whether two sequences hold the very same objects in the same order."""
    return len(first) == len(second) and all(a is b for a, b in zip(first, second, strict=True))


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
