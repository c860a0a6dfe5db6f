"""The recording formats ``load_trajectories`` reads: detection, and each format as raw OpenAI-shaped messages.

Every converter returns runs of raw message dicts (role, ``str`` content, OpenAI ``tool_calls`` /
``tool_call_id`` / ``tool_name``); ``_loaders`` pairs their tool calls and makes agno messages of them.
The formats themselves are described in the docstring of ``agno_compression.eval._loaders``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from ._claude_code import claude_code_runs, is_claude_code
from ._gemini_cli import gemini_cli_runs, is_gemini_cli
from ._raw import Raw, Run, raw_message, skipped_roles
from ._raw import text as _text
from ._raw import tool_call as _call
from ._raw import tool_result as _tool_result
from ._responses import is_responses, responses_runs

_ROLES = {"system", "developer", "user", "assistant", "tool"}
# OpenHands events that are bookkeeping, not part of the conversation.
_OH_SKIPPED_ACTIONS = {"recall", "change_agent_state"}
_OH_SKIPPED_OBSERVATIONS = {"null", "agent_state_changed", "recall"}
# Event fields that are not action arguments (old-style events flatten args into the event),
# and arguments that are OpenHands bookkeeping rather than what the model passed.
_OH_META = {"id", "timestamp", "source", "message", "action", "cause", "tool_call_metadata", "llm_metrics", "timeout"}
_OH_NOT_ARGS = {"thought", "action_risk", "is_confirmed", "confirmation_state", "security_risk", "impl_source"}


# --------------------------------------------------------------------------- openai chat (also tau-bench, swe-agent)


def _chat(messages: Any, ignore: frozenset[str] = frozenset()) -> list[Raw]:
    """Chat message dicts as raw messages; unknown roles are skipped (and counted for the file's warning)."""
    out = []
    for message in messages:
        if isinstance(message, dict) and isinstance(message.get("role"), str) and message["role"] not in _ROLES:
            if message["role"] not in ignore:
                counts: Counter[str] | None = getattr(skipped_roles, "roles", None)
                if counts is not None:
                    counts[message["role"]] += 1
            continue
        out.append(_from_openai(message))
    return out


def _from_openai(message: Any) -> Raw:
    """One OpenAI-chat message dict as a raw message (SWE-agent's ``tool_call_ids`` accepted)."""
    if not isinstance(message, dict) or message.get("role") not in _ROLES:
        raise ValueError(f"not a chat message (role must be one of {sorted(_ROLES)}): {str(message)[:200]}")
    role = message["role"]
    if role == "tool":
        call_id = message.get("tool_call_id") or (message.get("tool_call_ids") or [None])[0]
        if not call_id:
            raise ValueError("tool message without tool_call_id")
        return _tool_result(call_id, message.get("content"), message.get("tool_name") or message.get("name"))
    raw = raw_message(role, message.get("content"))
    calls = message.get("tool_calls")
    if role == "assistant" and calls:
        raw["tool_calls"] = [_call(c.get("id"), c["function"]["name"], c["function"].get("arguments")) for c in calls]
    return raw


def _openai_runs(data: Any) -> list[Run]:
    """A plain chat: a list of messages or ``{"messages": [...]}``; JSONL: one such object per line."""
    if isinstance(data, list) and data and all(isinstance(d, dict) and "messages" in d for d in data):
        # e.g. ``agno-compression export``: one example per line, named by its run or session id
        return [(str(d.get("run_id") or d.get("session_id") or i), _chat(d["messages"])) for i, d in enumerate(data)]
    messages = data["messages"] if isinstance(data, dict) else data
    return [("0", _chat(messages))]


def _mini_swe_agent_runs(data: Any) -> list[Run]:
    """A mini-swe-agent trajectory: its chat messages; the closing ``exit`` record is not part of the chat."""
    return [("0", _chat(data["messages"], ignore=frozenset({"exit"})))]


def _is_mini_swe_agent(data: Raw) -> bool:
    messages = data.get("messages")
    if not isinstance(messages, list) or not _is_chat(messages):
        return False
    return str(data.get("trajectory_format", "")).startswith("mini-swe-agent") or messages[-1].get("role") == "exit"


def _tau_bench_runs(data: Any) -> list[Run]:
    """tau-bench results: one run per ``{task_id, trial, traj}`` record."""
    runs = []
    for index, record in enumerate(data):
        run_id = f"{record['task_id']}-{record['trial']}" if "trial" in record else str(record.get("task_id", index))
        runs.append((run_id, _chat(record["traj"])))
    return runs


def _swe_agent_runs(data: Any) -> list[Run]:
    """A SWE-agent ``.traj``: its ``history``, else its ``trajectory`` steps as assistant/user turns."""
    if data.get("history"):
        return [("0", _chat(data["history"]))]
    messages: list[Raw] = []
    for step in data["trajectory"]:
        messages.append(raw_message("assistant", step.get("response") or step.get("action")))
        messages.append(raw_message("user", step.get("observation")))
    return [("0", messages)]


# --------------------------------------------------------------------------- openhands


def _oh_args(event: Raw) -> Raw:
    """An OpenHands action's arguments (``args``, or the flattened fields of old-style events)."""
    if isinstance(event.get("args"), dict):
        return dict(event["args"])
    return {k: v for k, v in event.items() if k not in _OH_META}


def _oh_text(event: Raw) -> str:
    """The text of an action that is not a tool call (message, finish, think...)."""
    args = _oh_args(event)
    for key in ("content", "thought", "final_thought"):
        if isinstance(args.get(key), str) and args[key]:
            return str(args[key])
    return _text(event.get("message"))


def _oh_response(event: Raw) -> Raw:
    """The model response an action came from, or ``{}``."""
    response = (event.get("tool_call_metadata") or {}).get("model_response")
    return response if isinstance(response, dict) else {}


def _oh_tool_call(event: Raw, call_id: str) -> tuple[Raw, str]:
    """An action's tool call (arguments as the model wrote them when recorded) and its assistant text."""
    metadata = event.get("tool_call_metadata") or {}
    args = _oh_args(event)
    name = metadata.get("function_name") or event["action"]
    arguments: Any = {k: v for k, v in args.items() if k not in _OH_NOT_ARGS}
    content: Any = args.get("thought", "")
    for choice in _oh_response(event).get("choices") or []:
        message = choice.get("message") or {}
        if message.get("content") is not None:
            content = message["content"]
        for call in message.get("tool_calls") or []:
            if call.get("id") == call_id:
                arguments = call["function"]["arguments"]
    return _call(call_id, name, arguments), _text(content)


def _oh_links(events: list[Raw]) -> dict[int, int]:
    """Observation index -> action index, by ``cause`` or, without ids, by adjacency."""
    by_id = {e["id"]: i for i, e in enumerate(events) if "action" in e and "id" in e}
    links: dict[int, int] = {}
    for i, event in enumerate(events):
        if "observation" not in event or event["observation"] in _OH_SKIPPED_OBSERVATIONS:
            continue
        if event.get("cause") is not None:
            if event["cause"] in by_id:
                links[i] = by_id[event["cause"]]
        elif "id" not in event and i > 0 and "action" in events[i - 1] and "id" not in events[i - 1]:
            links[i] = i - 1
    return links


def _oh_messages(events: list[Raw], instruction: Any = None) -> list[Raw]:
    """An OpenHands event history as raw messages."""
    links = _oh_links(events)
    answered = set(links.values())
    calls: dict[int, Raw] = {}  # action index -> its tool call
    messages: list[Raw] = []
    last_response: Any = None  # model response id of the last assistant tool-call message
    for i, event in enumerate(events):
        if not isinstance(event, dict):
            raise ValueError(f"history event {i} is not an object")
        if "observation" in event:
            if i in links and links[i] in calls:
                call = calls[links[i]]
                messages.append(_tool_result(call["id"], event.get("content"), call["function"]["name"]))
            elif event["observation"] not in _OH_SKIPPED_OBSERVATIONS and _text(event.get("content")):
                messages.append(raw_message("user", event.get("content")))
            continue
        kind = event.get("action")
        if kind is None:
            raise ValueError(f"history event {i} is neither an action nor an observation")
        source = event.get("source")
        if kind in _OH_SKIPPED_ACTIONS:
            continue
        if kind == "system":
            messages.append(raw_message("system", _oh_text(event)))
        elif kind == "message" and (
            source == "user" or (source is None and not any(m["role"] == "assistant" for m in messages))
        ):
            messages.append(raw_message("user", _oh_text(event)))
        elif event.get("tool_call_metadata") or (i in answered and source in (None, "agent")):
            metadata = event.get("tool_call_metadata") or {}
            call, content = _oh_tool_call(event, str(metadata.get("tool_call_id") or f"call_{event.get('id', i)}"))
            calls[i] = call
            response_id = _oh_response(event).get("id")
            target = next((m for m in reversed(messages) if m["role"] != "tool"), None)
            if response_id and response_id == last_response and target and target.get("tool_calls"):
                target["tool_calls"].append(call)  # a parallel call of the same model response
            else:
                messages.append(raw_message("assistant", content, tool_calls=[call]))
            last_response = response_id
            continue
        elif source in (None, "agent"):
            messages.append(raw_message("assistant", _oh_text(event)))
        last_response = None
    if instruction and not any(m["role"] == "user" for m in messages):
        start = 1 if messages and messages[0]["role"] == "system" else 0
        messages.insert(start, raw_message("user", instruction))
    return messages


def _openhands_runs(data: Any) -> list[Run]:
    """OpenHands: a list of run records ``{instance_id, history}`` or a bare event list (one run)."""
    if all(isinstance(r, dict) and "history" in r for r in data):
        runs = []
        for index, record in enumerate(data):
            messages = _oh_messages(record["history"], record.get("instruction"))
            runs.append((str(record.get("instance_id") or index), messages))
        return runs
    return [("0", _oh_messages(data))]


# --------------------------------------------------------------------------- tapeagents


def _step_fields(step: Raw) -> Raw:
    """A tape step without its ``kind`` and ``metadata``."""
    return {k: v for k, v in step.items() if k not in ("kind", "metadata")}


def _step_text(step: Raw) -> str:
    """A step as text: its only field when there is one, else its fields as JSON."""
    fields = _step_fields(step)
    if len(fields) == 1:
        return _text(next(iter(fields.values())))
    return _text(fields)


def _serp_text(serp: list[Raw]) -> str:
    """Search results as numbered ``title / url / snippet`` blocks."""
    blocks = []
    for number, hit in enumerate(serp, 1):
        lines = [f"{number}. {_text(hit.get('title'))}", _text(hit.get("url")), _text(hit.get("snippet"))]
        blocks.append("\n".join(line for line in lines if line))
    return "\n\n".join(blocks)


def _observation_text(step: Raw) -> str:
    """The text a tape observation step gave the agent."""
    if step["kind"] == "search_results_observation":
        return _serp_text(step.get("serp") or []) or _text(step.get("error"))
    if step["kind"] == "page_observation":
        return _text(step.get("text")) or _text(step.get("error"))
    return _step_text(step)


def _tape_messages(steps: list[Raw]) -> list[Raw]:
    """Tape steps as raw messages; actions of one prompt form one assistant message."""
    messages: list[Raw] = []
    pending: list[Raw] = []  # calls still waiting for their observation, in order
    last_prompt: Any = None
    for index, step in enumerate(steps):
        kind = str(step["kind"])
        prompt = (step.get("metadata") or {}).get("prompt_id")
        if kind == "set_next_node":
            continue
        if kind in ("question", "task"):
            text = _text(step.get("content")) if "content" in step else _step_text(step)
            if step.get("filename"):
                text += f"\n\nAttached file: {step['filename']}"
            messages.append(raw_message("user", text))
        elif kind.endswith("_action"):
            call = _call(f"call_{index}", kind.removesuffix("_action"), _step_fields(step))
            if prompt and prompt == last_prompt and messages[-1].get("tool_calls"):
                messages[-1]["tool_calls"].append(call)
            else:
                messages.append(raw_message("assistant", "", tool_calls=[call]))
            pending.append(call)
            last_prompt = prompt
            continue
        elif kind.endswith("_thought"):
            messages.append(raw_message("assistant", _step_text(step)))
        elif pending:
            call = pending.pop(0)
            messages.append(_tool_result(call["id"], _observation_text(step), call["function"]["name"]))
        else:
            messages.append(raw_message("user", _observation_text(step)))
        last_prompt = None
    return messages


def _tapeagents_runs(data: Any) -> list[Run]:
    """A TapeAgents tape: one run."""
    return [("0", _tape_messages(data["steps"]))]


# --------------------------------------------------------------------------- detection

CONVERTERS: dict[str, Callable[[Any], list[Run]]] = {
    "tau-bench": _tau_bench_runs,
    "openhands": _openhands_runs,
    "swe-agent": _swe_agent_runs,
    "tapeagents": _tapeagents_runs,
    "mini-swe-agent": _mini_swe_agent_runs,
    "openai-chat": _openai_runs,
    "claude-code": claude_code_runs,
    "gemini-cli": gemini_cli_runs,
    "openai-responses": responses_runs,
}


def _is_chat(items: Any) -> bool:
    """Whether ``items`` is a non-empty list of role-bearing message dicts."""
    return isinstance(items, list) and bool(items) and all(isinstance(m, dict) and "role" in m for m in items)


def detect(data: Any) -> str:
    """The format of parsed file content; ``ValueError`` when it is none of the known ones."""
    if is_claude_code(data):
        return "claude-code"
    if is_gemini_cli(data):
        return "gemini-cli"
    if is_responses(data):
        return "openai-responses"
    if isinstance(data, list) and data and all(isinstance(item, dict) for item in data):
        first = data[0]
        if "traj" in first:
            return "tau-bench"
        if "history" in first or "action" in first or "observation" in first:
            return "openhands"
        if _is_chat(data) or all(_is_chat(item.get("messages")) for item in data):
            return "openai-chat"
    if isinstance(data, dict):
        if isinstance(data.get("steps"), list) and all(isinstance(s, dict) and "kind" in s for s in data["steps"]):
            return "tapeagents"
        if _is_chat(data.get("history")) or isinstance(data.get("trajectory"), list):
            return "swe-agent"
        if isinstance(data.get("history"), list):
            return "openhands"
        if _is_mini_swe_agent(data):
            return "mini-swe-agent"
        if _is_chat(data.get("messages")):
            return "openai-chat"
    raise ValueError(
        "unrecognised structure (not tau-bench, OpenHands, SWE-agent, mini-swe-agent, TapeAgents, OpenAI chat, "
        "Claude Code, Gemini CLI or OpenAI Responses items / Codex rollout)"
    )
