"""Real agno Agents for the reliability tests: a scripted model, a real tool with long outputs, four run modes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agno.agent import Agent
from agno.models.message import Message

from agno_compression import CompressionManager, FoldEvent
from agno_compression._plan import is_summary
from agno_compression.eval import run_in_mode
from agno_compression.testing import Reply, ScriptedModel, ScriptInfo, ToolCall

BUDGET = 3_000
SYSTEM = "You read build logs."
MODES = ("sync", "async", "stream", "async-stream")


def current_user(messages: list[Message]) -> str:
    users = [m for m in messages if m.role == "user" and not m.from_history and not is_summary(m)]
    return str(users[-1].content) if users else ""


@dataclass
class Harness:
    """One agent with everything it produced and every fold it made."""

    agent: Agent
    model: ScriptedModel
    manager: CompressionManager
    produced: list[str] = field(default_factory=list)
    folds: list[tuple[int, FoldEvent, list[Message]]] = field(default_factory=list)

    def run(self, text: str, mode: str = "sync") -> Any:
        return run_in_mode(self.agent, text, mode)

    @property
    def summary_folds(self) -> list[FoldEvent]:
        return [e for _, e, _ in self.folds if e.summary and e.folded_ids]


def build(
    *,
    db: Any = None,
    session_id: str = "s1",
    steps: int = 10,
    tag: str = "",
    user_id: str | None = None,
    agent_id: str | None = None,
    on_tool: Callable[[int], None] | None = None,
    tool_text: Callable[[int, int], str] | None = None,
    history: bool = True,
    **manager_kw: Any,
) -> Harness:
    """An Agent that reads ``steps`` long log chunks per run, wired to a fresh CompressionManager."""
    manager_kw.setdefault("compress_at_tokens", BUDGET)
    holder: list[Harness] = []
    per_user: dict[str, int] = {}
    counter = [0]

    def read_chunk(index: int) -> str:
        """Read one long chunk of a build log."""
        counter[0] += 1
        n = counter[0]
        if on_tool is not None:
            on_tool(n)
        if tool_text is not None:
            text = tool_text(index, n)
        else:
            text = "\n".join(f"[{tag}{n:03d}:{line:04d}] compiling src/m{index}/f{line}.c ok" for line in range(30))
            text += f"\nerror: ValueError in step {n} of {tag or 'log'}: exit code {index % 3}"
        holder[0].produced.append(text)
        return text

    def script(messages: list[Message], info: ScriptInfo) -> Reply:
        user = current_user(messages)
        per_user[user] = per_user.get(user, 0) + 1
        k = per_user[user]
        if k > steps:
            return Reply(text=f"Done with {user!r}: all chunks read.")
        return Reply(text=f"{tag}reading chunk {k}.", tool_calls=[ToolCall("read_chunk", {"index": k})])

    def on_fold(event: FoldEvent, folded: Any) -> None:
        holder[0].folds.append((len(model.requests), event, list(folded)))

    model = ScriptedModel(script=script)
    manager = CompressionManager(on_fold=on_fold, **manager_kw)
    agent = Agent(
        model=model,
        tools=[read_chunk],
        db=db,
        id=agent_id,
        user_id=user_id,
        session_id=session_id,
        system_message=SYSTEM,
        add_history_to_context=history,
        num_history_runs=100,
        telemetry=False,
    )
    manager.attach(agent)
    holder.append(Harness(agent, model, manager))
    return holder[0]
