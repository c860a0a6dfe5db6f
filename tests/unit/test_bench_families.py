"""The every-family bench (bench/families.py): the fold rate a recording itself sets at a budget, the fold rate where
the request leaves no room, and the cost floor beside the cost, as its table reports them. Benchmarks are not tests;
this checks what those figures mean."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import families  # noqa: E402


def test_the_least_folds_come_only_over_the_budget_and_land_on_the_floor() -> None:
    # 2k, 6k, 10k: over 8k, lands on its 3k floor; +4k is 7k, under; +4k is 11k: the second fold
    assert families.least_folds([2_000, 6_000, 10_000, 14_000, 18_000], [2_000, 3_000, 3_000, 4_000, 5_000], 8_000) == 2


def test_a_call_whose_floor_is_over_the_budget_is_no_fold_and_a_shrinking_prompt_adds_nothing() -> None:
    # a run with no room: 9k, 12k, 15k over floors of 9k and more fold nothing; the floor fits again at 16k: one fold
    assert families.least_folds([9_000, 12_000, 15_000, 16_000], [9_000, 9_500, 9_800, 3_000], 8_000) == 1
    assert families.least_folds([5_000, 3_000, 6_000], [1_000, 1_000, 1_000], 8_000) == 0


def test_the_calls_with_no_room_are_those_whose_request_leaves_under_a_fifth_and_their_folds_are_counted() -> None:
    # at 8k a fifth is 1.6k: 6.5k leaves room, 6.5k + 1 does not
    fixed = [6_400, 6_401, 7_000, 9_000, 2_000]
    assert families.no_room_folds(fixed, [0, 1, 3, 4], 8_000) == (3, 2)
    assert families.no_room_folds(fixed, [], 16_000) == (0, 0)


def test_the_table_gives_the_least_folds_and_the_floor_beside_the_default() -> None:
    pop = families.Population("fam", "tune", [])
    f = families.Figures(runs=1, within=1, calls=50, folds=6, least_folds=3, cost=40.0, cost_none=100.0, floor=20.0)
    f.no_room_calls, f.no_room_folds = 20, 4
    f.needed = f.grounded = 10
    text = families.render([pop], ["extractive"], {}, [16_000], {("fam", "tune", "extractive", 16_000): f}, {}, "c", 60)
    header = next(line for line in text.splitlines() if line.startswith("| family |"))
    row = next(line for line in text.splitlines() if line.startswith("| fam |"))
    cells = dict(zip(header.strip("|").split(" | "), row.strip("|").split(" | "), strict=True))
    assert cells["folds/100 calls"].strip() == "12.0"
    assert cells["least folds/100"].strip() == "6.0"
    assert cells["folds/100 with no room"].strip() == "20.0"
    assert (cells["cost cached ÷ none"].strip(), cells["floor ÷ none"].strip()) == ("0.40", "0.20")
