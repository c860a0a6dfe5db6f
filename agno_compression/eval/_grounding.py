"""Next-step grounding: does the prompt a model call receives still hold what the agent's next action uses?

For each model call of a recording, the *next action* is what the agent actually did next (its text and
tool-call arguments, as recorded). Its *needed identifiers* are the identifiers in that action (four or
more characters with ``_``, ``.``, ``/``, a digit or an inner capital: paths, function and setting names,
dotted names; dunder names excluded) that an earlier step of the session introduced, in an action or a
tool output, and that neither the system prompt nor a user message holds. Grounding is the share of the
needed identifiers present, as exact strings, in the prompt that call received. An uncompressed replay
scores 1.00 by construction; a fold that drops what the agent was about to use scores less.

The needs are computed once per recording from the recorded turns (``needs_of``), so every setting,
peers and baselines included, is scored against the same list: call *k* of any replay is answered by
the same recorded reply.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Iterable, Sequence

from agno.models.message import Message

from .._keeping._ledger import json_strings
from .._keeping._reading import identifiers_in
from .._messages import content_text
from ._replay import split_turns


def identifiers(text: str) -> set[str]:
    """The identifiers in ``text``: 4+ characters with ``_``, ``.``, ``/``, a digit or an inner capital.

    A token is a run of word characters, dots, slashes and hyphens with its edge punctuation stripped
    (a sentence's full stop is not part of a path). Dunder names (``__init__``) and tokens without a
    letter (``1.5``, ``2024-01-02``) are not identifiers. The summaries' own reading uses the same rule.
    """
    return set(identifiers_in(text))


def _call_strings(calls: Iterable[object], *, names: bool = True) -> list[str]:
    """The decoded argument strings of tool calls (agno dicts or ``ToolCall`` objects), with the tool names
    unless ``names`` is false (a tool's name is in the tool definitions every call is sent)."""
    out: list[str] = []
    for call in calls:
        if isinstance(call, dict):
            function = call.get("function", {})
            name, raw = function.get("name", ""), function.get("arguments", "")
        else:
            name, raw = getattr(call, "name", ""), getattr(call, "arguments", "")
        try:
            value = json.loads(raw) if isinstance(raw, str) and raw else raw
        except ValueError:
            value = raw
        if names:
            out.append(str(name))
        out.extend(json_strings(value))
    return out


def needs_of(messages: Sequence[Message]) -> list[frozenset[str]]:
    """Per model call of a replay of ``messages``, the identifiers its next action needs (see the module doc).

    ``messages`` is the recording as agno messages with tool calls (``observations_as_tool_calls``). Calls
    follow the replay's order: each turn's recorded replies, then the reply that ends the turn.
    """
    system, turns, outputs = split_turns(messages)
    queues = {name: deque(texts) for name, texts in outputs.items()}
    given: set[str] = identifiers(system or "")
    introduced: set[str] = set()
    needs: list[frozenset[str]] = []
    for turn in turns:
        given |= identifiers(turn.user)
        for reply in (*turn.replies, None):
            if reply is None:  # the turn's last call is answered with END_OF_RECORDING: it uses nothing
                needs.append(frozenset())
                continue
            action = "\n".join([reply.text or "", *_call_strings(reply.tool_calls or [], names=False)])
            used = identifiers(action)
            needs.append(frozenset(used & (introduced - given)))
            introduced |= used
            for call in reply.tool_calls or []:
                queue = queues.get(call.name)
                if queue:
                    introduced |= identifiers(queue.popleft())
    return needs


def prompt_text(messages: Sequence[Message]) -> str:
    """What a model call received, as text: every message as sent (shortened outputs as shortened) and the
    decoded arguments of its tool calls."""
    parts: list[str] = []
    for m in messages:
        parts.append(content_text(m, use_compressed_content=True))
        if m.tool_calls:
            parts.extend(_call_strings(m.tool_calls))
    return "\n".join(parts)


def grounding(prompts: Sequence[Sequence[Message]], needs: Sequence[frozenset[str]]) -> tuple[int, int]:
    """(present, needed) summed over the calls: how many needed identifiers each call's prompt held.

    Call *k* of ``prompts`` is scored against ``needs[k]``; calls beyond either list are not scored.
    """
    present = needed = 0
    for messages, wanted in zip(prompts, needs, strict=False):
        if not wanted:
            continue
        text = prompt_text(messages)
        needed += len(wanted)
        present += sum(1 for w in wanted if w in text)
    return present, needed


def missing(prompts: Sequence[Sequence[Message]], needs: Sequence[frozenset[str]]) -> dict[str, int]:
    """Needed identifiers absent from the prompt that needed them, with how many calls missed each."""
    out: dict[str, int] = defaultdict(int)
    for messages, wanted in zip(prompts, needs, strict=False):
        if wanted:
            text = prompt_text(messages)
            for w in wanted:
                if w not in text:
                    out[w] += 1
    return dict(out)
