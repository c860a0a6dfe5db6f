"""Offline plumbing for the benchmark: tiktoken rank files for agno's counter, no network, a stand-in summarizer.

agno's built-ins count tokens with ``agno.utils.tokens``, which asks tiktoken for o200k/cl100k;
tiktoken downloads its rank files on first use and, offline, raises (``Compaction`` then never
fires and ``compress_token_limit`` ends the run with an error). ``provide_tiktoken_rank_files``
fills a private ``TIKTOKEN_CACHE_DIR`` with the rank files shipped by the ``bpe-openai`` package
(unpacked, under tiktoken's own cache name: the sha1 of the download URL, verified against the
published sha256), so agno counts exactly, offline, with the same encoding our counter uses.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from agno.models.message import Message

from agno_compression._keeping._reading import extract_facts
from agno_compression.testing import Reply, ScriptedModel, ScriptInfo, block_network
from agno_compression.tokens import TokenCounter
from agno_compression.tokens._ranks import _RANK_FILES, _read_rank_bytes

_COUNTER = TokenCounter("gpt-4o")


def provide_tiktoken_rank_files(directory: Path) -> list[str]:
    """Write every rank file we have into ``directory`` under tiktoken's cache names and point tiktoken at it.

    Must run before anything asks tiktoken for an encoding (agno caches the encoding object).
    Returns the encodings written.
    """
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, spec in _RANK_FILES.items():
        data = _read_rank_bytes(name, None, allow_packaged=True)
        if data is None:
            continue
        if hashlib.sha256(data).hexdigest() != spec.sha256:  # _read_rank_bytes checks too; be explicit
            continue
        (directory / hashlib.sha1(spec.url.encode()).hexdigest()).write_bytes(data)
        written.append(name)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(directory)
    return written


def check_agno_counts_offline() -> int:
    """agno's own counter on a short text (raises if tiktoken would need the network)."""
    from agno.utils.tokens import count_tokens

    return count_tokens([Message(role="user", content="offline token count check")], model_id="scripted")


def forbid_network() -> None:
    """Refuse every non-loopback connection in this process, so nothing in the benchmark can go online."""
    block_network("the benchmark is offline: no connection to {host}")


# --- the stand-in summarizer ----------------------------------------------------------------------

SUMMARY_SHARE = 0.2
"""A stand-in summary is at most this share of what it summarizes (in tokens) ..."""
SUMMARY_MIN_TOKENS = 64
"""... but at least this many tokens ..."""
SUMMARY_MAX_TOKENS = 1_500
"""... and at most this many."""


def digest(text: str) -> str:
    """A deterministic stand-in for an LLM summary of ``text``.

    The first lines, then every path, URL, id, error name, exit code and number found, cut to
    ``SUMMARY_SHARE`` of the input's tokens (between ``SUMMARY_MIN_TOKENS`` and ``SUMMARY_MAX_TOKENS``),
    which is about what a model asked to "compress to essentials" writes. It is not a model: its
    fact retention says nothing about a real summarizer's.
    """
    budget = min(SUMMARY_MAX_TOKENS, max(SUMMARY_MIN_TOKENS, int(_COUNTER.count_text(text) * SUMMARY_SHARE)))
    lines = [" ".join(line.split())[:200] for line in text.splitlines() if line.strip()][:3]
    facts = extract_facts(text)
    parts = ["Summary (offline stand-in):", *lines]
    parts += [f"{kind}: {', '.join(found)}" for kind, found in facts.items() if found]
    out = "\n".join(parts)
    size = _COUNTER.count_text(out)
    while size > budget and len(out) > 40:
        out = out[: max(40, int(len(out) * budget / size * 0.97))]
        size = _COUNTER.count_text(out)
    return out


def standin_summarizer() -> ScriptedModel:
    """A real agno model (no network) that answers every request with ``digest`` of its last message."""

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        return Reply(text=digest(messages[-1].get_content_string() if messages else ""))

    return ScriptedModel(script=script, id="offline-summarizer", name="OfflineSummarizer")
