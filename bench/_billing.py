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
    tokens: list[int]
    """Each call's prompt (messages and tool definitions), o200k, as the budget counts it."""
    prefix_misses: int
    """Calls after a run's first that read less than the kept prefix from the cache, though it and the tool list
    were the same as the previous call's."""
    history_refolds: int
    """Calls after a run's first whose kept prefix differed from the previous call's (new history folded)."""
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
    price: Any = None
    """The price model the server billed with (the setting's model's row)."""
    growth: list[int] = field(default_factory=list)
    """Per call, the tokens the prompt grew by since the previous call (for the baseline's floor)."""

    @property
    def peak(self) -> int:
        return max(self.tokens, default=0)

    def over(self, threshold: int) -> int:
        return sum(1 for t in self.tokens if t > threshold)


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


def _kept_prefix(body: dict[str, Any], provider: str, user: str) -> tuple[int, int | None]:
    """Tokens of the request up to and including the run's own user message (its last occurrence), and the cache
    key of that prefix (``None`` when the message is not found)."""
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
    if index is None:
        return 0, None
    return sum(b.tokens for b in blocks[: index + 1]), blocks[index].key


def _cache_checks(calls: Sequence[Any], provider: str, bounds: Sequence[tuple[int, str]]) -> tuple[int, int, int]:
    """(prefix misses, history re-folds, tool changes) over the calls after each run's first."""
    starts = {start for start, _ in bounds}
    user_of: dict[int, str] = {}
    for (start, user), (end, _) in zip(bounds, [*bounds[1:], (len(calls), "")], strict=True):
        user_of.update((i, user) for i in range(start, end))
    misses = refolds = changes = 0
    previous_key = None
    for i, call in enumerate(calls):
        kept, key = _kept_prefix(call.body, provider, user_of.get(i, ""))
        if i not in starts:
            if (call.body.get("tools") or []) != (calls[i - 1].body.get("tools") or []):
                changes += 1
            elif key != previous_key:
                refolds += 1
            else:
                price = call.price
                floor_of = kept // price.step * price.step if kept >= price.min_tokens else 0
                misses += call.usage.read < floor_of
        previous_key = key
    return misses, refolds, changes


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
    misses, refolds, changes = _cache_checks(calls, setting.provider, bounds)
    prompts = [r.messages for r in requests]
    grounded, total = grounding(prompts, needs)
    sizes = [c.usage.prompt for c in calls]
    return Billed(
        setting=setting,
        name=trajectory.name,
        source=trajectory.source,
        threshold=threshold,
        billed=sum(c.billed for c in calls),
        calls=len(calls),
        tokens=[r.prompt_tokens for r in requests],
        prefix_misses=misses,
        history_refolds=refolds,
        tool_changes=changes,
        read=sum(c.usage.read for c in calls),
        written=sum(c.usage.written + c.usage.written_long for c in calls),
        uncached=sum(c.usage.uncached for c in calls),
        grounded=grounded,
        grounding_total=total,
        acted=frozenset(acted_on_facts(m for p in prompts for m in p)),
        final_text=last_prompt_text(prompts),
        errors=errors,
        price=calls[0].price if calls else None,
        growth=[max(0, b - a) for a, b in zip([0, *sizes], sizes, strict=False)],
    )


def floor(baseline: Billed, write_rate: float) -> float:
    """What the baseline's calls cost had each paid only for writing what it added (reads free): the part of the
    bill no strategy that sends every new tool output once can go below."""
    return write_rate * sum(baseline.growth)


def messages_of(trajectory: Trajectory) -> list[Message]:
    return observations_as_tool_calls(trajectory.messages)


# --- running every setting on a set of recordings, in worker processes -----------------------------------------


def _job(args: tuple[Trajectory, Setting, int]) -> Billed:
    import tempfile

    import _offline

    from agno_compression.eval import needs_of

    trajectory, setting, threshold = args
    with tempfile.TemporaryDirectory(prefix="agno-compression-billing-") as tmp:
        needs = needs_of(observations_as_tool_calls(trajectory.messages))
        return replay(trajectory, setting, threshold, Path(tmp), needs, _offline.standin_summarizer)


def _init_worker(rank_dir: str) -> None:
    import logging
    import os
    import warnings

    import _offline

    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    os.environ["TIKTOKEN_CACHE_DIR"] = rank_dir
    _offline.forbid_network()


def run_all(
    recordings: Sequence[Trajectory], thresholds: Sequence[int], rank_dir: str, workers: int = 2
) -> list[Billed]:
    """Every setting of ``SETTINGS`` on every recording: settings without compression once (the threshold does not
    change what they send), the others at each threshold a recording exceeds uncompressed."""
    from concurrent.futures import ProcessPoolExecutor

    jobs: list[tuple[Trajectory, Setting, int]] = []
    for setting in SETTINGS:
        for t in recordings:
            if setting.strategy == "none":
                jobs.append((t, setting, 0))
            else:
                jobs += [(t, setting, th) for th in thresholds]
    with ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(rank_dir,)) as pool:
        return list(pool.map(_job, jobs, chunksize=1))


