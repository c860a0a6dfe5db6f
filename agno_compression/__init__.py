"""agno-compression: keep agno Agents and Teams inside their context window without losing anything.

>>> from agno_compression import CompressionManager
>>> agent = CompressionManager(compress_at_tokens=16_000).attach(Agent(model=..., db=SqliteDb(...)))
"""

from ._exceptions import CompressionError, ConfigError, StoreError, SummarizerError, TokenCountError
from ._manager import CompressionManager, FoldEvent
from ._metrics import USAGE_STYLES, StreamUsage, fix_stream_usage, stream_usage_style, usage_increment
from ._observations import (
    OUTPUT_GUIDANCE,
    ObservationPolicy,
    ObservationSummaryPolicy,
    TieredOutputPolicy,
    TruncatePolicy,
    shorten_text,
    truncate_output,
)
from ._plan import FoldPlan, PairViolation, pair_violations, plan_fold
from ._sessions import SessionStats, compressed_view, full_messages, load_snapshot, snapshot, stats
from ._store import CompressionRecord, CompressionStore, SessionCompression, SQLAlchemyStore
from ._summarizers import (
    ExtractiveSummarizer,
    LLMSummarizer,
    Pipeline,
    Summarizer,
    Summary,
    SummaryRequest,
)
from .tokens import TokenCounter, count_tokens

__version__ = "0.1.0"

__all__ = [
    "OUTPUT_GUIDANCE",
    "USAGE_STYLES",
    "CompressionError",
    "CompressionManager",
    "CompressionRecord",
    "CompressionStore",
    "ConfigError",
    "ExtractiveSummarizer",
    "FoldEvent",
    "FoldPlan",
    "LLMSummarizer",
    "ObservationPolicy",
    "ObservationSummaryPolicy",
    "PairViolation",
    "Pipeline",
    "SQLAlchemyStore",
    "SessionCompression",
    "SessionStats",
    "StoreError",
    "StreamUsage",
    "Summarizer",
    "SummarizerError",
    "Summary",
    "SummaryRequest",
    "TieredOutputPolicy",
    "TokenCountError",
    "TokenCounter",
    "TruncatePolicy",
    "__version__",
    "compressed_view",
    "count_tokens",
    "fix_stream_usage",
    "full_messages",
    "load_snapshot",
    "pair_violations",
    "plan_fold",
    "shorten_text",
    "snapshot",
    "stats",
    "stream_usage_style",
    "truncate_output",
    "usage_increment",
]
