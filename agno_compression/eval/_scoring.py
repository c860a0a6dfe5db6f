"""Offline evaluation: replay recorded conversations with and without compression and score them.

The measures (cost with prompt caching, acted-on facts, fact retention) are shared by the
``agno-compression eval`` command (``evaluate``) and the benchmarks.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agno.models.message import Message

from .._keeping._ledger import json_strings
from .._keeping._reading import extract_facts
from .._manager import CompressionManager, FoldEvent
from .._messages import message_text
from .._plan import is_summary, pair_violations
from ..pricing import BREAKPOINTS, SHORT, Block, CacheUsage, PriceModel, PromptCache, chain
from ..tokens import TokenCounter
from ._grounding import grounding, needs_of
from ._loaders import Trajectory
from ._replay import observations_as_tool_calls, replay

CACHE_RATES = (0.1, 0.25)
"""What a cached prompt prefix is billed at, as a share of the normal input price (OpenAI, Gemini ~0.1; 0.25 kept
as a cautious second column)."""


# --- what a user pays: prompt tokens with provider prompt caching --------------------------------------


def sent_key(message: Message) -> tuple[Any, ...]:
    """What decides a prompt-cache hit for one message: role, content as sent, tool calls, call id."""
    content: Any = message.content
    if message.role == "tool" and message.compressed_content is not None:
        content = message.compressed_content
    if not isinstance(content, str):
        content = json.dumps(content, sort_keys=True, default=str)
    calls = json.dumps(message.tool_calls, sort_keys=True, default=str) if message.tool_calls else None
    return (message.role, content, calls, message.tool_call_id)


def cached_prefix(previous: Sequence[Message], current: Sequence[Message]) -> int:
    """How many leading messages of ``current`` are identical (as sent) to ``previous``'s."""
    n = 0
    for a, b in zip(previous, current, strict=False):
        if a is not b and sent_key(a) != sent_key(b):
            break
        n += 1
    return n


def cached_costs(
    requests: Sequence[tuple[Sequence[Message], int]],
    counter: TokenCounter,
    rates: Sequence[float] = CACHE_RATES,
) -> list[float]:
    """The input cost of a sequence of model calls, in token units, for each cache ``rate``.

    ``requests`` holds each call's messages (as sent) and its whole prompt size in tokens. The leading
    messages identical to the previous call's (and the tool definitions before them) are billed at
    ``rate``; the rest at 1. The first call pays in full. This is how OpenAI, Anthropic and Gemini bill
    cached prefixes, and why a fold that rewrites early messages costs more than its token count shows.
    """
    totals = [0.0 for _ in rates]
    previous: Sequence[Message] | None = None
    for messages, prompt_tokens in requests:
        hit = cached_prefix(previous, messages) if previous is not None else 0
        sizes = [counter.count_message(m) for m in messages]
        # tool definitions and per-prompt overhead come first and never change within a session
        fixed = max(0, prompt_tokens - sum(sizes)) if previous is not None else 0
        cached = fixed + sum(sizes[:hit])
        for i, rate in enumerate(rates):
            totals[i] += rate * cached + (prompt_tokens - cached)
        previous = messages
    return totals


def billed_costs(
    requests: Sequence[tuple[Sequence[Message], int]],
    counter: TokenCounter,
    price: PriceModel,
    *,
    stable: Sequence[int | None] | None = None,
) -> list[CacheUsage]:
    """How a provider bills each of a sequence of model calls, by ``price``'s caching rules (``pricing``).

    ``requests`` holds each call's messages (as sent) and its whole prompt size; each message is one cacheable
    unit, the tool definitions and prompt overhead one unit before them. Where the provider caches only at
    breakpoints (Anthropic), each call marks its newest message (automatic caching, the best a plain client
    does) and, where ``stable`` gives an index, that message too (the end of the part a fold keeps, as the
    manager marks it). An estimate for calls whose provider reported nothing; ``CacheUsage.billed(price)``
    turns each into input tokens at full price.
    """
    cache = PromptCache(price)
    out = []
    for n, (messages, prompt_tokens) in enumerate(requests):
        sizes = [counter.count_message(m) for m in messages]
        key = chain(0, "tools")
        blocks = [Block(key, max(0, prompt_tokens - sum(sizes)))]
        marked = {len(messages) - 1}
        where = stable[n] if stable is not None else None
        if where is not None:
            marked.add(where)
        for i, (m, size) in enumerate(zip(messages, sizes, strict=True)):
            key = chain(key, sent_key(m))
            mark = SHORT if price.caching == BREAKPOINTS and i in marked else None
            blocks.append(Block(key, size, mark))
        out.append(cache.charge(blocks))
    return out


