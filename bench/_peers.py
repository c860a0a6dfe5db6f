"""Peer libraries side by side: the same recordings replayed through LangChain, OpenHands SDK and Google ADK.

Each adapter drives the peer's own agent loop (or, for OpenHands, its condensers the way its agent
loop applies them) with a fake model of that library that plays the recorded assistant turns, tools
that return the recorded outputs, and, wherever the peer asks a model for a summary, a fake model
answering with the same deterministic stand-in ``_offline.digest`` agno's built-ins get. What the
fake model receives at every call is converted into agno ``Message`` lists (role, content, tool calls
with ids, tool call id) and measured exactly as our rows are: o200k tokens with
``TokenCounter("gpt-4o").count_prompt`` (with the same tool definitions agno sends), then scored by
``_replays.measured`` like our own rows (cost with ``eval.cached_costs``, acted-on facts with
``eval.acted_on_facts``, pair violations with ``_plan.pair_violations``). Wall and CPU ratios are against
the same peer replayed without compression (so they measure the peer's compression, not the peer against
agno).

Every adapter returns ``_replays.Replayed`` rows, so ``_report`` aggregates them with our own.
Peers whose package is not installed are skipped (``available()``).
"""

from __future__ import annotations

import gc
import importlib.util
import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from _offline import digest
from _replays import Replayed, measured
from agno.models.message import Message

from agno_compression.eval import END_OF_RECORDING, Trajectory, observations_as_tool_calls, split_turns
from agno_compression.testing import Reply
from agno_compression.tokens import TokenCounter

_COUNTER = TokenCounter("gpt-4o")

PEERS: dict[str, tuple[str, ...]] = {
    "langchain": ("langchain-summarization",),
    "openhands": ("openhands-llm-summarizing",),
    "adk": ("adk-compaction",),
}
"""Peer -> the settings (table rows) it adds. The OpenHands SDK (1.58) ships no observation-masking condenser
(only ``LLMSummarizingCondenser``, ``NoOpCondenser`` and ``PipelineCondenser``; masking was in the older
``openhands`` app), so it has one row: a pipeline of one condenser would be the same row again."""
UNCOMPRESSED = " uncompressed"
"""Suffix of the row of a peer replayed without compression: its own baseline. It can differ from agno's
``none`` on recordings of several runs: agno's Agent puts only the last 3 runs in the history by default,
the peers (LangChain thread, OpenHands event log, ADK session) keep every run."""


def settings(peer: str) -> list[str]:
    """The table rows ``peer`` adds: its settings, then itself without compression."""
    return [*PEERS[peer], peer + UNCOMPRESSED]


_MODULES = {"langchain": "langchain.agents", "openhands": "openhands.sdk", "adk": "google.adk"}
_PACKAGES = {"langchain": "langchain", "openhands": "openhands-sdk", "adk": "google-adk"}


def available() -> tuple[list[str], str | None]:
    """(peers whose package and adapter are here, one line naming the peers skipped, or None)."""
    found, missing = [], []
    for peer, module in _MODULES.items():
        try:
            ok = peer in ROWS and importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            ok = False
        if ok:
            found.append(peer)
        else:
            missing.append(_PACKAGES[peer])
    if not missing:
        return found, None
    return found, (
        f"peer rows skipped for {', '.join(missing)}: not installed (pip install -e '.[bench]'; "
        "openhands-sdk needs Python 3.12+, google-adk 3.11+)"
    )


# --- the recording as a script -------------------------------------------------------------------


@dataclass
class Script:
    """The recorded turns: each user message, then its assistant replies in order, then END_OF_RECORDING."""

    system: str | None
    turns: list[Any]
    outputs: dict[str, list[str]]
    tools: list[dict[str, Any]]
    """The tool definitions as agno sends them (counted with every prompt, as for our rows)."""
    turn: int = 0
    served: int = 0

    def next_reply(self) -> Reply:
        replies = self.turns[self.turn].replies
        if self.served < len(replies):
            self.served += 1
            return replies[self.served - 1]  # type: ignore[no-any-return]
        return Reply(text=END_OF_RECORDING)

    def next_turn(self) -> None:
        self.turn += 1
        self.served = 0

    def answer(self, name: str) -> str:
        queue = self.outputs.get(name)
        return queue.pop(0) if queue else f"(no recorded output left for {name})"


