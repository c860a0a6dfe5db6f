"""CompressionManager through real agno Agents and Teams, a scripted model and real SQLite files."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from agno.agent import Agent
from agno.db.base import SessionType
from agno.db.sqlite import SqliteDb
from agno.models.message import Message
from agno.team import Team

from agno_compression import CompressionManager, ConfigError, LLMSummarizer, Pipeline, Summary
from agno_compression._plan import is_summary
from agno_compression.eval import run_in_mode
from agno_compression.testing import Reply, ScriptedModel, ScriptInfo, ToolCall
from tests.checks import check_request

BUDGET = 3_000
STEPS = 14


def make_tool_log() -> tuple[Any, list[str]]:
    """A real tool with long output; it logs every output it returns."""
    produced: list[str] = []

    def read_chunk(index: int) -> str:
        """Read one long chunk of a build log."""
        text = "\n".join(
            f"[{index:03d}:{line:04d}] compiling src/module_{index}/file_{line}.c ok" for line in range(60)
        )
        text += f"\nerror: ValueError in step {index}: exit code {index % 3}"
        produced.append(text)
        return text

    return read_chunk, produced


def long_loop_script(steps: int = STEPS) -> Any:
    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if messages[0].role == "system" and "compress the earlier part" in str(messages[0].content):
            return Reply(text="## User goal and constraints\nbuild it\n## Key facts\nmodule_1")
        if info.call_index >= steps:
            return Reply(text="All chunks read.")
        return Reply(
            text=f"Reading chunk {info.call_index}.", tool_calls=[ToolCall("read_chunk", {"index": info.call_index})]
        )

    return script


def check_requests(model: ScriptedModel, budget: int, user_text: str) -> None:
    """Every request under budget, no orphan, system + current user + last batch verbatim."""
    assert model.requests, "the model was never called"
    for request in model.requests:
        assert request.messages[0].role == "system"
        check_request(request, budget, user_text=user_text, system=None)


def stored_messages(db: SqliteDb, session_id: str, session_type: SessionType = SessionType.AGENT) -> list[Message]:
    session = db.get_session(session_id=session_id, session_type=session_type)
    assert session is not None
    return [m for run in session.runs or [] for m in run.messages or []]


def make_agent(
    tmp_path: Path, manager: CompressionManager, script: Any = None
) -> tuple[Agent, ScriptedModel, list[str]]:
    tool, produced = make_tool_log()
    model = ScriptedModel(script=script or long_loop_script())
    agent = Agent(
        model=model,
        tools=[tool],
        db=SqliteDb(db_file=str(tmp_path / "agent.db")),
        session_id="s1",
        system_message="You read build logs.",
        telemetry=False,
    )
    return manager.attach(agent), model, produced


@pytest.mark.parametrize("mode", ["sync", "async", "stream", "async-stream"])
@pytest.mark.parametrize("summarizer", ["extractive", "pipeline"])
def test_long_loop_stays_under_budget_and_loses_nothing(tmp_path: Path, mode: str, summarizer: str) -> None:
    manager = CompressionManager(compress_at_tokens=BUDGET, summarizer=summarizer)
    agent, model, produced = make_agent(tmp_path, manager)
    output = run_in_mode(agent, "Read every chunk of the build log.", mode)
    assert output.content.endswith("All chunks read.")
    check_requests(model, BUDGET, "Read every chunk of the build log.")
    folds = manager.stats.get("folds", 0)
    assert 1 <= folds < len(model.requests) / 2, manager.stats
    # Nothing lost: the stored run holds every tool output in full, in order, once.
    stored = stored_messages(agent.db, "s1")  # type: ignore[arg-type]
    assert [m.content for m in stored if m.role == "tool"] == produced
    assert len(produced) == STEPS
    assert not any(is_summary(m) for m in stored)
    assistants = [m for m in stored if m.role == "assistant"]
    assert len(assistants) == len(model.requests)


def test_mask_alone_keeps_assistant_turns_and_masks_outputs(tmp_path: Path) -> None:
    manager = CompressionManager(compress_at_tokens=BUDGET, summarizer="mask")
    agent, model, produced = make_agent(tmp_path, manager)
    agent.run("Read every chunk of the build log.")
    assert manager.stats.get("masks", 0) >= 1 and manager.stats.get("folds", 0) == 0
    last = model.requests[-1].messages
    masked = [m for m in last if m.role == "tool" and m.compressed_content]
    assert masked and all(m.compressed_content.startswith("[output of read_chunk") for m in masked)
    # the originals are untouched in storage
    assert [m.content for m in stored_messages(agent.db, "s1") if m.role == "tool"] == produced  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_llm_summarizer_uses_the_agents_model_and_is_accounted_separately(tmp_path: Path, mode: str) -> None:
    manager = CompressionManager(compress_at_tokens=BUDGET, summarizer="llm")
    agent, model, _ = make_agent(tmp_path, manager)
    output = run_in_mode(agent, "Read every chunk of the build log.", mode)
    assert isinstance(manager.strategy.summarizer, LLMSummarizer)
    assert manager.strategy.summarizer.model is model
    summaries = [m for r in model.requests for m in r.messages if is_summary(m)]
    assert summaries and "## User goal and constraints" in str(summaries[-1].content)
    details = output.metrics.details or {}
    assert "compression_model" in details, details.keys()
    compression_in = sum(m.input_tokens for m in details["compression_model"])
    agent_in = sum(m.input_tokens for m in details["model"])
    assert compression_in > 0 and agent_in > 0


LATE = 2.0
"""Seconds a slow summarizer takes: far past the tests' ``summarizer_timeout``, short enough to end soon after."""
WORKER = "agno-compression-summarizer"


