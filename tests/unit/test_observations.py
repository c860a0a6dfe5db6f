"""Tests of ``agno_compression._observations``: type-aware truncation, plain shortening, tiered policy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agno_compression import TieredOutputPolicy, truncate_output
from agno_compression._exceptions import ConfigError
from agno_compression._observations import shorten_text
from tests.strategies import examples

# --------------------------------------------------------------------------- seed-shaped inputs

_LAYER_KINDS = ("conv2d_3x3", "batchnorm2d", "gelu", "attn_proj")


def layer_names(count: int = 500) -> list[str]:
    """Layer names like ``layer_0001_batchnorm2d`` (about 23.5 characters each once quoted and separated)."""
    return [f"layer_{i:04d}_{_LAYER_KINDS[i % 4]}" for i in range(count)]


def activation_stats(count: int = 100) -> dict[str, dict[str, float | int]]:
    """Per-layer activation statistics, about 105 characters per entry once printed."""
    return {
        f"model.layers.{i:02d}.mlp.act_fn": {
            "mean_abs": round(((i * 37) % 100 - 50) / 1000, 4),
            "std": round(0.5 + (i % 17) / 100, 4),
            "min": round(-3 - (i % 7) / 10, 2),
            "max": round(3 + (i % 5) / 10, 2),
            "numel": 4096 * (1 + i % 4),
        }
        for i in range(count)
    }


def training_log(lines: int = 1000) -> str:
    """A training log of ``lines`` lines, 67 or 68 characters each."""
    rows = []
    for i in range(lines):
        stamp = f"2024-05-01 12:{(i // 60) % 60:02d}:{i % 60:02d}"
        level = "INFO" if i % 9 == 0 else "DEBUG"
        rows.append(f"{stamp} {level} trainer: step {i:04d} loss={2.5 / (1 + i / 100):.4f} lr=3.0e-04\n")
    return "".join(rows)


def printed_layer_list() -> str:
    """What ``print(f"List of Layers:\\n{layers}")`` shows for 500 layers (the seed's scenario)."""
    return "List of Layers:\n" + str(layer_names())


def printed_stats() -> str:
    """What ``print(f"Activation stats:\\n{stats}")`` shows for 100 layers."""
    return "Activation stats:\n" + str(activation_stats())


SMALL_OUTPUT = "Model loaded: 24 layers, 1.3B params, dtype=float16"

# (name, input builder, seed input chars, seed output chars)
SEED_TABLE = [
    ("layer list (500 items)", printed_layer_list, 11_766, 2_099),
    ("dict stats (100 items)", printed_stats, 10_463, 2_129),
    ("long text (1000 lines)", training_log, 67_889, 2_102),
    ("small output", lambda: SMALL_OUTPUT, 51, 51),
]


def within(actual: int, expected: int, tolerance: float) -> bool:
    """True when ``actual`` is within ``tolerance`` (a fraction) of ``expected``."""
    return abs(actual - expected) <= tolerance * expected


# --------------------------------------------------------------------------- seed table


@pytest.mark.parametrize(("name", "build", "seed_in", "seed_out"), SEED_TABLE, ids=[row[0] for row in SEED_TABLE])
def test_seed_table_is_reproduced(name: str, build, seed_in: int, seed_out: int) -> None:
    text = build()
    assert within(len(text), seed_in, 0.01), f"{name}: input has {len(text)} chars"
    out = truncate_output(text)
    assert within(len(out), seed_out, 0.05), f"{name}: {len(text)} -> {len(out)}, seed says {seed_out}"


def test_bare_layer_list_is_cut_by_items() -> None:
    names = layer_names()
    out = truncate_output(str(names))
    assert out.startswith("[list with 500 items (11,750 chars); showing the first 10 and the last 2]\n")
    assert "... 488 more items ..." in out
    for name in names[:10] + names[-2:]:
        assert repr(name) in out
    for name in names[10:-2]:
        assert repr(name) not in out
    assert len(out) < 600


def test_bare_stats_dict_is_cut_by_keys() -> None:
    stats = activation_stats()
    out = truncate_output(str(stats))
    assert out.startswith("[dict with 100 keys (")
    assert "showing the first 10]" in out
    assert "... 90 more keys ..." in out
    keys = list(stats)
    first, eleventh = keys[0], keys[10]
    assert f"{first!r}: {stats[first]!r}" in out
    assert repr(eleventh) not in out
    assert len(out) <= 2000


def test_small_output_is_unchanged() -> None:
    assert len(SMALL_OUTPUT) == 51
    assert truncate_output(SMALL_OUTPUT) == SMALL_OUTPUT


# --------------------------------------------------------------------------- edge cases


def test_empty_input_gives_empty_output() -> None:
    assert truncate_output("") == ""


@pytest.mark.parametrize("max_chars", [100, 500, 2000])
def test_exact_limit(max_chars: int) -> None:
    at_limit = "x" * max_chars
    assert truncate_output(at_limit, max_chars) == at_limit
    over = "x" * (max_chars + 1)
    out = truncate_output(over, max_chars)
    assert out != over
    assert f"{max_chars + 1:,} chars in 1 line" in out


def test_list_literal_at_limit_is_unchanged() -> None:
    items: list[int] = []
    while len(str([*items, len(items)])) <= 2000:
        items.append(len(items))
    padded = str(items).ljust(2000)
    assert len(items) > 10
    assert truncate_output(padded) == padded
    assert truncate_output(padded + " ").startswith(f"[list with {len(items)} items")


def test_invalid_syntax_falls_back_to_text() -> None:
    broken = "[" + ", ".join(repr(name) for name in layer_names()) + ", 'oops"
    out = truncate_output(broken)
    assert "[... output truncated:" in out
    assert out.startswith(broken[:900])
    assert out.endswith(broken[-900:])


def test_json_scalar_is_treated_as_text() -> None:
    text = json.dumps("a" * 5000)
    out = truncate_output(text)
    assert "[... output truncated: 5,002 chars in 1 line" in out


def test_multiline_text_is_cut_at_whole_lines() -> None:
    log = training_log()
    lines = set(log.splitlines())
    out = truncate_output(log)
    out_lines = out.splitlines()
    notices = [line for line in out_lines if line.startswith("[... output truncated")]
    assert len(notices) == 1
    assert "67,8" in notices[0]
    assert "1,000 lines" in notices[0]
    assert "omitted" in notices[0]
    assert all(line in lines for line in out_lines if line not in notices)
    assert out_lines[0] == log.splitlines()[0]
    assert out_lines[-1] == log.splitlines()[-1]


def test_text_with_one_giant_line_is_cut_at_characters() -> None:
    text = "header\n" + "y" * 10_000 + "\nfooter\n"
    out = truncate_output(text)
    assert "showing the first 1,000 chars and the last 1,000 chars" in out
    assert len(out) <= 2000 + 200


def test_head_and_tail_chars_are_honoured() -> None:
    log = training_log()
    out = truncate_output(log, head_chars=300, tail_chars=100)
    head, _, tail = out.partition("[... output truncated")
    assert 150 <= len(head) <= 301
    tail_text = tail.split("\n", 1)[1]
    assert 50 <= len(tail_text) <= 100


def test_one_of_head_and_tail_chars_takes_the_rest() -> None:
    out = truncate_output("z" * 5000, 1000, head_chars=900)
    assert out.startswith("z" * 900 + "\n[...")
    assert out.endswith("\n" + "z" * 100)


def test_nested_structures_stay_within_budget() -> None:
    records = [
        {"id": i, "text": "lorem ipsum " * 400, "tags": list(range(300)), "meta": {"a": {"b": {"c": [1, 2, 3] * 100}}}}
        for i in range(40)
    ]
    text = json.dumps(records)
    out = truncate_output(text)
    assert len(out) <= 2000
    assert out.startswith(f"[list with 40 items ({len(text):,} chars); showing the first 10 and the last 2; ")
    assert "long values shortened" in out.splitlines()[0]
    assert '"id": 0' in out and '"id": 39' in out and '"id": 10,' not in out
    assert '"...(+4,782 chars)' in out
    assert "more items ..." in out


def test_dict_with_few_keys_and_huge_values() -> None:
    text = json.dumps({"stdout": "line\n" * 3000, "stderr": "", "exit_code": 0})
    out = truncate_output(text)
    assert len(out) <= 2000
    assert out.startswith("[dict with 3 keys (")
    assert '"exit_code": 0' in out
    assert '"stderr": ""' in out


def test_deeply_nested_structure_is_summarised() -> None:
    value: object = "leaf" * 600
    for _ in range(30):
        value = [value]
    out = truncate_output(json.dumps(value))
    assert len(out) <= 2000
    assert "[... 1 item]" in out


def test_python_literal_list_keeps_python_notation() -> None:
    values = [None, True, ("a", 1), {"x": 1.5}, b"raw"] * 100
    out = truncate_output(str(values))
    assert out.startswith("[list with 500 items")
    assert "None," in out and "True," in out and "('a', 1)," in out and "b'raw'" in out


def test_python_tuple_and_set_literals() -> None:
    out = truncate_output(str(tuple(range(1000))))
    assert out.startswith("[tuple with 1,000 items")
    assert out.splitlines()[1] == "("
    out_set = truncate_output(str(set(range(1000))))
    assert out_set.startswith("[set with 1,000 items")
    assert out_set == truncate_output(str(set(range(1000))))


def test_json_keeps_json_notation() -> None:
    out = truncate_output(json.dumps([{"ok": True, "value": None}] * 300))
    assert '{"ok": true, "value": null}' in out


def test_csv_keeps_header_and_whole_rows() -> None:
    header = "id,name,score,comment"
    rows = [f"{i},user_{i},{i * 7 % 100},{'fine' if i % 2 else 'needs review'}" for i in range(2000)]
    text = "\n".join([header, *rows]) + "\n"
    out = truncate_output(text, 600)
    lines = out.splitlines()
    assert lines[0] == header
    notice = next(line for line in lines if line.startswith("[..."))
    assert "table truncated" in notice and "a header and 2,000 rows" in notice
    body = [line for line in lines if line != notice]
    assert all(line.count(",") == 3 for line in body)
    assert body[-1] == rows[-1]


def test_csv_with_a_huge_header_is_plain_text() -> None:
    header = ",".join(f"column_{i}" for i in range(300))
    text = header + "\n" + "\n".join(",".join("1" * 300) for _ in range(20))
    out = truncate_output(text)
    assert "output truncated" in out


def test_unicode_counts_characters_and_keeps_clusters() -> None:
    text = "👩‍💻 résumé e\u0301 🇫🇷 " * 400
    out = truncate_output(text)
    assert f"{len(text):,} chars" in out
    out.encode("utf-8")
    for index, char in enumerate(out):
        if unicodedata.category(char).startswith("M"):
            assert out[index - 1] == "e"
        if char == "\u200d":
            assert out[index - 1] == "👩" and out[index + 1] == "💻"


def test_surrogate_pairs_are_never_split() -> None:
    pair = "\ud83d\ude00"
    for offset in range(4):
        text = "a" * offset + (pair + "b") * 2000
        for out in (truncate_output(text), shorten_text(text, 333)):
            for index, char in enumerate(out):
                if "\ud800" <= char <= "\udbff":
                    assert out[index + 1] == "\ude00"
                if "\udc00" <= char <= "\udfff":
                    assert out[index - 1] == "\ud83d"


def test_output_is_deterministic() -> None:
    for text in (printed_layer_list(), str(set(layer_names())), training_log()):
        assert truncate_output(text) == truncate_output(text)


def test_a_long_list_shows_its_head_then_the_omission_then_its_tail() -> None:
    out = truncate_output(str(list(range(1000))), 300)
    lines = out.splitlines()
    assert lines[0] == "[list with 1,000 items (4,890 chars); showing the first 10 and the last 2]"
    assert lines[1:] == ["[", *(f"  {i}," for i in range(10)), "  ... 988 more items ...,", "  998,", "  999", "]"]


SET_NAMES = [f"k{i:03d}" for i in range(300)]


def test_set_items_are_shown_sorted() -> None:
    """A set's iteration order of strings changes with PYTHONHASHSEED: the output must not (a replay compares it)."""
    names = SET_NAMES
    expected = ["{", *(f"  {n!r}," for n in names[:10]), "  ... 288 more items ...,", "  'k298',", "  'k299'", "}"]
    assert truncate_output(str(set(names)), 300).splitlines()[1:] == expected


def test_set_output_is_the_same_under_two_hash_seeds() -> None:
    """The same, across processes: what differs between two runs of an agent (the in-process order may match)."""
    names = SET_NAMES
    code = "import sys; from agno_compression import truncate_output; print(truncate_output(sys.argv[1], 300))"
    outs = {
        subprocess.run(
            [sys.executable, "-c", code, str(set(names))],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outs) == 1, "the output depends on the process's hash seed"


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"max_chars": 99}, "99"),
        ({"max_chars": True}, "True"),
        ({"max_chars": 2000.0}, "2000.0"),
        ({"list_items": 0}, "list_items"),
        ({"list_tail": -1}, "-1"),
        ({"dict_items": 0}, "dict_items"),
        ({"head_chars": 1500, "tail_chars": 1500}, "1500"),
        ({"head_chars": -5}, "-5"),
        ({"head_chars": 0, "tail_chars": 0}, "head_chars"),
    ],
)
def test_invalid_arguments_raise_config_error(kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        truncate_output("text", **kwargs)  # type: ignore[arg-type]


def test_non_string_output_raises_config_error() -> None:
    with pytest.raises(ConfigError, match="NoneType"):
        truncate_output(None)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- properties

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=300),
    lambda children: st.lists(children, max_size=40) | st.dictionaries(st.text(max_size=30), children, max_size=30),
    max_leaves=400,
)

