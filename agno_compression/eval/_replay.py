"""Replay a recorded conversation through a real agno Agent, offline.

The recording's assistant turns are played by a ``ScriptedModel`` and its tool outputs
are returned by real agno tools (one per recorded tool name, answering in recorded
order), so the Agent's own loop, history handling and storage run exactly as in
production while nothing leaves the machine. Each user message of the recording starts
a new run of one session, so later runs load earlier ones as history.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agno.models.message import Message
from agno.tools.function import Function

from ..pricing import PriceModel
from ..testing import RecordedRequest, Reply, ScriptedModel, ToolCall, run_in_mode
from ..tokens import TokenCounter
from ._loopback import AnthropicServer, BilledCall, OpenAIServer, ProviderServer

END_OF_RECORDING = "(end of recording)"
"""What the scripted model answers once a turn's recorded replies are used up: it ends the run."""


@dataclass(frozen=True)
class Turn:
    """One user message and the assistant turns that answered it."""

    user: str
    replies: list[Reply]


def _arguments(call: dict[str, Any]) -> dict[str, Any]:
    raw = call.get("function", {}).get("arguments", "")
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw) if raw else {}
    except (TypeError, ValueError):
        parsed = None
    return parsed if isinstance(parsed, dict) else {"input": raw}


def observations_as_tool_calls(messages: Sequence[Message], tool_name: str = "execute") -> list[Message]:
    """Recast a text-only agent loop (actions in assistant text, observations as user messages) as tool calls.

    SWE-agent style recordings answer every assistant action with a ``user`` observation;
    replayed as is, each observation would start a new run. As tool calls they form the one
    long run they really were. The first user message stays the task; the action is the
    assistant's text, which is also kept as the message content.
    """
    if any(m.tool_calls for m in messages):
        return list(messages)
    out: list[Message] = []
    seen_task = False
    for _i, m in enumerate(messages):
        previous = out[-1] if out else None
        if m.role == "user" and seen_task and previous is not None and previous.role == "assistant":
            call_id = f"{m.id}-call"
            previous.tool_calls = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {
                        "name": tool_name,
                        "arguments": json.dumps({"action": previous.get_content_string()[-500:]}),
                    },
                }
            ]
            out.append(Message(id=m.id, role="tool", tool_call_id=call_id, tool_name=tool_name, content=m.content))
            continue
        seen_task = seen_task or m.role == "user"
        out.append(m.model_copy() if m.role == "assistant" else m)
    return out


def split_turns(messages: Sequence[Message]) -> tuple[str | None, list[Turn], dict[str, deque[str]]]:
    """The system prompt, the turns, and each tool's recorded outputs in call order."""
    system = next((str(m.content) for m in messages if m.role == "system" and m.content), None)
    turns: list[Turn] = []
    outputs: dict[str, deque[str]] = defaultdict(deque)
    names: dict[str, str] = {}
    pending_text: list[str] = []
    for m in messages:
        if m.role == "user":
            turns.append(Turn(user=m.get_content_string(), replies=[]))
            pending_text = []
        elif m.role == "assistant":
            if not turns:
                turns.append(Turn(user="Continue.", replies=[]))
            text = m.get_content_string() if m.content else ""
            calls = [ToolCall(c["function"]["name"], _arguments(c), c.get("id")) for c in m.tool_calls or []]
            for c in m.tool_calls or []:
                names[str(c.get("id"))] = c["function"]["name"]
                outputs.setdefault(c["function"]["name"], deque())
            if calls:
                merged = "\n".join([*pending_text, text]).strip() or None
                turns[-1].replies.append(Reply(text=merged, tool_calls=calls))
                pending_text = []
            elif text:
                pending_text.append(text)
        elif m.role == "tool":
            name = m.tool_name or names.get(str(m.tool_call_id), "tool")
            outputs[name].append(m.get_content_string())
    return system, turns, outputs


def _tool(name: str, outputs: deque[str]) -> Function:
    def answer(**_: Any) -> str:
        return outputs.popleft() if outputs else f"(no recorded output left for {name})"

    return Function(
        name=name,
        description=f"Recorded tool {name}.",
        parameters={"type": "object", "properties": {}, "additionalProperties": True},
        entrypoint=answer,
        skip_entrypoint_processing=True,
    )


