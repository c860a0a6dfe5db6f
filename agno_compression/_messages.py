"""Messages as text: the one place that renders a message, its tool calls, tool schemas and call ids.

Token counts, summaries, the working-state ledger and the search of folded history all read messages
through these functions, so what is counted is what is summarized and what is searched. Pure: nothing
here counts, stores or mutates; nothing from the package is imported.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agno.models.message import Message

TOOLS_HEADER = "# Tools\n\n## functions\n\nnamespace functions {\n\n"
"""What OpenAI puts before the tool definitions of a request."""
TOOLS_FOOTER = "} // namespace functions"
"""What OpenAI puts after the tool definitions of a request."""


# --- the text of a message -------------------------------------------------------------------
def content_text(message: Message, use_compressed_content: bool) -> str:
    """The text content of ``message`` (tool results may be compressed)."""
    content: Any
    if use_compressed_content and message.role == "tool" and message.compressed_content is not None:
        content = message.compressed_content
    else:
        content = message.content
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                parts.append(str(part.get("text", "")) if part.get("type", "text") == "text" else "")
            else:
                parts.append(str(part))
        return "\n".join(p for p in parts if p)
    return json.dumps(content, default=str) if isinstance(content, dict) else str(content)


def tool_call_texts(message: Message) -> list[tuple[str, str]]:
    """``(name, arguments)`` of each tool call in ``message``, arguments as JSON text."""
    calls = []
    for call in message.tool_calls or []:
        fn = call.get("function", call) if isinstance(call, dict) else {}
        arguments = fn.get("arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False, default=str)
        calls.append((str(fn.get("name", "") or ""), arguments))
    return calls


def message_text(message: Message, use_compressed_content: bool = True) -> str:
    """The text of ``message`` as a provider would receive it (tool results may be compressed).

    Tool calls are appended as ``name(arguments)`` lines.
    """
    text = content_text(message, use_compressed_content)
    calls = "\n".join(f"{name}({arguments})" for name, arguments in tool_call_texts(message))
    if calls:
        return f"{text}\n{calls}" if text else calls
    return text


_BREAKS = " ,;:)]}/|"


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (whitespace runs become one space), cut to ``limit`` characters with an ellipsis.

    The cut falls between words: at the last space or punctuation of the second half of the line when there
    is one (a summary line must not end in half a word), else at the last space.
    """
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    head = flat[: limit - 1]
    if flat[limit - 1].isalnum() and head[-1:].isalnum():
        cut = max(head.rfind(c) for c in _BREAKS)
        if cut < len(head) // 2:
            cut = head.rfind(" ")
        if cut > 0:
            head = head[: cut + 1] if head[cut] != " " else head[:cut]
    return head.rstrip() + "…"


# --- tool calls ------------------------------------------------------------------------------
def call_repr(call: dict[str, Any], limit: int) -> str:
    """One tool call as ``name(arguments)`` on one line, its arguments cut to ``limit`` characters."""
    fn = call.get("function", {}) if isinstance(call, dict) else {}
    args = fn.get("arguments", "")
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False, default=str)
    return f"{fn.get('name', 'tool')}({one_line(args, limit)})"


_OPENING = re.compile(r"```[\w+-]*[ \t]*\n")
"""A code fence's opening line (with its optional language)."""
_FENCED = re.compile(_OPENING.pattern + r"(.*?)```", re.S)


def command_of(text: str) -> str:
    """The command an action text runs: its last fenced code block when it has one (an agent that writes its
    reasoning and then a ```bash block), else the text itself. The tail of a longer text may hold only the block's
    end or only its start: what is inside the fence counts then."""
    if "```" not in text:
        return text
    blocks = _FENCED.findall(text)
    if blocks and blocks[-1].strip():
        return str(blocks[-1]).strip()
    opening = list(_OPENING.finditer(text))
    # an unclosed block runs to the end; with only the closing fence, the block began before the text does
    inside = text[opening[-1].end() :] if opening else text[: text.rfind("```")]
    return inside.strip() or text


def call_arguments(call: dict[str, Any]) -> Any:
    """The arguments of one tool call, decoded when they are JSON text (the raw text when not)."""
    raw = call.get("function", {}).get("arguments", "") if isinstance(call, dict) else ""
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return raw


PATH_KEYS = ("file_path", "absolute_path", "path", "file_name", "filename", "file", "notebook_path", "target_file")
"""Argument names file tools give the file they act on (agno, Claude Code, Gemini CLI, OpenHands...), in any case
style (``argument_key``: OpenCode's ``filePath``)."""


def argument_key(name: str) -> str:
    """An argument name in one style: ``file_path``, ``filePath``, ``FilePath`` and ``file-path`` are one name (tools
    name their arguments in their own language's style)."""
    return name.replace("_", "").replace("-", "").lower()


def argument(args: Mapping[str, Any], keys: Iterable[str], wanted: type | tuple[type, ...] = object) -> Any:
    """The value of the first of ``keys`` that ``args`` gives as a ``wanted``, the names in any case style
    (``argument_key``), or ``None``. Names as written are looked up first: no restyling on the common path."""
    keys = tuple(keys)
    if (found := next((v for k in keys if isinstance(v := args.get(k), wanted) and v is not None), None)) is not None:
        return found
    styled = {argument_key(str(k)): v for k, v in args.items() if v is not None}
    return next((v for k in map(argument_key, keys) if isinstance(v := styled.get(k), wanted) and v is not None), None)


