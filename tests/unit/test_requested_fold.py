"""What a fold's instructions keep (``_summarizers.kept_lines``, the extractive summary's kept section), the agent's
``fold_context`` answer and ``FoldResult``."""

from __future__ import annotations

from agno.models.message import Message
from hypothesis import example, given
from hypothesis import strategies as st

from agno_compression import ExtractiveSummarizer, SummaryRequest
from agno_compression._keeping._summary_text import KEPT_SHARE
from agno_compression._requested_fold import FoldResult, ask_fold
from agno_compression._runs import RunState
from agno_compression._summarizers import KEPT_LINES, kept_lines
from agno_compression.tokens import count_tokens


def span() -> list[Message]:
    lines = [f"step {k}: compiled module_{k} in 0.{k}s" for k in range(40)]
    return [
        Message(role="user", content="build everything"),
        Message(role="tool", tool_call_id="c1", content="\n".join([*lines, "DATABASE_URL=postgres://db:5432/app"])),
    ]


def test_the_rarest_named_lines_come_first() -> None:
    kept = kept_lines(span(), "keep the DATABASE_URL and module_7")
    assert kept[0] == "- asked to keep: keep the DATABASE_URL and module_7"
    best = " ".join(kept[1:3])  # each named once: both lead, before lines naming a common word
    assert '"DATABASE_URL=postgres://db:5432/app"' in best and "module_7 in" in best
    assert kept_lines(span(), None) == [] and kept_lines(span(), "  ") == []
    assert len(kept_lines(span(), "compiled")) == 1 + KEPT_LINES


def summarize(instructions: str | None, previous: str | None = None, budget: int = 400) -> str:
    request = SummaryRequest(
        messages=span(),
        previous=previous,
        max_tokens=budget,
        count_tokens=count_tokens,
        instructions=instructions,
    )
    return ExtractiveSummarizer().summarize(request).text


def test_the_kept_section_leads_and_outlives_later_folds() -> None:
    first = summarize("keep DATABASE_URL")
    assert first.index("## Kept on request") < first.index("## User requests")
    later = summarize(None, previous=first)
    assert "DATABASE_URL=postgres://db:5432/app" in later.split("## User requests")[0], "a later fold keeps it"
    assert "## Kept on request" not in summarize(None), "no instructions, no section"


@given(st.text(min_size=1, max_size=3000), st.integers(min_value=200, max_value=2000))
@example("0\x810\x95" * 12 + "\x95" * 14 + "ĲĲĲĲŅŅŅŔŔŜŜƀƀƀƑ", 200)  # found by CI: a character several tokens
def test_a_kept_section_stays_within_its_share(instructions: str, budget: int) -> None:
    text = summarize(instructions, budget=budget)
    if "## Kept on request" in text:
        section = text.split("## Kept on request\n", 1)[1].split("\n## ", 1)[0]
        assert count_tokens(section) <= int(budget * KEPT_SHARE) + 60


def test_the_agent_asks_and_the_next_call_folds() -> None:
    state = RunState(live=[])
    assert "kept first: the schema" in ask_fold(state, "  the schema ")
    assert state.asked == "the schema"
    assert "Nothing to fold" in ask_fold(None, "x")
    assert ask_fold(state, "x" * 5000) and len(state.asked) == 2000
    from agno.models.anthropic import Claude

    compacting = RunState(
        live=[], model=Claude(id="claude-sonnet-4-5", context_management={"edits": [{"type": "compact_20260112"}]})
    )
    assert "compacts this conversation itself" in ask_fold(compacting, "x") and compacting.asked is None


def test_a_result_reads_as_json() -> None:
    result = FoldResult("folded", "folded 3 messages", "s", 3, 900, 300, "summary", 7)
    assert result.folded and result.to_dict()["folded"] is True and result.to_dict()["record_id"] == 7
