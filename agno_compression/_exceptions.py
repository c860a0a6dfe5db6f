"""Errors raised by agno-compression.

The hierarchy::

    CompressionError            base of everything this package raises
    ├── ConfigError             bad arguments (also a ValueError)
    ├── SummarizerError         a summarizer failed or returned nothing usable
    ├── TokenCountError         no backend could count the text
    └── StoreError              the session database could not be read or written

Inside an agent run none of these escape: the manager catches them and degrades
to a cheaper strategy with a warning (see ``CompressionManager``). They surface
only where a user calls the API directly.
"""

from __future__ import annotations


class CompressionError(Exception):
    """Base class of every error raised by agno-compression."""


class ConfigError(CompressionError, ValueError):
    """An argument or setting has a value that cannot work."""


class SummarizerError(CompressionError):
    """A summarizer raised, timed out, or returned empty text."""


class TokenCountError(CompressionError):
    """Counting tokens failed in every backend that was tried."""


class StoreError(CompressionError):
    """The compression records could not be read from or written to the database."""
