"""The working set: what each tool is, what the agent has in hand after its calls, and that text within a budget."""

from __future__ import annotations

import json

import pytest
from agno.models.message import Message
from hypothesis import given, settings
from hypothesis import strategies as st

from agno_compression import CompressionManager, ConfigError
from agno_compression._keeping._outline import GAP
from agno_compression._keeping._reading import identifiers_in
from agno_compression._keeping._working_set import (
    DELEGATE,
    EDIT,
    FETCH,
    READ,
    WRITE,
    Artifact,
    Walk,
    collect,
    held_tokens,
    kind_of,
    render,
    split,
)
from agno_compression.tokens import TokenCounter

COUNT = TokenCounter("gpt-4o").count_text
MODULE = "\n".join(
    [
        "import os",
        "from pathlib import Path",
        "",
        "DEFAULT_TIMEOUT = 30",
        "",
        "class ShellRunner:",
        "    def run_command(self, args: list[str], timeout_seconds: int = DEFAULT_TIMEOUT) -> str:",
        *[f"        step_{i} = os.environ.get('STEP_{i}', 'x')" for i in range(40)],
        "        return Path('out.txt').read_text()",
    ]
)


def call(cid: str, name: str, **args: object) -> Message:
    payload = {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    return Message(role="assistant", tool_calls=[payload])


def result(cid: str, name: str, text: str, *, error: bool = False) -> Message:
    return Message(role="tool", tool_call_id=cid, tool_name=name, content=text, tool_call_error=error)


@pytest.mark.parametrize(
    ("name", "args", "kind"),
    [
        ("Read", {"file_path": "/a.py"}, READ),
        ("read_file", {"file_name": "a.py"}, READ),
        ("Edit", {"file_path": "/a.py", "old_string": "x", "new_string": "y"}, EDIT),
        ("replace", {"file_path": "/a.py", "old_string": "x", "new_string": "y"}, EDIT),
        ("save_file", {"contents": "x", "file_name": "a.py"}, WRITE),
        ("WebFetch", {"url": "https://example.com", "prompt": "p"}, FETCH),
        ("Task", {"description": "explore", "prompt": "look"}, DELEGATE),
        ("str_replace_editor", {"command": "view", "path": "/a.py"}, READ),
        ("str_replace_editor", {"command": "create", "path": "/a.py", "file_text": "x"}, WRITE),
        ("str_replace_editor", {"command": "str_replace", "path": "/a.py", "old_str": "x", "new_str": "y"}, EDIT),
        # tools nobody listed, by the shape of their arguments
        ("open_source", {"path": "/a.py", "start_line": 1}, READ),
        ("patch_source", {"target_file": "/a.py", "old": "x", "new": "y"}, EDIT),
        ("put_source", {"filename": "a.py", "text": "x"}, WRITE),
        ("download", {"url": "https://example.com"}, FETCH),
        # argument names in another case style (OpenCode), SEARCH/REPLACE blocks (Cline, Roo Code)
        ("read", {"filePath": "/a.py", "offset": 3, "limit": 40}, READ),
        ("edit", {"filePath": "/a.py", "oldString": "x", "newString": "y", "replaceAll": False}, EDIT),
        ("write", {"filePath": "/a.py", "content": "x"}, WRITE),
        ("replace_in_file", {"path": "a.py", "diff": "------- SEARCH\nx\n=======\ny\n+++++++ REPLACE"}, EDIT),
        ("apply_diff", {"path": "a.py", "diff": "no blocks here"}, None),
        ("run_shell_command", {"command": "cat a.py"}, None),
        ("Bash", {"command": "ls"}, None),
        ("search_files", {"pattern": "*.py"}, None),
    ],
)
def test_a_tool_is_known_by_its_name_or_by_the_shape_of_its_arguments(name: str, args: dict, kind: str | None) -> None:
    assert kind_of(name, args) == kind


def test_the_users_own_kinds_come_first() -> None:
    assert kind_of("Read", {"file_path": "/a"}, {"Read": None}) is None
    assert kind_of("lookup", {"key": "k"}, {"lookup": FETCH}) == FETCH


def test_tool_kinds_are_checked_with_a_message_naming_the_value() -> None:
    with pytest.raises(ConfigError, match=r"tool_kinds\['mine'\].*'open'"):
        CompressionManager(tool_kinds={"mine": "open"})
    with pytest.raises(ConfigError, match="working_set_ratio"):
        CompressionManager(working_set_ratio=1.5)


def test_an_edit_is_applied_to_what_was_read_and_a_write_replaces_it() -> None:
    messages = [
        call("1", "Read", file_path="/src/a.py"),
        result("1", "Read", "     1→x = 1\n     2→y = 2"),
        call("2", "Edit", file_path="/src/a.py", old_string="y = 2", new_string="y = 3"),
        result("2", "Edit", "The file /src/a.py has been updated."),
    ]
    [item] = collect(messages)
    assert (item.key, item.label, item.text) == ("/src/a.py", "file", "x = 1\ny = 3")
    assert item.sources == {messages[1].id, messages[2].id}
    write = [call("3", "Write", file_path="/src/a.py", content="z = 9"), result("3", "Write", "ok")]
    [item] = collect(messages + write)
    assert item.text == "z = 9" and item.sources == {write[0].id}


def test_an_edit_that_cannot_be_applied_drops_the_stale_text_and_a_later_read_brings_it_back() -> None:
    messages = [
        call("1", "read_file", file_path="/a.py"),
        result("1", "read_file", "alpha = 1\nbeta = 2"),
        call("2", "replace", file_path="/a.py", old_string="gamma", new_string="delta"),
    ]
    assert collect(messages) == []
    again = [call("3", "read_file", file_path="/a.py"), result("3", "read_file", "alpha = 1\ndelta = 2")]
    assert [a.text for a in collect(messages + again)] == ["alpha = 1\ndelta = 2"]


def test_failed_reads_and_shell_commands_that_do_more_than_print_a_file_hold_nothing() -> None:
    messages = [
        call("1", "Read", file_path="/missing.py"),
        result("1", "Read", "<tool_use_error>File does not exist.</tool_use_error>"),
        call("2", "Read", file_path="/b.py"),
        result("2", "Read", "boom", error=True),
        call("3", "Bash", command="cat /c.py | grep x"),
        result("3", "Bash", "print('c')"),
        call("4", "run_shell_command", command="cat a.py b.py"),
        result("4", "run_shell_command", "a\nb"),
    ]
    assert collect(messages) == []


@pytest.mark.parametrize(
    "command",
    ["cat /src/c.py", "cat -n /src/c.py", "Get-Content /src/c.py", "Get-Content -Path '/src/c.py'"],
)
def test_a_shell_command_that_only_prints_a_whole_file_reads_it(command: str) -> None:
    messages = [call("1", "run_shell_command", command=command), result("1", "run_shell_command", "x = 1")]
    edit = [call("2", "replace", file_path="/src/c.py", old_string="x = 1", new_string="x = 2")]
    [item] = collect(messages + edit)
    assert (item.key, item.label, item.text) == ("/src/c.py", "file", "x = 2")


def test_newest_use_first_and_a_command_naming_a_file_uses_it() -> None:
    messages = [
        call("1", "Read", file_path="/a.py"),
        result("1", "Read", "a = 1"),
        call("2", "Read", file_path="/b.py"),
        result("2", "Read", "b = 2"),
    ]
    assert [a.key for a in collect(messages)] == ["/b.py", "/a.py"]
    touch = [call("3", "Bash", command="python /a.py"), result("3", "Bash", "1")]
    assert [a.key for a in collect(messages + touch)] == ["/a.py", "/b.py"]


def test_partial_reads_are_kept_apart_until_a_whole_read() -> None:
    messages = [
        call("1", "Read", file_path="/a.py", offset=10, limit=5),
        result("1", "Read", "part one"),
        call("2", "Read", file_path="/a.py", offset=50, limit=5),
        result("2", "Read", "part two"),
    ]
    assert sorted(a.key for a in collect(messages)) == ["/a.py (offset 10, limit 5)", "/a.py (offset 50, limit 5)"]
    whole = [call("3", "Read", file_path="/a.py"), result("3", "Read", "everything")]
    assert [a.key for a in collect(messages + whole)] == ["/a.py"]
    cursor = [call("4", "read_file", target_file="/b.py", start_line_one_indexed=3, end_line_one_indexed_inclusive=9)]
    [part] = collect([*cursor, result("4", "read_file", "a part")])
    assert part.key == "/b.py (start_line_one_indexed 3, end_line_one_indexed_inclusive 9)"


def test_a_codex_patch_adds_and_updates_files() -> None:
    add = "*** Begin Patch\n*** Add File: new.py\n+def hello():\n+    return 1\n*** End Patch"
    update = "*** Begin Patch\n*** Update File: new.py\n@@\n def hello():\n-    return 1\n+    return 2\n*** End Patch"
    messages = [call("1", "apply_patch", input=add), call("2", "apply_patch", input=update)]
    [item] = collect(messages)
    assert item.text == "def hello():\n    return 2"


def test_an_opencode_session_is_followed_as_a_claude_code_one() -> None:
    """OpenCode names its arguments ``filePath``, ``oldString``, ``newString``, ``replaceAll`` and frames a read in
    tags with ``N: `` gutters (packages/opencode/src/tool/read.ts, edit.ts, apply_patch.ts)."""
    framed = "<path>/src/a.py</path>\n<type>file</type>\n<content>\n1: x = 1\n2: y = 2\n\n(End of file)\n</content>"
    patch = "*** Begin Patch\n*** Update File: /src/a.py\n@@\n-x = 3\n+x = 4\n*** End Patch"
    messages = [
        call("1", "read", filePath="/src/a.py"),
        result("1", "read", framed),
        call("2", "edit", filePath="/src/a.py", oldString="1", newString="3", replaceAll=True),
        result("2", "edit", "Edit applied successfully."),
        call("3", "apply_patch", patchText=patch),
        result("3", "apply_patch", "Success."),
        call("4", "read", filePath="/src/b.py", offset=10, limit=2),
        result("4", "read", "<path>/src/b.py</path>\n<type>file</type>\n<content>\n10: z = 0\n11: w = 0\n</content>"),
    ]
    part, whole = collect(messages)
    assert (whole.key, whole.text) == ("/src/a.py", "x = 4\ny = 2")
    assert (part.key, part.text) == ("/src/b.py (offset 10, limit 2)", "z = 0\nw = 0")


@pytest.mark.parametrize(
    "diff",
    [
        "------- SEARCH\ny = 2\n=======\ny = 3\n+++++++ REPLACE",  # Cline
        "<<<<<<< SEARCH\ny = 2\n=======\ny = 3\n>>>>>>> REPLACE",  # Cline before 3.18
        "<<<<<<< SEARCH\n:start_line:2\n-------\ny = 2\n=======\ny = 3\n>>>>>>> REPLACE",  # Roo Code
    ],
)
def test_search_replace_blocks_edit_what_was_read_and_one_that_does_not_match_leaves_it_stale(diff: str) -> None:
    read = [call("1", "read_file", path="a.py"), result("1", "read_file", "x = 1\ny = 2")]
    [item] = collect([*read, call("2", "replace_in_file", path="a.py", diff=diff)])
    assert item.text == "x = 1\ny = 3"
    assert collect([*read, call("2", "apply_diff", path="a.py", diff=diff.replace("y = 2", "q = 9"))]) == []


def test_pages_and_reports_are_kept_by_their_address_or_task() -> None:
    messages = [
        call("1", "web_fetch", url="https://docs.example.com/api"),
        result("1", "web_fetch", "GET /v2/items returns items_page"),
        call("2", "Task", description="Explore the agent registry", prompt="look"),
        result("2", "Task", "RegisterAgent in registry.go"),
    ]
    assert [(a.label, a.key) for a in collect(messages)] == [
        ("report", "Explore the agent registry"),
        ("page", "https://docs.example.com/api"),
    ]


def test_what_is_kept_verbatim_is_not_repeated_and_what_does_not_fit_is_outlined() -> None:
    small = Artifact("/s.py", "file", "SMALL_CONSTANT = 1", 5, frozenset({"m5"}), "/s.py")
    big = Artifact("/big.py", "file", MODULE, 3, frozenset({"m3"}), "/big.py")
    text = render([small, big], 2_000, COUNT)
    assert "SMALL_CONSTANT" in text and "step_39" in text and "shortened" not in text
    assert "SMALL_CONSTANT" not in render([small, big], 2_000, COUNT, visible=frozenset({"m5"}))
    tight = render([big], 300, COUNT)
    assert COUNT(tight) <= 300 and "shortened" in tight and "run_command" in tight and GAP in tight


def test_a_file_whose_outline_is_denser_than_the_file_is_cut_again_to_the_room_not_left_out() -> None:
    # signatures carry more tokens per character than the comments around them: an outline of a file's share of
    # characters comes out over the room, and must be made smaller rather than dropped
    prose = "    # the quick brown fox jumps over the lazy dog while everyone watches and nothing else happens"
    text = "\n".join(
        line
        for i in range(60)
        for line in (f"func (h *handler{i}) HandleAfterAgent{i}(ctx, sessionID{i}, ref{i} string) error {{", prose, "}")
    )
    item = Artifact("/h.go", "file", text, 1, frozenset(), "/h.go")
    names = set(identifiers_in(text))
    for room in (400, 700, 1_000):
        section = render([item], room, COUNT)
        assert COUNT(section) <= room and "shortened" in section
        assert room * 0.9 <= COUNT(section) or names <= set(identifiers_in(section)), (
            "the room filled, or every name in"
        )
        assert section.count("HandleAfterAgent") >= room // 40


def test_a_summary_gives_back_its_working_set_whatever_the_text_holds() -> None:
    tricky = "print('```')\n### file /x\n```\n## Working set"
    items = [
        Artifact("/a.py", "file", tricky, 2, frozenset(), "/a.py"),
        Artifact("https://e.com", "page", "page text", 1),
    ]
    section = render(items, 1_000, COUNT)
    body, carried = split(f"[Progress so far]\n## Steps\n- one\n\n{section}\nsearch hint")
    assert body == "[Progress so far]\n## Steps\n- one\nsearch hint"
    assert [(a.key, a.text) for a in reversed(carried)] == [("/a.py", tricky), ("https://e.com", "page text")]
    assert split("no section here") == ("no section here", [])


def test_a_history_summary_loaded_with_a_progress_summary_gives_back_both() -> None:
    older = render([Artifact("/a.py", "file", "A = 1", 1, frozenset(), "/a.py")], 1_000, COUNT)
    newer = render(
        [
            Artifact("/b.py", "file", "B = 2", 2, frozenset(), "/b.py"),
            Artifact("/a.py", "file", "A = 3", 1, frozenset(), "/a.py"),
        ],
        1_000,
        COUNT,
    )
    text = f"[Summary]\n## Working state\n- read: /a.py\n\n{older}\nhint\n\n[Progress so far]\n## Working state\n"
    body, carried = split(f"{text}- ran `make` → exit 0\n\n{newer}\nhint")
    second = "[Progress so far]\n## Working state\n- ran `make` → exit 0\nhint"
    assert body == f"[Summary]\n## Working state\n- read: /a.py\nhint\n\n{second}"
    assert [(a.key, a.text) for a in carried] == [("/a.py", "A = 1"), ("/a.py", "A = 3"), ("/b.py", "B = 2")]
    assert [a.used for a in carried] == sorted(a.used for a in carried), "the progress summary's files are newer"


@settings(max_examples=60, deadline=None)
@given(
    first=st.lists(st.text(min_size=1, max_size=300), min_size=1, max_size=3),
    second=st.lists(st.text(min_size=1, max_size=300), min_size=1, max_size=3),
    between=st.text(st.characters(blacklist_characters="#`"), max_size=80),
)
def test_two_summaries_in_one_message_split_as_each_does_alone(
    first: list[str], second: list[str], between: str
) -> None:
    def summary(name: str, texts: list[str]) -> str:
        items = [
            Artifact(f"/{name}{i}", "file", t, len(texts) - i, frozenset(), f"/{name}{i}") for i, t in enumerate(texts)
        ]
        return f"[{name}]\n## Steps\n- {between}\n\n{render(items, 10_000, COUNT)}\nhint"

    one, two = summary("a", first), summary("b", second)
    body, carried = split(f"{one}\n\n{two}")
    (body_one, kept_one), (body_two, kept_two) = split(one), split(two)
    assert body == f"{body_one}\n\n{body_two}"
    assert [(a.key, a.text) for a in carried] == [(a.key, a.text) for a in (*kept_one, *kept_two)]
    assert [a.used for a in carried] == sorted(a.used for a in carried)


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.text(min_size=1, max_size=600), min_size=1, max_size=5),
    budget=st.integers(min_value=0, max_value=800),
)
def test_the_working_set_never_exceeds_its_budget(texts: list[str], budget: int) -> None:
    items = [Artifact(f"/f{i}", "file", t, -i, frozenset(), f"/f{i}") for i, t in enumerate(texts)]
    text = render(items, budget, COUNT)
    assert text == "" or COUNT(text) <= budget
    kept = {a.key: a.text for a in split(text)[1]}
    assert all(kept[k] == t for k, t in ((f"/f{i}", t) for i, t in enumerate(texts)) if k in kept)