class BrokenSummarizer:
    """A summarizer that fails the way real ones do; it notes the thread each call runs on."""

    def __init__(self, how: str) -> None:
        self.name = f"broken-{how}"
        self.how = how
        self.threads: list[threading.Thread] = []

    def summarize(self, request: Any) -> Any:
        self.threads.append(threading.current_thread())
        if self.how == "raise":
            raise RuntimeError("provider exploded")
        if self.how == "hang":  # a good summary, but too late to be used
            time.sleep(LATE)
            return Summary(text="a late summary", strategy=self.name)
        if self.how == "garbage":
            return 42
        if self.how == "not-text":
            return Summary(text=42, strategy=self.name)  # type: ignore[arg-type]
        return Summary(text="  \n ", strategy=self.name)

    async def asummarize(self, request: Any) -> Any:
        return self.summarize(request)


# what each failure's warning gives as the reason
REASONS = {
    "raise": "provider exploded",
    "empty": "summarizer 'broken-empty' returned no usable text (Summary)",
    "not-text": "summarizer 'broken-not-text' returned no usable text (Summary)",
    "garbage": "summarizer 'broken-garbage' returned no usable text (int)",
    "hang": "no summary after 0.3s",
}


def on_workers(threads: list[threading.Thread]) -> bool:
    """Every call ran on the manager's own daemon worker, never on the run's thread (an abandoned one never holds
    up the interpreter's exit)."""
    here = threading.current_thread()
    return bool(threads) and all(t.name == WORKER and t.daemon and t is not here for t in threads)


