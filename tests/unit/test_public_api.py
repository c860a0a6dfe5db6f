"""The public API is exactly what ``__all__`` lists, and the contract's names are there."""

from __future__ import annotations

import ast
from pathlib import Path

import agno_compression

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = set(agno_compression.__all__)


def test_all_is_complete_and_importable() -> None:
    # subpackages, attributes of the package once imported: token counting, prices, test helpers, the eval tools,
    # the session viewer
    public = {n for n in dir(agno_compression) if not n.startswith("_")} - {
        "testing",
        "tokens",
        "pricing",
        "eval",
        "viewer",
    }
    exported = set(agno_compression.__all__) - {"__version__"}
    assert public == exported, (public - exported, exported - public)
    for name in agno_compression.__all__:
        assert getattr(agno_compression, name) is not None


def test_contract_names() -> None:
    for name in ("CompressionManager", "full_messages", "count_tokens", "truncate_output"):
        assert name in agno_compression.__all__


def test_at_most_thirty_two_names_each_documented() -> None:
    assert len(agno_compression.__all__) <= 32, len(agno_compression.__all__)
    undocumented = [n for n in agno_compression.__all__ if not (getattr(agno_compression, n).__doc__ or "").strip()]
    assert not undocumented, undocumented
    reference = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    missing = [n for n in agno_compression.__all__ if f"`{n}`" not in reference]
    assert not missing, f"public names not listed in docs/index.md: {missing}"


def test_the_cookbook_imports_only_public_names() -> None:
    private = []
    for path in sorted((ROOT / "cookbook").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("agno_compression"):
                parts = node.module.split(".")
                hidden = [p for p in parts if p.startswith("_")]
                hidden += [a.name for a in node.names if a.name.startswith("_")]
                if hidden or (parts == ["agno_compression"] and not {a.name for a in node.names} <= PUBLIC):
                    private.append(f"{path.name}:{node.lineno} from {node.module} import ...")
    assert not private, private