def test_the_summary_does_not_list_again_the_names_the_working_set_holds() -> None:
    from agno_compression import SummaryRequest
    from agno_compression._summarizers import ExtractiveSummarizer

    source = "\n".join(f"    backoff_field_{i} = {i}" for i in range(40))
    messages = [
        call("1", "Read", file_path="/src/retry_policy.py"),
        result("1", "Read", f"class RetryPolicy:\n{source}"),
        call("2", "Bash", command="python -m pytest tests/test_retry.py -k backoff_field_3"),
        result("2", "Bash", "1 passed"),
    ]

    def names(held: str) -> str:
        request = SummaryRequest(messages=messages, previous=None, max_tokens=900, count_tokens=COUNT, held=held)
        text = ExtractiveSummarizer().summarize(request).text
        return text.split("## Names in use", 1)[1].split("\n## ", 1)[0] if "## Names in use" in text else ""

    assert "backoff_field_39" in names("")
    assert "backoff_field_39" not in names(render(collect(messages), 800, COUNT))


def test_the_working_set_a_summary_carries_is_counted_apart() -> None:
    section = render([Artifact("/a.py", "file", "alpha_value = 1", 1, frozenset(), "/a.py")], 500, COUNT)
    body = "[Progress so far]\n## Steps\n- one"
    assert held_tokens(body, COUNT) == 0
    assert held_tokens(f"{body}\n\n{section}", COUNT) == COUNT(f"{body}\n\n{section}") - COUNT(body)


