"""The ledger's cheap scans before its regexes find exactly what the regexes alone find."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agno_compression import _summarizers
from agno_compression._keeping import _ledger
from agno_compression._keeping._ledger import mentions, outcome_of
from agno_compression._messages import command_of
from agno_compression._summarizers import ExtractiveSummarizer, SummaryRequest
from agno_compression.tokens import TokenCounter
from tests.strategies import examples

# words and letters that decide a match: ASCII in any case, and the non-ASCII letters re.I folds into ASCII ones
_PIECES = st.sampled_from(
    [
        "exit",
        "EXIT",
        "Exited with code",
        "returncode",
        "status",
        "ſtatus",
        "eKit",
        "Error",
        "Exception",
        "ERROR",
        "Traceback",
        "FAILED",
        "fail",
        "panic",
        "assert",
        "3 passed",
        "1 xfailed",
        "2 errors",
        " 0",
        ": 2",
        "=",
        "\n",
        "ValueError",
        "code",
        " ",
        "x",
        "é",
    ]
)
_TEXTS = st.lists(_PIECES, max_size=12).map("".join)


@settings(max_examples=examples(400), deadline=None)
@given(_TEXTS)
def test_mentions_never_hides_a_match(text: str) -> None:
    checks = [
        (_ledger._EXIT, ("exit", "return")),
        (_summarizers._EXIT, _summarizers._EXIT_WORDS),
        (_summarizers._ERROR_LINE, _summarizers._ERROR_WORDS),
    ]
    for pattern, words in checks:
        if pattern.search(text):
            assert mentions(text, words), (pattern.pattern, text)


@settings(max_examples=examples(400), deadline=None)
@given(_TEXTS, st.booleans())
def test_outcome_and_errors_match_the_plain_regexes(text: str, failed: bool) -> None:
    exits = _ledger._EXIT.findall(text)
    counts = dict.fromkeys(f"{n} {k}" for n, k in _ledger._COUNTS.findall(text[-4000:]))
    parts = ([f"exit {exits[-1]}"] if exits else []) + list(counts)[-3:]
    assert outcome_of(text, failed) == ", ".join(parts or (["FAILED"] if failed else []))
    assert _ledger._errors_in(text) == _ledger._ERROR.findall(text)


def test_mentions_is_case_blind_and_says_yes_for_non_ascii_text() -> None:
    assert mentions("Process EXITED", ("exit",))
    assert not mentions("all good", ("exit", "error"))
    assert mentions("ſtatus", ("nothing",)), "non-ASCII text always goes to the regex"
    assert re.search(r"status", "ſtatus", re.I), "why: re.I folds the long s into s"


# --- errors that happened -------------------------------------------------------------------------------------

from agno.models.message import Message  # noqa: E402

_COUNT = TokenCounter("gpt-4o").count_text


def _read_then(output: str, *, failed: bool = False) -> list[Message]:
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "cat errors.py"}'}}
    return [
        Message(role="assistant", tool_calls=[call]),
        Message(role="tool", tool_call_id="c1", tool_name="bash", content=output, tool_call_error=failed),
    ]


def test_an_error_name_in_a_file_listing_is_not_an_error() -> None:
    source = "class QuotaError(Exception):\n    pass\n\ndef f():\n    raise ValueError('no')\n# see KeyError docs"
    ledger = _ledger.build(_read_then(source))
    assert ledger.values["errors"] == []


def test_a_traceback_and_a_failing_test_are_errors_with_where_quoted_as_data() -> None:
    trace = "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\nKeyError: 'token'"
    assert _ledger.build(_read_then(trace)).values["errors"] == ["`KeyError` (after cat errors.py)"]
    pytest_out = "E   AssertionError: assert 1 == 2\nFAILED tests/test_a.py::test_b - AssertionError: x\n1 failed"
    assert _ledger.build(_read_then(pytest_out)).values["errors"] == ["`AssertionError` (after cat errors.py)"]


def test_five_hundred_long_error_names_keep_the_summary_within_its_budget_and_quoted() -> None:
    names = [f"Module{i}VeryLongAndEntirelyMadeUpConfigurationLookupError" for i in range(500)]
    output = "\n".join(f"E   {n}: lookup failed" for n in names)
    request = _summarizers.SummaryRequest(
        messages=_read_then(output), previous=None, max_tokens=1500, count_tokens=_COUNT
    )
    text = _summarizers.ExtractiveSummarizer().summarize(request).text
    assert _COUNT(text) <= 1500
    for name in names:
        for found in re.finditer(re.escape(name), text):
            line = text[: found.start()].rsplit("\n", 1)[-1]
            assert text[found.start() - 1] in '`," ' and ('"' in line or "`" in text[found.start() - 1]), line[:80]
    again = _summarizers.SummaryRequest(messages=[], previous=text, max_tokens=1500, count_tokens=_COUNT)
    assert _COUNT(_summarizers.ExtractiveSummarizer().summarize(again).text) <= 1500


def _edits(paths: list[str]) -> list[Message]:
    out: list[Message] = []
    for i, path in enumerate(paths):
        args = f'{{"command": "str_replace", "path": "{path}"}}'
        call = {"id": f"e{i}", "type": "function", "function": {"name": "editor", "arguments": args}}
        out += [Message(role="assistant", tool_calls=[call]), Message(role="tool", tool_call_id=f"e{i}", content="ok")]
    return out


def test_a_ledger_of_hundreds_of_files_fits_its_budget_keeping_the_most_recently_used() -> None:
    ledger = _ledger.build(_edits([f"src/pkg_{i}/module_{i}.py" for i in range(400)] + ["src/pkg_3/module_3.py"]))
    lines = _ledger.render(ledger, 300, _COUNT)
    text = "\n".join(lines)
    assert _COUNT(text) <= 300
    assert "src/pkg_3/module_3.py" in text and "src/pkg_399/module_399.py" in text, "used last, kept"
    assert "src/pkg_0/module_0.py" not in text
    again = _ledger.Ledger.parse("## Working state\n" + text)
    assert again.dropped["edited"] == 400 - len(again.values["edited"]), "the count reads back"


def test_a_summary_of_hundreds_of_requests_keeps_the_first_and_the_newest() -> None:
    summary = None
    for turn in range(300):
        request = _summarizers.SummaryRequest(
            messages=[Message(role="user", content=f"Task {turn}: reconcile ledger L-{turn} for region R{turn % 9}.")],
            previous=summary,
            max_tokens=600,
            count_tokens=_COUNT,
        )
        summary = _summarizers.ExtractiveSummarizer().summarize(request).text
    assert summary is not None and _COUNT(summary) <= 600
    assert "Task 0:" in summary and "Task 299:" in summary
    found = re.search(r"\((\d+) earlier requests not listed\)", summary)
    assert found and int(found.group(1)) + summary.count("- Task ") == 300


def _ran(action: str) -> _ledger.Ledger:
    from agno.models.message import Message

    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "execute", "arguments": json.dumps({"action": action})},
    }
    return _ledger.build([Message(role="assistant", content=action, tool_calls=[call])])


def test_an_action_that_reasons_then_runs_a_fenced_block_runs_the_block() -> None:
    ledger = _ran(
        "THOUGHT: look at the token code first.\n\n```bash\nsed -n '40,60p' django/contrib/auth/tokens.py\n```"
    )
    assert list(ledger.commands) == ["sed -n '40,60p' django/contrib/auth/tokens.py"]
    assert ledger.values["read"] == [] and "django/contrib/auth/tokens.py" in ledger.values["paths used"]


def test_command_of_a_block_cut_at_either_end() -> None:
    assert command_of("reason\n```bash\nls -la\n```") == "ls -la"
    assert command_of("reason\n```\npython x.py\n```\nmore text\n```sh\npytest -q\n```") == "pytest -q"
    assert command_of("...the tail of a long script\nprint(x)\nEOF\npython x.py\n```") == (
        "...the tail of a long script\nprint(x)\nEOF\npython x.py"
    )
    assert command_of("THOUGHT: run it\n```bash\npython x.py") == "python x.py", "an unclosed block runs to the end"
    assert command_of("ls -la") == "ls -la"
    assert command_of("say ``` but no block") == "say", "only a closing fence: what came before it"


def test_sed_scripts_and_dotted_names_are_not_paths() -> None:
    text = "sed -i '124s/name/title/' src/models.py && sed -i 's/old/new/' setup.py; self.name, django.db.models"
    assert _ledger.paths_in(text) == ["src/models.py", "setup.py"]
    assert _ledger.paths_in("see README.md, nginx.conf and data/") == ["README.md", "nginx.conf", "data/"]


def test_a_here_document_creates_its_target_and_only_mentions_the_paths_in_its_body() -> None:
    script = "cat <<'EOF' > repro.py\nfrom app.settings import CONFIG\nopen('data/input.json')\nEOF\npython repro.py"
    ledger = _ran(f"THOUGHT: reproduce.\n```bash\n{script}\n```")
    assert ledger.values["created"] == ["repro.py"]
    assert "data/input.json" in ledger.values["paths used"]
    assert list(ledger.commands) == ["cat <<'EOF' > repro.py"]


def test_a_file_read_is_not_repeated_among_the_paths_used() -> None:
    from agno.models.message import Message

    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "src/app.py"}'}}
    messages = [
        Message(role="assistant", content="Reading src/app.py and then docs/notes.md.", tool_calls=[call]),
        Message(role="tool", tool_call_id="c1", tool_name="read_file", content="print('hi')"),
    ]
    lines = _ledger.build(messages).lines()
    assert "- read: src/app.py" in lines
    assert "- paths used: docs/notes.md" in lines, lines


def _call(name: str, args: dict[str, object]) -> list[object]:
    from agno.models.message import Message

    call = {"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    return [
        Message(role="assistant", content="", tool_calls=[call]),
        Message(role="tool", tool_call_id="c1", tool_name=name, content="ok"),
    ]


def test_go_package_patterns_keep_their_dots() -> None:
    assert _ledger.paths_in("go test ./cmd/entire/... and see cmd/main.go.") == ["./cmd/entire/...", "cmd/main.go"]


def test_a_path_inside_a_longer_one_the_ledger_holds_is_not_repeated_as_used() -> None:
    messages = [
        *_call("Read", {"file_path": "/repo/cmd/agent/hooks.go"}),
        *_call("Grep", {"pattern": "Hook", "path": "agent/hooks.go", "glob": "docs/guide.md"}),
    ]
    lines = _ledger.build(messages).lines()
    assert "- read: /repo/cmd/agent/hooks.go" in lines
    assert "- paths used: docs/guide.md" in lines, lines


def test_a_path_shows_once_and_not_where_a_longer_path_names_it_already() -> None:
    ledger = _ledger.Ledger()
    ledger.add("edited", ["/repo/cmd/cli/hooks.go", "github.com/o/r/agent/gemini", "./cmd/x.go"])
    ledger.add("created", ["/repo/cmd/cli/new.go", "github.com/o/r/agent", "cmd/x.go"])
    ledger.add("read", ["/repo/cmd/cli/hooks.go", "cli/hooks.go", "/repo/tpl/HOOK.md.tmpl", "HOOK.md", ".env"])
    ledger.add("paths used", ["/repo/cmd/cli/", "/repo/.env"])
    lines = ledger.lines()
    assert lines[:3] == [
        "- edited: /repo/cmd/cli/hooks.go, github.com/o/r/agent/gemini, ./cmd/x.go",
        "- created: /repo/cmd/cli/new.go",  # the package path lies under the one edited; cmd/x.go is in ./cmd/x.go
        "- read: /repo/tpl/HOOK.md.tmpl, HOOK.md",  # edited, the same file written shorter, or a folder's file
    ], lines
    assert "- paths used: /repo/.env" in lines and all(".env" not in line for line in lines[:3]), lines


_PATH_PART = st.sampled_from(["a", "b", "cli", ".", "..", "x.go", "a.go", "github.com", ".env", ""])
_PATHS = st.lists(st.lists(_PATH_PART, min_size=1, max_size=4).map("/".join), max_size=8)


@settings(max_examples=examples(300), deadline=None)
@given(_PATHS, _PATHS, _PATHS, _PATHS)
def test_every_path_the_ledger_holds_is_in_its_lines_as_written(
    edited: list[str], created: list[str], read: list[str], used: list[str]
) -> None:
    ledger = _ledger.Ledger()
    for key, paths in (("edited", edited), ("created", created), ("read", read), ("paths used", used)):
        ledger.add(key, paths)
    text = "\n".join(ledger.lines())
    assert all(p in text for key in _ledger.PATH_LISTS for p in ledger.values[key])


def test_a_written_file_creates_its_path_and_the_names_in_its_text_that_are_not_paths_are_left_out() -> None:
    code = 'import (\n\t"encoding/json"\n\t"github.com/acme/cli/cmd/paths"\n)\n// see docs/notes.md\n'
    code += "func f() error { return &ParseError{} }  // like json.SyntaxError\n"
    ledger = _ledger.build(_call("Write", {"file_path": "/repo/cmd/agent/agent.go", "content": code}))
    created = ledger.values["created"]
    assert created[0] == "/repo/cmd/agent/agent.go"
    assert "github.com/acme/cli/cmd/paths" in created and "docs/notes.md" in created
    assert "encoding/json" not in created, "an import name of one part and no extension is not a path"
    assert ledger.values["exception names seen"] == ["`ParseError`", "`SyntaxError`"], "names the code raises"


@pytest.mark.parametrize("path_key", ["file_path", "filePath", "FilePath", "file-path"])
def test_a_file_tool_names_its_file_in_any_case_style(path_key: str) -> None:
    text = "see docs/notes.md; import { a } from 'lib/a'"
    ledger = _ledger.build(_call("edit", {path_key: "/repo/src/app.ts", "oldString": text, "newString": "b"}))
    assert ledger.values["edited"] == ["/repo/src/app.ts", "docs/notes.md"], "an import name is not a path"


def test_a_command_given_as_an_argument_list_is_in_the_ledger_as_the_script_it_ran() -> None:
    ledger = _ledger.build(_call("shell", {"command": ["bash", "-lc", "cat src/app.py"], "workdir": "/repo"}))
    assert ledger.lines() == ["- read: src/app.py", "- ran `cat src/app.py`"]


def test_an_arrow_in_a_quoted_argument_creates_nothing_and_a_redirection_creates_only_its_target() -> None:
    body = "- Results under `.agentv/results/<experiment>/`: index.jsonl -> summary.json"
    ledger = _ledger.build(_call("exec_command", {"cmd": f"gh pr edit 7 --body $'{body}'"}))
    assert not ledger.values["created"], "a PR body's arrow and angle brackets are text, not a redirection"
    assert {"index.jsonl", "summary.json"} <= set(ledger.values["paths used"])
    ledger = _ledger.build(_call("exec_command", {"cmd": "rg -n 'a -> b' src/app.py > /tmp/hits.txt"}))
    assert ledger.values["created"] == ["/tmp/hits.txt"]
    assert ledger.values["paths used"] == ["src/app.py"], "what the command searched is used, not created"


def test_a_bare_error_line_is_an_error_and_a_count_of_errors_is_not() -> None:
    assert _ledger.errors_raised("Error: net::ERR_ABORTED at https://example.org/doc") == ["`Error`"]
    assert _ledger.errors_raised("Errors: 3\nException\n") == ["`Exception`"]


def _edit_step(i: int) -> list[Message]:
    call = {
        "id": f"c{i}",
        "type": "function",
        "function": {"name": "Edit", "arguments": json.dumps({"file_path": f"src/mod_{i}.py", "old": "a", "new": "b"})},
    }
    result = f"edited src/mod_{i}.py; test_mod_{i} failed:\nValueError_{i}: bad value"
    return [Message(role="assistant", tool_calls=[call]), Message(role="tool", tool_call_id=f"c{i}", content=result)]


@settings(max_examples=examples(60), deadline=None)
@given(refolds=st.integers(1, 40), chatter=st.integers(1, 120), budget=st.integers(300, 1_300))
def test_what_the_agent_acted_on_survives_any_number_of_folds(refolds: int, chatter: int, budget: int) -> None:
    """A summary of summaries keeps the files, tests and errors the first summary had: acted-on facts do not decay
    with the number of folds, only with what the ledger's cap cannot hold."""
    count = TokenCounter("gpt-4o").count_text
    summarizer = ExtractiveSummarizer()
    first = summarizer.summarize(
        SummaryRequest(
            [m for i in range(4) for m in _edit_step(i)], None, budget, count, kind="progress", cap_tokens=1_300
        )
    ).text
    facts = [f for i in range(4) for f in (f"src/mod_{i}.py", f"test_mod_{i}", f"ValueError_{i}")]
    assert all(f in first for f in facts)
    text = first
    for n in range(refolds):
        filler = [Message(role="assistant", content=f"step {n}: thinking it over " * chatter)]
        text = summarizer.summarize(SummaryRequest(filler, text, budget, count, kind="progress", cap_tokens=1_300)).text
    assert [f for f in facts if f not in text] == [], f"after {refolds} folds"
