"""agno-compression: keep agno Agents and Teams inside their context window without losing anything.

```python
from agno_compression import CompressionManager

agent = CompressionManager(compress_at_tokens=16_000).attach(Agent(model=..., db=SqliteDb(...)))
```

Token counting lives in ``agno_compression.tokens``, test helpers (scripted models, a loopback
guard) in ``agno_compression.testing``.
"""

from ._deletion import delete_compression
from ._exceptions import CompressionError, ConfigError, StoreError, SummarizerError, TokenCountError
from ._export import export_examples
from ._manager import CompressionManager, FoldEvent
from ._metrics import fix_stream_usage
from ._observations import (
    ObservationPolicy,
    ObservationSummaryPolicy,
    TieredOutputPolicy,
    TruncatePolicy,
    truncate_output,
)
from ._plan import is_summary
from ._sessions import compressed_view, full_messages, load_snapshot, snapshot, stats
from ._stores import CompressionRecord, CompressionStore, SQLAlchemyStore
from ._summarizers import ExtractiveSummarizer, LLMSummarizer, Pipeline, Summarizer, Summary, SummaryRequest
from .tokens import count_tokens
from .viewer import viewer_router

__version__ = "0.1.0"

__all__ = [  # grouped in docs/index.md; sorted here
    "CompressionError",
    "CompressionManager",
    "CompressionRecord",
    "CompressionStore",
    "ConfigError",
    "ExtractiveSummarizer",
    "FoldEvent",
    "LLMSummarizer",
    "ObservationPolicy",
    "ObservationSummaryPolicy",
    "Pipeline",
    "SQLAlchemyStore",
    "StoreError",
    "Summarizer",
    "SummarizerError",
    "Summary",
    "SummaryRequest",
    "TieredOutputPolicy",
    "TokenCountError",
    "TruncatePolicy",
    "compressed_view",
    "count_tokens",
    "delete_compression",
    "export_examples",
    "fix_stream_usage",
    "full_messages",
    "is_summary",
    "load_snapshot",
    "snapshot",
    "stats",
    "truncate_output",
    "viewer_router",
]
