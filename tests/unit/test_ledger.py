"""The ledger's cheap scans before its regexes find exactly what the regexes alone find."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from agno_compression import _ledger, _summarizers
from agno_compression._ledger import mentions, outcome_of
from tests.strategies import examples

# words and letters that decide a match: ASCII in any case, and the non-ASCII letters re.I folds into ASCII ones
_PIECES = st.sampled_from(
    [
        "exit",
        "EXIT",
        "Exited with code",
        "returncode",
        "status",
        "ſtatus",
        "eKit",
        "Error",
        "Exception",
        "ERROR",
        "Traceback",
        "FAILED",
        "fail",
        "panic",
        "assert",
        "3 passed",
        "1 xfailed",
        "2 errors",
        " 0",
        ": 2",
        "=",
        "\n",
        "ValueError",
        "code",
        " ",
        "x",
        "é",
    ]
)
_TEXTS = st.lists(_PIECES, max_size=12).map("".join)


@settings(max_examples=examples(400), deadline=None)
@given(_TEXTS)
def test_mentions_never_hides_a_match(text: str) -> None:
    checks = [
        (_ledger._EXIT, ("exit", "return")),
        (_summarizers._EXIT, _summarizers._EXIT_WORDS),
        (_summarizers._ERROR_LINE, _summarizers._ERROR_WORDS),
    ]
    for pattern, words in checks:
        if pattern.search(text):
            assert mentions(text, words), (pattern.pattern, text)


@settings(max_examples=examples(400), deadline=None)
@given(_TEXTS, st.booleans())
def test_outcome_and_errors_match_the_plain_regexes(text: str, failed: bool) -> None:
    exits = _ledger._EXIT.findall(text)
    counts = dict.fromkeys(f"{n} {k}" for n, k in _ledger._COUNTS.findall(text[-4000:]))
    parts = ([f"exit {exits[-1]}"] if exits else []) + list(counts)[-3:]
    assert outcome_of(text, failed) == ", ".join(parts or (["FAILED"] if failed else []))
    assert _ledger._errors_in(text) == _ledger._ERROR.findall(text)


def test_mentions_is_case_blind_and_says_yes_for_non_ascii_text() -> None:
    assert mentions("Process EXITED", ("exit",))
    assert not mentions("all good", ("exit", "error"))
    assert mentions("ſtatus", ("nothing",)), "non-ASCII text always goes to the regex"
    assert re.search(r"status", "ſtatus", re.I), "why: re.I folds the long s into s"
