"""Mutation testing of the core promises with mutmut 3, one module at a time (docs/mutation.md).

    pip install -e '.[test,mutation]'
    python bench/mutation.py                 # every target (docs/mutation.md: time)
    python bench/mutation.py plan metrics    # some targets
    python bench/mutation.py --list          # the targets, their functions and tests
    python bench/mutation.py --survivors plan  # after adding tests: re-run what the last run left alive

Each target runs in its own scratch copy of the repository (``.mutation/<target>``, git-ignored), whose
``pyproject.toml`` gets a ``[tool.mutmut]`` section naming that module and that target's narrow test selection;
mutmut then copies the scratch into its ``mutants/`` and runs, for every mutant, only the selected tests that
reach the mutated function, fastest first, with the fork server's heap frozen for the garbage collector
(``bench/_mutation_plugin.py``). Only the functions that hold a promise are mutated (the globs below). Hypothesis
properties run on at most ``AGNO_COMPRESSION_MAX_EXAMPLES`` examples here. Never more than one mutmut process:
targets run one after another with ``--max-children 2``. Results: ``bench/out/mutation-<target>.txt`` (every
mutant and its status) and a summary table on stdout. Not part of the pytest run or CI.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRATCH = ROOT / ".mutation"
OUT = ROOT / "bench" / "out"
CHILDREN = 2
MAX_EXAMPLES = 40


@dataclass(frozen=True)
class Target:
    modules: tuple[str, ...]
    functions: tuple[str, ...]
    """Mutant name globs (mutmut's mangling: ``x_<function>`` and ``xǁ<Class>ǁ<method>``)."""
    tests: tuple[str, ...]
    deselect: tuple[str, ...] = ()
    """Tests left out of the mutation run (a subprocess per run costs more than it adds there)."""


M = "agno_compression."
_STORE_TESTS = (
    "tests/unit/test_store.py",
    "tests/integration/test_persistence.py::test_three_runs_fold_filter_and_lose_nothing[sqlite]",
    "tests/integration/test_persistence.py::test_folds_count_when_agno_leaves_tool_messages_out_of_storage",
)
TARGETS = {
    # fold planning, pair safety, filter on load
    "plan": Target(
        ("agno_compression/_plan.py",),
        tuple(
            f"{M}_plan.{name}__mutmut_*"
            for name in (
                "x_summary_kind",
                "x_is_summary",
                "x_make_summary_message",
                "xǁFoldPlanǁ*",
                "x__is_attachment",
                "x_find_current_user",
                "x__last_batch_index",
                "x__pair_closure",
                "x__pending_calls",
                "x__orphan_results",
                "x_plan_fold",
                "x_pair_violations",
                "x_filter_folded",
            )
        ),
        (
            "tests/unit/test_plan.py",
            "tests/unit/test_store.py::test_filter_folded_properties",
            "tests/unit/test_store.py::test_filter_folded_drops_a_whole_tool_batch_and_keeps_the_rest",
        ),
    ),
    # the union of fold records, the newest summary, rows counted only when their run was stored
    "store": Target(
        (
            "agno_compression/_stores/_base.py",
            "agno_compression/_stores/_sql.py",
            "agno_compression/_stores/_choice.py",
        ),
        tuple(
            f"{M}_stores.{name}__mutmut_*"
            for name in (
                "_base.x_merge_rows",
                "_choice.x_load_counted",
                "_sql.xǁSQLAlchemyStoreǁload",
                "_sql.xǁSQLAlchemyStoreǁevents",
            )
        ),
        _STORE_TESTS,
    ),
    # which stored messages and runs a fold row is checked against (agno's side of the session)
    "sessions": Target(
        ("agno_compression/_sessions.py",),
        (f"{M}_sessions.x_stored_ids_of__mutmut_*", f"{M}_sessions.xǁStoredIdsǁ*__mutmut_*"),
        _STORE_TESTS,
    ),
    # the post-hook restore and the summarizer fallback, sync and async
    "manager": Target(
        ("agno_compression/_manager.py", "agno_compression/_runs.py", "agno_compression/_runner.py"),
        (
            f"{M}_manager.xǁCompressionManagerǁrestore_run_messages__mutmut_*",
            f"{M}_runs.xǁRunStateǁfull_run__mutmut_*",
            f"{M}_runs.xǁRunRegistryǁpop__mutmut_*",
            f"{M}_runner.x_drive__mutmut_*",
            f"{M}_runner.x_adrive__mutmut_*",
            f"{M}_runner.x__in_thread__mutmut_*",
            f"{M}_runner.xǁSummarizerRunnerǁ*",
        ),
        (
            *(
                f"tests/integration/test_manager.py::{test}"
                for test in (
                    "test_failing_summarizer_falls_back_to_extractive",
                    "test_a_working_custom_summarizer_is_used_as_it_is",
                    "test_llm_summarizer_uses_the_agents_model_and_is_accounted_separately",
                    "test_the_post_hook_puts_every_folded_message_back_in_order",
                    "test_the_post_hook_never_breaks_a_run",
                    "test_runs_sharing_messages_each_get_their_own_back",
                    "test_without_a_context_the_post_hook_finds_the_run_that_saw_the_messages",
                    "test_the_post_hook_leaves_a_run_it_never_saw_alone",
                    "test_long_loop_stays_under_budget_and_loses_nothing[extractive-sync]",
                )
            ),
            "tests/integration/test_manager_fallback.py",
            # the post-hook's policy usage accounting and session_data mirror
            "tests/integration/test_observation_policies.py::test_observation_summary_by_model_is_accounted_as_compression_usage",
            "tests/integration/test_observation_policies.py::test_a_failing_policy_keeps_the_output_and_the_budget_check_goes_on",
            "tests/integration/test_persistence.py::test_session_data_mirrors_the_records_and_stats_agree[sqlite]",
        ),
    ),
    # streaming usage counted once
    # streaming usage counted once: the arithmetic and what a stream's end (or cut) does with it; the provider
    # table and the class patch are wiring, exercised through real providers by tests/integration/test_stream_usage
    "metrics": Target(
        ("agno_compression/_metrics.py",),
        tuple(
            f"{M}_metrics.{name}__mutmut_*"
            for name in (
                "x__check_style",
                "x__is_number",
                "x__counters",
                "x__copy",
                "x__minus",
                "x_is_running_total",
                "x_usage_increment",
                "x_is_zero",
                "xǁStreamUsageǁ*",
                "x__assistant_message",
                "x__counted",
                "x__keep_counted",
                "x__stream_usage",
            )
        ),
        ("tests/unit/test_metrics.py",),
    ),
    # truncate_output and everything it calls
    "observations": Target(
        (
            "agno_compression/_observations/_cuts.py",
            "agno_compression/_observations/_structure.py",
            "agno_compression/_observations/_truncation.py",
        ),
        (
            f"{M}_observations._cuts.*",
            f"{M}_observations._structure.*",
            f"{M}_observations._truncation.x__truncate_text__mutmut_*",
            f"{M}_observations._truncation.x_truncate_output__mutmut_*",
        ),
        ("tests/unit/test_observations.py",),
        # two interpreters per run; its in-process twin test_set_items_are_shown_sorted stays
        ("tests/unit/test_observations.py::test_set_output_is_the_same_under_two_hash_seeds",),
    ),
}


def _toml_list(items: tuple[str, ...] | list[str]) -> str:
    return "[" + ", ".join(f'"{i}"' for i in items) + "]"


def _scratch(name: str, target: Target) -> Path:
    """A copy of the repository whose ``[tool.mutmut]`` names this target (mutmut's cache kept between runs)."""
    where = SCRATCH / name
    keep = where / "mutants"
    if keep.exists() and not (keep / "mutmut-stats.json").exists():
        shutil.rmtree(keep)  # a run stopped while mutmut generated mutants: its half-written copies are not a cache
    ignore = shutil.ignore_patterns(
        ".git", ".mutation", "mutants", ".venv", "__pycache__", ".*_cache", ".hypothesis", "out", "*.db"
    )
    if where.exists():
        for child in where.iterdir():
            if child != keep:
                shutil.rmtree(child) if child.is_dir() else child.unlink()
    for item in ROOT.iterdir():
        if item.name in (".git", ".mutation", "mutants", ".venv") or item.name.endswith("_cache"):
            continue
        dest = where / item.name
        if item.is_dir():
            shutil.copytree(item, dest, ignore=ignore)
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(item, dest)
    # gc frozen before each mutant's tests, fastest tests first (bench/_mutation_plugin.py): same verdicts, sooner
    shutil.copy2(ROOT / "bench" / "_mutation_plugin.py", where / "_mutation_plugin.py")
    pyproject = (where / "pyproject.toml").read_text()
    deselect = [arg for test in target.deselect for arg in ("--deselect", test)]
    pytest_args = ["-x", "-q", "-p", "no:cacheprovider", "-p", "_mutation_plugin", *deselect]
    section = (
        "[tool.mutmut]\n"
        'source_paths = ["agno_compression"]\n'
        f"only_mutate = {_toml_list(target.modules)}\n"
        'also_copy = ["_mutation_plugin.py"]\n'
        f"pytest_add_cli_args = {_toml_list(pytest_args)}\n"
        f"pytest_add_cli_args_test_selection = {_toml_list(target.tests)}\n"
        # fork each mutant's run from a process that ran no test: module-level caches (the fixed stream classes)
        # filled by the clean run would otherwise hide mutants of the code that fills them
        'process_isolation = "forkserver"\n'
    )
    pyproject = re.sub(r"\[tool\.mutmut\]\n(?:[^\[].*\n|\n)*", "", pyproject) + "\n" + section
    (where / "pyproject.toml").write_text(pyproject)
    return where


def run(name: str, target: Target, survivors: bool = False) -> dict[str, int]:
    report = OUT / f"mutation-{name}.txt"
    names = list(target.functions)
    before: dict[str, str] = {}
    if survivors and report.exists():
        # re-check only what the last run left alive (after adding tests); the rest keeps its status
        before = dict(line.rsplit(": ", 1) for line in report.read_text().splitlines())
        names = [key for key, status in before.items() if status not in ("killed", "timeout")]
        if not names:
            names = list(target.functions)
    where = _scratch(name, target)
    env = {**os.environ, "AGNO_COMPRESSION_MAX_EXAMPLES": str(MAX_EXAMPLES), "PYTHONHASHSEED": "0"}
    mutmut = [sys.executable, "-m", "mutmut"]
    started = time.monotonic()
    subprocess.run([*mutmut, "run", "--max-children", str(CHILDREN), *names], cwd=where, env=env)
    listing = subprocess.run(
        [*mutmut, "results", "--all", "true"], cwd=where, env=env, capture_output=True, text=True, check=True
    ).stdout
    rows = []
    for line in listing.splitlines():
        key, _, status = line.strip().rpartition(": ")
        if key and any(_matches(key, glob) for glob in target.functions):
            if status == "not checked" and key in before:
                status = before[key]  # not re-run this time (a changed test selection resets mutmut's cache)
            rows.append((key, status))
    OUT.mkdir(parents=True, exist_ok=True)
    report.write_text("".join(f"{k}: {s}\n" for k, s in sorted(rows)))
    counts: dict[str, int] = {}
    for _, status in rows:
        counts[status] = counts.get(status, 0) + 1
    counts["seconds"] = round(time.monotonic() - started)
    return counts


def _matches(key: str, glob: str) -> bool:
    import fnmatch

    return fnmatch.fnmatch(key, glob)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("targets", nargs="*", help=f"some of {', '.join(TARGETS)} (default: all)")
    parser.add_argument("--list", action="store_true", help="show the targets and exit")
    parser.add_argument(
        "--survivors", action="store_true", help="re-run only the mutants the last run of each target left alive"
    )
    args = parser.parse_args(argv)
    if args.list:
        for name, t in TARGETS.items():
            print(f"{name}: {' '.join(t.modules)}\n  tests: {' '.join(t.tests)}\n  mutants: {' '.join(t.functions)}")
        return 0
    unknown = [t for t in args.targets if t not in TARGETS]
    if unknown:
        parser.error(f"unknown target(s) {', '.join(unknown)}; choose from {', '.join(TARGETS)}")
    results = {name: run(name, TARGETS[name], args.survivors) for name in (args.targets or TARGETS)}
    print("\n| target | module | mutants | killed | timeout | survived | other | kill rate | time |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, c in results.items():
        total = sum(v for k, v in c.items() if k != "seconds")
        dead = c.get("killed", 0) + c.get("timeout", 0)
        other = total - dead - c.get("survived", 0)
        rate = f"{100 * dead / total:.1f}%" if total else "-"
        modules = ", ".join(f"`{m}`" for m in TARGETS[name].modules)
        print(
            f"| {name} | {modules} | {total} | {c.get('killed', 0)} | {c.get('timeout', 0)} "
            f"| {c.get('survived', 0)} | {other} | {rate} | {c['seconds']} s |"
        )
    print(f"\nevery mutant and its status: {OUT}/mutation-<target>.txt")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
