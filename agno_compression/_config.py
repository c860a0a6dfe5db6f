"""Checks of ``CompressionManager``'s options: every field, its type and its range, before anything runs.

A wrong type must fail at construction with a ``ConfigError`` that names the option and the
value, not later inside a run as a raw ``TypeError`` (``"0.5" < 1.0``) or, worse, be accepted
and misbehave (a summarizer class instead of an instance, ``True`` as a number).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

from ._exceptions import ConfigError
from ._observations import ObservationPolicy
from ._summarizers import Pipeline, Summarizer

_SUMMARIZER_NAMES = ("extractive", "llm", "mask", "pipeline")


def _bad(name: str, value: Any, expected: str) -> ConfigError:
    return ConfigError(f"{name} must be {expected}, got {value!r} ({type(value).__name__})")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    """A finite int or float; bools and numeric strings are not numbers here."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _int(name: str, value: Any, low: int, high: int | None = None, *, optional: bool = False) -> None:
    if optional and value is None:
        return
    if not _is_int(value) or value < low or (high is not None and value > high):
        span = f"from {low} to {high}" if high is not None else f">= {low}"
        raise _bad(name, value, ("None or " if optional else "") + f"an int {span}")


def _bool(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise _bad(name, value, "True or False")


def _instance(name: str, value: Any, protocol: Any, what: str) -> None:
    # runtime protocols accept a class too (its methods are attributes): only instances may pass
    if isinstance(value, type) or not isinstance(value, protocol):
        hint = f"an instance, not the class {value.__name__}" if isinstance(value, type) else what
        raise _bad(name, value, hint)


def _summarizer(value: Any) -> None:
    if isinstance(value, str):
        if value.strip().lower() not in _SUMMARIZER_NAMES:
            raise _bad("summarizer", value, "one of 'extractive', 'llm', 'mask', 'pipeline' or a Summarizer object")
        return
    if isinstance(value, Pipeline):
        if value.summarizer is not None:
            _instance("summarizer", value.summarizer, Summarizer, "a Summarizer object")
        return
    _instance("summarizer", value, Summarizer, "a name or a Summarizer object (summarize/asummarize methods)")


def _observations(value: Any) -> None:
    if value is None:
        return
    if isinstance(value, Mapping):
        for key, policy in value.items():
            if not isinstance(key, str):
                raise _bad("observations", key, "a mapping with tool-name (str) keys")
            if policy is not None:
                _instance(f"observations[{key!r}]", policy, ObservationPolicy, "None or an ObservationPolicy")
        return
    _instance("observations", value, ObservationPolicy, "None, an ObservationPolicy (apply method) or a dict of them")


def _tool_kinds(value: Any) -> None:
    from ._keeping._working_set import KINDS

    if value is None:
        return
    if not isinstance(value, Mapping):
        raise _bad("tool_kinds", value, "None or a dict of tool name -> kind")
    for key, kind in value.items():
        if not isinstance(key, str):
            raise _bad("tool_kinds", key, "a dict with tool-name (str) keys")
        if kind is not None and kind not in KINDS:
            raise _bad(f"tool_kinds[{key!r}]", kind, f"None or one of {', '.join(map(repr, KINDS))}")


def _model(value: Any) -> Any:
    """``None``, an agno ``Model``, or agno's ``"provider:model_id"`` string (resolved like agno does)."""
    from agno.models.base import Model

    if value is None or (isinstance(value, Model) and not isinstance(value, type)):
        return value
    if isinstance(value, str):
        from agno.models.utils import get_model

        try:
            return get_model(value)
        except Exception as exc:
            raise ConfigError(f"model {value!r} cannot be resolved by agno: {exc}") from exc
    raise _bad("model", value, "None, an agno Model instance or a 'provider:model_id' string")


def _counter(value: Any) -> None:
    if value is None:
        return
    needed = ("count_prompt", "count_message", "count_text", "calibrate")
    if isinstance(value, type) or not all(callable(getattr(value, m, None)) for m in needed):
        raise _bad("token_counter", value, "None or a TokenCounter instance")


def _store(value: Any) -> None:
    if value is None:
        return
    if isinstance(value, type) or not all(callable(getattr(value, m, None)) for m in ("record", "load", "events")):
        raise _bad("store", value, "None or a CompressionStore instance (record, load, events)")


def _price_model(value: Any) -> None:
    from .pricing import PriceModel

    if value is not None and not isinstance(value, PriceModel):
        raise _bad("price_model", value, "None or an agno_compression.pricing.PriceModel")


def _callable(name: str, value: Any) -> None:
    if value is not None and (isinstance(value, type) or not callable(value)):
        raise _bad(name, value, "None or a function")


def _optional_str(name: str, value: Any) -> None:
    if value is not None and not isinstance(value, str):
        raise _bad(name, value, "None or a string")


MIN_BUDGET = 256
"""The smallest ``compress_at_tokens``, and the smallest ``--budget`` any command takes."""


def check_options(manager: Any) -> None:
    """Raise ``ConfigError`` for the first option of ``manager`` with a wrong type or value; resolve ``model``."""
    m = manager
    _int("compress_at_tokens", m.compress_at_tokens, MIN_BUDGET)
    _summarizer(m.summarizer)
    if not _is_real(m.target_ratio) or not 0.05 <= m.target_ratio <= 1.0:
        raise _bad("target_ratio", m.target_ratio, "a number from 0.05 to 1.0")
    if not _is_real(m.verbatim_ratio) or not 0.0 <= m.verbatim_ratio <= 0.9:
        raise _bad("verbatim_ratio", m.verbatim_ratio, "a number from 0 to 0.9")
    if not _is_real(m.working_set_ratio) or not 0.0 <= m.working_set_ratio <= 0.95:
        raise _bad("working_set_ratio", m.working_set_ratio, "a number from 0 to 0.95")
    _int("max_working_set_tokens", m.max_working_set_tokens, 0)
    _bool("hold_by_price", m.hold_by_price)
    _tool_kinds(m.tool_kinds)
    _int("max_summary_tokens", m.max_summary_tokens, 50)
    if not _is_real(m.ledger_ratio) or not 0.0 <= m.ledger_ratio <= 0.5:
        raise _bad("ledger_ratio", m.ledger_ratio, "a number from 0 to 0.5")
    if not _is_int(m.min_summary_tokens) or not 10 <= m.min_summary_tokens <= m.max_summary_tokens:
        raise _bad(
            "min_summary_tokens", m.min_summary_tokens, f"an int from 10 to max_summary_tokens ({m.max_summary_tokens})"
        )
    _counter(m.token_counter)
    if not _is_real(m.summarizer_timeout) or m.summarizer_timeout <= 0:
        raise _bad("summarizer_timeout", m.summarizer_timeout, "a finite number of seconds > 0")
    share = m.background_summary_at
    if share is not None and (not _is_real(share) or not 0.05 <= share <= 1.0):
        raise _bad("background_summary_at", share, "None or a number from 0.05 to 1.0")
    _callable("on_fold", m.on_fold)
    _store(m.store)
    _bool("persist", m.persist)
    if not _is_real(m.store_cooldown) or m.store_cooldown < 0:
        raise _bad("store_cooldown", m.store_cooldown, "a finite number of seconds >= 0")
    _observations(m.observations)
    _bool("drop_failed_calls", m.drop_failed_calls)
    _int("retained_turns", m.retained_turns, 0, optional=True)
    _bool("output_guidance", m.output_guidance)
    _int("overflow_retries", m.overflow_retries, 0, 10)
    _bool("search_tool", m.search_tool)
    _bool("fold_tool", m.fold_tool)
    if m.cache_rate is not None:
        if not _is_real(m.cache_rate) or not 0.0 <= m.cache_rate <= 1.0:
            raise _bad("cache_rate", m.cache_rate, "None or a number from 0 to 1")
        warnings.warn(
            "CompressionManager(cache_rate=...) is deprecated: pass price_model= (agno_compression.pricing) instead",
            DeprecationWarning,
            stacklevel=4,
        )
    _int("payback_calls", m.payback_calls, 1, optional=True)
    _bool("prompt_caching", m.prompt_caching)
    _price_model(m.price_model)
    # agno's own fields, inherited: the manager overrides the three limits, but a wrong type is still a mistake
    m.model = _model(m.model)
    _bool("compress_tool_results", m.compress_tool_results)
    _int("compress_tool_results_limit", m.compress_tool_results_limit, 1, optional=True)
    _int("compress_token_limit", m.compress_token_limit, 1, optional=True)
    _optional_str("compress_tool_call_instructions", m.compress_tool_call_instructions)
    if not isinstance(m.stats, dict):
        raise _bad("stats", m.stats, "a dict")


CHECKED: tuple[str, ...] = (
    "compress_at_tokens",
    "summarizer",
    "target_ratio",
    "verbatim_ratio",
    "working_set_ratio",
    "max_working_set_tokens",
    "hold_by_price",
    "tool_kinds",
    "max_summary_tokens",
    "ledger_ratio",
    "min_summary_tokens",
    "token_counter",
    "summarizer_timeout",
    "background_summary_at",
    "on_fold",
    "store",
    "persist",
    "store_cooldown",
    "observations",
    "drop_failed_calls",
    "retained_turns",
    "output_guidance",
    "overflow_retries",
    "search_tool",
    "fold_tool",
    "payback_calls",
    "prompt_caching",
    "price_model",
    "cache_rate",
    "model",
    "compress_tool_results",
    "compress_tool_results_limit",
    "compress_token_limit",
    "compress_tool_call_instructions",
    "stats",
)
"""Every field ``check_options`` checks; a test holds it equal to the manager's dataclass fields."""