@dataclass
class ReplayResult:
    """What a replay produced."""

    requests: list[RecordedRequest]
    """Every model request, as sent."""
    session_id: str
    runs: int
    run_outputs: list[Any] = field(default_factory=list)
    billed: list[BilledCall] = field(default_factory=list)
    """With a ``provider``: every request as the loopback provider billed it (usage, price model, bill)."""


class _Player:
    """Serves each turn's recorded replies in order; once they are used up, ends the run with text."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        self._replies = deque(r for t in turns for r in t.replies)
        self._per_turn = [len(t.replies) for t in turns]
        self._turn = self._served = 0

    def __call__(self, history: Any = None, info: Any = None) -> Reply:
        if self._turn < len(self._per_turn) and self._served < self._per_turn[self._turn]:
            self._served += 1
            return self._replies.popleft()
        return Reply(text=END_OF_RECORDING)

    def next_turn(self) -> None:
        self._turn += 1
        self._served = 0


def build_replay(messages: Sequence[Message]) -> tuple[str | None, list[Turn], list[Function], ScriptedModel]:
    """Everything a replay needs: system prompt, turns, tools and the scripted model."""
    system, turns, outputs = split_turns(messages)
    player = _Player(turns)
    model = ScriptedModel(script=player)
    model.next_turn = player.next_turn  # type: ignore[attr-defined]
    tools = [_tool(name, queue) for name, queue in outputs.items()]
    return system, turns, tools, model


PROVIDERS = ("anthropic", "openai")
"""Providers a replay can go through with agno's real model class (``prepare_replay(provider=...)``)."""


