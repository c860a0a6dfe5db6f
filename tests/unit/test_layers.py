"""The package's layers depend one way: core <- persistence <- agno integration <- tools (docs/design.md).

Every import of a package module counts, lazy ones inside functions and ``TYPE_CHECKING`` ones too:
a lower layer that needs a higher one is a design change, made here first. Nor does any file import
itself back through others: the modules form no cycle, file by file.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
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
                "_summarizers",
                "_breakpoints",
                "_provider_compaction",
            }
            | {"_keeping", "_observations", "tokens", "pricing"}
        ),
    ),
    (
        "persistence",
        frozenset({"_stores", "_sessions", "_archive", "_export", "_deletion"}),
    ),
    (
        "agno integration",
        frozenset(
            {
                "_manager",
                "_runs",
                "_runner",
                "_fold",
                "_trigger",
                "_held",
                "_shortening",
                "_policies",
                "_events",
                "_records",
                "_stats",
                "_metrics",
                "_background",
            }
            | {"_compat", "_checkpoints", "_recovery", "_prompt_cache", "_tracing", "_requested_fold"}
        ),
    ),
    (
        "tools",
        frozenset({"_cli", "_databases", "eval", "testing", "__main__", "__init__"})
        | {"viewer", "_visible", "_inspect", "_fold_command"},
    ),
)
"""Each layer's top-level modules and subpackages, lowest first."""


def _layer_of(top: str) -> int:
    for rank, (_, names) in enumerate(LAYERS):
        if top in names:
            return rank
    raise AssertionError(f"module {top!r} belongs to no layer: add it to LAYERS and to docs/design.md")


def _top(path: Path, root: Path = PACKAGE) -> str:
    """The top-level module or subpackage of the package a source file belongs to."""
    parts = path.relative_to(root).with_suffix("").parts
    return parts[0]


def _targets(path: Path, root: Path = PACKAGE) -> Iterator[tuple[str, ...]]:
    """What a source file imports of the package below ``root``, however and wherever it imports it.

    Each target is a dotted name below the package as parts, the module that provides each imported name:
    ``from ._stores import store_for`` gives ``("_stores",)``, ``from . import _held`` gives ``("_held",)``
    and ``from ._keeping import _ledger`` gives ``("_keeping", "_ledger")`` (submodules).
    Absolute imports count when they start with the package's name (``root.name``).
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # the package the file's relative imports start from: the package, or a subpackage of it
    package = [root.name, *path.relative_to(root).parent.parts]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - (node.level - 1)] if node.level else []
            target = base + (node.module.split(".") if node.module else [])
            if target[:1] != [root.name]:
                continue
            for alias in node.names:
                submodule = (*target[1:], alias.name)
                yield submodule if _file_of(submodule, root) is not None else tuple(target[1:])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == root.name:
                    yield tuple(parts[1:])


def _imported(path: Path, root: Path = PACKAGE) -> set[str]:
    """Top-level package modules a source file imports, however and wherever it imports them."""
    return {target[0] for target in _targets(path, root) if target}


def _file_of(target: tuple[str, ...], root: Path) -> Path | None:
    """The source file a dotted name below the package is: a module, a subpackage's ``__init__.py``, or neither."""
    module = root.joinpath(*target).with_suffix(".py") if target else None
    if module is not None and module.is_file():
        return module
    init = root.joinpath(*target, "__init__.py")
    return init if init.is_file() else None


def _sources(root: Path = PACKAGE) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def _graph(root: Path = PACKAGE) -> dict[Path, set[Path]]:
    """Every source file and the package files it imports (lazy and ``TYPE_CHECKING`` imports included).

    An import names only the file it names: ``from ._stores import x`` is an edge to ``_stores/__init__.py``,
    ``from ._stores._base import x`` one to ``_stores/_base.py`` alone. (Python runs the parent packages'
    ``__init__`` first, but counting that would tie every module to the package's own ``__init__``, which
    imports them all; a subpackage's ``__init__`` that re-exports its children is a cycle only when a child
    imports it back.)
    """
    return {
        path: {file for target in _targets(path, root) if (file := _file_of(target, root)) is not None}
        for path in _sources(root)
    }


def _cycles(graph: dict[Path, set[Path]]) -> list[list[Path]]:
    """The strongly connected components of more than one file, and the files that import themselves (Tarjan)."""
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on_stack: set[Path] = set()
    found: list[list[Path]] = []

    def visit(node: Path) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


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


def test_no_module_imports_itself_back() -> None:
    cycles = [" -> ".join(str(p.relative_to(PACKAGE)) for p in cycle) for cycle in _cycles(_graph())]
    assert not cycles, "\n".join(cycles)


def test_store_backends_know_only_what_every_store_shares() -> None:
    stores = PACKAGE / "_stores"
    graph = _graph()
    allowed = {stores / "_base.py", stores / "_tables.py", stores / "_leases.py"}  # leases: every store has them
    for backend in ("_sql.py", "_session.py", "_redis.py"):
        below = {p for p in graph[stores / backend] if p.parent == stores}
        assert below <= allowed, f"_stores/{backend} imports {sorted(p.name for p in below - allowed)}"


def test_the_check_sees_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    root = tmp_path / "agno_compression"
    root.mkdir()
    source = root / "probe.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ._manager import CompressionManager\n"
        "def f():\n    from ._cli import app\n    import agno_compression.eval\n",
        encoding="utf-8",
    )
    assert _imported(source, root) == {"_manager", "_cli", "eval"}


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _named_cycles(root: Path) -> list[list[str]]:
    return [[p.relative_to(root).as_posix() for p in cycle] for cycle in _cycles(_graph(root))]


def test_the_cycle_check_finds_a_cycle_through_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    root = _write(
        tmp_path / "probe",
        {
            "__init__.py": "from ._a import A\n",
            "_a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._b import B\nclass A: ...\n",
            "_b.py": "def make():\n    from probe._c import C\n    return C\nclass B: ...\n",
            "_c.py": "def make():\n    from . import _a\n    return _a.A\nclass C: ...\n",
            "_d.py": "from ._d import D\nclass D: ...\n",
            "_e.py": "from ._a import A\n",
        },
    )
    assert _named_cycles(root) == [["_a.py", "_b.py", "_c.py"], ["_d.py"]]


def test_a_subpackage_that_re_exports_its_children_is_a_cycle_only_when_a_child_imports_it_back(
    tmp_path: Path,
) -> None:
    files = {
        "__init__.py": "from ._parts import Part\n",
        "_parts/__init__.py": "from ._one import Part\nfrom ._two import Other\n",
        "_parts/_one.py": "from ._two import Other\nclass Part: ...\n",
        "_parts/_two.py": "from .._core import X\nclass Other: ...\n",
        "_core.py": "X = 1\n",
        "_user.py": "from ._parts import Part\nfrom ._parts._two import Other\n",
    }
    assert _named_cycles(_write(tmp_path / "clean", files)) == []
    files["_parts/_two.py"] = "def late():\n    from . import Part\n    return Part\nclass Other: ...\n"
    assert _named_cycles(_write(tmp_path / "looped", files)) == [
        ["_parts/__init__.py", "_parts/_one.py", "_parts/_two.py"]
    ]


def test_no_module_is_over_500_lines() -> None:
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in _sources()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500
    }
    assert not long, long
