"""The providers' caching rules, each checked on the documentation's own examples (``agno_compression.pricing``).

Anthropic (https://platform.claude.com/docs/en/build-with-claude/prompt-caching, as stored 2026-11): writes only at
breakpoints, reads found by walking back at most 20 positions (a run of tool_use or tool_result blocks is one),
at most 4 markers, longer lifetimes first, automatic caching on the last cacheable block, a minimum prefix,
mixed lifetimes billed A/B/C. OpenAI (https://platform.openai.com/docs/guides/prompt-caching): automatic from
1,024 tokens, hits in 128-token steps, cached tokens inside prompt_tokens. Gemini: implicit prefix caching.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agno_compression.pricing import (
    GENERIC,
    LONG,
    PRICE_MODELS,
    SHORT,
    Block,
    CacheError,
    CacheUsage,
    PriceModel,
    PromptCache,
    chain,
    price_model_for,
)

CLAUDE = price_model_for(provider="anthropic", model_id="claude-sonnet-4-5")
GPT4O = price_model_for(provider="openai", model_id="gpt-4o")


def blocks(
    n: int,
    *,
    tokens: int = 100,
    marks: dict[int, str] | None = None,
    first: str = "a",
    runs: dict[int, str] | None = None,
) -> list[Block]:
    """``n`` blocks (1-based positions in ``marks`` and ``runs``, as the docs count them)."""
    out, key = [], 0
    for i in range(1, n + 1):
        key = chain(key, first if i == 1 else i)
        out.append(Block(key, tokens, (marks or {}).get(i), True, (runs or {}).get(i, "")))
    return out


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


# --- Anthropic: the documentation's examples ----------------------------------------------------------------


def test_identical_request_reads_everything_up_to_the_breakpoint_and_writes_nothing() -> None:
    cache = PromptCache(CLAUDE)
    request = blocks(20, marks={20: SHORT})
    assert cache.charge(request) == CacheUsage(uncached=0, written=2000)
    assert cache.charge(request) == CacheUsage(uncached=0, read=2000)


def test_strict_extension_reads_the_earlier_entry_and_writes_only_the_new_blocks() -> None:
    # docs: "Turn 2: 15 blocks, breakpoint on block 15 ... walks back to block 10 and finds the turn-1 entry"
    cache = PromptCache(CLAUDE)
    cache.charge(blocks(10, tokens=150, marks={10: SHORT}))
    assert cache.charge(blocks(15, tokens=150, marks={15: SHORT})) == CacheUsage(uncached=0, read=1500, written=750)


def test_more_than_twenty_positions_added_misses_unless_a_second_breakpoint_bridges() -> None:
    # docs: "Turn 3: 35 blocks, breakpoint on block 35 ... The turn-2 entry at block 15 is one position outside"
    cache = PromptCache(CLAUDE)
    cache.charge(blocks(15, marks={15: SHORT}))
    assert cache.charge(blocks(35, marks={35: SHORT})).read == 0
    cache = PromptCache(CLAUDE)
    cache.charge(blocks(15, marks={15: SHORT}))
    assert cache.charge(blocks(34, marks={34: SHORT})).read == 1500  # 20 positions: 34 down to 15
    cache = PromptCache(CLAUDE)
    cache.charge(blocks(15, marks={15: SHORT}))
    assert cache.charge(blocks(35, marks={15: SHORT, 35: SHORT})) == CacheUsage(uncached=0, read=1500, written=2000)


def test_a_run_of_tool_results_takes_one_position_of_the_lookback() -> None:
    cache = PromptCache(CLAUDE)
    cache.charge(blocks(15, marks={15: SHORT}))
    results = {i: "tool_result" for i in range(16, 36)}  # 20 parallel results after the entry
    assert cache.charge(blocks(36, marks={36: SHORT}, runs=results)).read == 1500


def test_a_changed_first_block_invalidates_everything_after_it() -> None:
    cache = PromptCache(CLAUDE)
    cache.charge(blocks(20, marks={20: SHORT}))
    assert cache.charge(blocks(20, marks={20: SHORT}, first="changed")) == CacheUsage(uncached=0, written=2000)


def test_a_breakpoint_on_a_block_that_changes_every_time_never_reads() -> None:
    cache = PromptCache(CLAUDE)
    for stamp in range(3):
        request = [*blocks(5), Block(chain(blocks(5)[-1].key, f"timestamp {stamp}"), 100, SHORT)]
        assert cache.charge(request).read == 0


def test_below_the_minimum_nothing_is_written_or_read_and_no_error() -> None:
    cache = PromptCache(CLAUDE)  # 1,024 tokens for claude-sonnet-4-5
    small = blocks(10, tokens=100, marks={10: SHORT})
    assert cache.charge(small) == CacheUsage(uncached=1000)
    assert cache.charge(small) == CacheUsage(uncached=1000)
    newer = PromptCache(price_model_for(provider="anthropic", model_id="claude-sonnet-5-5"))  # 512 tokens
    newer.charge(small)
    assert newer.charge(small).read == 1000


def test_input_tokens_are_what_follows_the_last_breakpoint() -> None:
    cache = PromptCache(CLAUDE)
    usage = cache.charge(blocks(20, marks={12: SHORT}))
    assert (usage.uncached, usage.written, usage.prompt) == (800, 1200, 2000)


def test_five_breakpoints_are_rejected_with_the_apis_message() -> None:
    with pytest.raises(
        CacheError, match=re.escape("A maximum of 4 blocks with cache_control may be provided. Found 5.")
    ):
        PromptCache(CLAUDE).charge(blocks(20, marks={i: SHORT for i in (4, 8, 12, 16, 20)}))


def test_a_one_hour_entry_after_a_five_minute_one_is_rejected() -> None:
    with pytest.raises(CacheError):
        PromptCache(CLAUDE).charge(blocks(20, marks={10: SHORT, 20: LONG}))


def test_mixed_lifetimes_bill_the_docs_positions_a_b_c() -> None:
    # A: the read part, B: the last 1-hour breakpoint after it, C: the last breakpoint
    cache = PromptCache(CLAUDE)
    cache.charge(blocks(12, marks={12: LONG}))
    usage = cache.charge(blocks(30, marks={12: LONG, 20: LONG, 30: SHORT}))
    assert (usage.read, usage.written_long, usage.written, usage.uncached) == (1200, 800, 1000, 0)
    assert usage.billed(CLAUDE) == pytest.approx(1200 * 0.1 + 800 * 2.0 + 1000 * 1.25)


def test_automatic_caching_marks_the_last_cacheable_block_and_moves_forward() -> None:
    cache = PromptCache(CLAUDE)
    assert cache.charge(blocks(12), automatic=SHORT).written == 1200
    assert cache.charge(blocks(16), automatic=SHORT) == CacheUsage(uncached=0, read=1200, written=400)


def test_automatic_caching_walks_back_past_blocks_that_cannot_carry_a_marker() -> None:
    request = blocks(12)
    request[-1] = Block(request[-1].key, 100, None, markable=False)  # a thinking block
    assert PromptCache(CLAUDE).marks(request, automatic=SHORT) == [(10, SHORT)]


def test_automatic_caching_edge_cases() -> None:
    same = blocks(12, marks={12: SHORT})
    assert PromptCache(CLAUDE).marks(same, automatic=SHORT) == [(11, SHORT)]  # a no-op
    with pytest.raises(CacheError):  # the last block's own marker has another lifetime
        PromptCache(CLAUDE).marks(blocks(12, marks={12: LONG}), automatic=SHORT)
    with pytest.raises(CacheError):  # four explicit markers leave no slot
        PromptCache(CLAUDE).marks(blocks(12, marks={2: SHORT, 4: SHORT, 6: SHORT, 8: SHORT}), automatic=SHORT)


def test_entries_expire_after_their_lifetime_and_a_read_refreshes_them() -> None:
    clock = Clock()
    cache = PromptCache(CLAUDE, clock)
    request = blocks(20, marks={20: SHORT})
    cache.charge(request)
    clock.now = 299
    assert cache.charge(request).read == 2000  # refreshed at 299
    clock.now = 598
    assert cache.charge(request).read == 2000
    clock.now = 1000
    assert cache.charge(request).read == 0
    long = PromptCache(CLAUDE, clock)
    long.charge(blocks(20, marks={20: LONG}))
    clock.now += 3000
    assert long.charge(blocks(20, marks={20: LONG})).read == 2000


# --- OpenAI and Gemini: automatic prefix caching ------------------------------------------------------------


def test_openai_caches_from_1024_tokens_in_128_token_steps() -> None:
    cache = PromptCache(GPT4O)
    assert cache.charge(blocks(9)) == CacheUsage(uncached=900)
    assert cache.charge(blocks(10)).read == 0  # the 900-token prefix was under the minimum
    usage = cache.charge(blocks(20, tokens=101))
    assert usage.read == 0  # another first block
    extended = cache.charge(blocks(25, tokens=101))
    assert extended.read == 2020 // 128 * 128 and extended.prompt == 2525  # cached tokens inside prompt_tokens


def test_openai_a_changed_first_message_misses_and_no_write_is_billed() -> None:
    cache = PromptCache(GPT4O)
    cache.charge(blocks(20))
    usage = cache.charge(blocks(20, first="other system prompt"))
    assert usage == CacheUsage(uncached=2000)
    assert usage.billed(GPT4O) == 2000


def test_openai_gpt_5_6_bills_the_implicit_breakpoints_writes() -> None:
    price = price_model_for(provider="openai", model_id="gpt-5.6-terra")
    cache = PromptCache(price)
    assert cache.charge(blocks(20)) == CacheUsage(uncached=0, written=2000)
    assert cache.charge(blocks(25)) == CacheUsage(uncached=0, read=2000, written=500)


def test_gemini_implicit_cache_reads_a_repeated_prefix() -> None:
    price = price_model_for(provider="google", model_id="gemini-2.5-flash")
    cache = PromptCache(price)
    cache.charge(blocks(30))
    assert cache.charge(blocks(40)).read == 3000


@given(
    st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=12),
    st.sampled_from([CLAUDE, GPT4O, price_model_for(provider="google", model_id="gemini-3")]),
)
def test_every_token_is_billed_once_and_never_above_writing_it_all(lengths: list[int], price: PriceModel) -> None:
    cache = PromptCache(price)
    for n in lengths:
        request = blocks(n, tokens=97, marks={n: SHORT} if price.max_breakpoints else None)
        usage = cache.charge(request)
        assert usage.prompt == 97 * n
        assert min(usage.uncached, usage.read, usage.written, usage.written_long) >= 0
        assert usage.billed(price) <= 97 * n * max(1.0, price.write_rate)


# --- the table ----------------------------------------------------------------------------------------------


def test_every_row_cites_its_source_and_date() -> None:
    for row in PRICE_MODELS:
        assert row.source.startswith("https://") and row.checked, row.family
        assert row.usage_fields, row.family


def test_rows_are_picked_by_class_and_id() -> None:
    from agno.models.anthropic import Claude
    from agno.models.openai import OpenAIChat, OpenAILike

    assert price_model_for(Claude(id="claude-sonnet-5-5")).read_rate == 0.05
    assert price_model_for(Claude(id="claude-opus-4-5-20251101")).min_tokens == 4096
    assert price_model_for(OpenAIChat(id="gpt-4.1-mini")).read_rate == 0.25
    assert price_model_for(OpenAIChat(id="gpt-5-mini")).read_rate == 0.1
    assert price_model_for(OpenAILike(id="gpt-5", base_url="http://127.0.0.1:1/v1")) is GENERIC
    assert (
        price_model_for(provider="anthropic", model_id="anthropic.claude-sonnet-4-5-20250929-v1:0").min_tokens == 1024
    )


def test_a_price_model_with_a_bad_figure_names_it() -> None:
    from agno_compression import ConfigError

    with pytest.raises(ConfigError, match=r"read_rate.*-0\.1"):
        PriceModel(provider="x", family="y", caching="prefix", read_rate=-0.1)
    with pytest.raises(ConfigError, match=r"caching.*'sometimes'"):
        PriceModel(provider="x", family="y", caching="sometimes", read_rate=0.1)


BAD_FIGURES = [
    ("long_write_rate", float("nan")),
    ("long_write_rate", float("inf")),
    ("read_rate", float("nan")),
    ("write_rate", float("-inf")),
    ("ttl_seconds", float("inf")),
    ("ttl_seconds", "2"),
    ("ttl_seconds", None),
    ("long_ttl_seconds", "x"),
    ("long_ttl_seconds", float("nan")),
    ("long_ttl_seconds", -1),
    ("max_breakpoints", 10),
    ("min_tokens", 1.5),
    ("step", 0),
    ("provider", 123),
    ("provider", ""),
    ("input_includes_cache", "no"),
    ("matches", "gpt-5"),
    ("matches", ("",)),
    ("notes", None),
]


@pytest.mark.parametrize(("name", "value"), BAD_FIGURES, ids=[f"{n}={v!r}" for n, v in BAD_FIGURES])
def test_every_field_of_a_price_model_is_checked_and_named(name: str, value: object) -> None:
    """NaN, inf, a string or None where a figure belongs, 10 markers where Anthropic allows 4: a ConfigError naming
    the field and what it accepts, never a TypeError here or a NaN in a bill later."""
    from agno_compression import ConfigError

    fields: dict[str, object] = {"provider": "x", "family": "y", "caching": "breakpoints", "read_rate": 0.1}
    with pytest.raises(ConfigError, match=rf"PriceModel\.{name} must be .+, got "):
        PriceModel(**{**fields, name: value})  # type: ignore[arg-type]


@given(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["read_rate", "write_rate", "ttl_seconds"]))
def test_a_price_model_accepts_a_rate_only_when_its_bill_is_a_finite_number(value: float, name: str) -> None:
    from agno_compression import ConfigError

    fields: dict[str, object] = {"provider": "x", "family": "y", "caching": "prefix", "read_rate": 0.1, name: value}
    try:
        price = PriceModel(**fields)  # type: ignore[arg-type]
    except ConfigError:
        return
    bill = price.billed(1000, read=500, written=250, written_long=10)
    assert bill == bill and bill != float("inf")


@pytest.mark.parametrize(
    ("model_id", "family"),
    [
        ("claude-opus-4-5-20251101", "claude-opus-4-5/4-6 / haiku-4-5"),
        ("claude-opus-4-50", "claude-sonnet-5 / opus-4-8 / sonnet-4"),  # the opus-4 row, not the opus-4-5 one
        ("gpt-5.1", "gpt-5"),
        ("gpt-4o-mini", "gpt-4o / o1 / o3-mini"),
        ("o1", "gpt-4o / o1 / o3-mini"),
        ("o10", "openai (unlisted model)"),
        ("gpt-50", "openai (unlisted model)"),
    ],
)
def test_price_rows_match_model_ids_on_a_name_boundary(model_id: str, family: str) -> None:
    provider = "anthropic" if model_id.startswith("claude") else "openai"
    assert price_model_for(provider=provider, model_id=model_id).family == family


# --- the manager's price model ---------------------------------------------------------------------------------


def test_the_manager_uses_the_table_row_of_each_model_or_the_users_own() -> None:
    import dataclasses

    from agno.models.anthropic import Claude

    from agno_compression import CompressionManager

    assert CompressionManager().price_for(Claude(id="claude-sonnet-5-5")).read_rate == 0.05
    mine = dataclasses.replace(CLAUDE, read_rate=0.08)
    assert CompressionManager(price_model=mine).price_for(Claude(id="claude-sonnet-5-5")) is mine


def test_cache_rate_is_deprecated_and_still_sets_the_read_rate() -> None:
    from agno.models.openai import OpenAIChat

    from agno_compression import CompressionManager

    with pytest.warns(DeprecationWarning, match="price_model"):
        manager = CompressionManager(cache_rate=0.25)
    assert manager.price_for(OpenAIChat(id="gpt-5")).read_rate == 0.25


def test_an_image_block_is_billed_by_anthropics_rule_for_its_size() -> None:
    """The loopback Anthropic server's rule for image blocks (docs.anthropic.com, vision, "Calculate image costs"):
    width x height / 750 from the image's own data, about 1,600 where the size is unknown; a document 1,600."""
    import base64
    import io

    from PIL import Image as Picture

    from agno_compression.pricing import anthropic_blocks
    from agno_compression.pricing._bodies import BLOCK_OVERHEAD

    out = io.BytesIO()
    Picture.new("RGB", (1000, 1000)).save(out, "PNG")
    data = base64.b64encode(out.getvalue()).decode()
    sources = [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}},
    ]
    body = {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": sources}]}
    found, _ = anthropic_blocks(body, lambda text: len(text.split()))
    assert [b.tokens - BLOCK_OVERHEAD for b in found[-3:]] == [1_334, 1_600, 1_600]
