"""A provider's prompt cache, as its documentation describes it: what a request reads, writes and pays in full.

A request is a list of ``Block``s in the provider's cache order (tools, system, messages), each with the tokens
it adds and a key that names the whole prompt up to and including it (``chain``), so two prompts share an entry
exactly when they share every block before it. ``PromptCache.charge`` bills one request against the entries the
earlier ones left:

* ``prefix`` (OpenAI, Gemini): the longest leading part that an earlier request also sent is read, counted in
  the provider's step and only from its minimum on; every prefix of the request is then cached. No write fee,
  except on GPT-5.6 and later, where an implicit breakpoint on the latest message writes what was not read.
* ``breakpoints`` (Anthropic): entries exist only where a request put ``cache_control`` (or, with automatic
  caching, on its last cacheable block). Each breakpoint looks for an entry at its own block and walks back
  one block at a time, ``lookback_blocks`` positions in all (the breakpoint itself the first; a run of
  ``tool_use`` or of ``tool_result`` blocks one position); the longest found is read. Every breakpoint after
  it whose prefix reaches the minimum writes an entry, and the tokens between the read part and the last
  written breakpoint are billed as writes (at the 1-hour rate up to a 1-hour breakpoint). More than
  ``max_breakpoints`` markers, or a 1-hour breakpoint after a 5-minute one, is an invalid request
  (``CacheError``), as the API answers it.

Entries live ``ttl_seconds`` after their last use (reading refreshes them), on the clock the cache is given.
Pure: no I/O; the loopback servers in ``agno_compression.eval`` and the bench bill real request bodies with it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ._table import BREAKPOINTS, NONE, PriceModel

SHORT, LONG = "5m", "1h"
"""The two entry lifetimes Anthropic offers (``cache_control: {"type": "ephemeral", "ttl": ...}``)."""


class CacheError(ValueError):
    """A request the provider rejects for its cache markers (too many breakpoints, a 1-hour one after a 5-minute
    one)."""


@dataclass(frozen=True)
class Block:
    """One cacheable unit of a request, in cache order."""

    key: int
    """Names the prompt up to and including this block (``chain``)."""
    tokens: int
    mark: str | None = None
    """``"5m"`` or ``"1h"`` when the request puts a cache breakpoint on this block."""
    markable: bool = True
    """Whether a breakpoint may sit here (thinking blocks and empty text may not carry ``cache_control``)."""
    run: str = ""
    """``"tool_use"`` / ``"tool_result"``: consecutive blocks of one such run count as one lookback position."""


def chain(previous: int, identity: object) -> int:
    """The key of a block whose own content is ``identity`` (hashable) after the prompt named ``previous``."""
    return hash((previous, identity))


@dataclass(frozen=True)
class CacheUsage:
    """How a request's prompt splits, as the provider reports it."""

    uncached: int
    """Billed in full (Anthropic's ``input_tokens``)."""
    read: int = 0
    """Read from the cache."""
    written: int = 0
    """Written to 5-minute entries."""
    written_long: int = 0
    """Written to 1-hour entries."""

    @property
    def prompt(self) -> int:
        """The whole prompt."""
        return self.uncached + self.read + self.written + self.written_long

    def billed(self, price: PriceModel) -> float:
        """What it costs, in input tokens at full price."""
        return price.billed(self.uncached, self.read, self.written, self.written_long)


def reported_usage(metrics: Any, price: PriceModel) -> CacheUsage:
    """A call's usage as its provider reported it through agno's metrics (``input_tokens``, ``cache_read_tokens``,
    ``cache_write_tokens``), split as ``CacheUsage``: where the provider counts cache reads and writes inside the
    input (OpenAI, Gemini) they are taken out of it; where it reports them apart (Anthropic) they are added."""
    given = int(getattr(metrics, "input_tokens", 0) or 0)
    read = int(getattr(metrics, "cache_read_tokens", 0) or 0)
    written = int(getattr(metrics, "cache_write_tokens", 0) or 0)
    uncached = max(0, given - read - written) if price.input_includes_cache else given
    return CacheUsage(uncached=uncached, read=read, written=written)


