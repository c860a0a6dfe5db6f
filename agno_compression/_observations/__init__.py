"""Observation handling: tool outputs shortened or summarized as they enter the context (core, pure).

The policies (``_policy``) are interchangeable ``ObservationPolicy``s; ``truncate_output`` and
``shorten_text`` (``_truncation``) cut text with ``_cuts`` and re-render structures with ``_structure``.
Applying a policy during a run is the integration layer's (``agno_compression._policies``).
"""

from ._policy import (
    OUTPUT_GUIDANCE,
    ObservationPolicy,
    ObservationSummaryPolicy,
    TieredOutputPolicy,
    TruncatePolicy,
)
from ._truncation import shorten_text, truncate_output

__all__ = [
    "OUTPUT_GUIDANCE",
    "ObservationPolicy",
    "ObservationSummaryPolicy",
    "TieredOutputPolicy",
    "TruncatePolicy",
    "shorten_text",
    "truncate_output",
]
