"""The working set a fold holds: the room its section gets, and a kept summary giving its section up."""

from __future__ import annotations

from dataclasses import replace

from agno.models.message import Message
from hypothesis import given, settings
from hypothesis import strategies as st

from agno_compression._held import (
    HALF_LIFE,
    IN_USE_RATIO,
    RECENT_CALLS,
    Pricing,
    carried_tokens,
    room,
    rooms,
    use_chance,
    without_section,
)
from agno_compression._held import caps as held_caps
from agno_compression._keeping._working_set import OUTLINE_SHARE, Artifact, render, split
from agno_compression._plan import HISTORY, PROGRESS, make_summary_message, plan_fold, summary_kind

WORDS = len


def _summary(kind: str, body: str, files: dict[str, str]) -> Message:
    artifacts = [Artifact(path, "file", text, n, path=path) for n, (path, text) in enumerate(files.items())]
    section = render(artifacts, 10_000, WORDS)
    return make_summary_message(f"{body}\n\n{section}" if section else body, kind)


def test_the_room_is_the_ratio_of_what_a_fold_can_free_above_the_request_within_the_cap() -> None:
    assert room(fixed=2_000, limit=8_000, rest=3_000, ratio=0.85, cap=10_000) == 2_000 + 5_100 - 3_000
    assert room(fixed=2_000, limit=8_000, rest=3_000, ratio=0.85, cap=1_500) == 1_500, "the cap bounds it"
    assert room(fixed=0, limit=8_000, rest=9_000, ratio=0.85, cap=4_000) < 0, "nothing when the rest fills it"


@given(
    fixed=st.integers(0, 20_000),
    limit=st.integers(256, 200_000),
    rest=st.integers(0, 200_000),
    ratio=st.floats(0, 0.95),
    cap=st.integers(0, 50_000),
)
def test_the_section_never_takes_the_prompt_past_the_budget(
    fixed: int, limit: int, rest: int, ratio: float, cap: int
) -> None:
    given_room = room(fixed=min(fixed, limit), limit=limit, rest=rest, ratio=ratio, cap=cap)
    assert given_room <= cap
    assert rest + given_room <= max(limit, rest), "the rest plus the section stays within the budget"


def test_a_kept_summary_gives_its_section_up_and_keeps_its_kind_and_text() -> None:
    summary = _summary(PROGRESS, "## Working state\n- edited: a.py", {"a.py": "def run_step(x):\n    return x"})
    assert "## Working set" in summary.get_content_string()
    bare = without_section(summary)
    assert bare is not None and summary_kind(bare) == PROGRESS
    assert bare.get_content_string() == "## Working state\n- edited: a.py"
    assert split(summary.get_content_string())[1][0].text.startswith("def run_step"), "the fold reads it back first"
    plain = make_summary_message("## Working state", HISTORY)
    assert without_section(plain) is plain and without_section(None) is None


def test_what_the_kept_summaries_carry_is_counted_and_an_absorbed_one_is_not() -> None:
    files = {"a.py": "def run_step(x):\n    return x" * 20}
    history = _summary(HISTORY, "earlier", files)
    messages = [history, Message(role="user", content="go on"), Message(role="assistant", content="ok")]
    kept = plan_fold(messages)
    assert kept.kept_summaries() == [history]
    assert carried_tokens(kept, WORDS) == len(history.get_content_string()) - len("earlier")
    older = [Message(role="user", content="first"), Message(role="assistant", content="done"), *messages]
    absorbed = plan_fold([history, *older[:2], *messages[1:]])
    assert absorbed.history and absorbed.kept_summaries() == []
    assert carried_tokens(absorbed, WORDS) == 0


def test_what_the_request_still_asks_for_gets_the_pending_ratio_never_less_than_the_ratio() -> None:
    low, high = rooms(fixed=2_000, limit=8_000, rest=3_000, ratio=0.6, cap=10_000)
    assert (low, high) == (room(2_000, 8_000, 3_000, 0.6, 10_000), room(2_000, 8_000, 3_000, IN_USE_RATIO, 10_000))
    assert low < high
    assert rooms(fixed=0, limit=8_000, rest=0, ratio=0.95, cap=10_000) == (7_600, 7_600)
    assert rooms(fixed=0, limit=8_000, rest=0, ratio=0.6, cap=3_000) == (3_000, 3_000), "both within the cap"


