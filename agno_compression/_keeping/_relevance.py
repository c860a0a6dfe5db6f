"""What of the working set this run still uses: the pages of an earlier run it does not use go, and what its
request still asks for goes first.

A request (a plan: "Step 3: the handlers, following ``hooks_gemini.go``") names what is still to do. A held file
that carries its still-unused names is what the next steps work from; a new file the request names is written
after the held file whose name it echoes (``openclaw_test.go`` after ``gemini_test.go``). Pure: artifacts and
messages in, artifacts out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agno.models.message import Message

from .._messages import call_arguments, content_text, path_argument
from ._ledger import paths_in
from ._reading import action_names, action_text, identifiers_in
from ._working_set import EDIT, USE_NAMES, WRITE, Artifact, kind_of, names_of_text, taken_from

MODEL_SHARE = 4
"""Characters of its name (start and end, extension aside) a new file must share with a held one to follow it."""


def in_this_run(artifacts: Sequence[Artifact], messages: Sequence[Message], current: Message | None) -> list[Artifact]:
    """``artifacts`` without the pages an earlier run fetched that this run does not use: one whose address its
    request or actions (``messages`` from ``current``, its user message, on) do not name and that shares fewer than
    ``USE_NAMES`` names with them. An answer to an earlier question is not carried into an unrelated one; files
    and reports stay (a later request goes on working with them without naming them)."""
    pages = [a for a in artifacts if a.label == "page"]
    if not pages:  # checked before every model call: no page, no walk to find this run's start
        return list(artifacts)
    start = _run_start(messages, current) or 0
    earlier = [a for a in pages if a.used < start]
    if not earlier:
        return list(artifacts)
    words = "\n".join(action_text(m) for m in messages[start:] if m.role in ("user", "assistant"))
    names = set(identifiers_in(words))
    unused = {a.key for a in earlier if a.key not in words and len(names_of_text(a.text) & names) < USE_NAMES}
    return [a for a in artifacts if a.key not in unused]


def put_first(first: Sequence[Artifact], artifacts: Sequence[Artifact]) -> list[Artifact]:
    """``first``, then the rest of ``artifacts`` in their order."""
    return [*first, *(a for a in artifacts if not any(a is b for b in first))]


def pending(artifacts: Sequence[Artifact], messages: Sequence[Message], current: Message | None) -> list[Artifact]:
    """What of ``artifacts`` the request still asks for, most first.

    A request (a plan: "Step 3: a handler, following ``hooks_gemini.go``") names what is still to do; its names
    no action of this run has used yet are *pending*, and a held file with ``USE_NAMES`` or more of them is what
    the next steps will work from, however long ago it was read (most first). Before them goes the file the
    request's next new file follows (``model_file``)."""
    start = _run_start(messages, current) if artifacts else None
    if start is None or current is None:
        return []
    asked = set(identifiers_in(content_text(current, use_compressed_content=False)))
    for m in messages[start + 1 :]:
        if m.role == "assistant" and asked:
            asked -= action_names(m)
    score = {a.key: len(names_of_text(a.text) & asked) for a in artifacts if a.label == "file"}
    first = sorted((a for a in artifacts if score.get(a.key, 0) >= USE_NAMES), key=lambda a: -score[a.key])
    model = model_file(artifacts, messages[start:], current)
    return first if model is None else [model, *(a for a in first if a is not model)]


def drawn_on(
    artifacts: Sequence[Artifact],
    messages: Sequence[Message],
    current: Message | None,
    overrides: Mapping[str, str | None] | None = None,
) -> list[Artifact]:
    """The held files a write or edit of this run (``messages`` from ``current`` on; ``overrides``: the user's
    ``tool_kinds``) took names from, in their order: what the agent builds its changes from, read or written, and
    likely will again. A write does not draw on the file it writes; it takes ``USE_NAMES`` or more names from a
    file, besides those most held files share."""
    files = [a for a in artifacts if a.label == "file"]
    start = _run_start(messages, current) if files else None
    if start is None:
        return []
    names = {a.key: names_of_text(a.text) for a in files}
    drawn: set[str] = set()
    for m in messages[start + 1 :]:
        if targets := _written(m, overrides):
            held = {a.key: names[a.key] for a in files if a.path not in targets}
            drawn.update(taken_from(held, action_names(m)))
    return [a for a in files if a.key in drawn]


def _written(message: Message, overrides: Mapping[str, str | None] | None = None) -> set[str]:
    """The paths an assistant message's calls write or edit."""
    if message.role != "assistant":
        return set()
    return {
        path
        for call in message.tool_calls or []
        if isinstance(call, dict)
        and isinstance(args := call_arguments(call), dict)
        and kind_of(str(call.get("function", {}).get("name", "")), args, overrides) in (WRITE, EDIT)
        and (path := path_argument(args)) is not None
    }


def model_file(artifacts: Sequence[Artifact], run: Sequence[Message], current: Message) -> Artifact | None:
    """The held file the request's next new file follows, or ``None``.

    Of the file names the request gives that the run holds nothing of yet (``openclaw_test.go``), the first whose
    name shares ``MODEL_SHARE`` or more characters, at its start and end with the extension aside, with a file
    the run holds and did not write or edit (``gemini_test.go``: ``_test``; ``hooks_gemini_handlers.go`` for
    ``hooks_openclaw_handlers.go``: ``hooks_`` and ``_handlers``); of those the one sharing most. A file the agent
    wrote is its own work, not the pattern it follows.
    """
    written = {path for m in run for path in _written(m)}
    files = [a for a in artifacts if a.label == "file"]
    held = {_file_name(a.key) for a in files}
    models = [a for a in files if a.path not in written]
    if not models:
        return None
    for name in dict.fromkeys(_file_name(p) for p in paths_in(content_text(current, use_compressed_content=False))):
        if name in held:
            continue
        shared = {a.key: _shared(name, _file_name(a.key)) for a in models}
        best = max(models, key=lambda a: shared[a.key])
        if shared[best.key] >= MODEL_SHARE:
            return best
    return None


def _file_name(key: str) -> str:
    """The file name of a working-set key (a path, perhaps followed by its range: ``a/b.py (limit 200)``)."""
    return key.split(" (", 1)[0].rstrip("/").rsplit("/", 1)[-1]


def _shared(a: str, b: str) -> int:
    """How many characters two file names of one extension share at their start and at their end, the extension
    aside (0 for different extensions, for the same name and for a name without an extension)."""
    stem_a, dot_a, ext_a = a.rpartition(".")
    stem_b, dot_b, ext_b = b.rpartition(".")
    if not (dot_a and dot_b and stem_a and stem_b) or ext_a != ext_b or stem_a == stem_b:
        return 0
    head = _common_start(stem_a, stem_b)
    return head + _common_start(stem_a[head:][::-1], stem_b[head:][::-1])


def _common_start(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _run_start(messages: Sequence[Message], current: Message | None) -> int | None:
    """Index of this run's user message ``current`` in ``messages`` (by identity), or ``None``."""
    return next((i for i, m in enumerate(messages) if m is current), None)