log_text = st.lists(st.text(st.characters(exclude_characters="\n"), max_size=200), max_size=300).map("\n".join)


@settings(max_examples=examples(300), deadline=None)
@given(text=st.text(max_size=6000) | log_text, max_chars=st.integers(100, 3000))
def test_property_text_is_bounded_and_short_text_is_identical(text: str, max_chars: int) -> None:
    out = truncate_output(text, max_chars)
    assert len(out) <= max_chars * 1.2 + 200
    if len(text) <= max_chars:
        assert out == text


@settings(max_examples=examples(200), deadline=None)
@given(value=json_values, max_chars=st.integers(100, 3000), as_python=st.booleans())
def test_property_structures_are_bounded(value: object, max_chars: int, as_python: bool) -> None:
    text = repr(value) if as_python else json.dumps(value)
    out = truncate_output(text, max_chars)
    assert len(out) <= max_chars * 1.2 + 200
    if len(text) <= max_chars:
        assert out == text
    elif isinstance(value, (list, dict)):
        assert len(out) <= max_chars
        assert out.startswith(f"[{type(value).__name__} with {len(value):,} ")


@settings(max_examples=examples(200), deadline=None)
@given(text=st.text(max_size=3000), max_chars=st.integers(0, 2000))
def test_property_shorten_text_is_bounded(text: str, max_chars: int) -> None:
    out = shorten_text(text, max_chars)
    if len(text) <= max_chars:
        assert out == text
    else:
        assert len(out) <= max(max_chars, len(f"\n[... {len(text):,} of {len(text):,} chars omitted ...]\n"))
        assert out == shorten_text(text, max_chars)


