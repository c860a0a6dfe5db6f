"""Benchmark: every context strategy side by side on the shared recorded agent runs, offline, in one process.

    python bench/run.py [--quick] [--thresholds 8000 16000 32000] [--out FILE] [--peers | --peers-only]

Replays the recordings of ``../shared/trajectories`` (tau-bench, OpenHands, SWE-agent, TapeAgents)
through real agno Agents (a scripted model plays the recorded assistant turns, real tools return
the recorded outputs), with no compression, agno's ``CompressionManager(compress_token_limit=T)``
and ``Compaction(compact_at_tokens=T)``, and this package's extractive, mask, pipeline and llm
strategies, plus a few long sessions chained from the same recordings. It also times loading a
10,000-message session with 100 folds and measures the memory a manager adds over 100 and 1,000 runs of
one session (``bench/_memory.py``). Writes ``bench/RESULTS.md``; ``--quick`` replays a few small recordings
at one threshold (the smoke test runs it) and writes ``bench/out/RESULTS-quick.md`` (git-ignored), so a
quick run never overwrites the committed results; ``--out`` overrides either.

``--trajectories DIR`` replays another folder of recordings instead (every file below it, in any format
``agno-compression eval`` reads): a held-out set, measured the same way.

Everything is offline: non-loopback connections are refused; agno's token counter gets tiktoken
rank files from the ``bpe-openai`` package through a private ``TIKTOKEN_CACHE_DIR``; summaries
that agno's built-ins and the ``llm`` strategy ask a model for are written by a deterministic
offline stand-in model (``_offline.digest``).

``--peers`` adds rows for peer libraries replayed on the same recordings (``bench/_peers.py``: LangChain's
``SummarizationMiddleware``, OpenHands SDK's condensers, Google ADK's events compaction), each with a fake
model of that library and the same stand-in summarizer; a peer whose package is not installed (the
``bench`` extra) is skipped with one line saying so. ``--peers-only`` replays just what the peer table
needs: the uncompressed baseline, the peers and only the settings given with ``--settings`` (none by
default), no session-load test; it writes ``bench/out/RESULTS-peers.md`` unless ``--out`` says otherwise.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _baselines  # noqa: E402
import _billing  # noqa: E402
import _memory  # noqa: E402
import _offline  # noqa: E402
import _pareto  # noqa: E402
import _peers  # noqa: E402
import _replays  # noqa: E402
import _report  # noqa: E402
import _session_load  # noqa: E402
from agno.models.message import Message  # noqa: E402

from agno_compression.eval import (  # noqa: E402
    Trajectory,
    iter_shared_trajectories,
    load_trajectories,
    observations_as_tool_calls,
)
from agno_compression.tokens import TokenCounter  # noqa: E402

DEFAULT_TRAJECTORIES = HERE.parent.parent / "shared" / "trajectories"
DEFAULT_OUT = HERE / "RESULTS.md"
QUICK_OUT = HERE / "out" / "RESULTS-quick.md"
PEERS_OUT = HERE / "out" / "RESULTS-peers.md"
"""Where ``--quick`` writes without ``--out``: bench/out/ is git-ignored, bench/RESULTS.md is the committed full run."""
LONG = "long sessions"
"""Source name of the sessions chained from several recordings of one source."""
CHAIN_MESSAGES = 240
"""A chained session takes the longest recordings of its source until it has at least this many messages."""
_COUNTER = TokenCounter("gpt-4o")


def chain(trajectories: Sequence[Trajectory], source: str, min_messages: int) -> Trajectory | None:
    """One session made of ``source``'s longest recordings, one after the other (one system prompt).

    Each recording keeps its own user messages, so it adds one or more runs to the session and
    later runs see the earlier ones as history. Tool call ids are prefixed per recording so no
    two calls of the session share an id.
    """
    picked = sorted((t for t in trajectories if t.source == source), key=lambda t: -len(t.messages))
    messages: list[Message] = []
    used = 0
    for k, t in enumerate(picked):
        for m in observations_as_tool_calls(t.messages):
            if m.role in ("system", "developer") and messages:
                continue
            update: dict[str, object] = {}
            if m.tool_calls:
                update["tool_calls"] = [{**c, "id": f"t{k}-{c.get('id')}"} for c in m.tool_calls]
            if m.tool_call_id:
                update["tool_call_id"] = f"t{k}-{m.tool_call_id}"
            messages.append(m.model_copy(update=update) if update else m)
        used += 1
        if len(messages) >= min_messages:
            break
    if not messages:
        return None
    return Trajectory(source=LONG, name=f"{source} x{used} chained", messages=messages)


def select_quick(trajectories: Sequence[Trajectory], threshold: int, per_source: int = 1) -> list[Trajectory]:
    """The smallest recordings of each source whose conversation alone is over ``threshold`` tokens."""
    chosen: list[Trajectory] = []
    for source in dict.fromkeys(t.source for t in trajectories):
        over = [
            t
            for t in trajectories
            if t.source == source and _COUNTER.count_messages(observations_as_tool_calls(t.messages)) > threshold
        ]
        chosen += sorted(over, key=lambda t: len(t.messages))[:per_source]
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few small recordings, one threshold, small session")
    parser.add_argument("--thresholds", type=int, nargs="+", help="token thresholds (default 8000 16000 32000)")
    parser.add_argument("--settings", nargs="+", choices=_replays.SETTINGS[1:], help="strategies to compare")
    parser.add_argument(
        "--trajectories",
        type=Path,
        default=DEFAULT_TRAJECTORIES,
        help="the shared trajectories folder, or any folder of recordings (default ../shared/trajectories)",
    )
    parser.add_argument(
        "--out", type=Path, help="results file (default bench/RESULTS.md; with --quick bench/out/RESULTS-quick.md)"
    )
    parser.add_argument("--session-messages", type=int, help="messages in the session-load test (default 10000)")
    parser.add_argument("--session-folds", type=int, help="fold records in the session-load test (default 100)")
    parser.add_argument(
        "--target-ratio", type=float, help="what-if: target_ratio for this package's managers (default: theirs)"
    )
    parser.add_argument("--repeats", type=int, help="timed rounds per recording and threshold (default 3; quick 1)")
    parser.add_argument("--profile", metavar="SETTING", help="profile SETTING on the long sessions with pyinstrument")
    parser.add_argument("--peers", action="store_true", help="add peer libraries' rows (needs the bench extra)")
    parser.add_argument(
        "--peers-only",
        action="store_true",
        help="baseline + peers (+ --settings) only, no session-load test; writes bench/out/RESULTS-peers.md",
    )
    parser.add_argument(
        "--billing",
        type=int,
        nargs="*",
        metavar="THRESHOLD",
        help="bill replays through agno's Claude and OpenAIChat at these thresholds (default 8000 16000; "
        "none with --quick and --peers-only; --billing alone turns it off)",
    )
    parser.add_argument("--workers", type=int, default=2, help="processes for the billing replays (default 2)")
    parser.add_argument("-v", "--verbose", action="store_true", help="show agno's and our log lines")
    args = parser.parse_args(argv)
    if args.out is None:
        args.out = QUICK_OUT if args.quick else PEERS_OUT if args.peers_only else DEFAULT_OUT
    if not args.trajectories.is_dir():
        print(f"error: no trajectory folder at {args.trajectories}", file=sys.stderr)
        return 2
    thresholds = args.thresholds or ([8_000] if args.quick else [8_000, 16_000, 32_000])
    settings = list(args.settings or ([] if args.peers_only else _replays.SETTINGS[1:]))
    peers: list[str] = []
    if args.peers or args.peers_only:
        peers, skipped = _peers.available()
        if skipped:
            print(skipped, file=sys.stderr)
    n_messages = args.session_messages or (1_000 if args.quick else 10_000)
    n_folds = args.session_folds or (10 if args.quick else 100)
    load_repeats = 3 if args.quick else 15
    repeats = args.repeats or (1 if args.quick else 3)

    if not args.verbose:
        logging.disable(logging.WARNING)  # agno and agno-compression warn on purpose (tight budgets); keep output short
        warnings.simplefilter("ignore")
    _offline.forbid_network()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="agno-compression-bench-") as tmp:
        work = Path(tmp)
        encodings = _offline.provide_tiktoken_rank_files(work / "tiktoken")
        _offline.check_agno_counts_offline()

        def say(text: str) -> None:
            print(f"[{time.perf_counter() - started:7.1f}s] {text}", file=sys.stderr, flush=True)

        # the shared folder, or any folder of recordings (a held-out set): every file below it, by its format
        real = list(iter_shared_trajectories(args.trajectories)) or load_trajectories(args.trajectories)
        if args.quick:
            recordings = select_quick(real, min(thresholds))
        else:
            long = [c for s in dict.fromkeys(t.source for t in real) if (c := chain(real, s, CHAIN_MESSAGES))]
            recordings = real + long
        say(f"{len(recordings)} recordings; thresholds {thresholds}; settings {settings}")
        if args.profile:
            return _profile(args.profile, thresholds, [r for r in recordings if r.source == LONG] or recordings, work)

        def replay(t: Trajectory, setting: str, threshold: int, analyse: bool = True) -> _replays.Replayed:
            return _replays.replay_one(
                t,
                setting,
                threshold,
                work,
                summarizer_factory=_offline.standin_summarizer,
                analyse=analyse,
                target_ratio=args.target_ratio,
            )

        warm = min(recordings, key=lambda t: len(t.messages))
        for setting in ["none", *settings]:  # imports, encodings, SQLite: not part of any timing
            replay(warm, setting, min(thresholds))
        baseline = {}
        for i, t in enumerate(recordings, 1):
            baseline[t.name] = replay(t, "none", 0)
            if i % 50 == 0:
                say(f"baseline {i}/{len(recordings)}")
        rows: list[_replays.Replayed] = []
        for threshold in thresholds:
            eligible = [t for t in recordings if max(baseline[t.name].tokens, default=0) > threshold]
            say(f"{threshold}: {len(eligible)} recordings over the threshold without compression")
            for t in eligible:
                rows += _paired(t, threshold, settings, repeats, replay)
                rows += _baselines.rows(t, baseline[t.name].requests, threshold)
        for peer in peers:
            _peers.warm(peer, warm, min(thresholds))
            for threshold in thresholds:
                eligible = [t for t in recordings if max(baseline[t.name].tokens, default=0) > threshold]
                say(f"{peer} at {threshold}: {len(eligible)} recordings")
                for t in eligible:
                    rows += _peers.ROWS[peer](t, threshold, repeats)
        peer_settings = [s for p in peers for s in _peers.settings(p)]
        billing_at = (
            args.billing if args.billing is not None else ([] if args.quick or args.peers_only else [8_000, 16_000])
        )
        billed: list[_billing.Billed] = []
        if billing_at:
            over = [t for t in recordings if max(baseline[t.name].tokens, default=0) > min(billing_at)]
            say(f"billing through agno's Claude and OpenAIChat: {len(over)} recordings at {billing_at}")
            billed = _billing.run_all(over, billing_at, str(work / "tiktoken"), workers=args.workers)
        load = memory = None
        if not args.peers_only:
            say(f"session load: {n_messages} messages, {n_folds} folds")
            load = _session_load.run(work, [t.messages for t in real], n_messages, n_folds, load_repeats)
            points = _memory.QUICK_POINTS if args.quick else _memory.POINTS
            say(f"memory of one long session: {', '.join(map(str, points))} runs")
            memory = _memory.measure(work, points=points, parallel=2)
        command = "python bench/run.py" + (" --quick" if args.quick else "")
        command += " --peers-only" if args.peers_only else " --peers" if args.peers else ""
        if args.thresholds:
            command += " --thresholds " + " ".join(map(str, thresholds))
        if args.settings:
            command += " --settings " + " ".join(settings)
        if args.target_ratio is not None:
            command += f" --target-ratio {args.target_ratio}"
        if args.repeats:
            command += f" --repeats {repeats}"
        if args.session_messages or args.session_folds:
            command += f" --session-messages {n_messages} --session-folds {n_folds}"
        if args.billing is not None:
            command += " --billing" + "".join(f" {th}" for th in args.billing)
        every = [*settings, *peer_settings, *_baselines.BASELINES]  # the rows' order in every table
        seconds = time.perf_counter() - started
        text = _report.render(
            command=command,
            thresholds=thresholds,
            settings=every,
            recordings=recordings,
            baseline=baseline,
            rows=rows,
            load=load,
            memory=memory,
            encodings=encodings,
            seconds=seconds,
        )
        text += "\n".join(_pareto.section(args.out.parent, thresholds, every, recordings, baseline, rows)) + "\n"
        if billed:
            text += "\n" + "\n".join(_billing.section(billed, billing_at, command)) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    say(f"wrote {args.out}")
    return 0


def _paired(
    t: Trajectory,
    threshold: int,
    settings: Sequence[str],
    repeats: int,
    replay: Callable[[Trajectory, str, int, bool], _replays.Replayed],
) -> list[_replays.Replayed]:
    """Replay ``t`` with every setting, next to an uncompressed replay, ``repeats`` rounds in rotating order.

    The first replay of each setting gives the figures; wall and CPU time are the medians over the
    rounds, and so are those of the uncompressed replays of the same rounds, so drift and other
    processes on the machine hit both sides of every ratio alike.
    """
    order = ["none", *settings]
    first: dict[str, _replays.Replayed] = {}
    walls: dict[str, list[float]] = {s: [] for s in order}
    cpus: dict[str, list[float]] = {s: [] for s in order}
    for r in range(repeats):
        for setting in order[r % len(order) :] + order[: r % len(order)]:
            row = replay(t, setting, threshold, setting not in first and setting != "none")
            first.setdefault(setting, row)
            walls[setting].append(row.wall)
            cpus[setting].append(row.cpu)
    rows = []
    for setting in settings:
        row = first[setting]
        row.wall, row.cpu = statistics.median(walls[setting]), statistics.median(cpus[setting])
        row.wall_none, row.cpu_none = statistics.median(walls["none"]), statistics.median(cpus["none"])
        rows.append(row)
    return rows


def _profile(setting: str, thresholds: Sequence[int], recordings: Sequence[Trajectory], work: Path) -> int:
    """Replay ``recordings`` with ``setting`` at the first threshold under pyinstrument and print the profile."""
    try:
        from pyinstrument import Profiler
    except ImportError:
        print("error: --profile needs pyinstrument (pip install pyinstrument)", file=sys.stderr)
        return 2
    run: Callable[[Trajectory], _replays.Replayed] = lambda t: _replays.replay_one(  # noqa: E731
        t, setting, thresholds[0], work, summarizer_factory=_offline.standin_summarizer
    )
    run(recordings[0])  # warm-up
    profiler = Profiler(interval=0.0005)
    profiler.start()
    for t in recordings:
        run(t)
    profiler.stop()
    print(profiler.output_text(unicode=True, color=False, show_all=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
