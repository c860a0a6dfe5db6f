"""Command line: ``agno-compression inspect | export | eval | report``."""

from __future__ import annotations


def main() -> None:
    raise SystemExit("agno-compression: the CLI is not built yet")