def script_of(trajectory: Trajectory) -> Script:
    messages = observations_as_tool_calls(trajectory.messages)
    system, turns, outputs = split_turns(messages)
    tools = [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": f"Recorded tool {name}.",
                "parameters": {"type": "object", "properties": {}, "additionalProperties": True},
            },
        }
        for name in outputs
    ]
    return Script(system, turns, {k: list(v) for k, v in outputs.items()}, tools)


def agno_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


# --- one replay's measurements ---------------------------------------------------------------------


@dataclass
class Capture:
    """What a peer's fake models saw: every prompt (as agno messages) and every summary written."""

    prompts: list[list[Message]] = field(default_factory=list)
    pairs: list[tuple[list[Message], str]] = field(default_factory=list)
    summarizer_calls: int = 0
    folds: int = 0
    masks: int = 0
    errors: int = 0


def _row(
    trajectory: Trajectory, setting: str, threshold: int, script: Script, cap: Capture, wall: float, cpu: float
) -> Replayed:
    tokens = [_COUNTER.count_prompt(p, script.tools) for p in cap.prompts]
    return measured(
        trajectory,
        setting,
        threshold,
        cap.prompts,
        tokens,
        cap.pairs,
        wall=wall,
        cpu=cpu,
        folds=cap.folds,
        masks=cap.masks,
        summarizer_calls=cap.summarizer_calls,
        errors=cap.errors,
    )


def _timed(run: Callable[[], Capture]) -> tuple[Capture, float, float]:
    gc.collect()
    started, cpu_started = time.perf_counter(), time.process_time()
    cap = run()
    return cap, time.perf_counter() - started, time.process_time() - cpu_started


def _paired(
    trajectory: Trajectory,
    threshold: int,
    settings: Sequence[str],
    run: Callable[[str | None, int], Capture],
    repeats: int,
) -> list[Replayed]:
    """Each setting next to the same peer without compression, ``repeats`` rounds; median wall and CPU."""
    import statistics

    label = f"{settings[0].split('-')[0]}{UNCOMPRESSED}"
    order: list[str | None] = [None, *settings]
    first: dict[str | None, tuple[Capture, Script]] = {}
    walls: dict[str | None, list[float]] = {s: [] for s in order}
    cpus: dict[str | None, list[float]] = {s: [] for s in order}
    for r in range(max(1, repeats)):
        for setting in order[r % len(order) :] + order[: r % len(order)]:
            cap, wall, cpu = _timed(lambda s=setting: run(s, threshold))  # type: ignore[misc]
            first.setdefault(setting, (cap, Script(None, [], {}, [])))
            walls[setting].append(wall)
            cpus[setting].append(cpu)
    script = script_of(trajectory)
    rows = []
    for setting in settings:
        row = _row(trajectory, setting, threshold, script, first[setting][0], 0.0, 0.0)
        row.wall, row.cpu = statistics.median(walls[setting]), statistics.median(cpus[setting])
        row.wall_none, row.cpu_none = statistics.median(walls[None]), statistics.median(cpus[None])
        rows.append(row)
    row = _row(trajectory, label, threshold, script, first[None][0], 0.0, 0.0)
    row.wall = row.wall_none = statistics.median(walls[None])
    row.cpu = row.cpu_none = statistics.median(cpus[None])
    rows.append(row)
    return rows


def warm(peer: str, trajectory: Trajectory, threshold: int) -> None:
    """Replay ``trajectory`` once with every setting of ``peer``: imports and first-use costs, never timed."""
    for setting in (None, *PEERS[peer]):
        RUNNERS[peer](trajectory, setting, threshold)


def uncompressed_tokens(peer: str, trajectory: Trajectory) -> list[int]:
    """The peer without compression: prompt tokens per call (equal to agno's ``none`` replay when the
    conversion is faithful; the smoke test checks it)."""
    script = script_of(trajectory)
    cap = RUNNERS[peer](trajectory, None, 0)
    return [_COUNTER.count_prompt(p, script.tools) for p in cap.prompts]


# --- LangChain: create_agent + SummarizationMiddleware ---------------------------------------------


