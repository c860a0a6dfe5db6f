"""Offline evaluation tools: recorded agent runs, their replay through a real agno Agent, and scores.

What ``agno-compression eval`` runs, and what the benchmarks build on:

* loading recordings (tau-bench, OpenHands, SWE-agent, mini-swe-agent, TapeAgents, OpenAI chat) as
  agno messages: ``load_trajectories``, ``iter_shared_trajectories``;
* replaying one through a real Agent, offline, with or without a ``CompressionManager``: ``replay``,
  ``prepare_replay``;
* scoring replays: ``evaluate`` and the measures it uses (``cached_costs``, ``acted_on_facts``,
  ``fact_retention``, next-step ``grounding`` against ``needs_of`` a recording...).

This layer sits above the rest of the package: nothing outside ``agno_compression.eval``, the command line
(its session pages count cost as ``eval`` does) and the benchmarks imports it.
"""

from ..testing import run_in_mode  # kept here too: the replays' way of running an agent
from ._grounding import grounding, identifiers, missing, needs_of, prompt_text
from ._loaders import Trajectory, TrajectoryFormatError, iter_shared_trajectories, load_trajectories
from ._replay import (
    END_OF_RECORDING,
    PreparedReplay,
    ReplayResult,
    observations_as_tool_calls,
    prepare_replay,
    replay,
    split_turns,
)
from ._scoring import (
    CACHE_RATES,
    EvalRow,
    acted_on_facts,
    acted_retained,
    billed_costs,
    cached_costs,
    evaluate,
    fact_retention,
    last_prompt_text,
    totals,
)

__all__ = [
    "CACHE_RATES",
    "END_OF_RECORDING",
    "EvalRow",
    "PreparedReplay",
    "ReplayResult",
    "Trajectory",
    "TrajectoryFormatError",
    "acted_on_facts",
    "acted_retained",
    "billed_costs",
    "cached_costs",
    "evaluate",
    "fact_retention",
    "grounding",
    "identifiers",
    "iter_shared_trajectories",
    "last_prompt_text",
    "load_trajectories",
    "missing",
    "needs_of",
    "observations_as_tool_calls",
    "prepare_replay",
    "prompt_text",
    "replay",
    "run_in_mode",
    "split_turns",
    "totals",
]