def _messages(calls: int) -> list[Message]:
    """A run: its request, then ``calls`` model calls."""
    return [Message(role="user", content="go"), *(Message(role="assistant", content=f"step {i}") for i in range(calls))]


CLAUDE = Pricing(read=0.1, fresh=1.25, calls=10, prompt=8_000)


def test_holding_pays_while_a_miss_would_cost_more_than_the_calls_until_the_next_fold() -> None:
    # certain use: a read costs one call (the prompt from the cache) and its output written once
    assert CLAUDE.pays(500, 1.0) and not CLAUDE.pays(2_000, 1.0)
    assert CLAUDE.pays(300, 0.6) and not CLAUDE.pays(300, 0.2), "the less likely its use, the smaller what pays"
    assert not Pricing(read=0.5, fresh=1.0, calls=10, prompt=8_000).pays(500, 0.5), "dearer reads hold less"


@settings(deadline=None)
@given(idle=st.integers(0, 500))
def test_the_chance_of_use_halves_with_idle_calls_after_the_recent_ones(idle: int) -> None:
    assert use_chance(idle) == (1.0 if idle <= RECENT_CALLS else 0.5 ** ((idle - RECENT_CALLS) / HALF_LIFE))
    assert use_chance(idle + 1) <= use_chance(idle)


def test_a_file_idle_for_long_is_held_whole_outlined_or_not_at_all_by_its_price() -> None:
    messages = _messages(60)
    small = Artifact("/small.py", "file", "x = 1\n" * 40, len(messages) - 21, path="/small.py")  # idle 20 calls
    large = Artifact("/large.py", "file", "value_name = compute(other_name)\n" * 800, 1, path="/large.py")
    recent = Artifact("/recent.py", "file", "y = 2\n" * 2_000, len(messages) - 3, path="/recent.py")
    drawn = Artifact("/drawn.py", "file", "z = 3\n" * 2_000, 1, path="/drawn.py")
    caps = held_caps([small, large, recent, drawn], messages, frozenset({"/drawn.py"}), CLAUDE)
    assert caps["/small.py"] is None, "a small file pays whole"
    assert caps["/large.py"] == 0, "a large file idle for sixty calls costs more than reading it again"
    faded = held_caps([replace(small, used=1)], messages, frozenset(), CLAUDE)
    assert faded["/small.py"] == int((len(small.text) // 4 + 1) * OUTLINE_SHARE), "idle long: its outline pays"
    assert "/recent.py" not in caps and "/drawn.py" not in caps, "files in use are held while the room lasts"
    assert held_caps([small, large], messages, frozenset(), None) == {}, "hold_by_price=False: no caps"


def test_what_the_section_leaves_out_is_named_with_how_to_get_it_back_and_split_takes_the_line_away() -> None:
    kept = Artifact("/kept.py", "file", "KEPT = 1", 5, path="/kept.py", via="Read")
    left = Artifact("/left.py", "file", "LEFT = 2\n" * 400, 3, path="/left.py", via="Read")
    section = render([kept, left], 10_000, WORDS, caps={"/left.py": 0})
    assert "LEFT = 2" not in section
    assert section.endswith("`/left.py` (Read)") and "search_folded_history" in section
    text, artifacts = split(f"summary body\n\n{section}\n")
    assert text == "summary body" and [a.key for a in artifacts] == ["/kept.py"], "the line goes with its section"


def test_a_wide_file_past_the_rooms_share_still_leaves_room_for_the_line_naming_what_is_left_out() -> None:
    drawn = Artifact("/drawn.py", "file", "DRAWN = 1\n" * 50, 5, path="/drawn.py", via="Read")
    left = Artifact("/left.py", "file", "LEFT = 2\n" * 400, 3, path="/left.py", via="Read")
    section = render([drawn, left], 150, WORDS, wide=({"/drawn.py"}, 1_000), caps={"/left.py": 0})
    assert "DRAWN = 1" in section and WORDS(section) > 150, "the file a write draws on takes its wide room"
    assert section.endswith("`/left.py` (Read)"), section[-200:]
