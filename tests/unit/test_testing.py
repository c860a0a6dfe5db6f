"""The public test helpers: the loopback guard refuses the network and restores it, the failing summarizer fails."""

from __future__ import annotations

import asyncio
import os
import socket

import pytest

from agno_compression import Summary
from agno_compression.testing import API_KEYS, FailingSummarizer, block_network, offline


def test_offline_refuses_non_loopback_allows_loopback_and_restores_everything(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    guarded = socket.socket.connect  # the suite's own guard (tests/conftest.py)
    with offline("no connection to {host} here"):
        assert not any(key in os.environ for key in API_KEYS)
        with socket.socket() as s, pytest.raises(ConnectionRefusedError, match=r"no connection to 192\.0\.2\.1 here"):
            s.connect(("192.0.2.1", 80))  # TEST-NET-1: refused before any packet is sent
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        with socket.create_connection(("localhost", port), timeout=5):
            pass
    server.close()
    assert os.environ["OPENAI_API_KEY"] == "sk-test"
    assert socket.socket.connect is guarded


def test_block_network_names_the_refused_host_and_undoes() -> None:
    before = socket.socket.connect
    undo = block_network("refused: {host}")
    try:
        with socket.socket() as s, pytest.raises(ConnectionRefusedError, match=r"refused: 198\.51\.100\.7"):
            s.connect(("198.51.100.7", 443))
    finally:
        undo()
    assert socket.socket.connect is before


@pytest.mark.parametrize("how", ["raise", "empty", "blank", "none", "garbage", "hang", "block"])
def test_failing_summarizer_fails_as_named_and_counts_calls(how: str) -> None:
    summarizer = FailingSummarizer(how, hang_seconds=0.01)
    results = []
    for call in (lambda: summarizer.summarize(None), lambda: asyncio.run(summarizer.asummarize(None))):
        if how == "raise":
            with pytest.raises(RuntimeError, match="provider exploded"):
                call()
        else:
            results.append(call())
    assert summarizer.calls == 2
    expected = {
        "empty": Summary("", "failing-empty"),
        "blank": Summary(" \n ", "failing-blank"),
        "none": None,
        "garbage": ["not", "a", "summary"],
        "hang": Summary("late summary", "failing-hang"),
        "block": Summary("late summary", "failing-block"),
    }
    if how != "raise":
        assert results == [expected[how]] * 2
    with pytest.raises(ValueError, match="unknown failure"):
        FailingSummarizer("slow")


@pytest.mark.parametrize(("how", "loop_runs"), [("hang", True), ("block", False)])
def test_hang_awaits_while_block_blocks_the_event_loop(how: str, loop_runs: bool) -> None:
    summarizer = FailingSummarizer(how, hang_seconds=0.2)
    ticks: list[int] = []

    async def ticker() -> None:
        while True:
            ticks.append(1)
            await asyncio.sleep(0.01)

    async def main() -> int:
        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)  # the ticker starts
        before = len(ticks)
        await summarizer.asummarize(None)
        task.cancel()
        return len(ticks) - before

    assert (asyncio.run(main()) > 0) == loop_runs