# --- what the agent acted on, and whether the last prompt still holds it -----------------------------

_ACTED_PATH = re.compile(
    r"(?<![\w/.:~-])(?:~|\.{1,2})?/?(?:[\w.+-]+/)+[\w.+-]*"
    r"|(?<![\w/.-])[\w+-]+(?:\.[\w+-]+)*\.(?:py|pyi|c|h|cc|cpp|hpp|rs|go|js|jsx|ts|tsx|java|kt|rb|php|cs|swift|json|"
    r"ya?ml|toml|md|rst|txt|cfg|ini|sh|sql|html|css|xml|csv|lock|pony|ipynb)\b"
)
_ACTED_TEST = re.compile(r"\btest_\w+")
_ACTED_ERROR = re.compile(r"\b\w*(?:Error|Exception)\b")


def _agent_text(message: Message) -> str:
    """The agent's own words: an assistant message's text and its tool-call arguments (decoded when JSON)."""
    parts = [
        message_text(message, use_compressed_content=False) if not message.tool_calls else str(message.content or "")
    ]
    for call in message.tool_calls or []:
        raw = call.get("function", {}).get("arguments", "") if isinstance(call, dict) else ""
        try:
            value = json.loads(raw) if isinstance(raw, str) and raw else raw
        except ValueError:
            value = raw
        parts.extend(json_strings(value))
    return "\n".join(p for p in parts if p)


def acted_on_facts(messages: Iterable[Message]) -> set[str]:
    """File paths and ``test_*`` names in the agent's own messages and tool-call arguments, plus exception
    names (``*Error``, ``*Exception``) anywhere: what the agent acted on, by exact string."""
    facts: set[str] = set()
    seen: set[str] = set()
    for m in messages:
        if is_summary(m) or m.id in seen:
            continue
        seen.add(m.id)
        if m.role == "assistant":
            own = _agent_text(m)
            # a sentence's full stop after a path is prose, not part of the path ("edit pkg/run.go.")
            facts.update(
                p[:-1] if p.endswith(".") and p[-2:-1].isalnum() else p
                for p in _ACTED_PATH.findall(own)
                if _is_path(p, own)
            )
            facts.update(_ACTED_TEST.findall(own))
        facts.update(_ACTED_ERROR.findall(message_text(m, use_compressed_content=False)))
    return facts


def _is_path(candidate: str, text: str) -> bool:
    """A path-like match that names a file or folder (not ``and/or``, ``1/2`` or a piece of a URL)."""
    if not any(c.isalpha() for c in candidate) or candidate.startswith("//") or f"://{candidate}" in text:
        return False
    last = candidate.rstrip("/").rsplit("/", 1)[-1]
    anchored = candidate.startswith(("/", "./", "../", "~"))
    return "." in last.strip(".") or anchored or candidate.count("/") >= 2


def retention_at_end(requests: Sequence[Sequence[Message]]) -> tuple[int, int]:
    """(kept, total): acted-on facts of everything the model was ever sent that its last prompt still holds."""
    if not requests:
        return 0, 0
    facts = acted_on_facts(m for request in requests for m in request)
    final = "\n".join(message_text(m, use_compressed_content=True) for m in requests[-1])
    return sum(1 for f in facts if f in final), len(facts)


def last_prompt_text(prompts: Sequence[Sequence[Message]]) -> str:
    """The text of a replay's last model request, as sent (``""`` when the model was never called)."""
    return "\n".join(message_text(m) for m in prompts[-1]) if prompts else ""


def acted_retained(facts: Iterable[str], base_final: str, final: str) -> tuple[int, int]:
    """(kept, total): of the acted-on ``facts`` the uncompressed run's last prompt still holds (``base_final``;
    agno's history window may drop old runs), how many the compressed run's last prompt (``final``) holds."""
    wanted = {f for f in facts if f in base_final}
    return sum(1 for f in wanted if f in final), len(wanted)


