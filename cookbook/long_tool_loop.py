"""A long tool loop folded mid-run: an agent reads source files of an installed package.

Offline by default (a scripted model decides which files to read; the tools are real and
read real files). With GOOGLE_API_KEY set, Gemini drives the same tools.

    python cookbook/long_tool_loop.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import agno
from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.models.message import Message

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import answer_of, database_path, pick_model, print_answer, print_folds

from agno_compression import CompressionManager
from agno_compression.testing import Reply, ScriptInfo, ToolCall

PACKAGE = Path(agno.__file__).resolve().parent
FILES = sorted(str(p.relative_to(PACKAGE)) for p in (PACKAGE / "compression").rglob("*.py"))
FILES += ["models/message.py", "session/agent.py", "models/response.py", "metrics.py", "db/base.py"]


def list_files(folder: str) -> str:
    """List the Python files under a folder of the agno package."""
    root = (PACKAGE / folder).resolve()
    if PACKAGE not in root.parents and root != PACKAGE:
        return f"error: {folder} is outside the package"
    return "\n".join(str(p.relative_to(PACKAGE)) for p in sorted(root.rglob("*.py")))


def read_file(path: str) -> str:
    """Read a source file of the agno package."""
    target = (PACKAGE / path).resolve()
    if PACKAGE not in target.parents or not target.is_file():
        return f"error: no such file {path}"
    return target.read_text(encoding="utf-8")


def script(messages: list[Message], info: ScriptInfo) -> Reply:
    """Offline stand-in for the model: list the package, then read files one by one."""
    if info.call_index == 0:
        return Reply(text="Let me see what is there.", tool_calls=[ToolCall("list_files", {"folder": "."})])
    if info.call_index <= len(FILES):
        path = FILES[info.call_index - 1]
        return Reply(text=f"Reading {path}.", tool_calls=[ToolCall("read_file", {"path": path})])
    return Reply(text=f"I read {len(FILES)} files; Message, sessions and compression are the pieces to know.")


def main() -> None:
    db_file = database_path("long_tool_loop")
    manager = CompressionManager(compress_at_tokens=12_000, summarizer="extractive")
    agent = manager.attach(
        Agent(
            model=pick_model(script),
            tools=[list_files, read_file],
            db=SqliteDb(db_file=str(db_file)),
            system_message="You study the agno package by reading its source files.",
            telemetry=False,
        )
    )
    result = agent.run("Read the agno package's compression code and the classes it uses, then explain it.")
    print_answer("answer", answer_of(result))
    print(f"Model calls: {sum(1 for m in result.messages or [] if m.role == 'assistant')}")
    print_folds(manager, db_file, agent.session_id)


if __name__ == "__main__":
    main()