# --- the RESULTS.md section -----------------------------------------------------------------------------------


def _ratio(part: float, whole: float) -> str:
    return f"{part / whole:.2f}" if whole else "–"


def section(results: Sequence[Billed], thresholds: Sequence[int], command: str) -> list[str]:
    """The "What the user is billed" section of RESULTS.md."""
    from agno_compression.eval import acted_retained

    out = [
        "## What the user is billed: agno's Claude and OpenAIChat, provider caching as documented",
        "",
        "The same recordings replayed through agno's real `Claude` and `OpenAIChat` classes with their real SDK "
        "clients, against loopback servers that bill every request body by the provider's documented caching rules "
        "(`agno_compression.eval.AnthropicServer` / `OpenAIServer`, rules in `agno_compression.pricing`, each "
        "tested on the documentation's examples). **Billed ÷ baseline** is the input billed (uncached tokens at 1×, "
        "cache reads and writes at the provider's rates), summed over the recordings, against the group's "
        "baseline: the same runs with no compression and the provider's best plain caching (Claude with automatic "
        'caching, `request_params={"cache_control": {"type": "ephemeral"}}`; OpenAI\'s automatic prefix '
        "cache). **Runs above** counts recordings billed more than their baseline. **Calls > T** counts prompts "
        "over the threshold (messages plus tool definitions, o200k). **Prefix misses**: calls after a run's first "
        "that read less than the kept prefix `[tools][system][history summary][current user]` from the cache "
        "though it was the same as the previous call's (a call that folds new history into the history summary "
        "changes it, and is counted apart as **history re-folded**); **tool changes**: calls whose tool list "
        "differed from the previous call's. **Floor**: what the baseline's calls cost had each paid only for "
        "writing what it added (reads free): no strategy that sends every new tool output once goes below it; "
        "**of which** splits each bill into cache reads, cache writes and uncached input (each ÷ the baseline): "
        "what is above the floor is reads of the kept prompt and rewrites after folds. "
        f"`{command}`.",
        "",
    ]
    baselines = {(r.setting.group, r.name): r for r in results if r.setting.baseline}
    for group in GROUPS:
        names = sorted({n for g, n in baselines if g == group})
        if not names:
            continue
        base = [baselines[(group, n)] for n in names]
        total = sum(b.billed for b in base)
        write = 1.25 if "Claude" in group else 1.0
        floor_share = sum(floor(b, write) for b in base) / total if total else 0
        out += [
            f"### {group}",
            "",
            f"Floor: {floor_share:.2f} of the baseline.",
            "",
            "| threshold | setting | billed ÷ baseline | of which reads · writes · uncached | runs above | calls > T | "
            "peak tokens | prefix misses | history re-folded | tool changes | next-step grounding | "
            "acted-on facts at end |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for threshold in thresholds:
            for setting in (s for s in SETTINGS if s.group == group):
                rows = {
                    r.name: r
                    for r in results
                    if r.setting == setting and (r.threshold == threshold or setting.strategy == "none")
                }
                rows = {n: r for n, r in rows.items() if n in names and baselines[(group, n)].peak > threshold}
                if not rows:
                    continue
                billed = sum(r.billed for r in rows.values())
                against = sum(baselines[(group, n)].billed for n in rows)
                above = sum(1 for n, r in rows.items() if r.billed > baselines[(group, n)].billed * 1.0005)
                acted = [
                    acted_retained(baselines[(group, n)].acted, baselines[(group, n)].final_text, r.final_text)
                    for n, r in rows.items()
                ]
                kept, of = sum(k for k, _ in acted), sum(t for _, t in acted)
                grounded = sum(r.grounded for r in rows.values())
                needed = sum(r.grounding_total for r in rows.values())
                price = next(iter(rows.values())).price
                parts = (
                    sum(r.read for r in rows.values()) * price.read_rate,
                    sum(r.written for r in rows.values()) * price.write_rate,
                    sum(r.uncached for r in rows.values()),
                )
                split = " · ".join(_ratio(part, against) for part in parts)
                out.append(
                    f"| {threshold // 1000}k | {setting.name} | {_ratio(billed, against)} | {split} | "
                    f"{above}/{len(rows)} | "
                    f"{sum(r.over(threshold) for r in rows.values())} | "
                    f"{max(r.peak for r in rows.values()):,} | {sum(r.prefix_misses for r in rows.values())} | "
                    f"{sum(r.history_refolds for r in rows.values())} | {sum(r.tool_changes for r in rows.values())} | "
                    f"{_ratio(grounded, needed)} | {_ratio(kept, of)} |"
                )
        out.append("")
    return out
