"""Recorded agent runs as agno ``Message`` lists, for replays, evaluation and benchmarks.

``load_trajectories`` reads one file or a directory and detects each file's format from its
content. Supported formats:

* **tau-bench** – a JSON list of ``{task_id, trial, traj}``; ``traj`` is OpenAI chat format.
* **openhands** – an event ``history`` (JSONL of run records, a JSON list of records, or a JSON
  list of events). Actions with ``tool_call_metadata`` become assistant tool calls (actions of one
  model response form one assistant message), observations linked by ``cause`` become their
  results. Old-style histories without ids pair an action with the observation right after it.
* **swe-agent** – a ``.traj`` object; its ``history`` is used as is (falling back to
  ``trajectory`` steps when there is no history).
* **tapeagents** – a tape ``{metadata, steps}``: ``*_action`` steps become tool calls with ids
  ``call_<step index>``, the observations after them their results, thoughts assistant text.
* **mini-swe-agent** – a ``*.traj.json`` object ``{"info", "messages", "trajectory_format"}``: OpenAI-style
  system/user/assistant messages (actions as ```bash blocks in the assistant text, observations as user
  messages), ending with a ``role="exit"`` record, which is not part of the conversation and is dropped.
* **openai-chat** – a JSON list of chat messages or an object with a ``messages`` list.
* **claude-code** – a Claude Code session file (``~/.claude/projects/<project>/<session>.jsonl``) or the
  output of ``claude -p --output-format stream-json``: JSONL records whose ``message`` is an Anthropic message.
  The records of one model response (one per content block, same ``message.id``) form one assistant message,
  ``tool_use`` blocks its calls and ``tool_result`` blocks their results (``is_error`` kept as
  ``tool_call_error``); thinking blocks and bookkeeping records (summaries, snapshots, progress, hooks) are left
  out; images and documents become a one-line description. A subagent's records inside a session file
  (``isSidechain``) are left out, as the main agent never saw them; a file of them alone (``agent-*.jsonl``)
  is the subagent's run.
* **gemini-cli** – a Gemini CLI session (``~/.gemini/tmp/<project>/chats/session-*.json``, or its JSONL form):
  ``user`` prompts, ``gemini`` turns whose ``toolCalls`` carry their own results (``functionResponse``
  output, a failed call kept as ``tool_call_error``); ``thoughts`` and the CLI's info/error/warning notices
  are left out.
* **openai-responses** – OpenAI Responses API items (a JSON list, ``{"input": [...]}``, or JSONL), bare or as an
  OpenAI Codex CLI rollout (``rollout-*.jsonl``: ``response_item`` records). ``message`` items become messages,
  ``function_call`` / ``custom_tool_call`` (Codex's ``apply_patch``, its text as ``{"input": ...}``) /
  ``local_shell_call`` items the calls of one assistant message until a result comes, ``*_output`` items their
  results (Codex's JSON-wrapped shell output unwrapped); ``reasoning`` items and the rollout's bookkeeping are left
  out, the session's ``instructions`` become the system message.

In every chat-shaped format a message whose role is none of system/developer/user/assistant/tool is
skipped, with one warning per file naming the roles, rather than failing the file.

Every message gets the id ``"<trajectory name>:<index>"`` and ``created_at=0``, so two loads of
a file are equal. Content is always a ``str`` and never shortened. Tool calls and results are
made into valid OpenAI pairs: each result directly follows the assistant message holding its
call; a call without a result is kept only as text unless it is in the last assistant turn of
the run (a final pending call); a result without a call is kept as a user message; call ids
reused within a run (tau-bench and SWE-agent replays do) get a ``_2``, ``_3``... suffix.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agno.models.message import Message

from .._exceptions import ConfigError
from ._formats import CONVERTERS, detect
from ._raw import Raw, raw_message, skipped_roles

__all__ = ["Trajectory", "TrajectoryFormatError", "iter_shared_trajectories", "load_trajectories"]

_SHARED_FOLDERS = ("tau-bench", "openhands", "swe-agent", "tapeagents")
_SUFFIXES = {".json", ".jsonl", ".traj"}
# metadata.json: checkpoint tools (Entire) store one beside each transcript
_SKIPPED_STEMS = {"license", "source", "config", "readme", "metadata"}

log = logging.getLogger("agno_compression")


class TrajectoryFormatError(ConfigError):
    """A trajectory file is malformed or in no known format; the message names the file."""


@dataclass(frozen=True)
class Trajectory:
    """One recorded agent run as agno messages.

    Attributes:
        source: ``"tau-bench"``, ``"openhands"``, ``"swe-agent"``, ``"tapeagents"``, ``"mini-swe-agent"``,
            ``"openai-chat"``, ``"claude-code"``, ``"gemini-cli"`` or ``"openai-responses"``.
        name: ``"<file stem>#<run id or index>"``, unique within its file.
        messages: system (if any), user, assistant (``tool_calls`` in OpenAI shape) and tool
            (``tool_call_id``, ``tool_name``) messages with ``str`` content.
    """

    source: str
    name: str
    messages: list[Message]


# --------------------------------------------------------------------------- pairing


def _render_call(call: Raw) -> str:
    """A tool call as text, for calls dropped because they never got a result."""
    return f"{call['function']['name']}({call['function']['arguments']})"


def _unique_id(call_id: str, used: set[str]) -> str:
    """``call_id``, or ``call_id_2``, ``call_id_3``... when already used in the run; marks it used."""
    new, k = call_id, 2
    while new in used:
        new, k = f"{call_id}_{k}", k + 1
    used.add(new)
    return new


def _pair_tool_calls(messages: list[Raw]) -> list[Raw]:
    """Valid OpenAI pairs: results right after their call, unique call ids, unanswered calls dropped unless final.

    Results are matched to the calls of the assistant message just before them. A result with no
    such call becomes a user message; a call with no result is kept as text in its assistant
    message (so nothing the agent wrote is lost) unless it ends the run. Call ids repeated within
    a run (recorded replays reuse them) get a ``_2``, ``_3``... suffix, and results without a
    ``tool_name`` get the name of their call.
    """
    out: list[Raw] = []
    used: set[str] = set()
    i = 0
    while i < len(messages):
        message = messages[i]
        i += 1
        if message["role"] == "tool":
            out.append(raw_message("user", message["content"]))
            continue
        if not message.get("tool_calls"):
            out.append(message)
            continue
        calls = [(c["id"], {**c, "id": _unique_id(c["id"], used)}) for c in message["tool_calls"]]
        results: list[Raw] = []
        strays: list[Raw] = []
        while i < len(messages) and messages[i]["role"] == "tool":
            result = messages[i]
            i += 1
            answered = {r["tool_call_id"] for r in results}
            call = next((c for old, c in calls if old == result["tool_call_id"] and c["id"] not in answered), None)
            if call is None:
                strays.append(raw_message("user", result["content"]))
            else:
                name = result.get("tool_name") or call["function"]["name"]
                results.append({**result, "tool_call_id": call["id"], "tool_name": name})
        final = i == len(messages) and not strays
        answered = {r["tool_call_id"] for r in results}
        kept = [c for _, c in calls if final or c["id"] in answered]
        dropped = [_render_call(c) for _, c in calls if c not in kept]
        content = "\n".join([message["content"], *dropped]) if message["content"] else "\n".join(dropped)
        out.append({**message, "content": content, "tool_calls": kept or None})
        out.extend(results + strays)
    return out


def _to_messages(name: str, raws: list[Raw]) -> list[Message]:
    """Raw messages as agno messages with deterministic ids ``<name>:<index>``."""
    messages = []
    for index, raw in enumerate(raws):
        fields = {k: v for k, v in raw.items() if v is not None}
        messages.append(Message(id=f"{name}:{index}", created_at=0, **fields))
    return messages


# --------------------------------------------------------------------------- loading


def _parse(path: Path) -> Any:
    """The JSON content of a file; JSONL (``.jsonl``) as a list of records."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return json.loads(text)