STEP = st.sampled_from(
    [
        ("Read", {"file_path": "/a.py"}, "alpha = 1\nbeta = 2"),
        ("Read", {"file_path": "/b.py"}, "gamma = 3"),
        ("Edit", {"file_path": "/a.py", "old_string": "beta = 2", "new_string": "beta = 5"}, "ok"),
        ("Edit", {"file_path": "/b.py", "old_string": "missing", "new_string": "x"}, "ok"),
        ("Write", {"file_path": "/b.py", "content": "gamma = 4"}, "ok"),
        ("WebFetch", {"url": "https://e.com"}, "page text"),
        ("Bash", {"command": "cat /a.py"}, "alpha = 1"),
    ]
)


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(STEP, max_size=12), cut=st.integers(min_value=0, max_value=24))
def test_a_walk_as_messages_come_holds_what_one_walk_over_all_of_them_holds(steps: list, cut: int) -> None:
    messages: list[Message] = []
    for n, (name, args, text) in enumerate(steps):
        messages += [call(str(n), name, **args), result(str(n), name, text)]
    walk = Walk()
    walk.artifacts(messages[:cut])  # a run seen part way
    assert sorted(walk.artifacts(messages), key=lambda a: a.key) == sorted(
        collect(messages, order=False), key=lambda a: a.key
    )
    other = [call("x", "Read", file_path="/c.py"), result("x", "Read", "delta = 1")]
    assert [a.key for a in walk.artifacts(other)] == ["/c.py"], "a list that is not the same run grown: walked anew"