# --------------------------------------------------------------------------- shorten_text


def test_shorten_text_keeps_head_and_tail() -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(10_000))
    out = shorten_text(text, 1000)
    assert len(out) <= 1000
    head, notice, tail = out.split("\n")
    assert text.startswith(head) and text.endswith(tail)
    assert notice == f"[... {10_000 - len(head) - len(tail):,} of 10,000 chars omitted ...]"
    assert abs(len(head) - len(tail)) <= 1


def test_shorten_text_leaves_short_text_alone() -> None:
    assert shorten_text("", 0) == ""
    assert shorten_text("abc", 3) == "abc"


def test_shorten_text_with_tiny_budget_is_only_the_notice() -> None:
    assert shorten_text("x" * 500, 10) == "\n[... 500 of 500 chars omitted ...]\n"


@pytest.mark.parametrize(("text", "max_chars"), [("abc", -1), ("abc", 1.5), (None, 10)])
def test_shorten_text_rejects_bad_arguments(text: object, max_chars: object) -> None:
    with pytest.raises(ConfigError):
        shorten_text(text, max_chars)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- tiered policy


def test_tiered_policy_passes_small_outputs() -> None:
    policy = TieredOutputPolicy()
    text = "x" * 1999
    assert policy.apply(text) == text
    assert policy.apply("") == ""


def test_tiered_policy_adds_a_tip_to_medium_outputs() -> None:
    policy = TieredOutputPolicy()
    for size in (2000, 3999):
        text = "x" * size
        out = policy.apply(text, tool_name="bash")
        assert out.startswith(text + "\n[tip: ")
        assert out.count("\n") == 1
        assert f"{size:,} chars" in out and "`bash`" in out


def test_tiered_policy_truncates_large_outputs() -> None:
    policy = TieredOutputPolicy()
    log = training_log(200)
    out = policy.apply(log, tool_name="run_shell")
    assert len(out) < len(log)
    lines = out.splitlines()
    assert lines[0] == log.splitlines()[0]
    stats = next(line for line in lines if line.startswith("[... the output of `run_shell` truncated"))
    assert f"{len(log):,} chars, 200 lines" in stats
    assert lines[-1].startswith("[hint: ") and "`run_shell`" in lines[-1]
    assert lines[-2] == log.splitlines()[-1]
    head = out.split("\n[... ")[0]
    assert 1000 <= len(head) <= 2000