class RequestRecorder:
    """Records every request a real agno model is asked to send (messages as they were, tool definitions, and
    the prompt counted as the budget counts it), like ``ScriptedModel.requests``."""

    def __init__(self, model: Any, counter: TokenCounter | None = None) -> None:
        self.requests: list[RecordedRequest] = []
        self.counter = counter or TokenCounter("gpt-4o")
        for name in ("invoke", "ainvoke", "invoke_stream", "ainvoke_stream"):
            setattr(model, name, self._wrap(getattr(model, name), name))

    def _note(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        messages = list(kwargs.get("messages", args[0] if args else []))
        tools = list(kwargs.get("tools") or [])
        prompt = self.counter.count_prompt(messages, tools)
        self.requests.append(RecordedRequest([m.model_copy() for m in messages], tools, prompt))

    def _wrap(self, method: Any, name: str) -> Any:
        note = self._note
        if name == "invoke":

            def invoke(*args: Any, **kwargs: Any) -> Any:
                note(args, kwargs)
                return method(*args, **kwargs)

            return invoke
        if name == "ainvoke":

            async def ainvoke(*args: Any, **kwargs: Any) -> Any:
                note(args, kwargs)
                return await method(*args, **kwargs)

            return ainvoke
        if name == "invoke_stream":

            def invoke_stream(*args: Any, **kwargs: Any) -> Any:
                note(args, kwargs)
                yield from method(*args, **kwargs)

            return invoke_stream

        async def ainvoke_stream(*args: Any, **kwargs: Any) -> Any:
            note(args, kwargs)
            async for chunk in method(*args, **kwargs):
                yield chunk

        return ainvoke_stream


def provider_model(provider: str, url: str, model_id: str, **options: Any) -> Any:
    """agno's real model class for ``provider``, its SDK client pointed at a loopback server's ``url``."""
    if provider == "anthropic":
        from agno.models.anthropic import Claude

        return Claude(id=model_id, api_key="offline", client_params={"base_url": url}, **options)
    if provider == "openai":
        from agno.models.openai import OpenAIChat

        # the client points at the server standing in for api.openai.com (the model's own base_url stays unset)
        return OpenAIChat(id=model_id, api_key="offline", client_params={"base_url": f"{url}/v1"}, **options)
    raise ValueError(f"provider must be one of {', '.join(PROVIDERS)}, got {provider!r}")


@dataclass
class PreparedReplay:
    """An Agent set up to replay a recording; ``run`` plays it (the part a benchmark times)."""

    agent: Any
    model: Any
    """The model the Agent calls: a ``ScriptedModel``, or agno's real provider class (``provider=...``)."""
    turns: list[Turn]
    next_turn: Any = None
    server: ProviderServer | None = None
    """The loopback provider server of a provider replay: every request, its usage and bill (``server.calls``)."""
    recorder: RequestRecorder | None = None

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every model request, as sent (messages, tool definitions, prompt tokens)."""
        return self.recorder.requests if self.recorder is not None else self.model.requests

    def run(self, mode: str = "sync") -> list[Any]:
        """Each recorded user message as one run of the session, in order; the run outputs."""
        outputs = []
        for turn in self.turns:
            outputs.append(run_in_mode(self.agent, turn.user, mode))
            (self.next_turn or self.model.next_turn)()
        return outputs

    def close(self) -> None:
        """Stop the loopback server of a provider replay."""
        if self.server is not None:
            self.server.stop()


def prepare_replay(
    messages: Sequence[Message],
    *,
    manager: Any = None,
    db: Any = None,
    session_id: str = "replay",
    add_history_to_context: bool = True,
    provider: str | None = None,
    model_id: str | None = None,
    model_options: dict[str, Any] | None = None,
    price: PriceModel | None = None,
    **agent_options: Any,
) -> PreparedReplay:
    """The Agent that replays ``messages``, with ``manager`` (a CompressionManager) attached if given.

    With ``provider`` (``"anthropic"`` or ``"openai"``) the Agent calls agno's real ``Claude`` or ``OpenAIChat``
    (``model_id``, ``model_options``) through its real SDK client, against a loopback server that plays the
    recording and bills every request by the provider's caching rules (``price``, default: the row of
    ``model_id``); call ``close()`` when done. ``agent_options`` are passed on to the Agent (agno's own context
    strategies, for instance).
    """
    from agno.agent import Agent

    system, turns, tools, scripted = build_replay(messages)
    player: Any = scripted.script  # the recording's _Player
    server = recorder = None
    model: Any = scripted
    if provider is not None:
        server_class = AnthropicServer if provider == "anthropic" else OpenAIServer
        server = server_class(lambda body: player(), price=price).start()
        default_id = "claude-sonnet-4-5" if provider == "anthropic" else "gpt-5"
        model = provider_model(provider, server.url, model_id or default_id, **(model_options or {}))
    agent = Agent(
        model=model,
        tools=tools,
        db=db,
        session_id=session_id,
        system_message=system,
        add_history_to_context=add_history_to_context and db is not None,
        num_history_runs=None if db is not None else 3,
        tool_call_limit=None,
        telemetry=False,
        **agent_options,
    )
    if manager is not None:
        manager.attach(agent)
    if provider is not None:
        recorder = RequestRecorder(model)  # after attach: it sees what the manager's wrappers pass on
    return PreparedReplay(
        agent=agent,
        model=model,
        turns=turns,
        next_turn=scripted.next_turn,  # type: ignore[attr-defined]
        server=server,
        recorder=recorder,
    )


def replay(
    messages: Sequence[Message],
    *,
    manager: Any = None,
    db: Any = None,
    session_id: str = "replay",
    mode: str = "sync",
    add_history_to_context: bool = True,
    provider: str | None = None,
    model_id: str | None = None,
    model_options: dict[str, Any] | None = None,
) -> ReplayResult:
    """Replay ``messages`` through a real Agent; ``manager`` (a CompressionManager) is attached if given.

    ``mode`` is ``"sync"``, ``"async"``, ``"stream"`` or ``"async-stream"``. With ``provider`` the Agent calls
    agno's real provider class through a loopback server that bills each request (``prepare_replay``).
    """
    if mode not in ("sync", "async", "stream", "async-stream"):
        raise ValueError(f"mode must be sync, async, stream or async-stream, got {mode!r}")
    prepared = prepare_replay(
        messages,
        manager=manager,
        db=db,
        session_id=session_id,
        add_history_to_context=add_history_to_context,
        provider=provider,
        model_id=model_id,
        model_options=model_options,
    )
    try:
        outputs = prepared.run(mode)
    finally:
        prepared.close()
    return ReplayResult(
        requests=prepared.requests,
        session_id=session_id,
        runs=len(prepared.turns),
        run_outputs=outputs,
        billed=list(prepared.server.calls) if prepared.server is not None else [],
    )
