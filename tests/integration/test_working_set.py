"""The working set through real agno agents: agno's FileTools and ShellTools on real files, a fold between reading
a file and writing its new version, and a read or a write too large for the budget."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from agno.db.base import SessionType
from agno.db.sqlite import SqliteDb
from agno.models.message import Message
from agno.tools.file import FileTools
from agno.tools.shell import ShellTools

from agno_compression import CompressionManager
from agno_compression.testing import Reply, ScriptInfo, ToolCall, current_user, scripted_agent
from agno_compression.tokens import TokenCounter

CONFIG = "\n".join(
    ["class RetryPolicy:", *[f"    backoff_field_{i}: float = {i}.5  # seconds before retry {i}" for i in range(30)]]
)


def _summaries(messages: list[Message]) -> str:
    return "\n".join(m.get_content_string() for m in messages if getattr(m, "agno_compression_summary", None))


def run_checks(index: int) -> str:
    """Run the project's checks."""
    return f"check run {index}: " + "all green, nothing to report " * 40


@pytest.mark.parametrize(
    "read",
    [
        ToolCall("read_file", {"file_name": "config.py"}),
        ToolCall("run_shell_command", {"args": ["cat", "config.py"]}),  # agno's ShellTools printing the file
    ],
    ids=["FileTools", "ShellTools"],
)
def test_a_file_read_before_a_fold_reaches_the_write_that_needs_it(tmp_path: Path, read: ToolCall) -> None:
    (tmp_path / "config.py").write_text(CONFIG)
    seen: dict[str, str] = {}

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        step = info.call_index
        if step == 0:
            return Reply(tool_calls=[read])
        if step <= 24:
            return Reply(tool_calls=[ToolCall("run_checks", {"index": step})])
        if step == 25:
            seen["summaries"] = _summaries(messages)
            new = CONFIG.replace("float", "int")
            return Reply(tool_calls=[ToolCall("save_file", {"file_name": "config.py", "contents": new})])
        return Reply(text="Rewrote config.py.")

    manager = CompressionManager(compress_at_tokens=6_000)
    tools = (FileTools(base_dir=tmp_path), ShellTools(base_dir=tmp_path), run_checks)
    agent, model = scripted_agent(script, *tools, manager=manager)
    agent.run("Make every backoff field an int.")
    assert manager.stats["folds"] >= 1
    before_write = model.requests[25].messages
    assert not any(m.role == "tool" and "RetryPolicy" in m.get_content_string() for m in before_write), "folded"
    assert "## Working set" in seen["summaries"] and "### file config.py" in seen["summaries"]
    assert "backoff_field_29: float = 29.5" in seen["summaries"], "the read file is kept whole for the write"
    assert all(r.prompt_tokens <= 6_000 for r in model.requests)
    assert (tmp_path / "config.py").read_text() == CONFIG.replace("float", "int")


def test_an_opencode_agents_read_and_edit_reach_the_write_after_a_fold(tmp_path: Path) -> None:
    """OpenCode's own tools, as its agent calls them: camelCase arguments, a read framed in tags with ``N: `` gutters
    (anomalyco/opencode packages/opencode/src/tool/read.ts and edit.ts). What the fold keeps is the file as edited."""
    (tmp_path / "config.py").write_text(CONFIG)

    def read(filePath: str, offset: int = 1, limit: int = 2000) -> str:  # the agent's own argument names
        """Read a file."""
        lines = (tmp_path / filePath).read_text().split("\n")[offset - 1 : offset - 1 + limit]
        body = "\n".join(f"{offset + i}: {line}" for i, line in enumerate(lines))
        end = f"(End of file - total {len(lines)} lines)"
        return f"<path>{tmp_path / filePath}</path>\n<type>file</type>\n<content>\n{body}\n\n{end}\n</content>"

    def edit(filePath: str, oldString: str, newString: str, replaceAll: bool = False) -> str:
        """Edit a file."""
        path = tmp_path / filePath
        text = path.read_text()
        path.write_text(text.replace(oldString, newString) if replaceAll else text.replace(oldString, newString, 1))
        return "Edit applied successfully."

    seen: dict[str, str] = {}

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        step = info.call_index
        if step == 0:
            return Reply(tool_calls=[ToolCall("read", {"filePath": "config.py"})])
        if step == 1:
            change = {"filePath": "config.py", "oldString": "float", "newString": "int", "replaceAll": True}
            return Reply(tool_calls=[ToolCall("edit", change)])
        if "summaries" not in seen and (summaries := _summaries(messages)):
            seen["summaries"] = summaries  # the first call after a fold: the file was in use a few calls before
            return Reply(text="Done.")
        return Reply(tool_calls=[ToolCall("run_checks", {"index": step})])

    manager = CompressionManager(compress_at_tokens=6_000)
    agent, model = scripted_agent(script, read, edit, run_checks, manager=manager)
    agent.run("Make every backoff field an int.")
    assert manager.stats["folds"] == 1
    assert not any(m.role == "tool" and "RetryPolicy" in m.get_content_string() for m in model.requests[-1].messages)
    assert "### file config.py" in seen["summaries"]
    assert "    backoff_field_29: int = 29.5  # seconds before retry 29" in seen["summaries"], "as edited, no gutter"
    assert "<content>" not in seen["summaries"] and "29: class" not in seen["summaries"]
    assert "- edited: config.py" in seen["summaries"]
    assert (tmp_path / "config.py").read_text() == CONFIG.replace("float", "int")


