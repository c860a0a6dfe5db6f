"""The runs a manager is folding: one ``RunState`` per live message list, found again by identity.

agno hands the manager the same list object on every model call of a run, and the run's
``RunContext`` (in the pre-hook) whose ``messages`` later becomes that list. The registry keys
both by ``id()`` and checks identity, so a recycled id never mixes two runs up.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agno.models.message import Message

from ._plan import is_summary

if TYPE_CHECKING:
    from concurrent.futures import Future

    from agno.models.base import Model

    from ._events import FoldEvent
    from ._keeping._names import Names
    from ._keeping._working_set import Walk
    from ._stores import CompressionStore, SessionCompression

MAX_TRACKED_RUNS = 256
"""Runs remembered at once; the oldest is forgotten first (a run whose post-hook never came)."""
EARLY_FOLD_GAP = 4
"""Model calls at least between a fold and an early (under budget) one: the agent keeps a few steps verbatim."""


@dataclass
class RunOwner:
    """Who a live list belongs to: enough to load and record the session's compression state."""

    session_id: str
    run_id: str | None
    owner_type: str
    owner_id: str | None
    store: CompressionStore | None
    history: bool
    db: Any = None
    session: Any = None
    """agno's session object for the run, with the runs it loaded (``None`` when unknown)."""
    loaded: SessionCompression | None = None
    """The session's compression state when the run started (``None`` until loaded)."""
    pending: list[Future[None]] = field(default_factory=list)
    """Records of this run's folds still being written."""
    written: list[FoldEvent] = field(default_factory=list)
    """This run's folds whose records are written, in order."""
    lease: str | None = None
    """The holder name of the run's lease on its session (``_stores._leases``), while it holds one."""


@dataclass
class RunState:
    """What the manager remembers about one live message list (one run's model loop)."""

    live: list[Message]
    ledger: list[Message] = field(default_factory=list)
    seen: set[int] = field(default_factory=set)
    tools: Sequence[Any] | None = None
    withheld: tuple[list[Any], Any] | None = None
    """The sent tool list of this model loop and the search tool's definition held back from it until a fold."""
    model: Model | None = None
    prompt_tokens: int = 0
    events: list[FoldEvent] = field(default_factory=list)
    prepared: bool = False
    context: RunOwner | None = None
    sent_tokens: int = 0
    calibrated_on: str | None = None
    stuck_at: int | None = None
    """Prompt tokens after a fold that could not get under the budget (the kept messages alone exceed it)."""
    stuck_on: int | None = None
    """``id()`` of the newest tool batch when the fold got stuck: once a newer batch comes, the stuck one can be
    folded."""
    call_originals: dict[int, tuple[Message, list[Any]]] = field(default_factory=dict)
    """Kept assistant messages whose call arguments were shortened in context, by ``id()``, with their original
    calls: put back before the run is stored (``full_run``)."""
    limit: int | None = None
    """This run's budget after the provider rejected a prompt as too long (below ``compress_at_tokens``)."""
    mask_fell_back: bool = False
    """Masking alone could not bring a prompt of this run under the budget (warned once)."""
    policed: set[int] = field(default_factory=set)
    """``id()`` of tool messages the observation policy has already seen."""
    policy_usage: list[tuple[Any, Any]] = field(default_factory=list)
    """``(model response, model)`` of observation-policy model calls, accounted into this run's metrics."""
    current: Message | None = None
    """The run's own input message (the current user message), found when the live list is first seen."""
    calls: int = 0
    """Model calls of this live list seen so far."""
    folded_at: int = -EARLY_FOLD_GAP
    """``calls`` at the newest fold of this live list."""
    names: Names | None = None
    """The names in use of every step this run folded so far (its progress summaries show only what fits)."""
    walk: Walk | None = None
    """What the run has in hand for the working set, walked as messages come (``_held.estimate``)."""
    growth: list[int] = field(default_factory=list)
    """Tokens each model call's prompt added over the previous call's as sent (calls right after a fold too)."""
    tight: bool = False
    """The system messages, tools and request leave no workable room under the budget (warned once)."""
    asked: str | None = None
    """What the agent asked to keep when it called ``fold_context``: the next model call folds first."""
    cache_tail: tuple[int, int] | None = None
    """Where the previous request of this loop had its newest block, and how many folds had happened then: a
    cache breakpoint there is still valid while no fold came in between (``_prompt_cache``)."""

    def observe(self) -> None:
        """Append messages not seen before to the ledger, in order of first appearance."""
        for m in self.live:
            if id(m) not in self.seen and not is_summary(m):
                self.seen.add(id(m))
                self.ledger.append(m)

    def restore_calls(self) -> None:
        """Put back the original call arguments of messages shortened in context (the stored run keeps them)."""
        for message, calls in self.call_originals.values():
            message.tool_calls = calls
        self.call_originals.clear()

    @contextlib.contextmanager
    def original_calls(self) -> Iterator[None]:
        """Within the block, messages shortened in context hold their original call arguments again."""
        shortened = {key: message.tool_calls for key, (message, _) in self.call_originals.items()}
        for message, calls in self.call_originals.values():
            message.tool_calls = calls
        try:
            yield
        finally:
            for key, (message, _) in self.call_originals.items():
                message.tool_calls = shortened.get(key, message.tool_calls)

    def with_original_calls(self, messages: Sequence[Message]) -> list[Message]:
        """``messages``, each one shortened in context as a copy that holds its original call arguments."""
        originals = self.call_originals
        return [m.model_copy(update={"tool_calls": originals[id(m)][1]}) if id(m) in originals else m for m in messages]

    def full_run(self, current: list[Message], memory_only: bool = False) -> list[Message]:
        """Every message the live list ever held (ledger order), then any of ``current`` not seen yet.

        ``memory_only`` leaves out what agno keeps out of a run's stored messages (``add_to_agent_memory``).
        """
        known = {id(m) for m in self.ledger}
        full = [m for m in self.ledger if m.add_to_agent_memory or not memory_only]
        return full + [m for m in current if id(m) not in known and not is_summary(m)]


