"""What the user is billed: the recordings replayed through agno's real ``Claude`` and ``OpenAIChat``, their real
SDK clients talking to loopback servers that bill every request by the provider's documented caching rules
(``agno_compression.eval.AnthropicServer`` / ``OpenAIServer``, rules in ``agno_compression.pricing``).

Every setting of one provider group is billed against that group's baseline: the same runs with no compression
and the provider's best plain caching (Claude with automatic caching, ``request_params={"cache_control":
{"type": "ephemeral"}}``; OpenAI's automatic prefix cache). Besides the bill, each replay counts calls over the
budget (messages plus tool definitions, as the budget counts them), calls after a run's first that did not read
the kept prefix (``[tools][system][history summary][current user]``) from the cache and whether the tool list
changed there, next-step grounding and acted-on facts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agno.models.message import Message

from agno_compression import CompressionManager
from agno_compression.eval import (
    Trajectory,
    acted_on_facts,
    grounding,
    last_prompt_text,
    observations_as_tool_calls,
    prepare_replay,
    run_in_mode,
)
from agno_compression.pricing import anthropic_blocks, openai_blocks
from agno_compression.tokens import TokenCounter

_COUNTER = TokenCounter("gpt-4o")
AUTOMATIC = {"request_params": {"cache_control": {"type": "ephemeral"}}}
"""Claude with Anthropic's automatic caching: one breakpoint on the last cacheable block."""


@dataclass(frozen=True)
class Setting:
    """One way of sending the recordings to one provider."""

    name: str
    group: str
    """Settings of a group are billed against its baseline."""
    provider: str
    model_id: str
    strategy: str
    """``none``, ``ours``, ``agno-compress`` or ``agno-compaction``."""
    model_options: dict[str, Any] = field(default_factory=dict)
    baseline: bool = False
    manager_options: dict[str, Any] = field(default_factory=dict)


CLAUDE = "Claude (reads 0.1×, 1,024-token minimum: claude-sonnet-4-5)"
CLAUDE_NEW = "Claude, newer models (reads 0.05×, 512-token minimum: claude-sonnet-5-5)"
GPT5 = "OpenAIChat gpt-5 (reads 0.1×)"
GPT4O = "OpenAIChat gpt-4o (reads 0.5×)"

SETTINGS: tuple[Setting, ...] = (
    Setting("none, agno defaults", CLAUDE, "anthropic", "claude-sonnet-4-5", "none"),
    Setting("none, automatic caching", CLAUDE, "anthropic", "claude-sonnet-4-5", "none", AUTOMATIC, baseline=True),
    Setting(
        "agno CompressionManager, automatic caching",
        CLAUDE,
        "anthropic",
        "claude-sonnet-4-5",
        "agno-compress",
        AUTOMATIC,
    ),
    Setting(
        "agno Compaction, automatic caching", CLAUDE, "anthropic", "claude-sonnet-4-5", "agno-compaction", AUTOMATIC
    ),
    Setting("ours, agno defaults", CLAUDE, "anthropic", "claude-sonnet-4-5", "ours"),
    Setting("ours, automatic caching", CLAUDE, "anthropic", "claude-sonnet-4-5", "ours", AUTOMATIC),
    Setting(
        "ours, prompt_caching=False, automatic caching",
        CLAUDE,
        "anthropic",
        "claude-sonnet-4-5",
        "ours",
        AUTOMATIC,
        manager_options={"prompt_caching": False},
    ),
    Setting("none, automatic caching", CLAUDE_NEW, "anthropic", "claude-sonnet-5-5", "none", AUTOMATIC, baseline=True),
    Setting("ours, agno defaults", CLAUDE_NEW, "anthropic", "claude-sonnet-5-5", "ours"),
    Setting("ours, automatic caching", CLAUDE_NEW, "anthropic", "claude-sonnet-5-5", "ours", AUTOMATIC),
    Setting("none", GPT5, "openai", "gpt-5", "none", baseline=True),
    Setting("agno CompressionManager", GPT5, "openai", "gpt-5", "agno-compress"),
    Setting("agno Compaction", GPT5, "openai", "gpt-5", "agno-compaction"),
    Setting("ours", GPT5, "openai", "gpt-5", "ours"),
    Setting("none", GPT4O, "openai", "gpt-4o", "none", baseline=True),
    Setting("ours", GPT4O, "openai", "gpt-4o", "ours"),
)
GROUPS = tuple(dict.fromkeys(s.group for s in SETTINGS))


@dataclass
class Billed:
    """One recording replayed with one setting at one threshold."""

    setting: Setting
    name: str
    source: str
    threshold: int
    billed: float
    calls: int
    over: int
    """Calls whose prompt (messages and tool definitions) exceeded the threshold."""
    peak: int
    prefix_misses: int
    """Calls after a run's first that did not read the kept prefix from the cache, the tool list unchanged."""
    tool_changes: int
    """Calls whose tool list differed from the previous call of the run."""
    read: int = 0
    written: int = 0
    uncached: int = 0
    grounded: int = 0
    grounding_total: int = 0
    acted: frozenset[str] = frozenset()
    final_text: str = ""
    errors: int = 0
    growth: list[int] = field(default_factory=list)
    """Per call, the tokens the prompt grew by since the previous call (for the baseline's floor)."""