def _langchain_to_agno(messages: Sequence[Any], system: str | None) -> list[Message]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    out: list[Message] = []
    for m in messages:
        text = m.text if isinstance(m.content, list) else m.content
        mid = str(m.id) if getattr(m, "id", None) else None
        extra = {"id": mid} if mid else {}
        if isinstance(m, SystemMessage):
            out.append(Message(role="system", content=text, **extra))
        elif isinstance(m, HumanMessage):
            out.append(Message(role="user", content=text, **extra))
        elif isinstance(m, AIMessage):
            calls = [agno_call(str(c["id"]), c["name"], c["args"]) for c in m.tool_calls]
            out.append(Message(role="assistant", content=text or None, tool_calls=calls or None, **extra))
        elif isinstance(m, ToolMessage):
            out.append(Message(role="tool", content=text, tool_call_id=m.tool_call_id, tool_name=m.name, **extra))
        else:
            out.append(Message(role="user", content=str(text), **extra))
    return out


def _langchain_models() -> tuple[type, type]:
    """The fake chat models (defined on first use, so this module imports without langchain)."""
    global _LC_MODELS
    if _LC_MODELS is not None:
        return _LC_MODELS
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    def usage(prompt: Sequence[Any], tools: list[dict[str, Any]], reply: str) -> dict[str, Any]:
        # what a provider reports: exact prompt tokens of this call (LangChain's trigger also reads it)
        n = _COUNTER.count_prompt(_langchain_to_agno(prompt, None), tools)
        out = _COUNTER.count_text(reply)
        return {"input_tokens": n, "output_tokens": out, "total_tokens": n + out}

    class ChatReplay(BaseChatModel):
        """Plays the recorded assistant turns; records every prompt it receives."""

        script: Any = None
        capture: Any = None

        @property
        def _llm_type(self) -> str:
            return "replay"

        def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
            self.capture.prompts.append(_langchain_to_agno(messages, None))
            reply: Reply = self.script.next_reply()
            calls = [
                {"id": c.id or f"call_{uuid.uuid4().hex[:8]}", "name": c.name, "args": c.arguments, "type": "tool_call"}
                for c in reply.tool_calls
            ]
            message = AIMessage(
                content=reply.text or "",
                tool_calls=calls,
                usage_metadata=usage(messages, self.script.tools, reply.text or ""),  # type: ignore[arg-type]
                response_metadata={"model_provider": "replay"},
            )
            return ChatResult(generations=[ChatGeneration(message=message)])

    class ChatStandin(BaseChatModel):
        """The stand-in summarizer: ``digest`` of the prompt it receives."""

        capture: Any = None

        @property
        def _llm_type(self) -> str:
            return "replay"

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
            self.capture.summarizer_calls += 1
            text = messages[-1].text if messages else ""
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=digest(text)))])

    _LC_MODELS = (ChatReplay, ChatStandin)
    return _LC_MODELS


_LC_MODELS: tuple[type, type] | None = None


