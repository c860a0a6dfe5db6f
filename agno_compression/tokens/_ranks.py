"""Rank files for tiktoken's encodings, found, read and verified locally: never downloaded.

A rank file is looked for in a configured directory, tiktoken's own cache directory and the
``bpe-openai`` wheel, and used only if its sha256 is the published one.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
import tempfile
import threading
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from .._exceptions import ConfigError

log = logging.getLogger("agno_compression")


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
