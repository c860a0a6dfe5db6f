"""Living beside agno's own features: what ``attach`` checks, warns about or defers to.

Attaching must never make an agno feature work worse than without it:

- offloading (``offload_tool_results``) cannot run with any compression in agno: ``attach`` refuses
  it for the target and every member it would attach, before changing anything;
- another compression manager (agno's own, or a second one of ours) is replaced with a warning
  that names it, and its hooks and output guidance are taken off (``release``): the model wrappers
  are installed once per model and serve each run's own manager, so nothing of the old one acts;
- agno's ``Compaction(on_context_overflow=True)`` (or ``compaction=True``) handles the provider's
  "prompt too long" itself: the overflow wrapper lets such an agent's overflow errors through to agno,
  also where its model instance is shared with agents that have no Compaction;
- the ``search_folded_history`` tool is handed to each run by a pre-hook instead of living in
  ``agent.tools``, so ``to_dict`` / ``from_dict(..., registry=..., strict=True)`` round-trips
  (AgentOS and saved configs) never meet a tool no registry knows; its definition is withheld from the
  model until the session has folded (``withhold_tool``), so a run that never folds sends exactly what
  plain agno sends;
- agno's ``Agent.compact`` (AgentOS's ``POST /agents/<id>/sessions/<id>/compact``) answers ``not_enabled``
  without agno's ``Compaction``: on an agent with agno-compression's manager and no ``Compaction`` it folds the
  session with the manager instead (``route_compaction``); an agent with a ``Compaction`` keeps agno's own.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from ._exceptions import ConfigError

log = logging.getLogger("agno_compression")


def label(target: Any) -> str:
    """``Agent 'name'`` / ``Team 'name'`` for messages."""
    return f"{type(target).__name__} {getattr(target, 'name', None) or getattr(target, 'id', None) or '(unnamed)'!r}"


def walk(target: Any, include_members: bool) -> Iterator[tuple[Any, str]]:
    """``target`` and (when asked) its members, depth first, each with its path (``Team 'a' > Agent 'b'``)."""
    from agno.agent import Agent
    from agno.team import Team

    def visit(node: Any, path: str, seen: set[int]) -> Iterator[tuple[Any, str]]:
        if id(node) in seen:
            return
        seen.add(id(node))
        yield node, path
        if isinstance(node, Team) and include_members and isinstance(node.members, list):
            for member in node.members:
                if isinstance(member, (Agent, Team)):
                    yield from visit(member, f"{path} > {label(member)}", seen)

    yield from visit(target, label(target), set())


def _offloads(node: Any) -> bool:
    # the setting (True or a ResultStore) or a store already built or handed down by a parent team
    return bool(getattr(node, "offload_tool_results", None)) or getattr(node, "_result_store", None) is not None


def check_attachable(manager: Any, target: Any, include_members: bool) -> None:
    """Raise ``ConfigError`` before anything is changed when agno could not run the result; warn on replacements."""
    nodes = list(walk(target, include_members))
    for node, path in nodes:
        if _offloads(node):
            where = path if node is target else f"{path} (in {label(target)})"
            raise ConfigError(
                f"{where} has offload_tool_results={getattr(node, 'offload_tool_results', None)!r}; agno cannot "
                "combine offloading with compression. Turn offloading off (offload_tool_results=False) on it to "
                "attach agno-compression; nothing was changed."
            )
    for node, path in nodes:
        current = getattr(node, "compression_manager", None)
        if current is not None and current is not manager:
            kind = f"{type(current).__module__}.{type(current).__qualname__}"
            warnings.warn(
                f"agno-compression: attach() replaces the compression manager of {path} ({kind}); "
                "only agno-compression's manager acts on it now.",
                UserWarning,
                stacklevel=3,
            )
            log.warning("agno-compression: attach() replaces %s's compression manager (%s)", path, kind)


def compaction_handles_overflow(agent: Any) -> bool:
    """True when agno's own Compaction answers the provider's "prompt too long" for this agent."""
    from agno.compaction import Compaction

    compaction = getattr(agent, "compaction", None)
    if compaction is not True and not (isinstance(compaction, Compaction) and compaction.on_context_overflow):
        return False
    db = getattr(agent, "db", None)
    if db is not None:
        from agno.compaction.archive import stores_compaction_records

        if not stores_compaction_records(db):
            return False  # agno turns compaction off on such a db: the manager's recovery stays the only one
    return True


def note_overflow_owner(manager: Any, agent: Any) -> None:
    """Remember (at run start, when agno has set the id) an agent whose own Compaction answers overflow."""
    agent_id = getattr(agent, "id", None)
    if agent_id and compaction_handles_overflow(agent):
        manager._compaction_agents.add(agent_id)


def defers_overflow(manager: Any, run_response: Any) -> bool:
    """True when the run belongs to an agent whose agno Compaction answers overflow (its model may be shared)."""
    agent_id = getattr(run_response, "agent_id", None)
    return bool(agent_id) and agent_id in getattr(manager, "_compaction_agents", ())


def add_client_tool(run_context: Any, tool: Any, name: str) -> None:
    """Offer ``tool`` to this run only (``run_context.client_tools``), once, unless a tool of that name is there."""
    if run_context is None:
        return
    tools = list(getattr(run_context, "client_tools", None) or [])
    if any(_tool_name(t) == name for t in tools):
        return
    run_context.client_tools = [*tools, tool]


_WITHHELD = "_agno_compression_withheld"
MAX_WITHHELD = 256
"""Tool lists remembered between agno formatting them and the run's first budget check (one per model loop)."""