def test_tiered_policy_boundary_at_tip_below() -> None:
    policy = TieredOutputPolicy(pass_below=10, tip_below=200, head_chars=50, tail_chars=30)
    assert "[tip:" in policy.apply("y" * 199)
    out = policy.apply("y" * 200)
    assert out.startswith("y" * 50 + "\n[... this output truncated: 200 chars, 1 line")
    assert "rerun the command" in out


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"pass_below": -1}, "-1"),
        ({"pass_below": 5000}, "5000"),
        ({"head_chars": 3000, "tail_chars": 1000}, "4000"),
        ({"head_chars": 0, "tail_chars": 0}, "head_chars"),
        ({"tip_below": "4000"}, "'4000'"),
    ],
)
def test_tiered_policy_validates(kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        TieredOutputPolicy(**kwargs)  # type: ignore[arg-type]


def test_tiered_policy_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        TieredOutputPolicy(2000)  # type: ignore[misc]


def test_large_json_is_parsed_beyond_the_literal_limit() -> None:
    text = json.dumps([f"item_{i}" for i in range(200_000)])
    assert len(text) > 2_000_000
    out = truncate_output(text)
    assert out.startswith("[list with 200,000 items")
    assert '"item_199999"' in out


# --------------------------------------------------------------------------- exact outputs (the format is a promise)


def _log(indices: range) -> str:
    return "".join(f"line {i:03d}: value={i * 7}\n" for i in indices)


@pytest.mark.parametrize(
    ("kwargs", "head", "notice", "tail"),
    [
        (
            {},
            range(8),
            "8,240 chars in 400 lines; showing the first 8 lines and the last 7 lines; omitted 7,943 chars "
            "(385 whole lines)",
            range(393, 400),
        ),
        (
            {"head_chars": 100},
            range(5),
            "8,240 chars in 400 lines; showing the first 5 lines and the last 7 lines; omitted 8,000 chars "
            "(388 whole lines)",
            range(393, 400),
        ),
        (
            {"head_chars": 50, "tail_chars": 200},
            range(2),
            "8,240 chars in 400 lines; showing the first 2 lines and the last 9 lines; omitted 8,015 chars "
            "(389 whole lines)",
            range(391, 400),
        ),
    ],
)
def test_text_is_cut_exactly_at_lines_with_its_notice(
    kwargs: dict[str, int], head: range, notice: str, tail: range
) -> None:
    out = truncate_output(_log(range(400)), 300, **kwargs)
    assert out == _log(head) + f"[... output truncated: {notice} ...]\n" + _log(tail)


@pytest.mark.parametrize(
    ("text", "head", "notice", "tail"),
    [
        ("x" * 5000, "x" * 100, "5,000 chars in 1 line; showing the first 100 chars and the last 100 chars; omitted "
         "4,800 chars", "x" * 100),
        ("e\u0301" * 1000, "e\u0301" * 50, "2,000 chars in 1 line; showing the first 100 chars and the last 100 "
         "chars; omitted 1,800 chars", "e\u0301" * 50),
        ("ab👩‍👩‍👧‍👦" * 300, "ab👩‍👩‍👧‍👦" * 11 + "a", "2,700 chars in 1 line; showing the first 100 chars and "
         "the last 99 chars; omitted 2,501 chars", "ab👩‍👩‍👧‍👦" * 11),
        ("\U0001f1fa\U0001f1f3" * 500, "\U0001f1fa\U0001f1f3" * 50, "1,000 chars in 1 line; showing the first 100 "
         "chars and the last 100 chars; omitted 800 chars", "\U0001f1fa\U0001f1f3" * 50),
        ("a\ufe0f" * 900, "a\ufe0f" * 50, "1,800 chars in 1 line; showing the first 100 chars and the last 100 chars; "
         "omitted 1,600 chars", "a\ufe0f" * 50),
        ("x" * 99 + "\u200d" + "y" * 1000, "x" * 98, "1,100 chars in 1 line; showing the first 98 chars and the last "
         "100 chars; omitted 902 chars", "y" * 100),
    ],
)  # fmt: skip
def test_one_long_line_is_cut_exactly_at_characters_never_inside_a_cluster(
    text: str, head: str, notice: str, tail: str
) -> None:
    assert truncate_output(text, 200) == f"{head}\n[... output truncated: {notice} ...]\n{tail}"


def test_a_table_is_cut_exactly_at_rows_under_its_header() -> None:
    rows = [f"{i},user_{i},{i % 100}\n" for i in range(300)]
    out = truncate_output("id,name,score\n" + "".join(rows), 300)
    notice = (
        "[... table truncated: 4,564 chars, a header and 300 rows; showing the header and the first 11 rows and the "
        "last 9 rows; omitted 4,282 chars (280 whole rows) ...]\n"
    )
    assert out == "id,name,score\n" + "".join(rows[:11]) + notice + "".join(rows[291:])


def test_structures_are_rendered_exactly() -> None:
    rows = [{"id": i, "tags": ["a" * 40] * 5} for i in range(40)]
    value = {"name": "n" * 500, "rows": rows, "ok": True, "none": None}
    assert truncate_output(json.dumps(value), 400) == (
        "[dict with 4 keys (10,218 chars); long values shortened]\n{\n"
        f'  "name": "{"n" * 108}"...(+392 chars),\n'
        '  "rows": [{...}, {...}, {...}, {...}, {...}, {...}, {...}, {...}, ... 30 more items ..., {...}, {...}],\n'
        '  "ok": true,\n  "none": null\n}'
    )
    python = str({"k": ("t" * 300, b"b" * 300, 1.5, None)})
    assert truncate_output(python, 250) == (
        "[dict with 1 key (627 chars); long values shortened]\n{\n"
        f"  'k': ('{'t' * 50}'...(+250 chars), b'{'b' * 49}'...(+251 bytes), 1.5, None)\n}}"
    )


# --------------------------------------------------------------------------- text mode, case by case
# Each case pins one rule of the text cut at its boundary (docs/mutation.md lists what each one guards).


def _notice(body: str) -> str:
    return f"[... output truncated: {body} ...]"


def test_a_side_with_no_budget_keeps_nothing_and_the_other_side_keeps_whole_lines() -> None:
    log = _log(range(400))
    assert truncate_output(log, 300, head_chars=0, tail_chars=100) == (
        _notice("8,240 chars in 400 lines; showing the first 0 chars and the last 4 lines; omitted 8,156 chars "
                "(396 whole lines)") + "\n" + _log(range(396, 400))
    )  # fmt: skip
    assert truncate_output(log, 300, head_chars=100, tail_chars=0) == (
        _log(range(5)) + _notice("8,240 chars in 400 lines; showing the first 5 lines and the last 0 chars; omitted "
                                 "8,147 chars (395 whole lines)") + "\n"
    )  # fmt: skip


def test_a_one_char_budget_keeps_one_char() -> None:
    assert truncate_output("x" * 500, 100, head_chars=1, tail_chars=0) == (
        "x\n" + _notice("500 chars in 1 line; showing the first 1 char and the last 0 chars; omitted 499 chars") + "\n"
    )
    assert truncate_output("x" * 500, 100, head_chars=0, tail_chars=1) == (
        _notice("500 chars in 1 line; showing the first 0 chars and the last 1 char; omitted 499 chars") + "\nx"
    )


def test_tail_chars_alone_leaves_the_rest_of_max_chars_to_the_head() -> None:
    out = truncate_output("z" * 5000, 1000, tail_chars=900)
    assert out == "z" * 100 + "\n" + _notice(
        "5,000 chars in 1 line; showing the first 100 chars and the last 900 chars; omitted 4,000 chars"
    ) + "\n" + "z" * 900  # fmt: skip


@pytest.mark.parametrize("side", ["head_chars", "tail_chars"])
def test_one_side_alone_over_max_chars_is_rejected(side: str) -> None:
    """A bug until issue 17: ``head_chars=1001`` with ``max_chars=1000`` gave 1,001 characters plus the notice."""
    with pytest.raises(ConfigError, match=r"between 1 and max_chars \(1000\)"):
        truncate_output("z" * 5000, 1000, **{side: 1001})
    head, tail = (1000, 0) if side == "head_chars" else (0, 1000)
    assert truncate_output("z" * 5000, 1000, **{side: 1000}) == "z" * head + "\n" * bool(head) + _notice(
        f"5,000 chars in 1 line; showing the first {head:,} chars and the last {tail:,} chars; omitted 4,000 chars"
    ) + "\n" + "z" * tail  # fmt: skip


@pytest.mark.parametrize(
    ("text", "kwargs", "expected"),
    [
        (
            "\n" + "a" * 300,
            {"head_chars": 2, "tail_chars": 10},
            "\n" + _notice("301 chars in 2 lines; showing the first 1 line and the last 10 chars; omitted 290 chars")
            + "\n" + "a" * 10,
        ),
        (
            "a" * 300 + "\nz",
            {"head_chars": 10, "tail_chars": 2},
            "a" * 10 + "\n" + _notice("302 chars in 2 lines; showing the first 10 chars and the last 1 line; "
                                      "omitted 291 chars") + "\nz",
        ),
        (
            "\n" + "b" * 100,
            {"head_chars": 0, "tail_chars": 100},
            _notice("101 chars in 2 lines; showing the first 0 chars and the last 1 line; omitted 1 char "
                    "(1 whole line)") + "\n" + "b" * 100,
        ),
    ],
    ids=["blank-first-line", "one-char-last-line", "tail-after-a-blank-first-line"],
)  # fmt: skip
def test_a_short_first_or_last_line_is_kept_as_a_whole_line(text: str, kwargs: dict[str, int], expected: str) -> None:
    assert truncate_output(text, 100, **kwargs) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (   # a first line of exactly half the head budget (50 of 100) is kept whole
            "h" * 49 + "\n" + "y" * 400,
            "h" * 49 + "\n" + _notice("450 chars in 2 lines; showing the first 1 line and the last 100 chars; "
                                      "omitted 300 chars") + "\n" + "y" * 100,
        ),
        (   # one character less than half: the head is cut at characters instead
            "h" * 48 + "\n" + "y" * 400,
            "h" * 48 + "\n" + "y" * 51 + "\n" + _notice("449 chars in 2 lines; showing the first 100 chars and the "
                                                        "last 100 chars; omitted 249 chars") + "\n" + "y" * 100,
        ),
        (   # the same at the tail
            "y" * 400 + "\n" + "t" * 49 + "\n",
            "y" * 100 + "\n" + _notice("451 chars in 2 lines; showing the first 100 chars and the last 1 line; "
                                       "omitted 301 chars") + "\n" + "t" * 49 + "\n",
        ),
        (
            "y" * 400 + "\n" + "t" * 48 + "\n",
            "y" * 100 + "\n" + _notice("450 chars in 2 lines; showing the first 100 chars and the last 100 chars; "
                                       "omitted 250 chars") + "\n" + "y" * 50 + "\n" + "t" * 48 + "\n",
        ),
        (   # the last 100 characters are exactly two whole lines: both are kept
            "a" * 300 + "\n" + "b" * 49 + "\n" + "c" * 49 + "\n",
            "a" * 100 + "\n" + _notice("401 chars in 3 lines; showing the first 100 chars and the last 2 lines; "
                                       "omitted 201 chars") + "\n" + "b" * 49 + "\n" + "c" * 49 + "\n",
        ),
        (   # two lines would be 101 characters: only the last one is kept
            "a" * 300 + "\n" + "b" * 50 + "\n" + "c" * 49 + "\n",
            "a" * 100 + "\n" + _notice("402 chars in 3 lines; showing the first 100 chars and the last 1 line; "
                                       "omitted 252 chars (1 whole line)") + "\n" + "c" * 49 + "\n",
        ),
    ],
    ids=["head-half", "head-under-half", "tail-half", "tail-under-half", "tail-two-lines", "tail-one-line"],
)  # fmt: skip
def test_whole_lines_are_kept_when_they_fill_half_of_the_budget(text: str, expected: str) -> None:
    assert truncate_output(text, 200) == expected


