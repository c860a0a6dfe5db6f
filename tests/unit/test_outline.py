"""The outline of a file too large to keep whole: the lines with the most names, in file order, within a size."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agno_compression._outline import _DECLARATION, GAP, outline, with_gaps
from agno_compression._reading import identifiers_in

MODULE = "\n".join(
    [
        "package scheduler",
        "",
        'import "time"',
        "",
        "type JobQueue []Job",
        "",
        "type Scheduler struct {",
        "\tqueue JobQueue",
        "}",
        "",
        "func (s *Scheduler) run_command(job Job, timeout_seconds time.Duration) error {",
        *[f"\tstep_{i} := compute_value_{i}(job.input_{i})" for i in range(40)],
        "\treturn nil",
        "}",
    ]
)


def rescore_every_line(text: str, max_chars: int) -> str:
    """The outline's rule spelled out the slow way: every line rescored before each choice."""
    lines = text.split("\n")
    names = [set(identifiers_in(line)) for line in lines]
    weight = [3.0 if _DECLARATION.match(line) else 1.0 for line in lines]
    chosen: set[int] = set()
    seen: set[str] = set()
    used = 0
    candidates = [i for i, found in enumerate(names) if found]
    while candidates and used < max_chars:
        best, score = -1, 0.0
        for i in candidates:
            value = weight[i] * len(names[i] - seen) / (len(lines[i].strip()) + 8)
            if value > score:
                best, score = i, value
        if best < 0:
            break
        if used + len(lines[best]) + 1 > max_chars:
            candidates.remove(best)
            continue
        chosen.add(best)
        seen |= names[best]
        used += len(lines[best]) + 1
        candidates = [i for i in candidates if i != best and names[i] - seen]
    return with_gaps(lines, chosen)


def test_an_outline_keeps_the_lines_with_the_most_names_in_file_order() -> None:
    short = outline(MODULE, 400)
    assert len(short) <= 400 + 10 * len(GAP)
    kept = [line for line in short.split("\n") if line != GAP]
    assert kept == [line for line in MODULE.split("\n") if line in kept], "file order"
    assert any("func (s *Scheduler) run_command" in line for line in kept)
    assert "type JobQueue []Job" in kept, "a declaration counts three times"


def test_nothing_with_names_or_no_room_gives_an_empty_outline() -> None:
    assert outline("\n\n   \n", 1_000) == ""
    assert outline(MODULE, 0) == ""


NAME = st.sampled_from(["alpha_one", "beta.two", "GammaThree", "delta_4", "epsilon/five", "zeta_six", "x", "the"])
LINE = st.one_of(
    st.lists(NAME, max_size=6).map(" ".join),
    st.lists(NAME, min_size=1, max_size=4).map(lambda ns: "def " + "(".join(ns)),
)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(LINE, max_size=40), max_chars=st.integers(min_value=0, max_value=600))
def test_the_outline_is_the_one_rescoring_every_line_would_choose(lines: list[str], max_chars: int) -> None:
    text = "\n".join(lines)
    short = outline(text, max_chars)
    assert short == rescore_every_line(text, max_chars)
    assert sum(len(line) + 1 for line in short.split("\n") if line != GAP) <= max(max_chars, 0) or not short