def test_without_a_working_set_the_fold_keeps_only_names(tmp_path: Path) -> None:
    (tmp_path / "config.py").write_text(CONFIG)
    for i in range(6):
        (tmp_path / f"notes_{i}.txt").write_text(f"notes {i}: " + "unrelated filler words " * 120)

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index == 0:
            return Reply(tool_calls=[ToolCall("read_file", {"file_name": "config.py"})])
        if info.call_index <= 6:
            return Reply(tool_calls=[ToolCall("read_file", {"file_name": f"notes_{info.call_index - 1}.txt"})])
        return Reply(text="done")

    manager = CompressionManager(compress_at_tokens=3_000, working_set_ratio=0)
    agent, model = scripted_agent(script, FileTools(base_dir=tmp_path), manager=manager)
    agent.run("Read them.")
    assert manager.stats["folds"] >= 1
    assert "## Working set" not in _summaries(model.requests[-1].messages)


def test_your_own_tool_joins_the_working_set_by_tool_kinds() -> None:
    def lookup(key: str) -> str:
        """Look a record up."""
        return "\n".join(f"record {key} field_{i} = value_{i}" for i in range(25))

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index < 14:
            return Reply(tool_calls=[ToolCall("lookup", {"key": f"k{info.call_index}"})])
        return Reply(text="done")

    manager = CompressionManager(compress_at_tokens=4_000, tool_kinds={"lookup": "fetch"})
    agent, model = scripted_agent(script, lookup, manager=manager)
    agent.run("Look the records up.")
    text = _summaries(model.requests[-1].messages)
    assert "### page lookup(key='k" in text and "field_24 = value_24" in text


def test_a_write_too_large_for_the_budget_is_shortened_in_context_and_stored_whole(tmp_path: Path) -> None:
    huge = "\n".join(f"line_{i} = compute_value({i}, scale=2.5)" for i in range(900))

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index == 0:
            return Reply(tool_calls=[ToolCall("save_file", {"file_name": "gen.py", "contents": huge})])
        if info.call_index < 5:
            return Reply(tool_calls=[ToolCall("list_files", {})])
        return Reply(text="done")

    manager = CompressionManager(compress_at_tokens=4_000)
    db = SqliteDb(db_file=str(tmp_path / "agent.db"))
    agent, model = scripted_agent(script, FileTools(base_dir=tmp_path), manager=manager, db=db)
    output = agent.run("Generate gen.py.")
    assert (tmp_path / "gen.py").read_text() == huge
    assert [r.prompt_tokens for r in model.requests if r.prompt_tokens > 4_000] == []
    stored = db.get_session(session_id=str(output.session_id), session_type=SessionType.AGENT)
    runs = stored.runs if stored is not None else []
    writes = [
        json.loads(c["function"]["arguments"])["contents"]
        for run in runs
        for m in run.messages or []
        for c in m.tool_calls or []
        if c["function"]["name"] == "save_file"
    ]
    assert writes == [huge], "the stored run keeps the whole write"


