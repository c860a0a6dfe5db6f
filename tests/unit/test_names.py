"""Names in use: the identifiers a folded span used, the agent's own first, newest first, bounded and quoted."""

from __future__ import annotations

import json
from collections.abc import Sequence

from agno.models.message import Message
from hypothesis import given, settings
from hypothesis import strategies as st

from agno_compression import CompressionManager, Summary, SummaryRequest
from agno_compression._keeping import _names
from agno_compression._summarizers import ExtractiveSummarizer, LLMSummarizer
from agno_compression.testing import Reply, ScriptedModel
from agno_compression.tokens import TokenCounter
from tests.strategies import examples

COUNT = TokenCounter("gpt-4o").count_text

SCRIPT = """THOUGHT: reproduce it with a small script.

```bash
cat <<'EOF' > repro.py
from django.conf import settings
settings.configure(INSTALLED_APPS=["django.contrib.auth"], PASSWORD_RESET_TIMEOUT=60)
from django.contrib.auth.tokens import default_token_generator
print(default_token_generator.check_token(user, token))
EOF
python repro.py
```"""


def _step(call_id: str, action: str, output: str, *, tool: str = "execute") -> list[Message]:
    call = {"id": call_id, "type": "function", "function": {"name": tool, "arguments": json.dumps({"action": action})}}
    return [
        Message(role="assistant", content=action, tool_calls=[call]),
        Message(role="tool", tool_call_id=call_id, tool_name=tool, content=output),
    ]


def _section(text: str) -> str:
    return text.split(f"## {_names.SECTION}\n", 1)[1].split("\n## ", 1)[0]


def test_the_names_the_agent_wrote_into_a_script_are_kept_as_used_newest_first() -> None:
    messages = [
        *_step("c1", "ls django/contrib/auth", "tokens.py\nviews.py\nbackends_util.py"),
        *_step("c2", SCRIPT, "Traceback ...\nAttributeError: 'NoneType' object has no attribute 'last_login'"),
    ]
    names = _names.build(messages)
    assert names.used.index("settings.configure") < names.used.index("django/contrib/auth"), "newest first"
    for name in ("settings.configure", "INSTALLED_APPS", "PASSWORD_RESET_TIMEOUT", "default_token_generator"):
        assert name in names.used
    assert "backends_util.py" in names.seen, "an output's names are seen, not used"
    assert "last_login" in names.seen


def test_a_name_the_agent_uses_after_seeing_it_moves_from_seen_to_used() -> None:
    seen_first = _step("c1", "grep -rn last_login auth", "auth/tokens.py:45:    login_timestamp = user.last_login")
    used_later = _step("c2", "sed -n '40,50p' auth/tokens.py  # where login_timestamp is set", "...")
    assert "login_timestamp" in _names.build(seen_first).seen
    names = _names.build([*seen_first, *used_later])
    assert "login_timestamp" in names.used and "login_timestamp" not in names.seen


def test_rendered_names_read_back_in_order_and_the_next_fold_keeps_them() -> None:
    names = _names.Names(used=[f"used_name_{i}" for i in range(60)], seen=[f"seen.name{i}" for i in range(40)])
    lines = _names.render(names, 10_000, COUNT)
    assert all(line.endswith('"') and line.count('"') == 2 for line in lines), "each list is one quoted string"
    back = _names.Names.parse(f"## {_names.SECTION}\n" + "\n".join(lines))
    assert back == names
    # a fold of new steps on top of that summary keeps the earlier names after the new ones
    later = _names.build(
        _step("c9", "python run_tests.py --only fresh_name_1", "ok"), f"## {_names.SECTION}\n" + "\n".join(lines)
    )
    assert later.used[:2] == ["run_tests.py", "fresh_name_1"] and later.used[2:] == names.used


def test_names_the_rest_of_the_summary_holds_are_not_listed_again() -> None:
    names = _names.Names(used=["repro.py", "settings.configure"], seen=["auth/tokens.py", "check_token"])
    lines = _names.render(names, 500, COUNT, present="- edited: repro.py, auth/tokens.py")
    text = "\n".join(lines)
    assert "settings.configure" in text and "check_token" in text
    assert "repro.py" not in text and "auth/tokens.py" not in text