class _Withheld:
    """The search tool definitions a model held back, by ``id()`` of the tool list agno formatted."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lists: OrderedDict[int, tuple[list[Any], Any]] = OrderedDict()

    def put(self, tools: Any, sent: list[Any], definition: Any) -> None:
        with self._lock:
            self._lists[id(tools)] = (sent, definition)
            while len(self._lists) > MAX_WITHHELD:
                self._lists.popitem(last=False)

    def take(self, tools: Any) -> tuple[list[Any], Any] | None:
        with self._lock:
            return self._lists.pop(id(tools), None)


def withhold_tool(model: Any, name: str) -> Any:
    """Wrap ``model._format_tools`` so the definition of tool ``name`` is left out of what the model is sent.

    agno formats a run's tools once per model loop and sends that same list with every call of the loop;
    the manager receives the unformatted list in ``should_compress``, takes the held-back definition
    (``take_withheld``) and, once the session has folded, puts it back at the end of the sent list. agno
    still knows the function, so a call to it works from then on. Wrapped once per model, whatever number of
    managers use it (the held-back lists live on the model); a list already formatted (providers format again
    inside ``invoke``) or without the tool passes through untouched.
    """
    from agno.tools.function import Function

    if model is None or getattr(model, _WITHHELD, None) is not None:
        return model
    original = model._format_tools
    withheld = _Withheld()

    def format_tools(tools: Any) -> Any:
        formatted = original(tools)
        if not any(isinstance(t, Function) and t.name == name for t in tools or ()):
            return formatted
        definition = next((d for d in formatted if _tool_name(d.get("function", d)) == name), None)
        if definition is None:
            return formatted
        sent = [d for d in formatted if d is not definition]
        withheld.put(tools, sent, definition)
        return sent

    format_tools.__wrapped__ = original  # type: ignore[attr-defined]
    model._format_tools = format_tools
    setattr(model, _WITHHELD, withheld)
    return model


def take_withheld(model: Any, tools: Any) -> tuple[list[Any], Any] | None:
    """``(sent list, held-back definition)`` for the tool list ``model`` formatted as ``tools``, once."""
    withheld = getattr(model, _WITHHELD, None)
    return withheld.take(tools) if isinstance(withheld, _Withheld) and tools is not None else None


def release(target: Any, manager: Any) -> None:
    """Take another compression manager's hooks and output guidance off ``target`` before ``manager`` is wired.

    The model wrappers are shared and serve each run's own manager, so nothing else of the old manager stays:
    the target is left as if only ``manager`` had been attached.
    """
    from agno.compression.manager import CompressionManager as AgnoCompressionManager

    from ._observations import OUTPUT_GUIDANCE

    def foreign(hook: Any) -> bool:
        owner = getattr(hook, "__self__", None)
        return isinstance(owner, AgnoCompressionManager) and owner is not manager

    for attr in ("pre_hooks", "post_hooks"):
        hooks = getattr(target, attr, None)
        if isinstance(hooks, list) and any(foreign(h) for h in hooks):
            setattr(target, attr, [h for h in hooks if not foreign(h)] or None)
    previous = getattr(target, "compression_manager", None)
    instructions = target.instructions
    guided = previous is not manager and getattr(previous, "output_guidance", False)
    if guided and not manager.output_guidance and isinstance(instructions, list) and OUTPUT_GUIDANCE in instructions:
        target.instructions = [i for i in instructions if i != OUTPUT_GUIDANCE] or None


def _tool_name(tool: Any) -> str | None:
    if isinstance(tool, dict):
        return tool.get("name")
    return getattr(tool, "name", None) or getattr(tool, "__name__", None)


def add_guidance(target: Any) -> None:
    """Add ``OUTPUT_GUIDANCE`` to ``target``'s instructions (once)."""
    from ._observations import OUTPUT_GUIDANCE

    instructions = target.instructions
    if instructions is None:
        target.instructions = [OUTPUT_GUIDANCE]
    elif isinstance(instructions, str):
        target.instructions = [instructions, OUTPUT_GUIDANCE] if OUTPUT_GUIDANCE not in instructions else instructions
    elif isinstance(instructions, list) and OUTPUT_GUIDANCE not in instructions:
        target.instructions = [*instructions, OUTPUT_GUIDANCE]


