"""What was read: names, locations and values kept from folded tool outputs, bounded and quoted."""

from __future__ import annotations

import json

from agno.models.message import Message
from hypothesis import given, settings
from hypothesis import strategies as st

from agno_compression._keeping import _reading
from agno_compression._messages import one_line
from agno_compression._summarizers import ExtractiveSummarizer, LLMSummarizer, SummaryRequest
from agno_compression.testing import Reply, ScriptedModel
from agno_compression.tokens import TokenCounter
from tests.strategies import examples

COUNT = TokenCounter("gpt-4o").count_text

SOURCE = "\n".join(
    f"{n:6}\t{line}"
    for n, line in enumerate(
        [
            "import time",
            "TOKEN_TTL = 3600",
            "",
            "class TokenGenerator:",
            "    def make_token(self, user):",
            "        login_timestamp = user.last_login",
            "        return self._make_hash(user, login_timestamp)",
            "",
            "    def check_token(self, user, token):",
            "        return token == self.make_token(user)",
        ],
        start=1,
    )
)


def _step(call_id: str, name: str, args: dict[str, object], output: str) -> list[Message]:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    return [
        Message(role="assistant", tool_calls=[call]),
        Message(role="tool", tool_call_id=call_id, tool_name=name, content=output),
    ]


def test_a_viewed_source_file_keeps_its_definitions_with_their_lines_and_its_names() -> None:
    names = _reading.read_names(SOURCE)
    assert names[:5] == [
        "TOKEN_TTL l.2",
        "TokenGenerator l.4",
        "make_token l.5",
        "login_timestamp l.6",
        "check_token l.9",
    ]
    assert "user.last_login" in names and "self._make_hash" in names


def test_search_hits_tracebacks_and_looked_up_values_are_kept_as_locations_and_key_values() -> None:
    grep = "src/auth.py:45:    def check_token(self):\nsrc/views.py:12:from auth import check_token"
    assert {"src/auth.py:45", "src/views.py:12"} <= set(_reading.read_names(grep))
    trace = "Traceback (most recent call last):\n  File \"src/app.py\", line 7, in main\nKeyError: 'x'"
    assert "src/app.py:7 main" in _reading.read_names(trace)
    record = json.dumps({"reservation_id": "OBUT9V", "flights": [{"flight_number": "HAT118", "price": 120}]})
    names = _reading.read_names(record)
    assert "reservation_id=OBUT9V" in names and "flight_number=HAT118" in names


def test_the_extractive_summary_keeps_what_was_read_quoted_as_data() -> None:
    messages = [
        Message(role="user", content="fix the token check"),
        *_step("c1", "str_replace_editor", {"command": "view", "path": "django/contrib/auth/tokens.py"}, SOURCE),
        *_step(
            "c2",
            "execute_bash",
            {"command": "grep -rn PASSWORD_RESET settings.py"},
            "settings.py:3:PASSWORD_RESET_TIMEOUT = 10",
        ),
    ]
    # what was read takes READ_SHARE (5%) of the budget: enough room for both outputs' lines
    request = SummaryRequest(messages=messages, previous=None, max_tokens=2_400, count_tokens=COUNT)
    text = ExtractiveSummarizer().summarize(request).text
    read = text.split("## Read\n", 1)[1].split("\n## ", 1)[0].splitlines()
    assert read[0].startswith('- str_replace_editor view django/contrib/auth/tokens.py » "TOKEN_TTL l.2, ')
    assert "check_token l.9" in read[0] and "login_timestamp l.6" in read[0]
    assert any("settings.py:3" in line and "PASSWORD_RESET_TIMEOUT" in line for line in read)
    assert all(line.endswith('"') and line.count('"') == 2 for line in read), "each list is one quoted string"
    assert COUNT(text) <= 2_400
    # the next fold parses the reading back and keeps it (newer reading first in priority)
    again = SummaryRequest(
        messages=[Message(role="user", content="go on")], previous=text, max_tokens=2_400, count_tokens=COUNT
    )
    assert "check_token l.9" in ExtractiveSummarizer().summarize(again).text


def test_the_llm_summary_gets_the_reading_merged_in() -> None:
    model = ScriptedModel(script=lambda messages, info: Reply(text="## Progress\nViewed the token module."))
    messages = _step("c1", "str_replace_editor", {"command": "view", "path": "tokens.py"}, SOURCE)
    request = SummaryRequest(messages=messages, previous=None, max_tokens=600, count_tokens=COUNT)
    text = LLMSummarizer(model=model).summarize(request).text
    assert "## Read\n" in text and "make_token l.5" in text
    assert "What was read" in model.requests[0].messages[0].content, "the model is asked for the same"


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.text(st.characters(codec="ascii"), max_size=300), min_size=1, max_size=12), st.integers(0, 400))
def test_rendering_stays_within_its_budget_and_reads_back(outputs: list[str], budget: int) -> None:
    messages = [m for i, out in enumerate(outputs) for m in _step(f"c{i}", "cat", {"path": f"f{i}.py"}, out)]
    reading = _reading.build(messages)
    lines = _reading.render(reading, budget, COUNT)
    assert COUNT("\n".join(lines)) <= max(budget, 0) + len(lines), "within the budget (a newline each)"
    parsed = _reading.Reading.parse("## Read\n" + "\n".join(lines))
    assert parsed.lines() == lines


def test_newer_outputs_keep_their_names_when_the_budget_is_short() -> None:
    old = _step("c1", "cat", {"path": "old.py"}, "old_name_1 old_name_2 old_name_3 " * 20)
    new = _step("c2", "cat", {"path": "new.py"}, "new_name_1 new_name_2")
    lines = _reading.render(_reading.build([*old, *new]), 30, COUNT)
    assert any("new_name_1" in line and "new_name_2" in line for line in lines)


def test_a_large_newer_output_does_not_crowd_out_an_older_outputs_definitions() -> None:
    older = _step("c1", "view", {"path": "src/auth.py"}, SOURCE)
    newer = _step("c2", "grep", {"query": "token"}, " ".join(f"src/mod_{i}/file_{i}.py" for i in range(300)))
    lines = _reading.render(_reading.build([*older, *newer]), 120, COUNT)
    assert COUNT("\n".join(lines)) <= 120
    assert any("src/auth.py" in line and "TOKEN_TTL l.2" in line for line in lines), lines
    assert any("src/mod_0/file_0.py" in line for line in lines), "the newest output keeps the most"


def test_lines_are_cut_between_words() -> None:
    assert one_line("see the working state of everything", 20) == "see the working…"
    assert one_line("/repo/src/module/foo_bar.py and more", 20) == "/repo/src/module/…"
    assert one_line("short", 20) == "short"


def test_many_steps_keep_the_summary_within_its_budget() -> None:
    messages = []
    for i in range(500):
        args = {"q": f"query number {i} about module_{i}"}
        messages += _step(f"c{i}", f"tool{i % 7}", args, f"result {i} line\nlast line {i}")
        messages[-2].content = f"step {i} looking at things"
    request = SummaryRequest(messages=messages, previous=None, max_tokens=1500, count_tokens=COUNT)
    text = ExtractiveSummarizer().summarize(request).text
    assert COUNT(text) <= 1500 and "earlier steps condensed away" in text