ATTACHED = {
    "combining acute accent": "\u0301",
    "zero-width joiner": "\u200d",
    "first low surrogate": "\udc00",
    "last low surrogate": "\udfff",
    "first variation selector": "\ufe00",
    "last variation selector": "\ufe0f",
    "first supplementary variation selector": "\U000e0100",
    "last supplementary variation selector": "\U000e01ef",
    "lightest skin tone": "\U0001f3fb",
    "darkest skin tone": "\U0001f3ff",
}
NOT_ATTACHED = {
    "last high surrogate": "\udbff",
    "private use after the surrogates": "\ue000",
    "before the variation selectors": "\ufdff",
    "after the variation selectors": "\ufe10",
    "before the supplementary selectors": "\U000e00ff",
    "after the supplementary selectors": "\U000e01f0",
    "before the skin tones": "\U0001f3fa",
    "after the skin tones": "\U0001f400",
}


@pytest.mark.parametrize(
    ("char", "kept"),
    [(c, 99) for c in ATTACHED.values()] + [(c, 100) for c in NOT_ATTACHED.values()],
    ids=[*ATTACHED, *NOT_ATTACHED],
)
def test_a_cut_moves_back_rather_than_part_a_character_from_what_attaches_to_it(char: str, kept: int) -> None:
    """The head budget is 100 and the 101st character is ``char``: the cut moves back one if ``char`` attaches."""
    text = "x" * 100 + char + "y" * 1000
    assert truncate_output(text, 200) == "x" * kept + "\n" + _notice(
        f"1,101 chars in 1 line; showing the first {kept} chars and the last 100 chars; omitted {1001 - kept} chars"
    ) + "\n" + "y" * 100  # fmt: skip