def test_a_file_read_too_large_for_the_budget_reaches_the_model_as_its_outline(tmp_path: Path) -> None:
    body = [f"    value_{i} = compute(value_{i - 1}, scale=2.5)  # step {i} of the pipeline" for i in range(1, 400)]
    source = "\n".join(["class Pipeline:", "    def run(self, value_0: float) -> float:", *body, "        return 0"])
    source += "\n\ndef build_pipeline(settings_path: str) -> Pipeline:\n    return Pipeline()\n"
    (tmp_path / "pipeline.py").write_text(source)

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index == 0:
            reads = [ToolCall("read_file", {"file_name": "pipeline.py"}), ToolCall("run_checks", {"index": 0})]
            return Reply(tool_calls=reads)
        return Reply(text="done")

    manager = CompressionManager(compress_at_tokens=4_000)
    agent, model = scripted_agent(script, FileTools(base_dir=tmp_path), run_checks, manager=manager)
    agent.run("Read pipeline.py.")
    [read] = [m for m in model.requests[1].messages if m.role == "tool" and m.tool_name == "read_file"]
    sent = read.compressed_content or ""
    assert model.requests[1].prompt_tokens <= 4_000 and sent.startswith("[outline: the lines with the most names")
    assert "def build_pipeline(settings_path: str) -> Pipeline:" in sent, "a declaration past the middle is kept"
    assert "⋮" in sent and read.get_content_string() == source, "only the context is shortened"


PAGE = "\n".join(f"Libretto_Author Vittorio_Rossi wrote act_{i} for La_Scala_Milano in 1887." for i in range(60))


def web_fetch(url: str) -> str:
    """Fetch a web page."""
    return PAGE


@pytest.mark.parametrize(
    ("question", "kept"),
    [
        ("Check the build, all 24 steps.", False),
        ("Was Vittorio_Rossi the Libretto_Author at La_Scala_Milano? Check the build, all 24 steps.", True),
    ],
    ids=["unrelated", "follow-up"],
)
def test_a_page_fetched_for_an_earlier_question_is_held_only_while_a_later_run_uses_it(
    tmp_path: Path, question: str, kept: bool
) -> None:
    summaries: list[str] = []

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if current_user(messages) == "Who wrote the libretto?":
            fetch = ToolCall("web_fetch", {"url": "https://opera.example.org/libretto"})
            return Reply(tool_calls=[fetch]) if info.call_index == 0 else Reply(text="Vittorio Rossi.")
        summaries.append(_summaries(messages))
        if len(summaries) <= 24:
            return Reply(tool_calls=[ToolCall("run_checks", {"index": len(summaries)})])
        return Reply(text="Build checked.")

    manager = CompressionManager(compress_at_tokens=6_000)
    db = SqliteDb(db_file=str(tmp_path / "pages.db"))
    options = {"db": db, "session_id": "pages", "add_history_to_context": True, "num_history_runs": 5}
    agent, model = scripted_agent(script, web_fetch, run_checks, manager=manager, **options)
    agent.run("Who wrote the libretto?")
    agent.run(question)
    assert manager.stats["folds"] >= 1 and any(summaries), "the second run folds the first"
    held = any("### page https://opera.example.org/libretto" in s for s in summaries)
    assert held is kept
    assert all(r.prompt_tokens <= 6_000 for r in model.requests)


def _module(prefix: str) -> str:
    return "\n".join(
        f"def {prefix}_step_{i}(value: int) -> int:\n    return value + {i}  # {prefix} step {i}" for i in range(40)
    )


def _read_check_write(reads: list[str], checks: int, write: str, seen: dict[str, str]) -> Callable[..., Reply]:
    """A script that reads ``reads`` one by one, runs ``checks`` checks, notes the summaries, then writes ``write``."""

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        step = info.call_index
        if step < len(reads):
            return Reply(tool_calls=[ToolCall("read_file", {"file_name": reads[step]})])
        if step < len(reads) + checks:
            return Reply(tool_calls=[ToolCall("run_checks", {"index": step})])
        if step == len(reads) + checks:
            seen["summaries"] = _summaries(messages)
            return Reply(tool_calls=[ToolCall("save_file", {"file_name": write, "contents": "x = 1"})])
        return Reply(text="Done.")

    return script