def fact_retention(folded: Sequence[Message], summary: str) -> tuple[int, int]:
    """(kept, total): how many identifiers, paths, numbers and error names of ``folded`` appear in ``summary``."""
    facts = extract_facts("\n".join(message_text(m, use_compressed_content=False) for m in folded))
    wanted = {f for kind in ("paths", "ids", "errors", "numbers", "exit_codes", "urls") for f in facts[kind]}
    return sum(1 for f in wanted if f in summary), len(wanted)


@dataclass
class EvalRow:
    """One recording replayed with one setting."""

    input: str
    setting: str
    budget: int
    model_calls: int
    peak_prompt: int
    cumulative_prompt: int
    peak_prompt_uncompressed: int
    cumulative_prompt_uncompressed: int
    folds: int = 0
    masks: int = 0
    summarizer_calls: int = 0
    pair_violations: int = 0
    calls_over_budget: int = 0
    facts_kept: int = 0
    facts_total: int = 0
    cost_cached: float = 0.0
    """Input cost with prompt caching (cached prefix at 0.1x), in token units."""
    cost_cached_uncompressed: float = 0.0
    cost_cached_25: float = 0.0
    """The same with the cached prefix at 0.25x."""
    cost_cached_25_uncompressed: float = 0.0
    acted_kept: int = 0
    """Acted-on facts of the uncompressed run's last prompt that this run's last prompt still holds."""
    acted_total: int = 0
    grounded: int = 0
    """Identifiers the recorded next action used that its call's prompt held (``grounding``)."""
    grounding_total: int = 0
    provider: str = ""
    """The provider the replays went through (``evaluate(provider=...)``), else empty."""
    billed: float = 0.0
    """With a provider: the input it billed, in tokens at full price (its documented caching, from its usage)."""
    billed_uncompressed: float = 0.0
    """The same without compression, under the provider's best plain caching."""

    @property
    def grounding(self) -> float | None:
        """Next-step grounding: the share of what each next action used that its prompt still held."""
        return self.grounded / self.grounding_total if self.grounding_total else None

    @property
    def fact_retention(self) -> float | None:
        return self.facts_kept / self.facts_total if self.facts_total else None

    @property
    def acted_retention(self) -> float | None:
        return self.acted_kept / self.acted_total if self.acted_total else None

    @property
    def billed_ratio(self) -> float | None:
        """Input billed by the provider, against the same run without compression (with a provider only)."""
        return self.billed / self.billed_uncompressed if self.billed_uncompressed else None

    def cost_ratio(self, rate: float = 0.1) -> float | None:
        ours, none = (
            (self.cost_cached, self.cost_cached_uncompressed)
            if rate == 0.1
            else (self.cost_cached_25, self.cost_cached_25_uncompressed)
        )
        return ours / none if none else None

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "fact_retention": self.fact_retention,
            "acted_retention": self.acted_retention,
            "grounding": self.grounding,
            "cost_cached_ratio": self.cost_ratio(0.1),
            "cost_cached_25_ratio": self.cost_ratio(0.25),
            "billed_ratio": self.billed_ratio,
        }


@dataclass
class _Collector:
    kept: int = 0
    total: int = 0
    events: list[FoldEvent] = field(default_factory=list)

    def __call__(self, event: FoldEvent, folded: Sequence[Message]) -> None:
        self.events.append(event)
        if event.summary:
            k, t = fact_retention(folded, event.summary)
            self.kept += k
            self.total += t