def _manager(setting: Setting, threshold: int) -> CompressionManager:
    return CompressionManager(compress_at_tokens=threshold, **setting.manager_options)


def _options(setting: Setting, threshold: int, summarizer_factory: Callable[[], Any]) -> dict[str, Any]:
    if setting.strategy == "agno-compress":
        from agno.compression.manager import CompressionManager as AgnoCompressionManager

        manager = AgnoCompressionManager(model=summarizer_factory(), compress_token_limit=threshold)
        return {"compression_manager": manager, "compress_tool_results": True}
    if setting.strategy == "agno-compaction":
        from agno.compaction import Compaction

        return {"compaction": Compaction(model=summarizer_factory(), compact_at_tokens=threshold)}
    return {}


def _kept_prefix(body: dict[str, Any], provider: str, user: str) -> int:
    """Tokens of the request up to and including the run's own user message (its last occurrence)."""
    if provider == "anthropic":
        blocks, _ = anthropic_blocks(body, _COUNTER.count_text)
        texts: list[str | None] = [None] * len(body.get("tools") or ())
        system = body.get("system")
        texts += [None] * (1 if isinstance(system, str) and system else len(system or ()))
        for message in body.get("messages") or ():
            content = message.get("content")
            parts = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or ())
            texts += [p.get("text") if message.get("role") == "user" and isinstance(p, dict) else None for p in parts]
    else:
        blocks = openai_blocks(body, _COUNTER.count_text)
        texts = [None] * len(body.get("tools") or ())
        texts += [m.get("content") if m.get("role") == "user" else None for m in body.get("messages") or ()]
    index = max((i for i, t in enumerate(texts) if t == user), default=None)
    return sum(b.tokens for b in blocks[: index + 1]) if index is not None else 0


def replay(
    trajectory: Trajectory,
    setting: Setting,
    threshold: int,
    workdir: Path,
    needs: Sequence[frozenset[str]],
    summarizer_factory: Callable[[], Any],
) -> Billed:
    """Replay ``trajectory`` through ``setting``'s provider class at ``threshold`` tokens and bill it."""
    from agno.db.sqlite import SqliteDb
    from agno.run.base import RunStatus

    messages = observations_as_tool_calls(trajectory.messages)
    db_file = workdir / f"billing-{time.monotonic_ns()}.db"
    db = SqliteDb(db_file=str(db_file))
    manager = _manager(setting, threshold) if setting.strategy == "ours" else None
    prepared = prepare_replay(
        messages,
        manager=manager,
        db=db,
        session_id="bench",
        provider=setting.provider,
        model_id=setting.model_id,
        model_options=setting.model_options,
        **_options(setting, threshold, summarizer_factory),
    )
    server = prepared.server
    assert server is not None
    bounds: list[tuple[int, str]] = []
    errors = 0
    try:
        for turn in prepared.turns:
            bounds.append((len(server.calls), turn.user))
            output = run_in_mode(prepared.agent, turn.user, "sync")
            errors += getattr(output, "status", None) == RunStatus.error
            prepared.next_turn()
    finally:
        prepared.close()
        db.db_engine.dispose()
        db_file.unlink(missing_ok=True)
    calls = server.calls
    requests = prepared.requests
    starts = {start for start, _ in bounds}
    user_of = {}
    for (start, user), (end, _) in zip(bounds, [*bounds[1:], (len(calls), "")], strict=True):
        for i in range(start, end):
            user_of[i] = user
    misses = changes = 0
    for i, call in enumerate(calls):
        if i in starts or i == 0:
            continue
        changed = (call.body.get("tools") or []) != (calls[i - 1].body.get("tools") or [])
        changes += changed
        if not changed and call.usage.read < _kept_prefix(call.body, setting.provider, user_of.get(i, "")):
            misses += 1
    prompts = [r.messages for r in requests]
    tokens = [r.prompt_tokens for r in requests]
    grounded, total = grounding(prompts, needs)
    return Billed(
        setting=setting,
        name=trajectory.name,
        source=trajectory.source,
        threshold=threshold,
        billed=sum(c.billed for c in calls),
        calls=len(calls),
        over=sum(1 for t in tokens if t > threshold),
        peak=max(tokens, default=0),
        prefix_misses=misses,
        tool_changes=changes,
        read=sum(c.usage.read for c in calls),
        written=sum(c.usage.written + c.usage.written_long for c in calls),
        uncached=sum(c.usage.uncached for c in calls),
        grounded=grounded,
        grounding_total=total,
        acted=frozenset(acted_on_facts(m for p in prompts for m in p)),
        final_text=last_prompt_text(prompts),
        errors=errors,
        growth=[
            max(0, b - a)
            for a, b in zip([0, *(c.usage.prompt for c in calls)], [c.usage.prompt for c in calls], strict=False)
        ],
    )


def floor(baseline: Billed, write_rate: float) -> float:
    """What the baseline's calls cost had each paid only for writing what it added (reads free): the part of the
    bill no strategy that sends every new tool output once can go below."""
    return write_rate * sum(baseline.growth)


def messages_of(trajectory: Trajectory) -> list[Message]:
    return observations_as_tool_calls(trajectory.messages)