def first_string(args: Mapping[str, Any], keys: Iterable[str]) -> Any:
    """The first of ``keys`` whose value in ``args`` is a string, or ``None``; keys match in any case style."""
    return argument(args, keys, str)


def path_argument(args: Mapping[str, Any]) -> str | None:
    """The file a tool call's arguments name (one line, stripped), or ``None``."""
    path = first_string(args, PATH_KEYS)
    return path.strip() if isinstance(path, str) and path.strip() and "\n" not in path else None


def called_tools(message: Message) -> list[str]:
    """The names of the tools ``message`` calls, in order."""
    return [c["function"]["name"] for c in message.tool_calls or [] if isinstance(c, dict) and "function" in c]


# --- call ids --------------------------------------------------------------------------------
def call_ids(message: Message) -> list[str]:
    """The ids of the tool calls an assistant message makes, in order."""
    if message.role != "assistant" or not message.tool_calls:
        return []
    ids = []
    for call in message.tool_calls:
        if isinstance(call, dict) and call.get("id"):
            ids.append(str(call["id"]))
    return ids


def result_ids(message: Message) -> set[str]:
    """The call ids a tool message answers (Gemini puts several results in one message)."""
    if message.role != "tool":
        return set()
    ids = {str(message.tool_call_id)} if message.tool_call_id else set()
    for call in message.tool_calls or []:
        if isinstance(call, dict) and call.get("tool_call_id"):
            ids.add(str(call["tool_call_id"]))
    return ids


def calls_by_id(messages: Iterable[Message]) -> dict[str, dict[str, Any]]:
    """Every tool call made in ``messages``, by id."""
    out: dict[str, dict[str, Any]] = {}
    for m in messages:
        if m.role == "assistant":
            for call in m.tool_calls or []:
                if isinstance(call, dict) and call.get("id"):
                    out[str(call["id"])] = call
    return out


def tool_name_of(message: Message, calls: dict[str, Any] | None = None) -> str:
    """The tool name of a tool result message, looked up in ``calls`` (id -> call) if not set."""
    if message.tool_name:
        return message.tool_name
    for cid in result_ids(message):
        call = (calls or {}).get(cid)
        if isinstance(call, dict):
            return str(call.get("function", {}).get("name") or "tool")
    return "tool"


# --- tool definitions and response formats ---------------------------------------------------
def tool_schema(tool: Any) -> dict[str, Any]:
    """The function schema of an agno ``Function``, a ``{"type": "function", ...}`` dict or a plain dict."""
    schema = tool.to_dict() if hasattr(tool, "to_dict") else tool
    if not isinstance(schema, dict):
        return {"name": str(schema)}
    inner = schema.get("function")
    return inner if isinstance(inner, dict) else schema


def _render_type(schema: dict[str, Any], indent: int) -> str:
    """A JSON-schema type in the TypeScript-like form OpenAI shows the model."""
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        return " | ".join(_render_type({**schema, "type": k}, indent) for k in kind)
    if "enum" in schema:
        return " | ".join(json.dumps(item, ensure_ascii=False) for item in schema["enum"])
    if kind == "array":
        return f"{_render_type(schema.get('items') or {}, indent)}[]"
    if kind == "object" and schema.get("properties"):
        return "{\n" + _render_properties(schema, indent + 2) + "\n" + " " * indent + "}"
    for options in ("anyOf", "oneOf"):
        if options in schema:
            return " | ".join(_render_type(option, indent) for option in schema[options])
    return {"integer": "number", "object": "object"}.get(str(kind), str(kind))


def _render_properties(schema: dict[str, Any], indent: int) -> str:
    """The properties of an object schema, one ``name?: type,`` line each with its description."""
    required = set(schema.get("required") or ())
    lines = []
    for key, prop in (schema.get("properties") or {}).items():
        prop = prop if isinstance(prop, dict) else {}
        if prop.get("description"):
            lines.append(f"// {prop['description']}")
        optional = "" if key in required else "?"
        lines.append(f"{key}{optional}: {_render_type(prop, indent)},")
    return "\n".join(" " * indent + line for line in lines)


def render_function(schema: dict[str, Any]) -> str:
    """One tool as OpenAI renders it for the model (a ``type name = (_: {...}) => any;`` block)."""
    lines = []
    if schema.get("description"):
        lines.append(f"// {schema['description']}")
    parameters = schema.get("parameters") or {}
    if parameters.get("properties"):
        lines += [f"type {schema.get('name', '')} = (_: {{", _render_properties(parameters, 0), "}) => any;"]
    else:
        lines.append(f"type {schema.get('name', '')} = () => any;")
    return "\n".join(lines) + "\n\n"


def render_tools(tools: Sequence[Any] | None) -> str:
    """Tool definitions as the text OpenAI puts in front of the conversation (empty without tools)."""
    if not tools:
        return ""
    return TOOLS_HEADER + "".join(render_function(tool_schema(t)) for t in tools) + TOOLS_FOOTER


def schema_text(output_schema: Any) -> str:
    """A response format (JSON-schema dict or pydantic model class) as JSON text."""
    if output_schema is None:
        return ""
    schema = output_schema
    if isinstance(output_schema, type) and hasattr(output_schema, "model_json_schema"):
        schema = output_schema.model_json_schema()
    return json.dumps(schema, default=str)