@pytest.mark.parametrize(
    ("request_text", "first"),
    [
        (
            "Write handlers_v2.py like handlers.py, with on_start_step_1, on_start_step_2 and on_start_step_3.",
            "handlers.py",
        ),
        ("Write handlers_v2.py.", "handlers.py"),
        ("Write report.py.", "other_2.py"),
    ],
    ids=["the request names its names", "the new file's name echoes it", "neither: newest first"],
)
def test_the_file_the_request_still_asks_for_is_held_before_newer_ones(
    tmp_path: Path, request_text: str, first: str
) -> None:
    (tmp_path / "handlers.py").write_text(_module("on_start"))
    for n in range(3):
        (tmp_path / f"other_{n}.py").write_text(_module(f"other{n}"))
    seen: dict[str, str] = {}
    written = re.findall(r"\w+\.py", request_text)[0]
    script = _read_check_write(["handlers.py", "other_0.py", "other_1.py", "other_2.py"], 17, written, seen)
    manager = CompressionManager(compress_at_tokens=6_000)
    agent, model = scripted_agent(script, FileTools(base_dir=tmp_path), run_checks, manager=manager)
    agent.run(request_text)
    held = re.findall(r"^### file (\S+)", seen["summaries"], re.M)
    assert held and held[0] == first, held
    assert all(r.prompt_tokens <= 6_000 for r in model.requests)


def test_the_file_a_write_was_built_from_keeps_room_when_newer_reads_fill_the_rest(tmp_path: Path) -> None:
    """``base.py`` was read first and a write took its names; four newer files fill the working set's room. The file
    the agent builds from may take the folded prompt further (``_held.IN_USE_RATIO``): it is held whole; a file only
    read is not (``other_0.py``, older than the rest, is cut or left out)."""
    for name in ("base", "other_0", "other_1", "other_2", "other_3"):
        (tmp_path / f"{name}.py").write_text(_module(name))
    derived = "\n".join(f"from base import base_step_{i}" for i in range(8))
    seen: dict[str, str] = {}

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        step = info.call_index
        if step == 0:
            return Reply(tool_calls=[ToolCall("read_file", {"file_name": "base.py"})])
        if step == 1:
            return Reply(tool_calls=[ToolCall("save_file", {"file_name": "derived.py", "contents": derived})])
        if step < 6:
            return Reply(tool_calls=[ToolCall("read_file", {"file_name": f"other_{step - 2}.py"})])
        if step < 20:
            return Reply(tool_calls=[ToolCall("run_checks", {"index": step})])
        if step == 20:
            seen["summaries"] = _summaries(messages)
            return Reply(tool_calls=[ToolCall("save_file", {"file_name": "derived_2.py", "contents": derived})])
        return Reply(text="Done.")

    manager = CompressionManager(compress_at_tokens=6_000)
    agent, model = scripted_agent(script, FileTools(base_dir=tmp_path), run_checks, manager=manager)
    agent.run("Split base.py into smaller modules.")
    assert manager.stats["folds"] >= 1
    held = seen["summaries"]
    assert "### file base.py\n" in held and "base_step_39" in held, "built from: held whole"
    assert "### file other_0.py\n" not in held, "only read, and older than the rest: not whole"
    assert all(r.prompt_tokens <= 6_000 for r in model.requests)


def test_a_long_plan_as_the_request_leaves_the_working_set_its_room(tmp_path: Path) -> None:
    (tmp_path / "config.py").write_text(CONFIG)
    plan = "Implement the following plan:\n" + "\n".join(
        f"- Step {i}: review module_{i} and keep its public names as they are." for i in range(120)
    )
    seen: dict[str, str] = {}
    script = _read_check_write(["config.py"], 16, "config.py", seen)
    manager = CompressionManager(compress_at_tokens=6_000)
    agent, model = scripted_agent(script, FileTools(base_dir=tmp_path), run_checks, manager=manager)
    agent.run(plan)
    assert manager.stats["folds"] >= 1
    assert model.requests[0].prompt_tokens > 6_000 * 0.4, "the plan alone is over the fold's target"
    assert "### file config.py" in seen["summaries"], "the file read is held beside the plan"
    assert all(r.prompt_tokens <= 6_000 for r in model.requests)