def _load_file(path: Path) -> list[Trajectory]:
    """All runs in one trajectory file."""
    try:
        data = _parse(path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TrajectoryFormatError(f"{path}: cannot read as JSON: {exc}") from exc
    source = "unknown"
    skipped_roles.roles = Counter()
    try:
        source = detect(data)
        trajectories: list[Trajectory] = []
        seen: set[str] = set()
        for index, (run_id, raws) in enumerate(CONVERTERS[source](data)):
            run = run_id if run_id not in seen else f"{run_id}-{index}"
            seen.add(run)
            if not raws:
                raise ValueError(f"run {run!r} has no messages")
            name = f"{path.stem}#{run}"
            trajectories.append(Trajectory(source, name, _to_messages(name, _pair_tool_calls(raws))))
    except TrajectoryFormatError:
        raise
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        raise TrajectoryFormatError(f"{path}: malformed {source} trajectory: {exc!r}") from exc
    finally:
        skipped, skipped_roles.roles = skipped_roles.roles, None
    if skipped:
        roles = ", ".join(f"{role!r} ({n})" for role, n in sorted(skipped.items()))
        log.warning("agno-compression: %s: skipped messages with unknown roles: %s", path, roles)
    return trajectories


def _trajectory_files(directory: Path) -> list[Path]:
    """Trajectory files under ``directory`` (recursively, sorted), without licence/source/config/metadata files."""
    return sorted(
        p
        for p in directory.rglob("*")
        if p.is_file() and p.suffix in _SUFFIXES and p.stem.lower() not in _SKIPPED_STEMS
    )


def load_trajectories(path: str | os.PathLike[str]) -> list[Trajectory]:
    """Load recorded runs from one file or, recursively, a directory.

    The format of each file is detected from its content. In a directory only ``.json``,
    ``.jsonl`` and ``.traj`` files are read (``LICENSE``, ``SOURCE.txt``, config and metadata files skipped).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        TrajectoryFormatError: a file is malformed or in no known format.
    """
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"no trajectory file or directory at {root}")
    files = _trajectory_files(root) if root.is_dir() else [root]
    return [t for f in files for t in _load_file(f)]


def iter_shared_trajectories(root: str | os.PathLike[str]) -> Iterator[Trajectory]:
    """All runs in the shared data folder (tau-bench, openhands, swe-agent, tapeagents), lazily.

    Folders that are missing under ``root`` are skipped; ``root`` itself must exist.
    """
    base = Path(root)
    if not base.is_dir():
        raise FileNotFoundError(f"no shared trajectory folder at {base}")
    for folder in _SHARED_FOLDERS:
        if (base / folder).is_dir():
            yield from load_trajectories(base / folder)
