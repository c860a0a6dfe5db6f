"""What of the working set a run still uses: earlier pages it does not use go, what its request asks for goes first,
and a new file the request names follows the held file whose name it echoes."""

from __future__ import annotations

from agno.models.message import Message
from hypothesis import given
from hypothesis import strategies as st

from agno_compression._keeping._relevance import _shared, drawn_on, in_this_run, model_file, pending, put_first
from agno_compression._keeping._working_set import collect

from .test_working_set import call, result


def test_a_page_an_earlier_run_fetched_stays_only_while_this_run_uses_it() -> None:
    earlier = [
        Message(role="user", content="Who wrote the opera?"),
        call("1", "web_fetch", url="https://opera.example.org/libretto"),
        result("1", "web_fetch", "Libretto_Author Vittorio_Rossi premiere_year 1887 La_Scala_Milano"),
        call("2", "read_file", file_name="notes.md"),
        result("2", "read_file", "opera notes"),
    ]
    unrelated = Message(role="user", content="How far is the Moon on average?")
    messages = [*earlier, unrelated]
    held = collect(messages)
    assert [a.key for a in in_this_run(held, messages, unrelated)] == ["notes.md"], "a file stays, the page goes"
    follow_up = Message(role="user", content="Was Vittorio_Rossi the Libretto_Author, and was it at La_Scala_Milano?")
    again = [*earlier, follow_up]
    assert len(in_this_run(collect(again), again, follow_up)) == 2, "three of its names: still in use"
    named = Message(role="user", content="Quote https://opera.example.org/libretto again.")
    assert len(in_this_run(collect([*earlier, named]), [*earlier, named], named)) == 2, "its address: in use"
    fetched_now = [unrelated, *earlier[1:3]]
    assert len(in_this_run(collect(fetched_now), fetched_now, unrelated)) == 1, "fetched by this run: kept"


def test_a_file_holding_what_the_request_still_asks_for_comes_first_until_an_action_uses_it() -> None:
    plan = Message(
        role="user", content="Write handlers_v2.py like handlers.py: on_start_hook, on_stop_hook, retry_backoff_ms"
    )
    reads = [
        call("1", "Read", file_path="/src/handlers.py"),
        result("1", "Read", "def on_start_hook(): ...\ndef on_stop_hook(): ...\nretry_backoff_ms = 30"),
        call("2", "Read", file_path="/src/types.py"),
        result("2", "Read", "class HookInput: ...\nsession_id_field = 1"),
    ]
    messages = [plan, *reads]
    assert [a.key for a in collect(messages)] == ["/src/types.py", "/src/handlers.py"], "newest first"
    held = collect(messages)
    ordered = put_first(pending(held, messages, plan), held)
    assert [a.key for a in ordered] == ["/src/handlers.py", "/src/types.py"], "three pending names: it goes first"
    write = call("3", "Write", file_path="/src/handlers_v2.py", content="on_start_hook on_stop_hook retry_backoff_ms")
    again = [call("4", "Read", file_path="/src/types.py"), result("4", "Read", "class HookInput: ...")]
    done = [*messages, write, result("3", "Write", "ok"), *again]
    held_after = collect(done)
    keys = [a.key for a in put_first(pending(held_after, done, plan), held_after)]
    assert keys.index("/src/types.py") < keys.index("/src/handlers.py"), "its names used: newest first again"
    assert put_first(pending(held, messages, None), held) == collect(messages), "no request: as it was"


PLAN = Message(
    role="user",
    content=(
        "Add the openclaw agent, following the gemini one.\n"
        "Step 1: agent/openclaw/openclaw.go (like agent/geminicli/gemini.go)\n"
        "Step 2: agent/openclaw/openclaw_test.go\n"
        "Step 3: cli/hooks_openclaw_handlers.go"
    ),
)
READS = [
    call("1", "Read", file_path="/repo/cli/hooks_gemini_handlers.go"),
    result("1", "Read", "func handleGeminiStart() {}\nfunc handleGeminiStop() {}"),
    call("2", "Read", file_path="/repo/agent/geminicli/gemini_test.go"),
    result("2", "Read", "func TestDetectPresence(t *testing.T) {}\nfunc TestParseHookInput(t *testing.T) {}"),
    call("3", "Read", file_path="/repo/agent/geminicli/gemini.go"),
    result("3", "Read", "func (g *GeminiAgent) DetectPresence() bool { return true }"),
]


def write(cid: str, path: str, content: str) -> list[Message]:
    return [call(cid, "Write", file_path=path, content=content), result(cid, "Write", "ok")]


