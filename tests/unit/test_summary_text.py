"""Lines cut to a token share stay within it, whatever characters they hold (``_keeping._summary_text``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agno_compression._keeping import _summary_text
from agno_compression.tokens import count_tokens

# ASCII words, and characters that take one token or several each (a rare script, raw bytes, an emoji)
TEXT = st.text(alphabet="ab _.\x81\x95ĲŅ𝔘😀", min_size=1, max_size=600)


@settings(deadline=None)  # the first example loads the tokenizer
@given(st.lists(TEXT, min_size=1, max_size=4), st.integers(min_value=10, max_value=300))
def test_cut_lines_stay_within_their_tokens(lines: list[str], max_tokens: int) -> None:
    out = _summary_text._cut_lines([f"- {x}" for x in lines], max_tokens, count_tokens)
    assert out, "the newest line stays, shortened if need be"
    # within its tokens, or one line already down to the least kept (16 characters and an ellipsis)
    assert count_tokens("\n".join(out)) <= max_tokens or (len(out) == 1 and len(out[0]) <= 17)


@settings(deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=5), st.integers(min_value=20, max_value=300))
def test_the_requests_stay_within_their_share(requests: list[str], max_tokens: int) -> None:
    out = _summary_text._condense_requests([f"- {x}" for x in requests], max_tokens, count_tokens)
    kept = [line for line in out if not line.startswith("- (")]
    assert kept, "the first request stays"
    # within the share, or each line already down to the least kept (16 characters and an ellipsis)
    assert count_tokens("\n".join(out)) <= max_tokens or all(len(line) <= 17 for line in kept)