@pytest.mark.parametrize("mode", ["sync", "async"])  # two code paths: a worker thread, an awaited future
@pytest.mark.parametrize("how", list(REASONS))
def test_failing_summarizer_falls_back_to_extractive(
    tmp_path: Path, how: str, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    broken = BrokenSummarizer(how)
    manager = CompressionManager(compress_at_tokens=BUDGET, summarizer=broken, summarizer_timeout=0.3)
    agent, model, _produced = make_agent(tmp_path, manager)
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        output = run_in_mode(agent, "Read every chunk of the build log.", mode)
    assert output.content.endswith("All chunks read.")
    check_requests(model, BUDGET, "Read every chunk of the build log.")
    calls = len(broken.threads)
    # one try per fold, no retry loop; each failure counted once and warned once, naming the summarizer and why
    folds = [e for e in manager.events if e.summary]
    assert calls >= 1 and manager.stats["summarizer_failures"] == calls == len(folds)
    warning = f"agno-compression: summarizer '{broken.name}' failed ({REASONS[how]}); using the extractive summary"
    assert [r.getMessage() for r in caplog.records] == [warning] * calls
    assert all(e.strategy == f"{broken.name}->extractive" for e in folds)
    sent = [m for r in model.requests for m in r.messages if is_summary(m)]
    assert sent and not any("a late summary" in str(m.content) for m in sent)
    assert on_workers(broken.threads)


class EchoSummarizer:
    """A working custom summarizer (no model): its summaries must be used as they are, in every mode."""

    name = "echo"

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []

    def summarize(self, request: Any) -> Any:
        self.threads.append(threading.current_thread())
        return Summary(text=f"echo: {len(request.messages)} messages folded", strategy=self.name)

    async def asummarize(self, request: Any) -> Any:
        return self.summarize(request)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_working_custom_summarizer_is_used_as_it_is(
    tmp_path: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    echo = EchoSummarizer()
    # a timeout the test would notice: a summary that never reaches the fold falls back within 5 s
    manager = CompressionManager(compress_at_tokens=BUDGET, summarizer=echo, summarizer_timeout=5)
    agent, model, _ = make_agent(tmp_path, manager)
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        run_in_mode(agent, "Read every chunk of the build log.", mode)
    folds = [e for e in manager.events if e.summary]
    assert folds and len(echo.threads) == len(folds) and manager.stats["summarizer_failures"] == 0
    assert all(e.strategy == "echo" and "messages folded" in (e.summary or "") for e in folds)
    sent = [m for r in model.requests for m in r.messages if is_summary(m)]
    assert sent and all(str(m.content).startswith("echo: ") for m in sent)
    assert not caplog.records
    assert on_workers(echo.threads)


def test_one_giant_tool_output_is_shortened_in_context_only(tmp_path: Path) -> None:
    giant = "\n".join(f"row {i}: " + "x" * 80 for i in range(1500))

    def dump_table() -> str:
        """Dump the whole table."""
        return giant

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index == 0:
            return Reply(tool_calls=[ToolCall("dump_table", {})])
        return Reply(text="done")

    model = ScriptedModel(script=script)
    manager = CompressionManager(compress_at_tokens=BUDGET)
    agent = manager.attach(
        Agent(
            model=model,
            tools=[dump_table],
            db=SqliteDb(db_file=str(tmp_path / "a.db")),
            session_id="g",
            telemetry=False,
        )
    )
    agent.run("dump it")
    assert model.requests[-1].prompt_tokens <= BUDGET
    sent = next(m for m in model.requests[-1].messages if m.role == "tool")
    assert sent.compressed_content and "row 0:" in sent.compressed_content and "row 1499:" in sent.compressed_content
    stored = [m for m in stored_messages(agent.db, "g") if m.role == "tool"]  # type: ignore[arg-type]
    assert stored[0].content == giant


def test_team_leader_long_delegation_loop_folds(tmp_path: Path) -> None:
    member_model = ScriptedModel(script=lambda m, i: "Report: " + ("all tests passed in module alpha. " * 60))
    member = Agent(name="Tester", id="tester", model=member_model, telemetry=False)
    rounds = 12

    def leader(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index < rounds:
            return Reply(
                text=f"Round {info.call_index}.",
                tool_calls=[
                    ToolCall("delegate_task_to_member", {"member_id": "tester", "task": f"run suite {info.call_index}"})
                ],
            )
        return Reply(text="Everything delegated.")

    leader_model = ScriptedModel(script=leader)
    db = SqliteDb(db_file=str(tmp_path / "team.db"))
    team = Team(name="Lead", model=leader_model, members=[member], db=db, session_id="t1", telemetry=False)
    manager = CompressionManager(compress_at_tokens=BUDGET)
    assert manager.attach(team) is team
    assert member.compression_manager is manager
    out = team.run("Run all suites.")
    assert out.content.endswith("Everything delegated.")
    assert len(leader_model.requests) == rounds + 1
    check_requests(leader_model, BUDGET, "Run all suites.")
    assert 1 <= manager.stats["folds"] < rounds / 2
    stored = stored_messages(db, "t1", SessionType.TEAM)
    leader_tools = [m for m in stored if m.role == "tool" and m.tool_name == "delegate_task_to_member"]
    assert len(leader_tools) == rounds


def test_history_from_earlier_runs_is_folded_on_the_first_call(tmp_path: Path) -> None:
    manager = CompressionManager(compress_at_tokens=BUDGET)
    agent, model, _ = make_agent(tmp_path, manager, script=lambda m, i: Reply(text="ok " * 400))
    agent.add_history_to_context = True
    agent.num_history_runs = 20
    for n in range(8):
        agent.run(f"question {n}")
    for request in model.requests:
        assert request.prompt_tokens <= BUDGET


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"compress_at_tokens": 10}, "compress_at_tokens"),
        ({"target_ratio": 2.0}, "target_ratio"),
        ({"summarizer": "magic"}, "magic"),
        ({"max_summary_tokens": 1}, "max_summary_tokens"),
        ({"summarizer_timeout": 0}, "summarizer_timeout"),
    ],
)
def test_bad_config_names_the_problem(kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        CompressionManager(**kwargs)


def test_attach_rejects_non_agents() -> None:
    with pytest.raises(ConfigError, match="Agent or Team"):
        CompressionManager().attach(object())


def test_pipeline_object_and_custom_summarizer_are_accepted() -> None:
    m = CompressionManager(summarizer=Pipeline(summarizer=None))
    assert m.strategy.name == "mask"


def test_estimating_counter_is_calibrated_by_reported_usage(tmp_path: Path) -> None:
    """Offline with no rank files: the estimate is corrected by each call's reported prompt tokens."""
    from agno_compression.tokens import EstimateBackend, TokenCounter

    counter = TokenCounter("gpt-4o", backend=EstimateBackend())
    manager = CompressionManager(compress_at_tokens=BUDGET, token_counter=counter)
    agent, model, _ = make_agent(tmp_path, manager)
    agent.run("Read every chunk of the build log.")
    assert counter.correction != 1.0
    # after calibration, the manager's count of what it sent tracks the provider's (exact o200k) figure
    last = model.requests[-1]
    ours = counter.count_prompt(last.messages, last.tools)
    assert abs(ours - last.prompt_tokens) / last.prompt_tokens < 0.05
    assert manager.stats.get("folds", 0) >= 1


def test_manager_runs_with_no_rank_files_at_all(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from agno_compression.tokens import TokenCounter

    empty = tmp_path / "no-ranks"
    empty.mkdir()
    counter = TokenCounter("gpt-4o", rank_files_dir=str(empty), allow_packaged=False)
    manager = CompressionManager(compress_at_tokens=BUDGET, token_counter=counter)
    agent, _model, _ = make_agent(tmp_path, manager)
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        out = agent.run("Read every chunk of the build log.")
    assert out.content.endswith("All chunks read.")
    assert not counter.exact and manager.stats.get("folds", 0) >= 1
    assert sum("estimate" in r.message for r in caplog.records) == 1


def test_an_empty_summary_is_never_sent(tmp_path: Path) -> None:
    """A summarizer that returns only a header (nothing to say) folds without putting an empty summary in context."""
    from agno_compression import Summary, SummaryRequest
    from agno_compression._summarizers import PROGRESS_HEADER

    class HeaderOnly:
        name = "header-only"

        def summarize(self, request: SummaryRequest) -> Summary:
            return Summary(text=PROGRESS_HEADER, strategy=self.name)

        async def asummarize(self, request: SummaryRequest) -> Summary:
            return self.summarize(request)

    manager = CompressionManager(compress_at_tokens=BUDGET, summarizer=HeaderOnly(), search_tool=False)
    agent, model, _ = make_agent(tmp_path, manager)
    run_in_mode(agent, "Read every chunk of the build log.", "sync")
    assert manager.stats["folds"] >= 1
    for request in model.requests:
        assert not [m for m in request.messages if is_summary(m)], "an empty summary was sent"


def test_kept_messages_over_the_budget_do_not_fold_on_every_call(tmp_path: Path) -> None:
    """A current user message larger than the budget: no fold can reach it, so folding each call would loop."""
    giant = "Analyse this specification carefully. " * 1100  # ~6k tokens, kept verbatim, budget 3k

    def read_line(index: int) -> str:
        """Read a few lines of a log."""
        return "\n".join(f"line {index}-{i} ok" for i in range(10))

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index >= 16:
            return Reply(text="All lines read.")
        return Reply(text=f"Line {info.call_index}.", tool_calls=[ToolCall("read_line", {"index": info.call_index})])

    folds: list[Any] = []
    model = ScriptedModel(script=script)
    manager = CompressionManager(compress_at_tokens=BUDGET, on_fold=lambda event, folded: folds.append(event))
    agent = manager.attach(
        Agent(model=model, tools=[read_line], db=SqliteDb(db_file=str(tmp_path / "a.db")), telemetry=False)
    )
    assert agent.run(giant).content.endswith("All lines read.")
    calls = len(model.requests)
    summary_folds = [e for e in folds if e.summary]
    # every call is over the budget; a fold is worth it again only once the foldable span has grown by the gap
    # between the budget and the target (1,800 tokens here, more than the whole run adds)
    assert calls == 17 and all(r.prompt_tokens > BUDGET for r in model.requests)
    assert len(summary_folds) <= 1, f"{len(summary_folds)} folds in {calls} model calls"


def _grow_and_fold(
    manager: CompressionManager, batches: int = 10, start: list[Message] | None = None, tag: str = "c"
) -> tuple[list[Message], list[Message]]:
    """A live list grown one tool batch per model call, folded by the manager as agno would; (live, everything)."""
    live = start or [Message(role="system", content="You read build logs."), Message(role="user", content="read all")]
    everything = list(live)
    for i in range(batches):
        if manager.should_compress(live, None):
            manager.compress(live)
        call = {"id": f"{tag}{i}", "type": "function", "function": {"name": "read_chunk", "arguments": "{}"}}
        new = [
            Message(role="assistant", content=f"chunk {i}", tool_calls=[call]),
            Message(role="tool", tool_call_id=f"{tag}{i}", content=f"chunk {i}: " + "compiling ok\n" * 150),
        ]
        if i == 3:  # what agno adds for the model only (retry guidance): never stored
            new.append(Message(role="user", content="try again", add_to_agent_memory=False))
        live += new
        everything += new
    answer = Message(role="assistant", content="All chunks read.")  # after the last fold, seen only by the hook
    live.append(answer)
    everything.append(answer)
    return live, everything


@pytest.mark.parametrize("with_context", [True, False])
def test_the_post_hook_puts_every_folded_message_back_in_order(with_context: bool) -> None:
    from agno.run.agent import RunOutput

    manager = CompressionManager(compress_at_tokens=1_500, persist=False)
    live, everything = _grow_and_fold(manager)
    assert manager.stats["folds"] >= 2 and len(live) < len(everything), "the run must have folded"
    output = RunOutput(run_id="r", messages=list(live))
    # without the run context the manager finds the run by the messages it has seen
    manager.restore_run_messages(output, SimpleNamespace(messages=live) if with_context else None)
    expected = [m for m in everything if m.add_to_agent_memory]
    assert [id(m) for m in output.messages or []] == [id(m) for m in expected]
    assert not any(is_summary(m) for m in output.messages or [])
    # the run's state is gone: a second call (agno calls hooks once, but a retried hook must not duplicate) is a no-op
    again = RunOutput(run_id="r", messages=list(live))
    manager.restore_run_messages(again, SimpleNamespace(messages=live))
    assert [id(m) for m in again.messages or []] == [id(m) for m in live]


def test_the_post_hook_never_breaks_a_run(caplog: pytest.LogCaptureFixture) -> None:
    manager = CompressionManager(compress_at_tokens=1_500, persist=False)
    live, _ = _grow_and_fold(manager)

    class Unwritable:
        """A run output whose messages cannot be replaced."""

        @property
        def messages(self) -> list[Message]:
            return live

        @messages.setter
        def messages(self, value: Any) -> None:
            raise RuntimeError("read-only run output")

    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        manager.restore_run_messages(Unwritable(), SimpleNamespace(messages=live))
    assert [r.getMessage() for r in caplog.records] == [
        "agno-compression: could not restore folded messages into the run output (RuntimeError)"
    ]


def test_runs_sharing_messages_each_get_their_own_back() -> None:
    """agno hands the same objects to every run of an agent (a ``Message`` given as ``system_message``, a cached
    session's history): the post-hook finds each run by its own context, whichever run ends first."""
    from agno.run.agent import RunOutput

    manager = CompressionManager(compress_at_tokens=1_500, persist=False)
    system = Message(role="system", content="You read build logs.")
    history = [Message(role="user", content="an earlier task"), Message(role="assistant", content="done before")]
    runs = [
        _grow_and_fold(manager, start=[system, *history, Message(role="user", content=f"read part {k}")], tag=f"{k}-")
        for k in (0, 1)
    ]
    assert manager.stats["folds"] >= 4
    extra = Message(role="assistant", content="in the run output only")
    for k in (1, 0):  # the later run ends first
        live, everything = runs[k]
        output = RunOutput(run_id=f"r{k}", messages=[*live, extra])
        manager.restore_run_messages(output, SimpleNamespace(messages=live))
        # the run's own messages in order, then what only the output held; no summary
        assert [id(m) for m in output.messages or []] == [id(m) for m in everything if m.add_to_agent_memory] + [
            id(extra)
        ]


def test_without_a_context_the_post_hook_finds_the_run_that_saw_the_messages() -> None:
    from agno.run.agent import RunOutput

    manager = CompressionManager(compress_at_tokens=1_500, persist=False)
    runs = [_grow_and_fold(manager, tag=f"{k}-") for k in (0, 1)]
    for k in (1, 0):
        live, everything = runs[k]
        output = RunOutput(run_id=f"r{k}", messages=list(live))
        manager.restore_run_messages(output, None)
        assert [id(m) for m in output.messages or []] == [id(m) for m in everything if m.add_to_agent_memory]


def test_the_post_hook_leaves_a_run_it_never_saw_alone(caplog: pytest.LogCaptureFixture) -> None:
    from agno.run.agent import RunOutput

    manager = CompressionManager(compress_at_tokens=1_500, persist=False)
    _grow_and_fold(manager)  # another run is tracked
    unseen = [Message(role="system", content="You read build logs."), Message(role="user", content="hi")]
    output = RunOutput(run_id="other", messages=list(unseen))
    with caplog.at_level(logging.WARNING, logger="agno_compression"):
        manager.restore_run_messages(output, SimpleNamespace(messages=unseen))
    assert [id(m) for m in output.messages or []] == [id(m) for m in unseen]
    assert not caplog.records