@pytest.mark.parametrize(
    ("char", "kept"),
    [("\ud800", 99), ("\udbff", 99), ("\u200d", 98), ("\ud7ff", 100), ("\udc00", 100)],
    ids=["first high surrogate", "last high surrogate", "joiner", "before the surrogates", "low surrogate"],
)
def test_a_cut_never_falls_right_after_a_high_surrogate_or_a_joiner(char: str, kept: int) -> None:
    """The 100th character is ``char``: a high surrogate or a joiner stays with the character after it."""
    text = "x" * 99 + char + "y" * 1000
    assert truncate_output(text, 200).startswith(text[:kept] + "\n[... output truncated: 1,100 chars in 1 line; "
                                                 f"showing the first {kept} chars")  # fmt: skip


def test_a_cut_at_the_very_start_keeps_nothing_rather_than_half_a_character() -> None:
    """One character of head budget on ``e`` + accent: nothing is kept (the cut never wraps to the text's end)."""
    text = "e\u0301" * 300 + "\U0001f469\u200d"  # a stream cut after a joiner
    assert truncate_output(text, 100, head_chars=1, tail_chars=1) == _notice(
        "602 chars in 1 line; showing the first 0 chars and the last 0 chars; omitted 602 chars (1 whole line)"
    ) + "\n"  # fmt: skip


def _row(i: int) -> str:
    return f"{i},{'v' * 20},x\n"


TABLES = {
    "tab-separated": ("name\tscore\n" + "".join(f"user_{i}\t{i * 3}\n" for i in range(12)), True),
    "last column empty": ("a\tb\tc\n" + "".join(f"{i}\t{'w' * 12}\t\n" for i in range(8)), True),
    "CRLF with blank lines": (
        "id,name\r\n" + "".join(f"{i},{'n' * 12}\r\n" + "\r\n" * (i % 2) for i in range(6)),
        True,
    ),
    "a header and two rows": ("id,text\n" + f"1,{'v' * 30}\n2,{'v' * 70}", True),
    "blank first line": ("\nid,text\n" + "".join(f"{i},{'v' * 30}\n" for i in range(5)), False),
    "header fills the head budget": ("h" * 47 + ",x\n" + "".join(f"{i},{'v' * 30}\n" for i in range(5)), True),
    "header one over the head budget": ("h" * 48 + ",x\n" + "".join(f"{i},{'v' * 30}\n" for i in range(5)), False),
    "header of one delimiter": (",\n" + "".join(f"{i},{'v' * 30}\n" for i in range(5)), True),
    "4 of 5 rows match, the last does not": ("a,b,c\n" + "".join(_row(i) for i in range(4)) + "4,v,x,odd\n", True),
    "4 of 5 rows match, the first does not": ("a,b,c\n0,v,x,odd\n" + "".join(_row(i) for i in range(1, 5)), True),
    "3 of 4 rows match": ("a,b,c\n" + "".join(f"{i},{'v' * 26},x\n" for i in range(3)) + "3,odd\n", False),
}


@pytest.mark.parametrize(("text", "is_table"), TABLES.values(), ids=TABLES)
def test_what_counts_as_a_table(text: str, is_table: bool) -> None:
    """A table: a header row that fits the head budget and at least 80% of the (up to 19) rows after it with the
    header's count of one delimiter (``,`` tab ``;`` ``|``); blank lines and a row's ``\\r`` do not count."""
    assert len(text) > 100
    kind = "table" if is_table else "output"
    assert f"\n[... {kind} truncated: " in "\n" + truncate_output(text, 100)


