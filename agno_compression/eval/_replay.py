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

from ..testing import RecordedRequest, Reply, ScriptedModel, ScriptInfo, ToolCall, run_in_mode

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


def build_replay(messages: Sequence[Message]) -> tuple[str | None, list[Turn], list[Function], ScriptedModel]:
    """Everything a replay needs: system prompt, turns, tools and the scripted model."""
    system, turns, outputs = split_turns(messages)
    replies = deque(r for t in turns for r in t.replies)
    per_turn = [len(t.replies) for t in turns]
    state = {"turn": 0, "served": 0}

    def script(history: list[Message], info: ScriptInfo) -> Reply:
        # Serve this turn's replies in order; once they are used up, end the run with text.
        if state["served"] < per_turn[state["turn"]]:
            state["served"] += 1
            return replies.popleft()
        return Reply(text=END_OF_RECORDING)

    def next_turn() -> None:
        state["turn"] += 1
        state["served"] = 0

    model = ScriptedModel(script=script)
    model.next_turn = next_turn  # type: ignore[attr-defined]
    tools = [_tool(name, queue) for name, queue in outputs.items()]
    return system, turns, tools, model


@dataclass
class PreparedReplay:
    """An Agent set up to replay a recording; ``run`` plays it (the part a benchmark times)."""

    agent: Any
    model: ScriptedModel
    """The scripted model: its ``requests`` are every model request, as sent."""
    turns: list[Turn]

    def run(self, mode: str = "sync") -> list[Any]:
        """Each recorded user message as one run of the session, in order; the run outputs."""
        outputs = []
        for turn in self.turns:
            outputs.append(run_in_mode(self.agent, turn.user, mode))
            self.model.next_turn()  # type: ignore[attr-defined]
        return outputs


def prepare_replay(
    messages: Sequence[Message],
    *,
    manager: Any = None,
    db: Any = None,
    session_id: str = "replay",
    add_history_to_context: bool = True,
    **agent_options: Any,
) -> PreparedReplay:
    """The Agent that replays ``messages``, with ``manager`` (a CompressionManager) attached if given.

    ``agent_options`` are passed on to the Agent (agno's own context strategies, for instance).
    """
    from agno.agent import Agent

    system, turns, tools, model = build_replay(messages)
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
    return PreparedReplay(agent=agent, model=model, turns=turns)


def replay(
    messages: Sequence[Message],
    *,
    manager: Any = None,
    db: Any = None,
    session_id: str = "replay",
    mode: str = "sync",
    add_history_to_context: bool = True,
) -> ReplayResult:
    """Replay ``messages`` through a real Agent; ``manager`` (a CompressionManager) is attached if given.

    ``mode`` is ``"sync"``, ``"async"``, ``"stream"`` or ``"async-stream"``.
    """
    if mode not in ("sync", "async", "stream", "async-stream"):
        raise ValueError(f"mode must be sync, async, stream or async-stream, got {mode!r}")
    prepared = prepare_replay(
        messages, manager=manager, db=db, session_id=session_id, add_history_to_context=add_history_to_context
    )
    outputs = prepared.run(mode)
    return ReplayResult(
        requests=prepared.model.requests, session_id=session_id, runs=len(prepared.turns), run_outputs=outputs
    )
