"""The package's layers depend one way: core <- persistence <- agno integration <- tools (docs/design.md).

Every import of a package module counts, lazy ones inside functions and ``TYPE_CHECKING`` ones too:
a lower layer that needs a higher one is a design change, made here first.
"""

from __future__ import annotations

import ast
from pathlib import Path

import agno_compression

PACKAGE = Path(agno_compression.__file__).parent

LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "core",
        frozenset(
            {
                "_exceptions",
                "_config",
                "_messages",
                "_plan",
                "_ledger",
                "_reading",
                "_names",
                "_summarizers",
                "_summary_text",
                "_observations",
                "_truncate",
            }
            | {"_cuts", "_structure"}
            | {"tokens"}
        ),
    ),
    (
        "persistence",
        frozenset(
            {"_store", "_tables", "_sessions", "_session_store", "_redis_store", "_archive", "_export"} | {"_deletion"}
        ),
    ),
    (
        "agno integration",
        frozenset(
            {"_manager", "_runs", "_runner", "_fold", "_policies", "_records", "_stats", "_metrics", "_compat"}
            | {"_checkpoints", "_recovery"}
        ),
    ),
    (
        "tools",
        frozenset({"_cli", "_databases", "eval", "testing", "__main__", "__init__"})
        | {"_timeline", "_chart", "_page", "_report", "_serve"},
    ),
)
"""Each layer's top-level modules and subpackages, lowest first."""


def _layer_of(top: str) -> int:
    for rank, (_, names) in enumerate(LAYERS):
        if top in names:
            return rank
    raise AssertionError(f"module {top!r} belongs to no layer: add it to LAYERS and to docs/design.md")


def _top(path: Path) -> str:
    """The top-level module or subpackage of the package a source file belongs to."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[0]


def _imported(path: Path) -> set[str]:
    """Top-level package modules a source file imports, however and wherever it imports them."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # the package the file's relative imports start from: agno_compression, or a subpackage of it
    package = ["agno_compression", *path.relative_to(PACKAGE).parent.parts]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - (node.level - 1)] if node.level else []
            target = base + (node.module.split(".") if node.module else [])
            if target[:1] != ["agno_compression"]:
                continue
            found.update(target[1:2] or [alias.name for alias in node.names])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "agno_compression" and len(parts) > 1:
                    found.add(parts[1])
    return found


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_module_has_a_layer() -> None:
    for path in _sources():
        _layer_of(_top(path))


def test_no_layer_imports_a_higher_one() -> None:
    upward = []
    for path in _sources():
        top = _top(path)
        rank = _layer_of(top)
        for name in _imported(path):
            if ((PACKAGE / f"{name}.py").exists() or (PACKAGE / name).is_dir()) and _layer_of(name) > rank:
                upward.append(
                    f"{path.relative_to(PACKAGE)} ({LAYERS[rank][0]}) imports {name} ({LAYERS[_layer_of(name)][0]})"
                )
    assert not upward, "\n".join(upward)


def test_the_check_sees_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ._manager import CompressionManager\n"
        "def f():\n    from ._cli import app\n    import agno_compression.eval\n",
        encoding="utf-8",
    )
    global PACKAGE
    saved, PACKAGE = PACKAGE, tmp_path
    try:
        assert _imported(source) == {"_manager", "_cli", "eval"}
    finally:
        PACKAGE = saved


def test_no_module_is_over_500_lines() -> None:
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in _sources()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500
    }
    assert not long, long