@pytest.mark.parametrize(
    "command", ["sed -i 's/x/y/' c.py", "echo y >> c.py", "Set-Content c.py 'x'", "git checkout -- src/c.py"]
)
def test_a_shell_command_that_may_write_a_held_file_makes_it_stale(command: str) -> None:
    messages = [call("1", "Read", file_path="/src/c.py"), result("1", "Read", "x = 1")]
    ran = [call("2", "Bash", command=command), result("2", "Bash", "")]
    assert collect(messages + ran) == []
    other = [call("2", "Bash", command="python /src/c.py 2>&1 | tail -3"), result("2", "Bash", "ok")]
    [item] = collect(messages + other)
    assert item.used == 2, "a command that only names it uses it"


def test_a_shell_here_document_that_writes_a_whole_file_replaces_what_was_held() -> None:
    messages = [call("1", "Read", file_path="/src/c.py"), result("1", "Read", "x = 1")]
    write = [call("2", "Bash", command="cat > /src/c.py << 'EOF'\nx = 3\nEOF"), result("2", "Bash", "")]
    [item] = collect(messages + write)
    assert (item.key, item.text, item.sources) == ("/src/c.py", "x = 3", {write[0].id})


def test_what_is_in_use_may_take_the_section_past_its_room_and_the_rest_only_what_is_left() -> None:
    pattern = Artifact("/pattern.py", "file", MODULE, 2, frozenset(), "/pattern.py")
    newer = Artifact("/newer.py", "file", "NEWER_CONSTANT = 1", 5, frozenset(), "/newer.py")
    plain = render([pattern, newer], 300, COUNT)
    wide = render([pattern, newer], 300, COUNT, wide=({"/pattern.py"}, 900))
    assert COUNT(plain) <= 300 < COUNT(wide) <= 900
    assert "NEWER_CONSTANT" not in wide, "the rest gets what the first left of the room: nothing"
    assert render([pattern, newer], 300, COUNT, wide=(set(), 900)) == plain, "nothing in use: the room as it was"


def test_a_file_in_use_behind_newer_ones_gets_the_room_they_leave_of_its_own() -> None:
    newer = Artifact("/newer.py", "file", MODULE.replace("def ", "def newer_"), 5, frozenset(), "/newer.py")
    older = Artifact("/older.py", "file", "OLDER_CONSTANT = 1", 2, frozenset(), "/older.py")
    room = COUNT(render([newer], 10_000, COUNT)) + 60  # the newer file whole leaves less than a piece
    assert "OLDER_CONSTANT" not in render([newer, older], room, COUNT), "only read: no room left"
    section = render([newer, older], room, COUNT, wide=({"/older.py"}, room + 200))
    assert "OLDER_CONSTANT" in section and "### file /newer.py\n" in section, "newest first, then the one in use"
    assert render([newer, older], -50, COUNT, wide=({"/older.py"}, 400)).count("### file") == 1, "no room but its"