def test_a_later_run_keeps_what_the_summaries_of_an_earlier_run_held(tmp_path: Path) -> None:
    """A run that folds its history and its own steps leaves two summaries, loaded as one message by the next run:
    folding that message again keeps both (the second used to be cut off with the first one's working set). The
    working set is chosen anew at each fold: a summary the fold keeps gives its section up to the new one."""
    for run in range(3):
        (tmp_path / f"notes_{run}.txt").write_text(f"notes of run {run}: " + "filler words to fold " * 8)
    seen: dict[str, str] = {}

    def run_suite(config: str) -> str:
        """Run the test suite with a settings file."""
        return f"suite with {config}: 12 passed"

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        run = int(current_user(messages).split()[-1])
        step = info.call_index - int(seen.setdefault(f"start {run}", str(info.call_index)))
        if step == 0:
            return Reply(tool_calls=[ToolCall("read_file", {"file_name": f"notes_{run}.txt"})])
        if step == 1:
            return Reply(tool_calls=[ToolCall("run_suite", {"config": f"suite/run_{run}_settings.cfg"})])
        if step <= 22:
            return Reply(tool_calls=[ToolCall("run_checks", {"index": run * 100 + step})])
        seen[f"summaries {run}"] = _summaries(messages)
        return Reply(text=f"Run {run} done. " + "All notes checked and filed. " * 800)  # a long report

    manager = CompressionManager(compress_at_tokens=6_000, payback_calls=None)  # folds only over the budget
    db = SqliteDb(db_file=str(tmp_path / "runs.db"))
    tools = (FileTools(base_dir=tmp_path), run_suite, run_checks)
    agent, model = scripted_agent(script, *tools, manager=manager, db=db, session_id="s", add_history_to_context=True)
    for run in range(3):  # the report folds the next run's history first: that summary holds the first file
        agent.run(f"Check the notes of run {run}")
    held = re.findall(r"^### file (\S+)", seen["summaries 1"], re.M)
    assert seen["summaries 1"].count("## Working set") == 1, "a kept summary gives its section up to the new one"
    assert {"notes_0.txt", "notes_1.txt"} <= set(held), "which holds what the kept one held and this run's file"
    assert "suite/run_1_settings.cfg" not in seen["summaries 0"]
    for run in range(2):
        assert f"suite/run_{run}_settings.cfg" in seen["summaries 2"], f"run {run}'s ledger reaches the third run"
    assert all(r.prompt_tokens <= 6_000 for r in model.requests)


@pytest.mark.parametrize(("ratio", "reads", "size"), [(0.7, 6, 100), (0.95, 6, 30), (0.95, 2, 10)])
def test_a_ledger_past_its_summarys_budget_never_takes_the_working_set_over_the_budget(
    tmp_path: Path, ratio: float, reads: int, size: int
) -> None:
    """The working set's room counts the summary at its budget; the ledger may take a summary past it (rather than
    drop a file it acted on). A folded prompt over the budget then gets a smaller working set, not a call over."""
    for n in range(reads):
        (tmp_path / f"module_{n}.py").write_text(_module(f"module{n}"))
    deep = "services/billing/internal/adapters/outbound/persistence/repositories"

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        step = info.call_index
        if step < reads:
            return Reply(tool_calls=[ToolCall("read_file", {"file_name": f"module_{step}.py"})])
        if step < reads + 20:  # long paths: a ledger larger than the summary's budget once the batches below come
            path = f"{deep}/generated_repository_{step:03d}.py"
            return Reply(tool_calls=[ToolCall("save_file", {"file_name": path, "contents": f"X_{step} = {step}"})])
        if step < reads + 26:  # ten writes at once: a kept batch the fold cannot shorten, leaving the summary little
            return Reply(
                tool_calls=[
                    ToolCall(
                        "save_file", {"file_name": f"{deep}/part_{step}_{k}.py", "contents": "value = f(x) " * size}
                    )
                    for k in range(10)
                ]
            )
        return Reply(text="Generated.")

    plan = "Implement the plan:\n" + "\n".join(
        f"- step {i}: generate the repository for entity_{i} and keep its public interface stable" for i in range(90)
    )
    manager = CompressionManager(compress_at_tokens=6_000, working_set_ratio=ratio)
    agent, model = scripted_agent(script, FileTools(base_dir=tmp_path), manager=manager)
    agent.run(plan)
    assert manager.stats["folds"] >= 3
    sizes = [r.prompt_tokens for r in model.requests]
    assert max(sizes) <= 6_000, [s for s in sizes if s > 6_000]