def test_a_table_keeps_its_header_even_when_a_row_is_longer_than_half_the_budget() -> None:
    text = "id,text\n" + "".join(f"{i},{'w' * 60}\n" for i in range(6))
    assert truncate_output(text, 100) == (
        "id,text\n[... table truncated: 386 chars, a header and 6 rows; showing the header and the first 0 rows and "
        "the last 50 chars; omitted 328 chars (5 whole rows) ...]\n" + "w" * 49 + "\n"
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"output": None}, "output must be a str, got NoneType: None"),
        ({"output": 12345}, "output must be a str, got int: 12345"),
        ({"max_chars": 99}, "max_chars must be >= 100, got 99"),
        ({"list_items": 0}, "list_items must be >= 1, got 0"),
        ({"list_tail": -1}, "list_tail must be >= 0, got -1"),
        ({"dict_items": 0}, "dict_items must be >= 1, got 0"),
        ({"head_chars": -5}, "head_chars must be >= 0, got -5"),
        ({"tail_chars": -1}, "tail_chars must be >= 0, got -1"),
        ({"head_chars": 0, "tail_chars": 0}, "head_chars + tail_chars must be between 1 and max_chars (2000), got "
                                             "head_chars=0, tail_chars=0 (0 + 0)"),
    ],
)  # fmt: skip
def test_invalid_arguments_are_named_in_the_error(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        truncate_output(**{"output": "text", **kwargs})  # type: ignore[arg-type]
    assert str(caught.value) == message


# --------------------------------------------------------------------------- structure mode, case by case


def _shown(out: str) -> tuple[int, int] | None:
    """The (first, last) counts a structure's header line says are shown; ``None`` when it shows them all."""
    header = out.split("\n", 1)[0]
    if "; showing the first " not in header:
        return None
    shown = header.split("; showing the first ", 1)[1].split(";")[0].rstrip("]")
    first, _, last = shown.partition(" and the last ")
    return int(first), int(last or 0)


LADDERS = {
    # a list: each shown item needs 8 characters (plus its separator); the head gives way first, down to the tail
    "list": (
        json.dumps([f"value number {i}" for i in range(100)]), {},
        [(138, (1, 0)), (150, (1, 1)), (162, (2, 1)), (174, (2, 2)), (186, (3, 2)), (198, (4, 2)), (210, (5, 2)),
         (222, (6, 2)), (234, (7, 2)), (246, (8, 2)), (258, (9, 2)), (270, (10, 2))],
    ),
    # a dict: each shown key: value needs 16 characters
    "dict": (
        json.dumps({f"key_{i}": f"value number {i}" for i in range(100)}), {},
        [(144, (1, 0)), (164, (2, 0)), (184, (3, 0)), (204, (4, 0)), (224, (5, 0)), (244, (6, 0)), (264, (7, 0)),
         (284, (8, 0)), (304, (9, 0)), (324, (10, 0))],
    ),
    # a tail longer than the head: the tail gives way first
    "more tail than head": (
        json.dumps([f"value number {i}" for i in range(100)]), {"list_items": 1, "list_tail": 2},
        [(138, (1, 0)), (150, (1, 1)), (162, (1, 2))],
    ),
    # 12 items: the omission line costs room (one less with one digit less), so showing all 12 needs less than 10 + 2
    "twelve items": (
        json.dumps([f"{i:02d}" + "s" * 48 for i in range(12)]), {},
        [(133, (1, 0)), (145, (1, 1)), (156, (2, 1)), (168, (2, 2)), (180, (3, 2)), (192, (4, 2)), (204, (5, 2)),
         (216, (6, 2)), (228, (7, 2)), (240, None)],
    ),
}  # fmt: skip


@pytest.mark.parametrize(("text", "kwargs", "ladder"), LADDERS.values(), ids=LADDERS)
def test_a_tighter_budget_shows_fewer_items_in_a_fixed_order(
    text: str, kwargs: dict[str, int], ladder: list[tuple[int, tuple[int, int] | None]]
) -> None:
    """At each ``max_chars`` of the ladder more items are shown (``None``: all); one character less shows the step
    below, and below the first step only a count stands for the whole container."""
    assert truncate_output(text, ladder[0][0] - 1, **kwargs).split("\n")[1].startswith(("[... ", "{... "))
    for (at, counts), below in zip(ladder, [None, *(c for _, c in ladder)], strict=False):
        assert _shown(truncate_output(text, at, **kwargs)) == counts, at
        if below is not None:
            assert _shown(truncate_output(text, at - 1, **kwargs)) == below, at - 1


def test_a_list_with_every_item_shown_has_no_omission_line() -> None:
    items = [f"{i:02d}" + "s" * 48 for i in range(12)]
    assert truncate_output(json.dumps(items), 400) == "[list with 12 items (648 chars); long values shortened]\n[\n" + (
        ",\n".join(f'  "{item[:5]}"...(+45 chars)' for item in items)
    ) + "\n]"  # fmt: skip


def test_a_long_string_shrinks_to_one_character_then_to_its_size() -> None:
    """One string of a long list, as the budget shrinks: cut with a count, then one character, then ``<size>``."""
    text = json.dumps(["s" * 100] * 40)
    firsts = {m: truncate_output(text, m).split("\n")[2] for m in (135, 138, 144, 145, 146)}
    assert firsts == {
        135: "  <100 ...,",
        138: "  <100 chars>,",
        144: "  <100 chars>,",
        145: '  "s"...(+99 chars),',
        146: '  "ss"...(+98 chars),',
    }
    assert truncate_output(text, 145).split("\n")[0] == (
        "[list with 40 items (4,160 chars); showing the first 1; long values shortened]"
    )


@pytest.mark.parametrize(
    ("items", "header", "shown"),
    [
        ([111111111] * 40, "[list with 40 items (440 chars); showing the first 4 and the last 2]", "111111111"),
        (["sssssss"] * 40, "[list with 40 items (440 chars); showing the first 4 and the last 2]", '"sssssss"'),
        ([1111111111] * 40, "[list with 40 items (480 chars); showing the first 4 and the last 2; long values "
                            "shortened]", "111111..."),
        (["ssssssss"] * 40, "[list with 40 items (480 chars); showing the first 4 and the last 2; long values "
                            "shortened]", "<8 chars>"),
    ],
    ids=["number-fits", "string-fits", "number-one-over", "string-one-over"],
)  # fmt: skip
def test_a_value_that_exactly_fits_its_share_is_shown_whole(items: list[object], header: str, shown: str) -> None:
    """Each item's share is 9 characters here: 9 fit whole; 10 are shortened (and the header says so)."""
    lines = truncate_output(json.dumps(items), 200).split("\n")
    assert lines[0] == header
    assert lines[2:6] == [f"  {shown},"] * 4


def test_room_a_short_value_leaves_goes_to_the_long_one() -> None:
    assert truncate_output(json.dumps({"id": 7, "text": "t" * 500}), 200) == (
        '[dict with 2 keys (521 chars); long values shortened]\n{\n  "id": 7,\n'
        f'  "text": "{"t" * 68}"...(+432 chars)\n}}'
    )
    # the status uses all but one character of its share: that one goes to the text
    assert truncate_output(json.dumps({"status": "s" * 37, "text": "t" * 500}), 200) == (
        f'[dict with 2 keys (563 chars); long values shortened]\n{{\n  "status": "{"s" * 37}",\n'
        f'  "text": "{"t" * 26}"...(+474 chars)\n}}'
    )


def test_a_nested_container_too_big_for_its_share_shows_its_size_or_only_its_brackets() -> None:
    text = json.dumps([[1, 1]] * 40)
    assert truncate_output(text, 138).split("\n")[2] == "  [... 2 items],"  # 14 characters: exactly the share
    assert truncate_output(text, 137).split("\n")[2] == "  [...],"


def test_one_omitted_item_is_counted() -> None:
    items = ["a" * 100, "b" * 100, "c" * 100, "d" * 100]
    assert truncate_output(json.dumps(items), 400, list_items=2, list_tail=1) == (
        "[list with 4 items (416 chars); showing the first 2 and the last 1; long values shortened]\n[\n"
        f'  "{"a" * 73}"...(+27 chars),\n  "{"b" * 73}"...(+27 chars),\n  ... 1 more item ...,\n'
        f'  "{"d" * 73}"...(+27 chars)\n]'
    )
    nested = json.dumps({"ids": [1, 2, 3, 4], **{f"k{i}": i for i in range(30)}})
    assert truncate_output(nested, 200, dict_items=1, list_items=2, list_tail=1) == (
        "[dict with 31 keys (331 chars); showing the first 1; long values shortened]\n{\n"
        '  "ids": [1, 2, ... 1 more item ..., 4],\n  ... 30 more keys ...\n}'
    )


def test_the_smallest_counts_show_one_item_or_one_key() -> None:
    items = json.dumps([f"value number {i}" for i in range(100)])
    assert truncate_output(items, 300, list_items=1, list_tail=0) == (
        '[list with 100 items (1,890 chars); showing the first 1]\n[\n  "value number 0",\n  ... 99 more items ...\n]'
    )
    keys = json.dumps({f"key_{i}": f"value number {i}" for i in range(100)})
    assert truncate_output(keys, 300, dict_items=1) == (
        '[dict with 100 keys (2,880 chars); showing the first 1]\n{\n  "key_0": "value number 0",\n'
        "  ... 99 more keys ...\n}"
    )


def test_json_text_is_shown_as_written_not_escaped() -> None:
    out = truncate_output(json.dumps(["café", "naïve", "日本語"] * 40), 200)
    assert out == (
        '[list with 120 items (1,960 chars); showing the first 4 and the last 2]\n[\n  "café",\n  "naïve",\n'
        '  "日本語",\n  "café",\n  ... 114 more items ...,\n  "naïve",\n  "日本語"\n]'
    )


def test_a_python_list_keeps_its_brackets_and_quotes() -> None:
    out = truncate_output(str([f"name_{i}" for i in range(40)]), 250)
    assert out == "[list with 40 items (430 chars); showing the first 8 and the last 2]\n[\n" + "".join(
        f"  'name_{i}',\n" for i in range(8)
    ) + "  ... 30 more items ...,\n  'name_38',\n  'name_39'\n]"  # fmt: skip


def test_one_item_tuples_keep_their_comma() -> None:
    assert truncate_output(str(("x" * 300,)), 200) == (
        f"[tuple with 1 item (305 chars); long values shortened]\n(\n  '{'x' * 86}'...(+214 chars)\n)"
    )
    assert truncate_output(str([("a",), ("b",)] * 20), 200, list_items=3, list_tail=0) == (
        "[list with 40 items (320 chars); showing the first 3]\n[\n  ('a',),\n  ('b',),\n  ('a',),\n"
        "  ... 37 more items ...\n]"
    )


def test_a_set_of_mixed_types_is_shown_sorted_by_its_text() -> None:
    value = {10, 9, 1, 2.5, "apple", None, False, (1, 2), b"zz", "x" * 150}
    assert truncate_output(str(value), 200) == (
        "[set with 10 items (206 chars); showing the first 6; long values shortened]\n{\n  'apple',\n"
        "  'xxxxx'...(+145 chars),\n  (1, 2),\n  1,\n  10,\n  2.5,\n  ... 4 more items ...\n}"
    )


def test_empty_containers_are_shown_as_they_are() -> None:
    value = {f"k{i:02d}": ([] if i % 3 == 0 else {} if i % 3 == 1 else i) for i in range(20)}
    assert truncate_output(json.dumps(value), 200) == (
        '[dict with 20 keys (217 chars); showing the first 4]\n{\n  "k00": [],\n  "k01": {},\n  "k02": 2,\n'
        '  "k03": [],\n  ... 16 more keys ...\n}'
    )
    python = {f"k{i:02d}": (() if i % 2 else set()) for i in range(20)}
    assert truncate_output(str(python), 200) == (
        "[dict with 20 keys (250 chars); showing the first 4]\n{\n  'k00': set(),\n  'k01': (),\n  'k02': set(),\n"
        "  'k03': (),\n  ... 16 more keys ...\n}"
    )


def _nested(levels: int, wrap) -> object:
    value: object = 1
    for level in range(levels):
        value = wrap(value, level)
    return value


def test_containers_deeper_than_twelve_levels_are_summarised() -> None:
    lists = json.dumps([_nested(15, lambda v, _: [v]), "p" * 300])
    assert truncate_output(lists, 300).split("\n")[2] == "  [[[[[[[[[[[[... 1 item]]]]]]]]]]]],"
    dicts = json.dumps([_nested(15, lambda v, _: {"k": v}), "p" * 300])
    assert truncate_output(dicts, 300).split("\n")[2] == "  " + '{"k": ' * 11 + "{... 1 key}" + "}" * 11 + ","
    tuple_keys = str([_nested(14, lambda v, level: {(level,): v}), "p" * 300])
    assert truncate_output(tuple_keys, 400).split("\n")[2] == (
        "  " + "".join(f"{{({level},): " for level in range(13, 3, -1)) + "{(... 1 item): {... 1 key}" + "}" * 11 + ","
    )


def test_long_keys_and_long_numbers_are_shortened() -> None:
    assert truncate_output(json.dumps({"k" * 300: 1, "short": 2}), 200) == (
        f'[dict with 2 keys (319 chars); long values shortened]\n{{\n  "{"k" * 28}"...(+272 chars): 1,\n'
        '  "short": 2\n}'
    )
    assert truncate_output(json.dumps([12345678901234567890] * 40), 200) == (
        "[list with 40 items (880 chars); showing the first 4 and the last 2; long values shortened]\n[\n"
        + "  123456...,\n" * 4
        + "  ... 34 more items ...,\n  123456...,\n  123456...\n]"
    )


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (", ".join(str(i) for i in range(100)), "a bare comma-separated line parses as a tuple, but is text"),
        ("(" + repr("x" * 300) + ")", "a parenthesised string is not a container"),
        ("   \n" * 100, "nothing but white space"),
        ("[1, 2, 3" + ", 4" * 100, "an unclosed bracket"),
    ],
    ids=["bare-tuple", "parenthesised-string", "white-space", "unclosed"],
)
def test_text_that_is_not_a_bracketed_container_is_cut_as_text(text: str, why: str) -> None:
    assert "\n[... output truncated: " in "\n" + truncate_output(text, 100), why
