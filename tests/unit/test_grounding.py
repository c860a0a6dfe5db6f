"""Next-step grounding: the identifiers the recorded next action uses, and whether each prompt held them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agno.db.sqlite import SqliteDb
from agno.models.message import Message

from agno_compression import CompressionManager
from agno_compression.eval import grounding, identifiers, missing, needs_of, replay


def _call(cid: str, args: dict[str, str], text: str | None = None) -> Message:
    call = {"id": cid, "type": "function", "function": {"name": "bash", "arguments": json.dumps(args)}}
    return Message(role="assistant", content=text, tool_calls=[call])


def _out(cid: str, text: str) -> Message:
    return Message(role="tool", tool_call_id=cid, tool_name="bash", content=text)


RECORDING = [
    Message(role="system", content="You fix bugs in the repo at /work/repo_root."),
    Message(role="user", content="Fix check_token in auth/tokens.py."),
    _call("c1", {"command": "cat auth/tokens.py"}),
    _out("c1", "def check_token(user):\n    login_timestamp = user.last_login\n    TOKEN_TTL = 10"),
    _call("c2", {"command": "grep -n login_timestamp auth/tokens.py"}, "Look for login_timestamp and PASSWORD_RESET."),
    _out("c2", "2:    login_timestamp = user.last_login"),
    _call("c3", {"command": "python rename.py TOKEN_TTL TOKEN_TTL_SECONDS"}),
    _out("c3", "ok"),
]


def test_identifiers_follow_the_definition() -> None:
    text = "Edit auth/tokens.py: check_token, makeToken, __init__, v1.5, 2024-01-02, PLAIN, done. x_y ab_c"
    assert identifiers(text) == {"auth/tokens.py", "check_token", "makeToken", "v1.5", "ab_c"}


def test_needs_are_what_the_next_action_uses_that_an_earlier_step_introduced() -> None:
    needs = needs_of(RECORDING)
    assert len(needs) == 4, "three replies and the turn's closing call"
    assert needs[0] == frozenset(), "auth/tokens.py and check_token come from the task"
    assert needs[1] == {"login_timestamp"}, "introduced by the output of c1; PASSWORD_RESET by nobody"
    assert needs[2] == {"TOKEN_TTL"}, "TOKEN_TTL_SECONDS is new"
    assert needs[3] == frozenset()


def test_grounding_counts_what_each_prompt_held() -> None:
    needs = [frozenset({"a_b", "c_d"}), frozenset({"e_f"})]
    prompts = [[Message(role="user", content="a_b is here")], [Message(role="tool", tool_call_id="x", content="e_f")]]
    assert grounding(prompts, needs) == (2, 3)
    assert missing(prompts, needs) == {"c_d": 1}
    shortened = Message(role="tool", tool_call_id="x", content="e_f", compressed_content="[omitted]")
    assert grounding([prompts[0], [shortened]], needs) == (1, 3), "a shortened output is scored as sent"


@pytest.fixture
def long_recording() -> list[Message]:
    messages = [Message(role="system", content="sys"), Message(role="user", content="Read every module.")]
    for i in range(30):
        messages += [
            _call(f"c{i}", {"command": f"cat pkg/mod_{i}.py"}, f"Next I use helper_{i - 1}." if i else None),
            _out(f"c{i}", f"def helper_{i}():\n    return CONSTANT_{i}\n" + "filler line\n" * 120),
        ]
    return messages


def test_an_uncompressed_replay_scores_one_and_a_fold_keeps_what_was_read(tmp_path: Path, long_recording) -> None:
    needs = needs_of(long_recording)
    base = replay(long_recording, db=SqliteDb(db_file=str(tmp_path / "none.db")))
    present, needed = grounding([r.messages for r in base.requests], needs)
    assert needed >= 29 and present == needed
    manager = CompressionManager(compress_at_tokens=4_000)
    folded = replay(long_recording, manager=manager, db=SqliteDb(db_file=str(tmp_path / "ours.db")))
    assert manager.stats["folds"] >= 3
    assert grounding([r.messages for r in folded.requests], needs) == (needed, needed)


def test_acted_on_paths_leave_a_sentences_full_stop_out() -> None:
    """Prose ends a sentence after a path ("... in checkpoint/committed.go."): the fact is the path, so a summary
    that names the file keeps it."""
    from agno_compression.eval import acted_on_facts

    said = Message(role="assistant", content="I changed checkpoint/committed.go. Next: ./run.sh and cmd/x.py, done.")
    assert {"checkpoint/committed.go", "./run.sh", "cmd/x.py"} <= acted_on_facts([said])
    assert not {f for f in acted_on_facts([said]) if f.endswith(".")}