def test_a_write_shortened_in_context_reaches_the_ledger_whole(tmp_path: Path) -> None:
    """A write too large for the budget is shortened in context; the fold that folds it lists the paths the whole
    write named, not only those its shortened stand-in kept (the acted-on facts of a run that writes whole files)."""
    lines = [f"line_{i} = compute_value({i}, scale=2.5)" for i in range(900)]
    lines[450] = "# moved here from legacy/pipeline/steps_old.py"
    huge = "\n".join(lines)
    seen: dict[str, str] = {}

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        if info.call_index == 0:
            return Reply(tool_calls=[ToolCall("save_file", {"file_name": "gen.py", "contents": huge})])
        if info.call_index < 12:
            return Reply(tool_calls=[ToolCall("run_checks", {"index": info.call_index})])
        seen["summaries"] = _summaries(messages)
        return Reply(text="done")

    manager = CompressionManager(compress_at_tokens=4_000)
    agent, model = scripted_agent(script, FileTools(base_dir=tmp_path), run_checks, manager=manager)
    agent.run("Generate gen.py.")
    shortened = next(r for r in model.requests if len(r.messages) > 2).messages
    assert not any("steps_old" in json.dumps(m.tool_calls or []) for m in shortened), "shortened in context"
    assert manager.stats["folds"] >= 1
    assert "legacy/pipeline/steps_old.py" in seen["summaries"], "the ledger lists what the whole write named"
    assert all(r.prompt_tokens <= 4_000 for r in model.requests)


@pytest.mark.parametrize("cap", [800, 4_000])
def test_the_working_set_takes_at_most_max_working_set_tokens(tmp_path: Path, cap: int) -> None:
    reads = [f"module_{n}.py" for n in range(8)]
    for n, name in enumerate(reads):
        (tmp_path / name).write_text(_module(f"module{n}"))
    seen: dict[str, str] = {}
    script = _read_check_write(reads, 30, "summary.txt", seen)
    # every module idle for thirty calls: held by the room alone here (hold_by_price would let them go)
    manager = CompressionManager(compress_at_tokens=12_000, max_working_set_tokens=cap, hold_by_price=False)
    agent, model = scripted_agent(script, FileTools(base_dir=tmp_path), run_checks, manager=manager)
    agent.run("Read the modules, check them, then write a summary.")
    assert manager.stats["folds"] >= 1
    section = seen["summaries"][seen["summaries"].index("## Working set") :]
    size = TokenCounter("gpt-4o").count_text(section)
    assert cap * 0.6 <= size <= cap, "the section fills its room up to the cap, not past it"
    assert all(r.prompt_tokens <= 12_000 for r in model.requests)


def test_a_file_not_used_for_a_while_leaves_and_the_summary_says_how_to_get_it_back(tmp_path: Path) -> None:
    """hold_by_price: a file read and not used for forty calls costs more to hold until the next fold than to read
    again; it leaves the working set, and the section names it with the tool that read it. The file a write drew
    on stays whatever its age. (The budget leaves room for both files, so without hold_by_price both stay.)"""
    for name in ("base.py", "notes.py"):
        (tmp_path / name).write_text(_module(name.removesuffix(".py")) * 3)
    (tmp_path / "log.txt").write_text("\n".join(f"check {i} passed in {i % 97} ms" for i in range(900)))
    seen: dict[str, str] = {}

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        step = info.call_index
        if step < 2:
            return Reply(tool_calls=[ToolCall("read_file", {"file_name": ("base.py", "notes.py")[step]})])
        if step == 2:
            body = "\n".join(f"from base import base_step_{i}" for i in range(6))
            return Reply(tool_calls=[ToolCall("save_file", {"file_name": "derived.py", "contents": body})])
        if step < 44:
            return Reply(tool_calls=[ToolCall("run_checks", {"index": step})])
        if step == 44:  # a large output: the fold that follows chooses the working set anew
            return Reply(tool_calls=[ToolCall("read_file", {"file_name": "log.txt"})])
        seen["summaries"] = _summaries(messages)
        return Reply(text="Done.")

    manager = CompressionManager(compress_at_tokens=24_000)
    agent, _ = scripted_agent(script, FileTools(base_dir=tmp_path), run_checks, manager=manager)
    agent.run("Write derived.py from base.py, then run the checks.")
    section = seen["summaries"][seen["summaries"].index("## Working set") :]
    assert "### file base.py" in section, "the file a write drew on stays"
    assert "### file notes.py" not in section and "`notes.py` (read_file)" in section, section[-400:]
    unpriced = CompressionManager(compress_at_tokens=24_000, hold_by_price=False)
    agent, _ = scripted_agent(script, FileTools(base_dir=tmp_path), run_checks, manager=unpriced)
    agent.run("Write derived.py from base.py, then run the checks.")
    assert "### file notes.py" in seen["summaries"], "without hold_by_price the room alone decides: both fit"