class RunRegistry:
    """Live lists and registered run contexts, bounded, safe to share between threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: OrderedDict[int, RunState] = OrderedDict()
        self._contexts: OrderedDict[int, tuple[Any, Any, Any]] = OrderedDict()

    def register(self, run_context: Any, owner: Any, session: Any) -> None:
        """Remember a run's context (its ``messages`` becomes the live list), owner and session."""
        with self._lock:
            self._contexts[id(run_context)] = (run_context, owner, session)
            while len(self._contexts) > MAX_TRACKED_RUNS:
                self._contexts.popitem(last=False)

    def take_context(self, messages: list[Message]) -> tuple[Any, Any, Any] | None:
        """The registered ``(run_context, owner, session)`` whose live list is ``messages``, forgotten once taken."""
        with self._lock:
            for key, entry in self._contexts.items():
                if getattr(entry[0], "messages", None) is messages:
                    del self._contexts[key]
                    return entry
        return None

    def state(self, messages: list[Message]) -> RunState:
        """The state of a live list, new on first sight."""
        with self._lock:
            state = self._runs.get(id(messages))
            if state is None or state.live is not messages:
                state = RunState(live=messages)
                self._runs[id(messages)] = state
                while len(self._runs) > MAX_TRACKED_RUNS:
                    self._runs.popitem(last=False)
            return state

    def find(self, live: Any) -> RunState | None:
        """The state of ``live`` if it is a list being folded, without creating one."""
        with self._lock:
            state = self._runs.get(id(live)) if live is not None else None
        return state if state is not None and state.live is live else None

    def pop(self, live: Any, messages: Sequence[Message]) -> RunState | None:
        """Forget and return a finished run's state: by its live list, else by any message it has seen."""
        with self._lock:
            if live is not None and id(live) in self._runs and self._runs[id(live)].live is live:
                return self._runs.pop(id(live))
            ids = {id(m) for m in messages}
            for key, state in reversed(self._runs.items()):  # newest first: a continued run shares the paused one's
                if ids & state.seen:
                    return self._runs.pop(key)
        return None
