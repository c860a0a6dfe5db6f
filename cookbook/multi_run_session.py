"""A multi-run session: history comes back summarized, folded messages never return.

Three runs in one session. Each run reads a few long log files; folds happen mid-run; the
next run loads the session's history with the folded messages left out and the newest
summary in their place.

    python cookbook/multi_run_session.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.models.message import Message

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import answer_of, database_path, pick_model, plural, print_answer, print_folds

from agno_compression import CompressionManager, full_messages, is_summary, stats
from agno_compression.testing import Reply, ScriptInfo, ToolCall

SERVICES = ["billing", "search", "auth"]


def read_log(service: str, day: int) -> str:
    """Read one day of a service's log."""
    lines = [f"2026-11-{day:02d}T{h:02d}:00:00 {service} request ok latency={40 + h}ms" for h in range(24)]
    lines += [f"2026-11-{day:02d}T{h:02d}:30:00 {service} ERROR timeout upstream=db-{h % 3}" for h in (3, 9, 17)]
    return "\n".join(lines * 4)


_calls: dict[str, int] = {}


def script(messages: list[Message], info: ScriptInfo) -> Reply:
    """Offline stand-in: read five days of the service named in the current request, then answer."""
    request = [m for m in messages if m.role == "user" and not m.from_history and not is_summary(m)][-1]
    service = next(s for s in SERVICES if s in str(request.content))
    # count our own calls: after a fold the earlier tool results are no longer in ``messages``
    done = _calls[service] = _calls.get(service, -1) + 1
    if done < 5:
        return Reply(
            text=f"Reading {service} day {done + 1}.",
            # fixed call ids: the same prompts, token counts and folds at every run (docs/cli.md shows them)
            tool_calls=[ToolCall("read_log", {"service": service, "day": done + 1}, id=f"call_{service}_{done + 1}")],
        )
    return Reply(text=f"{service}: 3 timeouts a day, all upstream db-0..db-2.")


def main() -> None:
    db_file = database_path("multi_run_session")
    manager = CompressionManager(compress_at_tokens=6_000)
    agent = manager.attach(
        Agent(
            id="log-reviewer",  # a stable owner for `agno-compression inspect` (agno picks a random one otherwise)
            model=pick_model(script),
            tools=[read_log],
            db=SqliteDb(db_file=str(db_file)),
            session_id="ops-review",
            add_history_to_context=True,
            num_history_runs=10,
            system_message="You review service logs and report error patterns.",
            telemetry=False,
        )
    )
    for n, service in enumerate(SERVICES, 1):
        result = agent.run(f"Review five days of {service} logs.")
        print_answer(f"run {n} ({service})", answer_of(result))
    st = stats(agent.db, "ops-review")
    print(
        f"\nsession ops-review: {plural(st.folds, 'fold')}, {plural(st.folded_messages, 'message')} folded, "
        f"{st.tokens_saved:,} tokens saved"
    )
    print(f"full record still has {len(full_messages(agent.db, 'ops-review'))} messages")
    print_folds(manager, db_file, "ops-review")


if __name__ == "__main__":
    main()
