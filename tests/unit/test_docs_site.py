"""The docs site builds strictly (every page in the nav, no broken link or anchor) and its API reference covers
every public name. Needs the docs extra (`pip install -e '.[docs]'`); .ci/run installs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import agno_compression
import agno_compression.testing
import agno_compression.tokens

pytest.importorskip("mkdocs", reason="the docs site needs the docs extra (pip install -e '.[docs]')")
pytest.importorskip("mkdocstrings_handlers.python", reason="the API reference needs the docs extra")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert built.returncode == 0, built.stderr[-4000:]
    return out


def _public(module: object) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:  # agno_compression.testing: the classes and functions it defines
        home = module.__name__  # type: ignore[attr-defined]
        names = [n for n, v in vars(module).items() if not n.startswith("_") and getattr(v, "__module__", "") == home]
    return sorted(names)


@pytest.mark.parametrize("module", [agno_compression, agno_compression.tokens, agno_compression.testing], ids=str)
def test_the_api_reference_documents_every_public_name(site: Path, module: object) -> None:
    page = (site / "api" / "index.html").read_text(encoding="utf-8")
    prefix = module.__name__  # type: ignore[attr-defined]
    names = _public(module)
    assert len(names) >= 10
    assert [n for n in names if f'id="{prefix}.{n}"' not in page] == []


def test_pages_outside_docs_are_published_where_the_pages_link_to_them(site: Path) -> None:
    assert (site / "bench" / "RESULTS" / "index.html").is_file()  # ../bench/RESULTS.md from docs/benchmarks.md
    assert (site / "bench" / "pareto-8k.png").is_file()  # linked from bench/RESULTS.md in turn
    assert (site / "cookbook" / "long_tool_loop.py").is_file()
    assert (site / "CHANGELOG" / "index.html").is_file()
    benchmarks = (site / "benchmarks" / "index.html").read_text(encoding="utf-8")
    assert 'href="../bench/RESULTS/"' in benchmarks