def _langchain_run(trajectory: Trajectory, setting: str | None, threshold: int) -> Capture:
    from langchain.agents import create_agent
    from langchain.agents.middleware import SummarizationMiddleware
    from langchain_core.tools import StructuredTool
    from langgraph.checkpoint.memory import InMemorySaver

    script = script_of(trajectory)
    cap = Capture()
    chat_replay, chat_standin = _langchain_models()
    model = chat_replay(script=script, capture=cap)
    tools = [
        StructuredTool.from_function(
            func=lambda _n=spec["function"]["name"], **_: script.answer(_n),
            name=spec["function"]["name"],
            description=spec["function"]["description"],
            args_schema=spec["function"]["parameters"],
        )
        for spec in script.tools
    ]
    middleware = []
    if setting is not None:
        summarization = SummarizationMiddleware(model=chat_standin(capture=cap), trigger=("tokens", threshold))
        original = summarization._create_summary

        def create_summary(messages: list[Any]) -> str:
            text = original(messages)
            cap.pairs.append((_langchain_to_agno(messages, None), text))
            cap.folds += 1
            return text

        object.__setattr__(summarization, "_create_summary", create_summary)
        middleware.append(summarization)
    agent = create_agent(
        model, tools=tools, system_prompt=script.system, middleware=middleware, checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": 100_000}
    for turn in script.turns:
        try:
            agent.invoke({"messages": [{"role": "user", "content": turn.user}]}, config=config)  # type: ignore[arg-type]
        except Exception:
            cap.errors += 1
        script.next_turn()
    return cap


def langchain_rows(trajectory: Trajectory, threshold: int, repeats: int = 1) -> list[Replayed]:
    """LangChain 1.x ``create_agent`` with ``SummarizationMiddleware(trigger=("tokens", T))``, default keep."""
    return _paired(trajectory, threshold, PEERS["langchain"], lambda s, th: _langchain_run(trajectory, s, th), repeats)


RUNNERS: dict[str, Callable[[Trajectory, str | None, int], Capture]] = {"langchain": _langchain_run}
ROWS: dict[str, Callable[..., list[Replayed]]] = {"langchain": langchain_rows}


# --- Google ADK: Runner + App(events_compaction_config=EventsCompactionConfig(token_threshold=T)) --------

ADK_EVENT_RETENTION = 10
"""ADK has no default: ``token_threshold`` must come with ``event_retention_size`` (raw events kept after a
compaction). 10 events is about LangChain's default of keeping the last 20 messages (an ADK event holds a
model turn with all its calls, or all the responses to it)."""


def _adk_to_agno(request: Any) -> list[Message]:
    """An ADK ``LlmRequest`` as agno messages: system instruction, then each content part by role."""
    out: list[Message] = []
    system = getattr(request.config, "system_instruction", None) if request.config else None
    if system:
        out.append(Message(role="system", content=system if isinstance(system, str) else str(system)))
    for content in request.contents:
        texts, calls, results = [], [], []
        for part in content.parts or []:
            if part.function_call is not None:
                fc = part.function_call
                calls.append(agno_call(str(fc.id), str(fc.name), dict(fc.args or {})))
            elif part.function_response is not None:
                fr = part.function_response
                response = fr.response or {}
                result = response.get("result", response) if isinstance(response, dict) else response
                results.append(
                    Message(
                        role="tool",
                        tool_call_id=str(fr.id),
                        tool_name=fr.name,
                        content=result if isinstance(result, str) else json.dumps(result),
                    )
                )
            elif part.text:
                texts.append(part.text)
        text = "".join(texts) or None
        if content.role == "model":
            out.append(Message(role="assistant", content=text, tool_calls=calls or None))
        else:
            if text:
                out.append(Message(role="user", content=text))
            out.extend(results)
    return out


def _adk_classes() -> tuple[type, type, type]:
    global _ADK_CLASSES
    if _ADK_CLASSES is not None:
        return _ADK_CLASSES
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.tools.base_tool import BaseTool
    from google.genai import types

    def usage(prompt: int, text: str) -> Any:
        out = _COUNTER.count_text(text)
        return types.GenerateContentResponseUsageMetadata(
            prompt_token_count=prompt, candidates_token_count=out, total_token_count=prompt + out
        )

    class ReplayLlm(BaseLlm):
        """Plays the recorded assistant turns; records every request; reports exact prompt tokens."""

        script: Any = None
        capture: Any = None

        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
            prompt = _adk_to_agno(llm_request)
            self.capture.prompts.append(prompt)
            reply: Reply = self.script.next_reply()
            parts = [types.Part(text=reply.text)] if reply.text else []
            parts += [
                types.Part(
                    function_call=types.FunctionCall(
                        id=c.id or f"call_{uuid.uuid4().hex[:8]}",
                        name=c.name,
                        args=c.arguments if isinstance(c.arguments, dict) else {"input": c.arguments},
                    )
                )
                for c in reply.tool_calls
            ]
            tokens = _COUNTER.count_prompt(prompt, self.script.tools)
            yield LlmResponse(content=types.Content(role="model", parts=parts), usage_metadata=usage(tokens, ""))

    class StandinLlm(BaseLlm):
        """The stand-in summarizer: ``digest`` of the prompt it receives."""

        capture: Any = None

        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
            self.capture.summarizer_calls += 1
            text = "".join(p.text or "" for c in llm_request.contents for p in c.parts or [])
            summary = digest(text)
            yield LlmResponse(
                content=types.Content(role="model", parts=[types.Part(text=summary)]),
                usage_metadata=usage(_COUNTER.count_text(text), summary),
            )

    class RecordedTool(BaseTool):
        """Answers with the recorded outputs of its name, in order."""

        def __init__(self, name: str, description: str, script: Any) -> None:
            super().__init__(name=name, description=description)
            self._script = script

        def _get_declaration(self) -> Any:
            return types.FunctionDeclaration(
                name=self.name,
                description=self.description,
                parameters_json_schema={"type": "object", "properties": {}, "additionalProperties": True},
            )

        async def run_async(self, *, args: dict[str, Any], tool_context: Any) -> Any:
            return self._script.answer(self.name)

    _ADK_CLASSES = (ReplayLlm, StandinLlm, RecordedTool)
    return _ADK_CLASSES


_ADK_CLASSES: tuple[type, type, type] | None = None


def _adk_run(trajectory: Trajectory, setting: str | None, threshold: int) -> Capture:
    import asyncio

    from google.adk.agents import LlmAgent
    from google.adk.apps import App
    from google.adk.apps.compaction import _run_compaction_for_token_threshold_config
    from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.genai import types

    script = script_of(trajectory)
    cap = Capture()
    replay_llm, standin_llm, recorded_tool = _adk_classes()
    tools = [recorded_tool(s["function"]["name"], s["function"]["description"], script) for s in script.tools]
    agent = LlmAgent(
        name="bench",
        model=replay_llm(model="replay", script=script, capture=cap),
        # as a provider, so ADK takes it verbatim ({WINDOW} in a SWE-agent prompt is no state variable)
        instruction=lambda _ctx, text=script.system or "": text,
        tools=tools,
    )
    config = None
    if setting is not None:
        from google.adk.apps.app import EventsCompactionConfig

        summarizer = LlmEventSummarizer(llm=standin_llm(model="standin", capture=cap))
        original = summarizer.maybe_summarize_events

        async def summarize(*, events: list[Any]) -> Any:
            event = await original(events=events)
            if event is not None and event.actions and event.actions.compaction:
                folded = [m for e in events for m in _adk_event_messages(e)]
                summary = event.actions.compaction.compacted_content
                text = "".join(p.text or "" for p in (summary.parts or [])) if summary else ""
                cap.pairs.append((folded, text))
                cap.folds += 1
            return event

        object.__setattr__(summarizer, "maybe_summarize_events", summarize)
        config = EventsCompactionConfig(
            summarizer=summarizer, token_threshold=threshold, event_retention_size=ADK_EVENT_RETENTION
        )
    del _run_compaction_for_token_threshold_config  # imported only to fail early if this ADK lacks in-run compaction
    app = App(name="bench", root_agent=agent, events_compaction_config=config)
    service = InMemorySessionService()
    runner = Runner(app=app, session_service=service)

    async def run_all() -> None:
        session = await service.create_session(app_name="bench", user_id="u", session_id="bench")
        for turn in script.turns:
            message = types.Content(role="user", parts=[types.Part(text=turn.user)])
            try:
                async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
                    pass
            except Exception:
                cap.errors += 1
            script.next_turn()

    asyncio.run(run_all())
    return cap


def _adk_event_messages(event: Any) -> list[Message]:
    """One ADK event's content as agno messages (for fact retention of what a compaction replaced)."""
    from types import SimpleNamespace

    if not event.content:
        return []
    return _adk_to_agno(SimpleNamespace(config=None, contents=[event.content]))


def adk_rows(trajectory: Trajectory, threshold: int, repeats: int = 1) -> list[Replayed]:
    """Google ADK ``Runner`` with ``EventsCompactionConfig(token_threshold=T, event_retention_size=10)``."""
    return _paired(trajectory, threshold, PEERS["adk"], lambda s, th: _adk_run(trajectory, s, th), repeats)


RUNNERS["adk"] = _adk_run
ROWS["adk"] = adk_rows


# --- OpenHands SDK: LLMSummarizingCondenser(max_tokens=T) applied before every model call -------------------


def _openhands_to_agno(messages: Sequence[Any]) -> list[Message]:
    out: list[Message] = []
    for m in messages:
        text = "".join(getattr(c, "text", "") or "" for c in (m.content or []))
        calls = [agno_call(c.id, c.name, c.arguments) for c in (m.tool_calls or [])]
        if m.role == "tool":
            out.append(Message(role="tool", content=text, tool_call_id=m.tool_call_id, tool_name=m.name))
        else:
            out.append(Message(role=m.role, content=text or None, tool_calls=calls or None))
    return out


def _openhands_classes() -> tuple[type, type]:
    global _OH_CLASSES
    if _OH_CLASSES is not None:
        return _OH_CLASSES
    import litellm
    from openhands.sdk.llm import LLM, LLMResponse, TextContent
    from openhands.sdk.llm import Message as OHMessage
    from openhands.sdk.tool.schema import Observation

    class StandinLLM(LLM):
        """The stand-in summarizer: ``generate`` answers with ``digest`` of the prompt, offline."""

        def generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
            capture = _OH_CAPTURE[-1]
            capture.summarizer_calls += 1
            text = "\n".join(getattr(c, "text", "") or "" for c in (messages[-1].content or []))
            reply = OHMessage(role="assistant", content=[TextContent(text=digest(text))])
            return LLMResponse(message=reply, metrics=self.metrics.get_snapshot(), raw_response=litellm.ModelResponse())

    class RecordedObservation(Observation):
        """A recorded tool output."""

    _OH_CLASSES = (StandinLLM, RecordedObservation)
    return _OH_CLASSES


_OH_CLASSES: tuple[type, type] | None = None
_OH_CAPTURE: list[Capture] = []


def _openhands_run(trajectory: Trajectory, setting: str | None, threshold: int) -> Capture:
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no model-price download
    os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
    from openhands.sdk.agent.utils import prepare_llm_messages
    from openhands.sdk.context.condenser import LLMSummarizingCondenser
    from openhands.sdk.context.view import View
    from openhands.sdk.event import ActionEvent, Condensation, MessageEvent, ObservationEvent, SystemPromptEvent
    from openhands.sdk.llm import LLM, MessageToolCall, TextContent
    from openhands.sdk.llm import Message as OHMessage
    from pydantic import SecretStr

    script = script_of(trajectory)
    cap = Capture()
    standin_llm, recorded_observation = _openhands_classes()
    agent_llm = LLM(model="gpt-4o", api_key=SecretStr("offline"), usage_id="agent")
    condenser = None
    if setting is not None:
        condenser = LLMSummarizingCondenser(
            llm=standin_llm(model="gpt-4o", api_key=SecretStr("offline"), usage_id="condenser"), max_tokens=threshold
        )
    events: list[Any] = [SystemPromptEvent(system_prompt=TextContent(text=script.system or ""), tools=[])]
    _OH_CAPTURE.append(cap)
    try:
        for turn in script.turns:
            events.append(
                MessageEvent(source="user", llm_message=OHMessage(role="user", content=[TextContent(text=turn.user)]))
            )
            while True:
                # what Agent.step does first: the condenser sees the view; a Condensation ends the step
                prepared = prepare_llm_messages(View.from_events(events), condenser=condenser, llm=agent_llm)
                if isinstance(prepared, Condensation):
                    events.append(prepared)
                    if prepared.summary is not None:
                        forgotten = [e for e in events if getattr(e, "id", None) in prepared.forgotten_event_ids]
                        folded = _openhands_to_agno(
                            [e.to_llm_message() for e in forgotten if hasattr(e, "to_llm_message")]
                        )
                        cap.pairs.append((folded, prepared.summary))
                    cap.folds += 1
                    continue
                cap.prompts.append(_openhands_to_agno(prepared))
                reply: Reply = script.next_reply()
                response_id = uuid.uuid4().hex
                if not reply.tool_calls:
                    message = OHMessage(role="assistant", content=[TextContent(text=reply.text or "")])
                    events.append(MessageEvent(source="agent", llm_message=message, llm_response_id=response_id))
                    break
                actions = []
                for i, call in enumerate(reply.tool_calls):
                    call_id = call.id or f"call_{uuid.uuid4().hex[:8]}"
                    args = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
                    actions.append(
                        ActionEvent(
                            thought=[TextContent(text=reply.text)] if reply.text and i == 0 else [],
                            action=None,
                            tool_name=call.name,
                            tool_call_id=call_id,
                            tool_call=MessageToolCall(id=call_id, name=call.name, arguments=args, origin="completion"),
                            llm_response_id=response_id,
                        )
                    )
                events.extend(actions)
                for action in actions:
                    observation = recorded_observation.from_text(script.answer(action.tool_name))
                    events.append(
                        ObservationEvent(
                            observation=observation,
                            action_id=action.id,
                            tool_name=action.tool_name,
                            tool_call_id=action.tool_call_id,
                        )
                    )
            script.next_turn()
    except Exception:
        cap.errors += 1
    finally:
        _OH_CAPTURE.pop()
    return cap


def openhands_rows(trajectory: Trajectory, threshold: int, repeats: int = 1) -> list[Replayed]:
    """OpenHands SDK ``LLMSummarizingCondenser(max_tokens=T)`` (other fields default) before every model call."""
    return _paired(trajectory, threshold, PEERS["openhands"], lambda s, th: _openhands_run(trajectory, s, th), repeats)


RUNNERS["openhands"] = _openhands_run
ROWS["openhands"] = openhands_rows
