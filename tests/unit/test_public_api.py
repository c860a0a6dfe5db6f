"""The public API is exactly what ``__all__`` lists, and the contract's names are there."""

from __future__ import annotations

import agno_compression


def test_all_is_complete_and_importable() -> None:
    # subpackages, attributes of the package once imported: token counting, test helpers, the eval tools
    public = {n for n in dir(agno_compression) if not n.startswith("_")} - {"testing", "tokens", "eval"}
    exported = set(agno_compression.__all__) - {"__version__"}
    assert public == exported, (public - exported, exported - public)
    for name in agno_compression.__all__:
        assert getattr(agno_compression, name) is not None


def test_contract_names() -> None:
    for name in ("CompressionManager", "full_messages", "count_tokens", "truncate_output"):
        assert name in agno_compression.__all__
