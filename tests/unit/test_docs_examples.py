"""docs/cli.md's example outputs are what the commands print now (``python -m tests.docs_examples`` writes them),
and the README's figures for the recorded runs are the ``eval`` example's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs_examples import BLOCK, CLI_DOC, EXAMPLES, ROOT, cookbook, documented, masked, produce

BY_NAME = {e.name: e for e in EXAMPLES}


@pytest.fixture(scope="module")
def cookbook_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cookbook")
    cookbook(out)
    return out


def test_each_example_is_in_the_doc_under_the_command_it_shows() -> None:
    text = CLI_DOC.read_text(encoding="utf-8")
    blocks = {m["name"]: m["body"] for m in BLOCK.finditer(text)}
    assert set(blocks) == set(BY_NAME), "an example without a block, or a block no script writes"
    for name, body in blocks.items():
        assert body.startswith(f"$ {BY_NAME[name].shown}\n"), name
        assert len(body.splitlines()) > 3, f"the {name} example is empty: python -m tests.docs_examples {name}"


@pytest.mark.parametrize("name", ["inspect", "inspect-session", "fold"])
def test_the_inspect_examples_are_what_inspect_prints(name: str, cookbook_out: Path) -> None:
    fresh = produce(BY_NAME[name], cookbook_out)
    assert masked(documented()[name]) == masked(fresh), f"stale: python -m tests.docs_examples {name}\n{fresh}"


@pytest.mark.slow
def test_the_eval_example_and_the_readmes_figures_are_what_eval_prints(
    trajectories_dir: Path, cookbook_out: Path
) -> None:
    fresh = produce(BY_NAME["eval"], cookbook_out)
    assert documented()["eval"] == fresh, f"stale: python -m tests.docs_examples eval\n{fresh}"
    total = re.search(r"TOTAL\s+8,000\s+[\d,]+ → [\d,]+\s+([\d.]+)%", fresh)
    assert total, fresh
    rows = [line for line in fresh.splitlines() if re.search(r"\s8,000\s", line) and "TOTAL" not in line]
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"of {len(rows)} runs under the budget" in readme
    assert f"at {round(float(total.group(1)))}% of the uncompressed prompt tokens" in readme