def test_the_next_new_file_of_the_request_follows_the_held_file_whose_name_it_echoes() -> None:
    first = [PLAN, *READS, *write("4", "/repo/agent/openclaw/openclaw.go", "func (o *OpenClawAgent) Name() {}")]
    held = collect(first)
    assert held[1].key == "/repo/agent/geminicli/gemini.go", "newest first: the file just written, then the last read"
    model = model_file(held, first, PLAN)
    assert model is not None and model.key == "/repo/agent/geminicli/gemini_test.go", "openclaw_test.go: _test"
    assert put_first(pending(held, first, PLAN), held)[0] is model, "read first of the three, held first"
    second = [*first, *write("5", "/repo/agent/openclaw/openclaw_test.go", "func TestName(t *testing.T) {}")]
    model = model_file(collect(second), second, PLAN)
    assert model is not None and model.key == "/repo/cli/hooks_gemini_handlers.go", "then: hooks_ and _handlers"
    done = [*second, *write("6", "/repo/cli/hooks_openclaw_handlers.go", "func handleOpenClawStart() {}")]
    assert model_file(collect(done), done, PLAN) is None, "every file the request names is held: none"


def test_a_file_the_agent_wrote_is_not_the_pattern_a_new_one_follows() -> None:
    plan = Message(role="user", content="Write hooks_handler.ts, then register it")
    run = [plan, *write("1", "/repo/handler.ts", "export default handler"), *READS[:2]]
    assert model_file(collect(run), run, plan) is None, "handler.ts shares 'handler' but is the agent's own work"
    unrelated = Message(role="user", content="Rename README.md")
    assert model_file(collect([unrelated, *READS]), [unrelated, *READS], unrelated) is None


NAME = st.from_regex(r"[a-z_]{1,12}\.(go|py)", fullmatch=True)


@given(NAME, NAME)
def test_what_two_file_names_share_is_symmetric_and_within_the_shorter_stem(a: str, b: str) -> None:
    n = _shared(a, b)
    assert n == _shared(b, a)
    assert 0 <= n <= min(len(a.rpartition(".")[0]), len(b.rpartition(".")[0]))
    if a == b or a.rpartition(".")[2] != b.rpartition(".")[2]:
        assert n == 0


def test_the_files_a_write_of_this_run_took_names_from_are_drawn_on() -> None:
    earlier = [call("0", "Read", file_path="/src/old.py"), result("0", "Read", "def legacy_hook_a(): ...")]
    request = Message(role="user", content="Add a retry client.")
    reads = [
        call("1", "Read", file_path="/src/base.py"),
        result("1", "Read", "class BaseClient: ...\ndef send_request(): ...\nretry_budget_ms = 10"),
        call("2", "Read", file_path="/src/types.py"),
        result("2", "Read", "class RequestType: ...\nheader_map_v2 = {}"),
    ]
    write = call(
        "3", "Write", file_path="/src/retry.py", content="BaseClient send_request retry_budget_ms legacy_hook_a"
    )
    messages = [*earlier, request, *reads, write, result("3", "Write", "ok")]
    held = collect(messages)
    assert [a.key for a in drawn_on(held, messages, request)] == ["/src/base.py"], "three of its names: built from"
    assert drawn_on(held, messages[:-2], request) == [], "no write yet: nothing shown in use"
    assert drawn_on(held, messages, None) == [], "no request: no run to look in"
    rewrite = call("4", "Write", file_path="/src/base.py", content="BaseClient send_request retry_budget_ms")
    again = [*messages[:-2], rewrite, result("4", "Write", "ok")]
    assert drawn_on(collect(again), again, request) == [], "a write does not draw on the file it writes"


def test_names_most_held_files_share_do_not_make_a_write_draw_on_them() -> None:
    request = Message(role="user", content="Write main.go.")
    common = "fmt.Println fmt.Errorf errors.New"
    reads = [
        m
        for n in range(4)
        for m in (call(str(n), "Read", file_path=f"/src/f{n}.go"), result(str(n), "Read", f"{common} only_in_f{n}"))
    ]
    write = call("9", "Write", file_path="/src/main.go", content=f"{common} only_in_f2")
    messages = [request, *reads, write, result("9", "Write", "ok")]
    assert drawn_on(collect(messages), messages, request) == [], "what every file says tells none apart"


def test_a_write_by_your_own_tool_draws_on_what_it_took_names_from() -> None:
    request = Message(role="user", content="Draft the reply.")
    reads = [
        call("1", "Read", file_path="/docs/brief.md"),
        result("1", "Read", "Client_Name Due_Date_2026 Budget_Code"),
    ]
    save = call("2", "save_doc", path="/docs/reply.md", body="Client_Name Due_Date_2026 Budget_Code")
    messages = [request, *reads, save, result("2", "save_doc", "saved")]
    assert drawn_on(collect(messages), messages, request) == [], "an unknown tool's shape says nothing"
    kinds = {"save_doc": "write"}
    assert [a.key for a in drawn_on(collect(messages), messages, request, kinds)] == ["/docs/brief.md"]