_ROUTED = "_agno_compression_routed"
_route_lock = threading.Lock()


def route_compaction() -> None:
    """Make agno's ``Agent.compact`` / ``acompact`` (AgentOS's ``POST /agents/<id>/sessions/<id>/compact``) fold with
    agno-compression where the agent has its ``CompressionManager`` and no agno ``Compaction``: the session's
    history is folded now (``fold_session``) and the outcome told as agno's ``CompactionResult``. Any other agent
    gets agno's own compaction. ``Agent.compact`` looks ``agno.agent._messages.compact_session`` up at each call,
    so wrapping it there (once per process, whatever number of managers call this) reaches every agent, copies
    AgentOS makes for a request included (they share the manager). agno has no team compaction to route."""
    from agno.agent import _messages

    with _route_lock:
        if getattr(_messages.compact_session, _ROUTED, False):
            return
        original, aoriginal = _messages.compact_session, _messages.acompact_session

        def compact_session(agent: Any, session_id: str | None = None, user_id: str | None = None) -> Any:
            manager = _folding_manager(agent)
            if manager is None:
                return original(agent, session_id=session_id, user_id=user_id)
            return _compaction_result(manager, agent, session_id or agent.session_id, user_id)

        async def acompact_session(agent: Any, session_id: str | None = None, user_id: str | None = None) -> Any:
            import asyncio

            manager = _folding_manager(agent)
            if manager is None:
                return await aoriginal(agent, session_id=session_id, user_id=user_id)
            sid = session_id or agent.session_id
            return await asyncio.to_thread(_compaction_result, manager, agent, sid, user_id)

        for wrapper, wrapped in ((compact_session, original), (acompact_session, aoriginal)):
            setattr(wrapper, "__wrapped__", wrapped)  # noqa: B010 (mypy: a function's attribute)
            setattr(wrapper, _ROUTED, True)
        _messages.compact_session = compact_session
        _messages.acompact_session = acompact_session


def _folding_manager(agent: Any) -> Any | None:
    """The agent's agno-compression manager when it folds the agent's compaction requests: one is attached and
    agno's own ``Compaction`` is not on (that one keeps answering them)."""
    from agno.agent._messages import agent_compaction
    from agno.compression.manager import CompressionManager as AgnoCompressionManager

    manager = getattr(agent, "compression_manager", None)
    if not isinstance(manager, AgnoCompressionManager) or not callable(getattr(manager, "fold_session", None)):
        return None
    return manager if agent_compaction(agent) is None else None


def _compaction_result(manager: Any, agent: Any, session_id: str | None, user_id: str | None) -> Any:
    """``manager.fold_session`` for ``agent``'s session, as agno's ``CompactionResult``: ``compacted`` with a
    record of the counts; ``nothing_to_fold`` when nothing is left to fold or while a run of the session is going
    (a decline, said in ``message``); ``no_history`` for no such session; ``not_enabled`` when the agent's db
    cannot hold a fold (the reason in ``message``)."""
    from agno.compaction.types import CompactionRecord, CompactionResult, CompactionStatus

    from ._requested_fold import FOLDED, NO_SESSION

    if not session_id:
        return CompactionResult(status=CompactionStatus.NO_HISTORY, message="No such session.")
    try:
        result = manager.fold_session(agent, session_id, user_id=user_id)
    except ConfigError as exc:
        return CompactionResult(status=CompactionStatus.NOT_ENABLED, message=str(exc))
    if result.status == NO_SESSION:
        return CompactionResult(status=CompactionStatus.NO_HISTORY, message="No such session.")
    if result.status != FOLDED:  # nothing to fold, or a run of the session is going: try again later
        return CompactionResult(status=CompactionStatus.NOTHING_TO_FOLD, message=result.message)
    record = CompactionRecord(
        messages_compacted=result.folded_messages,
        summary=result.summary or "",
        id=None if result.record_id is None else str(result.record_id),
        archived=True,  # every folded message stays in the session's stored runs
        tokens_before=result.tokens_before,
        tokens_after=result.tokens_after,
    )
    return CompactionResult(status=CompactionStatus.COMPACTED, message=result.message, record=record)