def test_used_names_get_most_of_a_short_budget_and_seen_names_the_rest() -> None:
    names = _names.Names(used=[f"used_name_{i}" for i in range(200)], seen=[f"seen_name_{i}" for i in range(200)])
    text = "\n".join(_names.render(names, 200, COUNT))
    used, seen = text.count("used_name_"), text.count("seen_name_")
    assert used > 2 * seen > 0, (used, seen)
    only_seen = _names.Names(used=["one_used"], seen=names.seen)
    assert "\n".join(_names.render(only_seen, 200, COUNT)).count("seen_name_") > seen, "what used leaves goes to seen"


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(st.from_regex(r"[a-z]{1,6}[_./][a-zA-Z0-9_]{1,12}", fullmatch=True), max_size=80),
    st.lists(st.from_regex(r"[a-z]{1,6}[_./][a-zA-Z0-9_]{1,12}", fullmatch=True), max_size=80),
    st.integers(0, 600),
)
def test_a_render_stays_within_its_budget_and_reads_back(used: list[str], seen: list[str], budget: int) -> None:
    names = _names.Names(list(dict.fromkeys(used)), [n for n in dict.fromkeys(seen) if n not in used])
    lines = _names.render(names, budget, COUNT)
    assert COUNT("\n".join(lines)) <= budget
    back = _names.Names.parse(f"## {_names.SECTION}\n" + "\n".join(lines))
    assert back.used == names.used[: len(back.used)] and back.seen == names.seen[: len(back.seen)], "the newest"


def test_the_extractive_summary_lists_the_names_in_use_within_its_budget() -> None:
    messages = [Message(role="user", content="fix the password reset token"), *_step("c1", SCRIPT, "False")]
    text = (
        ExtractiveSummarizer()
        .summarize(SummaryRequest(messages=messages, previous=None, max_tokens=600, count_tokens=COUNT))
        .text
    )
    assert COUNT(text) <= 600
    listed = _section(text)
    assert "PASSWORD_RESET_TIMEOUT" in listed and "default_token_generator" in listed
    assert "- ran `cat <<'EOF' > repro.py`" in text, "the command is the fenced block, not the reasoning"


def test_the_llm_summary_gets_the_names_merged_in() -> None:
    model = ScriptedModel(script=lambda messages, info: Reply(text="## Progress\nWrote a reproduction script."))
    request = SummaryRequest(messages=_step("c1", SCRIPT, "False"), previous=None, max_tokens=600, count_tokens=COUNT)
    text = LLMSummarizer(model=model).summarize(request).text
    assert f"## {_names.SECTION}\n" in text and "PASSWORD_RESET_TIMEOUT" in text
    assert COUNT(text) <= 600


class Recording:
    """The extractive summarizer, remembering every request it was given."""

    name = "recording"

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> Summary:
        self.requests.append(request)
        return ExtractiveSummarizer().summarize(request)

    async def asummarize(self, request: SummaryRequest) -> Summary:
        return self.summarize(request)


def _loop(steps: int) -> Sequence[Message]:
    messages: list[Message] = [Message(role="system", content="You fix bugs."), Message(role="user", content="go")]
    for i in range(steps):
        action = f"python check.py --setting EARLY_SETTING_{i}" if i < 3 else f"cat module_{i}.py"
        messages += _step(f"c{i}", action, "\n".join(f"line {k}: value_{i}_{k} = {k}" for k in range(120)))
    return messages


def test_a_runs_earlier_folds_hand_their_names_on_past_what_one_summary_shows() -> None:
    recording = Recording()
    manager = CompressionManager(
        compress_at_tokens=3_000, summarizer=recording, max_summary_tokens=300, payback_calls=None
    )
    live = list(_loop(2))
    for step in _loop(40)[len(live) :]:
        live.append(step)
        if live[-1].role == "tool" and manager.should_compress(live, None, None):
            manager.compress(live)
    assert len(recording.requests) >= 5
    last = recording.requests[-1]
    assert last.names is not None and "EARLY_SETTING_0" in last.names.used, "remembered by the run"
    assert "EARLY_SETTING_0" not in (last.previous or ""), "though the previous summary had no room for it"


def test_a_fold_does_not_list_the_names_its_kept_steps_hold_and_a_later_fold_does() -> None:
    recording = Recording()
    manager = CompressionManager(
        compress_at_tokens=3_000, summarizer=recording, max_summary_tokens=400, payback_calls=None
    )
    live: list[Message] = [Message(role="system", content="You fix bugs."), Message(role="user", content="go")]
    for i in range(30):
        flag = "SPECIAL_FLAG is on; SPECIAL_FLAG wins over SPECIAL_FLAG_DEFAULT\n" if i in (3, 4, 5) else ""
        output = flag + "all good here " * 250  # no names: nothing else crowds the flag out of a summary
        live += _step(f"c{i}", f"python check.py --case case_{i}", output)
        if manager.should_compress(live, None, None):
            manager.compress(live)
    listed = [
        ("SPECIAL_FLAG" in request.held, "SPECIAL_FLAG" in _section(f"{text}\n## {_names.SECTION}\n"))
        for request in recording.requests
        for text in [ExtractiveSummarizer().summarize(request).text]
    ]
    assert (True, False) in listed, "held by a kept step: in the prompt already, not listed again"
    assert (True, True) not in listed
    assert (False, True) in listed, "listed once the steps that hold it are folded"