def evaluate(
    trajectories: Iterable[Trajectory],
    *,
    settings: Sequence[str] = ("extractive",),
    budgets: Sequence[int] = (16_000,),
    progress: Callable[[str], None] | None = None,
    provider: str | None = None,
    model_id: str | None = None,
) -> list[EvalRow]:
    """Replay every trajectory without compression, then with each setting at each budget.

    With ``provider`` (``"anthropic"`` or ``"openai"``) every replay goes through agno's real ``Claude`` or
    ``OpenAIChat`` (``model_id``) against a loopback server that bills each request by the provider's documented
    caching; the uncompressed replay uses the provider's best plain caching (Claude: automatic caching). Each row
    then carries what the provider billed (``billed``, ``billed_uncompressed``).
    """
    plain = {"request_params": {"cache_control": {"type": "ephemeral"}}} if provider == "anthropic" else None
    rows: list[EvalRow] = []
    with tempfile.TemporaryDirectory(prefix="agno-compression-eval-") as tmp:
        from agno.db.sqlite import SqliteDb

        for n, trajectory in enumerate(trajectories):
            messages = observations_as_tool_calls(trajectory.messages)
            base = replay(
                messages,
                db=SqliteDb(db_file=str(Path(tmp, f"{n}-none.db"))),
                provider=provider,
                model_id=model_id,
                model_options=plain,
            )
            base_tokens = [r.prompt_tokens for r in base.requests]
            counter = TokenCounter("gpt-4o")
            base_costs = cached_costs([(r.messages, r.prompt_tokens) for r in base.requests], counter)
            base_acted = acted_on_facts(m for r in base.requests for m in r.messages)
            base_final = last_prompt_text([r.messages for r in base.requests])
            needs = needs_of(messages)
            for budget in budgets:
                for setting in settings:
                    collector = _Collector()
                    manager = CompressionManager(compress_at_tokens=budget, summarizer=setting, on_fold=collector)
                    db = SqliteDb(db_file=str(Path(tmp, f"{n}-{setting}-{budget}.db")))
                    result = replay(messages, manager=manager, db=db, provider=provider, model_id=model_id)
                    tokens = [r.prompt_tokens for r in result.requests]
                    costs = cached_costs([(r.messages, r.prompt_tokens) for r in result.requests], counter)
                    grounded, grounding_total = grounding([r.messages for r in result.requests], needs)
                    acted_kept, acted_total = acted_retained(
                        base_acted, base_final, last_prompt_text([r.messages for r in result.requests])
                    )
                    rows.append(
                        EvalRow(
                            input=trajectory.name,
                            setting=setting,
                            budget=budget,
                            model_calls=len(tokens),
                            peak_prompt=max(tokens, default=0),
                            cumulative_prompt=sum(tokens),
                            peak_prompt_uncompressed=max(base_tokens, default=0),
                            cumulative_prompt_uncompressed=sum(base_tokens),
                            folds=manager.stats.get("folds", 0),
                            masks=manager.stats.get("masks", 0),
                            summarizer_calls=manager.stats.get("summarizer_calls", 0),
                            pair_violations=sum(len(pair_violations(r.messages)) for r in result.requests),
                            calls_over_budget=sum(1 for t in tokens if t > budget),
                            facts_kept=collector.kept,
                            facts_total=collector.total,
                            cost_cached=costs[0],
                            cost_cached_uncompressed=base_costs[0],
                            cost_cached_25=costs[1],
                            cost_cached_25_uncompressed=base_costs[1],
                            acted_kept=acted_kept,
                            acted_total=acted_total,
                            grounded=grounded,
                            grounding_total=grounding_total,
                            provider=provider or "",
                            billed=sum(c.billed for c in result.billed),
                            billed_uncompressed=sum(c.billed for c in base.billed),
                        )
                    )
            if progress is not None:
                progress(trajectory.name)
    return rows


def totals(rows: Sequence[EvalRow]) -> list[EvalRow]:
    """One summed row per (setting, budget)."""
    out: dict[tuple[str, int], EvalRow] = {}
    for r in rows:
        key = (r.setting, r.budget)
        if key not in out:
            out[key] = EvalRow(
                input="TOTAL",
                setting=r.setting,
                budget=r.budget,
                model_calls=0,
                peak_prompt=0,
                cumulative_prompt=0,
                peak_prompt_uncompressed=0,
                cumulative_prompt_uncompressed=0,
            )
        t = out[key]
        t.model_calls += r.model_calls
        t.peak_prompt = max(t.peak_prompt, r.peak_prompt)
        t.peak_prompt_uncompressed = max(t.peak_prompt_uncompressed, r.peak_prompt_uncompressed)
        for name in (
            "cumulative_prompt",
            "cumulative_prompt_uncompressed",
            "folds",
            "masks",
            "summarizer_calls",
            "pair_violations",
            "calls_over_budget",
            "facts_kept",
            "facts_total",
            "cost_cached",
            "cost_cached_uncompressed",
            "cost_cached_25",
            "cost_cached_25_uncompressed",
            "acted_kept",
            "acted_total",
            "grounded",
            "grounding_total",
        ):
            setattr(t, name, getattr(t, name) + getattr(r, name))
    return list(out.values())
