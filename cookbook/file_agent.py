"""A file agent folded mid-run: agno's FileTools and ShellTools on a folder of real source files.

The agent lists a folder holding a few of agno's own tool modules, reads each whole, searches them, rewrites one
(adds an ``__all__``), checks it compiles with a shell command and writes NOTES.md. Whole-file reads fill the
prompt fast: the manager folds them mid-run, keeping the files it can (verbatim, or outlined) in the summary's
working set, and the new version of the file is written after the fold.

Offline by default (a scripted model decides which tool to call; the tools are agno's own and work on real files
in a temporary folder). With GOOGLE_API_KEY set, Gemini drives the same tools.

    python cookbook/file_agent.py
"""

from __future__ import annotations

import ast
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import agno
from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.models.message import Message
from agno.tools.file import FileTools
from agno.tools.shell import ShellTools

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import answer_of, database_path, pick_model, print_answer, print_folds

from agno_compression import CompressionManager
from agno_compression.testing import Reply, ScriptInfo, ToolCall

SOURCES = Path(agno.__file__).resolve().parent / "tools"
FILES = ["shell.py", "python.py", "calculator.py", "csv_toolkit.py", "local_file_system.py", "decorator.py"]
TARGET = "shell.py"
"""The module the agent rewrites."""


def public_names(source: str) -> list[str]:
    """The module-level classes and functions of a source file that do not start with an underscore."""
    nodes = ast.parse(source).body
    kinds = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return [n.name for n in nodes if isinstance(n, kinds) and not n.name.startswith("_")]


def with_all(source: str) -> str:
    """``source`` with an ``__all__`` naming its public classes and functions, after the imports."""
    lines = source.splitlines(keepends=True)
    tree = ast.parse(source)
    last_import = max((n.end_lineno or 0 for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))), default=0)
    names = ", ".join(f'"{name}"' for name in public_names(source))
    return "".join([*lines[:last_import], f"\n__all__ = [{names}]\n", *lines[last_import:]])


def make_script(work: Path) -> Callable[[list[Message], ScriptInfo], Reply]:
    """The offline stand-in for the model; it reads the files it rewrites from disk, as a model would remember them."""

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        step = info.call_index
        if step == 0:
            return Reply(text="Let me see the folder.", tool_calls=[ToolCall("list_files", {"directory": "."})])
        if step <= len(FILES):
            name = FILES[step - 1]
            return Reply(text=f"Reading {name}.", tool_calls=[ToolCall("read_file", {"file_name": name})])
        after = step - len(FILES)
        if after == 1:
            query = {"query": "def run_shell_command", "directory": "."}
            return Reply(text="Where is the shell entry point?", tool_calls=[ToolCall("search_content", query)])
        if after == 2:
            new = with_all((work / TARGET).read_text(encoding="utf-8"))
            args = {"contents": new, "file_name": TARGET, "overwrite": True}
            return Reply(text=f"Writing {TARGET} with an __all__.", tool_calls=[ToolCall("save_file", args)])
        if after == 3:
            command = {"args": [sys.executable, "-m", "py_compile", TARGET]}
            return Reply(text="Checking that it compiles.", tool_calls=[ToolCall("run_shell_command", command)])
        if after == 4:
            notes = ["# Public names of the tool modules", ""]
            for name in FILES:
                found = public_names((work / name).read_text(encoding="utf-8"))
                notes.append(f"- `{name}`: {', '.join(found) or '(none)'}")
            args = {"contents": "\n".join(notes) + "\n", "file_name": "NOTES.md", "overwrite": True}
            return Reply(text="Writing NOTES.md.", tool_calls=[ToolCall("save_file", args)])
        return Reply(
            text=f"{TARGET} now has an __all__ and compiles; NOTES.md lists the public names of {len(FILES)} modules."
        )

    return script


def main() -> None:
    db_file = database_path("file_agent")
    with tempfile.TemporaryDirectory(prefix="file-agent-") as folder:
        work = Path(folder)
        for name in FILES:
            shutil.copy(SOURCES / name, work / name)
        manager = CompressionManager(compress_at_tokens=8_000, summarizer="extractive")
        agent = manager.attach(
            Agent(
                model=pick_model(make_script(work)),
                tools=[FileTools(base_dir=work), ShellTools(base_dir=work)],
                db=SqliteDb(db_file=str(db_file)),
                system_message="You maintain the Python modules in your working folder with your file and shell tools.",
                telemetry=False,
            )
        )
        result = agent.run(
            f"Read every module here, add an __all__ naming the public classes and functions to {TARGET}, check that "
            "it still compiles, and write NOTES.md listing each module's public names."
        )
        print_answer("answer", answer_of(result))
        calls = [c.get("function", {}).get("name") for m in result.messages or [] for c in m.tool_calls or []]
        print(
            f"Model calls: {sum(1 for m in result.messages or [] if m.role == 'assistant')}; tools: {', '.join(calls)}"
        )
        exported = next((line for line in (work / TARGET).read_text().splitlines() if line.startswith("__all__")), None)
        print(f"{TARGET}: {exported or 'no __all__ written'}; NOTES.md written: {(work / 'NOTES.md').is_file()}")
    print_folds(manager, db_file, agent.session_id)
    # the files a fold kept verbatim (or outlined) for the write that needs them: the working set
    newest = manager.events[-1].summary or "" if manager.events else ""
    held = [line[4:] for line in newest.splitlines() if line.startswith(("### file ", "### page ", "### report "))]
    print(f"\nWorking set of the newest fold: {', '.join(held) or '(none)'}")


if __name__ == "__main__":
    main()