class PromptCache:
    """The cache one provider keeps for one model and account, billing each request by ``price``'s rules."""

    def __init__(self, price: PriceModel, clock: Callable[[], float] = time.monotonic) -> None:
        self.price = price
        self.clock = clock
        self._entries: dict[int, tuple[float, float]] = {}
        """key -> (last use, lifetime in seconds)."""

    def __len__(self) -> int:
        return len(self._entries)

    def _alive(self, key: int, now: float) -> bool:
        entry = self._entries.get(key)
        if entry is None:
            return False
        if now - entry[0] > entry[1]:
            del self._entries[key]
            return False
        return True

    def _keep(self, key: int, now: float, ttl: str | None = None) -> None:
        lifetime = self._entries.get(key, (0.0, self.price.ttl_seconds))[1]
        if ttl == LONG:
            lifetime = max(lifetime, self.price.long_ttl_seconds or self.price.ttl_seconds)
        elif ttl == SHORT:
            lifetime = max(lifetime, self.price.ttl_seconds)
        self._entries[key] = (now, lifetime)

    def charge(self, blocks: Sequence[Block], *, automatic: str | None = None) -> CacheUsage:
        """Bill one request; ``automatic`` is the lifetime of Anthropic's top-level ``cache_control`` (a breakpoint
        on the last markable block), ``None`` when the request has none."""
        total = sum(b.tokens for b in blocks)
        if not blocks or self.price.caching == NONE:
            return CacheUsage(uncached=total)
        now = self.clock()
        ends: list[int] = []
        running = 0
        for b in blocks:
            running += b.tokens
            ends.append(running)
        if self.price.caching == BREAKPOINTS:
            return self._breakpoints(blocks, ends, now, automatic)
        return self._prefix(blocks, ends, now)

    def _prefix(self, blocks: Sequence[Block], ends: list[int], now: float) -> CacheUsage:
        price = self.price
        hit = next((i for i in range(len(blocks) - 1, -1, -1) if self._alive(blocks[i].key, now)), -1)
        read = 0
        if hit >= 0 and ends[hit] >= price.min_tokens:
            read = ends[hit] // price.step * price.step
        if price.write_rate > 1.0:
            # GPT-5.6 and later: an implicit breakpoint on the latest message writes what was not read, and only
            # that end becomes an entry
            if ends[-1] < price.min_tokens:
                return CacheUsage(uncached=ends[-1])
            self._keep(blocks[-1].key, now)
            return CacheUsage(uncached=0, read=read, written=ends[-1] - read)
        for i, b in enumerate(blocks):
            if ends[i] >= price.min_tokens:
                self._keep(b.key, now)
        return CacheUsage(uncached=ends[-1] - read, read=read)

    def marks(self, blocks: Sequence[Block], automatic: str | None = None) -> list[tuple[int, str]]:
        """The request's breakpoints in order, ``(block index, lifetime)``; ``CacheError`` when the provider would
        reject them."""
        marks = [(i, b.mark) for i, b in enumerate(blocks) if b.mark is not None]
        limit = self.price.max_breakpoints
        if automatic is not None:
            # on the last block that may carry a marker; a no-op when it already carries one of the same lifetime
            last = next((i for i in range(len(blocks) - 1, -1, -1) if blocks[i].markable), None)
            explicit = next((ttl for i, ttl in marks if i == last), None)
            if explicit is not None and explicit != automatic:
                raise CacheError("automatic cache_control conflicts with the last block's cache_control ttl")
            if last is not None and explicit is None:
                if len(marks) >= limit:
                    raise CacheError(f"{len(marks)} explicit cache_control blocks leave no slot for automatic caching")
                marks = sorted([*marks, (last, automatic)])
        if len(marks) > limit:
            raise CacheError(f"A maximum of {limit} blocks with cache_control may be provided. Found {len(marks)}.")
        short_seen = False
        for _, ttl in marks:
            if ttl == LONG and short_seen:
                raise CacheError("a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block")
            short_seen = short_seen or ttl == SHORT
        return marks

    def _lookback(self, blocks: Sequence[Block], start: int, now: float) -> int:
        """The newest block at or before ``start``, within the lookback window, that names a live entry; or -1.
        A run of ``tool_use`` (or ``tool_result``) blocks takes one position of the window."""
        positions = 0
        j = start
        while j >= 0 and positions < self.price.lookback_blocks:
            if self._alive(blocks[j].key, now):
                return j
            same_run = j > 0 and blocks[j].run and blocks[j - 1].run == blocks[j].run
            positions += 0 if same_run else 1
            j -= 1
        return -1

    def _breakpoints(self, blocks: Sequence[Block], ends: list[int], now: float, automatic: str | None) -> CacheUsage:
        price = self.price
        marks = self.marks(blocks, automatic)
        hit = max((self._lookback(blocks, i, now) for i, _ in marks), default=-1)
        if hit >= 0:
            self._keep(blocks[hit].key, now)
        read = ends[hit] if hit >= 0 else 0
        # the docs' positions: A the read part, B the last 1-hour breakpoint after it, C the last breakpoint;
        # 1-hour writes B - A, 5-minute writes C - B (a prefix under the minimum is never written)
        written = {SHORT: 0, LONG: 0}
        last = read
        for i, ttl in marks:
            if i <= hit or ends[i] < price.min_tokens:
                continue
            written[ttl] += ends[i] - last
            last = ends[i]
            self._keep(blocks[i].key, now, ttl)
        return CacheUsage(uncached=ends[-1] - last, read=read, written=written[SHORT], written_long=written[LONG])
