"""The working set a fold holds: the room its section gets, and a kept summary giving its section up."""

from __future__ import annotations

from agno.models.message import Message
from hypothesis import given
from hypothesis import strategies as st

from agno_compression._held import IN_USE_RATIO, carried_tokens, room, rooms, without_section
from agno_compression._plan import HISTORY, PROGRESS, make_summary_message, plan_fold, summary_kind
from agno_compression._working_set import Artifact, render, split

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
