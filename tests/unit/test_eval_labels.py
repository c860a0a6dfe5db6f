"""The ``eval`` table's input labels: the file first, then the session, cut from the middle where what differs is
kept, never two alike, never wider than the cells given (tests/unit/test_cli_terminal.py runs them in a terminal)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len

from agno_compression.eval._labels import distinct_labels, shorten
from tests.strategies import examples

SHARED = [  # names eval gives recordings of ../shared, and databases written by the cookbook
    "evaluation__benchmarks__multi_swe_bench__examples__output#ponylang__ponyc-4595",
    "evaluation__benchmarks__multi_swe_bench__examples__output#ponylang__ponyc-4593",
    "trajectories__demonstrations__ctf__crypto__BabyTimeCapsule#0",
    "trajectories__demonstrations__ctf__crypto__katy#0",
    "trajectories__demonstrations__replay__marshmallow-code__marshmallow-1867__default__t-0.20__p-0.95__c-2.00"
    "__install-1___install_from_source__marshmallow-code__marshmallow-1867#0",
    "trajectories__demonstrations__replay__marshmallow-code__marshmallow-1867__default_sys-env_cursors_window100"
    "__t-0.20__p-0.95__c-2.00__install-1__marshmallow-code__marshmallow-1867#0",
    "trajectories__demonstrations__replay__marshmallow-code__marshmallow-1867__function_calling_replace_from_source"
    "__marshmallow-code__marshmallow-1867#0",
    "l1_task000#0",
    "l1_task001#0",
    "long_tool_loop#b4bd6611-57cb-4737-acf0-dd8e9fa5d702",
    "multi_run_session#ops-review",
    "team#qa",
]


def _cut_from(label: str, name: str) -> bool:
    """Whether ``label`` is ``name`` with parts of it left out where it shows an ellipsis (and only there)."""
    return re.fullmatch(".+".join(re.escape(piece) for piece in label.split("…")), name) is not None


@pytest.mark.parametrize("width", range(12, 81, 4))
def test_every_label_differs_fits_and_is_its_name_shortened(width: int) -> None:
    labels = distinct_labels(SHARED, width)
    assert len(set(labels.values())) == len(SHARED)
    for name, label in labels.items():
        assert cell_len(label) <= width and _cut_from(label, name), (width, name, label)
        assert label == name or cell_len(name) > width, "a name that fits is shown whole"


def test_the_file_comes_first_and_keeps_its_differing_word() -> None:
    names = [f"support-agent-2024-06-{kind}-review#{s}" for kind in ("deploy", "release") for s in ("a1b2c3d4-x", "ff")]
    for width in (20, 24, 30):
        labels = distinct_labels(names, width)
        assert all(n.split("-")[4] in labels[n].split("#")[0] for n in names), labels
        assert all(labels[n].endswith("#ff") for n in names if n.endswith("#ff")), "a short session stays whole"
    assert all(f"{n.split('-')[4]}-review#" in v for n, v in distinct_labels(names, 24).items())
    uuid = "b4bd6611-57cb-4737-acf0-dd8e9fa5d702"
    label = distinct_labels([f"long_tool_loop#{uuid}", "team#qa"], 30)[f"long_tool_loop#{uuid}"]
    assert label.startswith("long_tool_loop#b4bd") and label.endswith("5d702"), "a session is cut in the middle"


def test_the_differing_part_is_kept_from_the_start_the_end_or_the_middle() -> None:
    end = shorten("ponylang__ponyc-4595", 8, ["ponylang__ponyc-4593"])
    assert end.endswith("…4595") and cell_len(end) <= 8
    start = shorten("497a4284-6da8-4531-9f53-a34b95c7b0a8", 10, ["12ab4284-6da8-4531-9f53-a34b95c7b0a8"])
    assert start.startswith("497a4284…")
    assert shorten("run__default_sys-env__final", 12, ["run__function_calling_env__final"]) == "…default_sy…"
    assert shorten("run__default_sys-env__final", 12, ["run__function_calling__final"]) == "r…env__final"


def test_same_named_files_in_two_folders_keep_the_folder_not_the_common_path() -> None:
    labels = distinct_labels(["/tmp/out/a/run#0", "/tmp/out/b/run#0", "l1_task000#0"], 12)
    assert list(labels.values()) == ["a/run#0", "b/run#0", "l1_task000#0"]


def test_wide_characters_count_as_the_cells_they_take() -> None:
    names = ["報告書_第一四半期_最終版#1", "報告書_第二四半期_最終版#1"]
    labels = distinct_labels(names, 14)
    assert len(set(labels.values())) == 2 and all(cell_len(v) <= 14 for v in labels.values()), labels


@settings(max_examples=examples(300), deadline=None)
@given(
    names=st.lists(st.text(alphabet="ab_-#/.1日", min_size=1, max_size=40), min_size=1, max_size=8),
    width=st.integers(6, 60),
)
def test_any_names_get_labels_that_differ_and_fit(names: list[str], width: int) -> None:
    labels = distinct_labels(names, width)
    assert len(set(labels.values())) == len(set(names))
    assert all(cell_len(v) <= width for v in labels.values())
