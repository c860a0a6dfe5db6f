"""Every fenced code block of README.md and docs/*.md is run or checked, one test per block (``page.md:LINE``).

- ``python``: run in a fresh process, offline (no connection but to loopback, no provider API key), in an empty
  folder holding what a reader has after the README's first command: ``cookbook/out/`` with the offline demo's
  databases, and ``qwen/tokenizer.json`` (a tiny Hugging Face tokenizer: the file tokens.md points at). A real
  provider's model is built, never called. ``<!-- continues -->`` just above a block runs it after the block before
  it on the page (the README's real-model line after the quickstart).
- ``bash`` / ``console`` / ``shell``: ``bash -n``, then each command: ``agno-compression ...`` parsed (the command
  and every option exist, ``--help`` level) and, when every file it names is one the demo wrote, run on them;
  docs/cli.md's example outputs are compared by ``tests/unit/test_docs_examples.py`` (tests/docs_examples.py);
  ``pip install`` names only extras pyproject.toml has; ``python SCRIPT ARGS`` parsed by the script's own argparse
  (or, for the demo, run); ``python -m MODULE`` names a module that exists.
- ``text`` and unlabelled blocks (output, diagrams): their ``$ command`` lines are checked as above.
- ``sql``: run on the demo's SQLite database; ``json`` / ``toml`` / ``yaml``: parsed.

A block that is deliberately a fragment has ``<!-- not-run: REASON -->`` just above it (readers do not see it):
skipped with that reason. Keep those rare: complete the block instead.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agno_compression._cli import app
from tests.docs_examples import EXAMPLES, cookbook

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DEMO = ("long_tool_loop.py", "multi_run_session.py")
"""The cookbook examples the inputs fixture runs: the README's first command, and the database the docs read."""
MAX_NOT_RUN = 3
OPEN = re.compile(r"^ {0,3}(`{3,})\s*([^`\s]*)[^`]*$")
MARK = re.compile(r"^<!-- (not-run|continues|example)(?::\s*(.*?))?\s*-->$")
SEPARATORS = {"&&", "||", ";", "|", "&"}
FILTERS = {"head", "tail", "grep", "less", "jq", "wc"}
"""Commands shown after a pipe, on the output of the one checked."""
NO_DATA_RUN = {"serve"}
"""Commands not run even with their data at hand (``serve`` serves until stopped)."""

# Runs a block offline: the conftest's rule (loopback only) in the block's own process.
OFFLINE = (
    "import runpy, sys\n"
    "from agno_compression.testing import block_network, drop_api_keys\n"
    "drop_api_keys()\n"
    "block_network('a docs block may not connect to {host}: build a real model, never call it')\n"
    "sys.argv = [sys.argv[1]]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)

# Parses argument lists with a script's own argparse parser, stopping the script where it would parse sys.argv.
PARSE_ONLY = """
import argparse, json, os, runpy, sys
script, lines = sys.argv[1], json.loads(sys.argv[2])
class Found(Exception):
    pass
def found(self, *args, **kwargs):
    raise Found(self)
original = argparse.ArgumentParser.parse_known_args
argparse.ArgumentParser.parse_known_args = found  # parse_args goes through it
sys.argv = [script]
sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
try:
    runpy.run_path(script, run_name="__main__")
except Found as exc:
    parser = exc.args[0]
else:
    sys.exit(script + " parsed no arguments")
argparse.ArgumentParser.parse_known_args = original
bad = []
for args in lines:
    try:
        parser.parse_args(args)
    except SystemExit as exc:
        if exc.code:
            bad.append(args)
print(json.dumps(bad))
"""


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    """The line of the opening fence."""
    lang: str
    body: str
    marks: dict[str, str]
    """The HTML comments just above the fence: ``not-run``, ``continues``, ``example`` and their text."""

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page.name}:{self.line}"


def blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        opened = OPEN.match(lines[i])
        if not opened:
            i += 1
            continue
        fence = opened.group(1)
        end = i + 1
        while end < len(lines) and not re.match(rf"^ {{0,3}}{fence}`*\s*$", lines[end]):
            end += 1
        marks, above = {}, i - 1
        while above >= 0 and (mark := MARK.match(lines[above].strip())):
            marks[mark.group(1)] = mark.group(2) or ""
            above -= 1
        body = "".join(line + "\n" for line in lines[i + 1 : end])
        found.append(Block(page, i + 1, opened.group(2).lower(), body, marks))
        i = end + 1
    return found


ALL = [b for page in PAGES for b in blocks(page)]


# --- what a run folder holds


@pytest.fixture(scope="session")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The offline demo's databases under cookbook/out/ and a tiny tokenizer.json under qwen/: made once."""
    folder = tmp_path_factory.mktemp("docs-inputs")
    (folder / "cookbook" / "out").mkdir(parents=True)
    for example in DEMO:
        cookbook(folder / "cookbook" / "out", example)
    from tokenizers import Tokenizer, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel({"[UNK]": 0, "some": 1, "text": 2}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    (folder / "qwen").mkdir()
    tokenizer.save(str(folder / "qwen" / "tokenizer.json"))
    return folder


def copy_inputs(inputs: Path, folder: Path) -> Path:
    shutil.copytree(inputs, folder, dirs_exist_ok=True)
    return folder


@pytest.fixture
def folder(inputs: Path, tmp_path: Path) -> Path:
    """A copy of the inputs for one block (a block may write beside them)."""
    return copy_inputs(inputs, tmp_path)


# --- commands


@cache
def extras() -> frozenset[str]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return frozenset(project["optional-dependencies"])


def commands(line: str) -> Iterator[tuple[list[str], bool]]:
    """Each command of a shell line (comments dropped), and whether it reads a pipe."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    argv: list[str] = []
    piped = False
    for token in [*lexer, ";"]:
        if token in SEPARATORS:
            if argv:
                yield argv, piped
            argv, piped = [], token == "|"
        else:
            argv.append(token)


def shell_lines(block: Block) -> list[str]:
    """The command lines of a block: every line of a script, the ``$ `` lines of a console or text block."""
    text = block.body.replace("\\\n", " ")
    if block.lang in ("bash", "sh", "shell"):
        return [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [line[2:] for line in text.splitlines() if line.startswith("$ ")]


def check_pip(argv: list[str], comment: str) -> str:
    assert argv[1] == "install", f"pip {argv[1]}: only pip install is checked"
    named = re.findall(r"extras: ([\w, -]+)", comment)
    wanted = [n.strip() for group in named for n in group.split(",")]
    for spec in (a for a in argv[2:] if not a.startswith("-")):
        target, _, rest = spec.partition("[")
        assert target in (".", "agno-compression"), f"pip install {spec}: not this project (teach this test)"
        wanted += [n.strip() for n in rest.rstrip("]").split(",") if n.strip()]
    missing = sorted(set(wanted) - extras())
    assert not missing, f"extras not in pyproject.toml: {missing} (it has {sorted(extras())})"
    return "extras exist"


def check_cli(args: list[str], folder: Path | None) -> str:
    parsed = CliRunner().invoke(app, [*args, "--help"])
    assert parsed.exit_code == 0, f"agno-compression {shlex.join(args)}: {parsed.output}"
    files = [a for a in args[1:] if not a.startswith("-") and ("/" in a or Path(a).suffix)]
    if folder is None or args[0] in NO_DATA_RUN or not files or not all((folder / f).exists() for f in files):
        return "parsed"
    done = subprocess.run(
        [sys.executable, "-m", "agno_compression", *args],
        cwd=folder,
        env={**os.environ, "COLUMNS": "100"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"agno-compression {shlex.join(args)} on the demo: {done.stderr[-2000:]}"
    return "run on the demo"


def check_scripts(calls: dict[str, list[list[str]]]) -> None:
    """Each script's argument lists parse with its own argparse parser (one process per script)."""
    for script, lines in calls.items():
        done = subprocess.run(
            [sys.executable, "-c", PARSE_ONLY, script, json.dumps(lines)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"python {script}: {done.stderr[-2000:]}"
        bad = json.loads(done.stdout.splitlines()[-1])
        assert not bad, f"python {script} rejects {bad}: {done.stderr[-2000:]}"


def check_commands(block: Block, folder: Path | None) -> list[str]:
    """Checks every command line of ``block``; returns how each command was checked."""
    how: list[str] = []
    scripts: dict[str, list[list[str]]] = {}
    for line in shell_lines(block):
        comment = line.split(" #", 1)[1] if " #" in line else ""
        for argv, piped in commands(line):
            program, args = argv[0], argv[1:]
            if piped:
                assert program in FILTERS, f"{shlex.join(argv)}: a pipe into a command this test does not know"
                how.append("filter")
            elif program in (".", "source"):
                assert args and args[0].endswith("bin/activate"), shlex.join(argv)
                how.append("shell set-up")
            elif program in ("pip", "pip3"):
                how.append(check_pip(argv, comment))
            elif program == "agno-compression" or (
                program.startswith("python") and args[:2] == ["-m", "agno_compression"]
            ):
                how.append(check_cli(args[2:] if args[:1] == ["-m"] else args, folder))
            elif program.startswith("python") and args[:1] == ["-m"]:
                import importlib.util

                assert importlib.util.find_spec(args[1]) is not None, f"python -m {args[1]}: no such module"
                how.append("module exists")
            elif program.startswith("python") and args:
                script = args[0]
                assert (ROOT / script).is_file(), f"python {script}: no such file"
                if script.startswith("cookbook/") and Path(script).name in DEMO and len(args) == 1:
                    how.append("run (the demo)")
                else:
                    scripts.setdefault(script, []).append(args[1:])
                    how.append("parsed")
            else:
                raise AssertionError(f"{shlex.join(argv)}: no check for this command (teach this test)")
    check_scripts(scripts)
    return how


# --- the blocks


def run_python(block: Block, folder: Path) -> subprocess.CompletedProcess[str]:
    chain = [block]
    page = [b for b in ALL if b.page == block.page and b.lang == "python" and b.line < block.line]
    while "continues" in chain[0].marks and page:
        chain.insert(0, page.pop())
    script = folder / f"{block.page.stem}_{block.line}.py"
    script.write_text("\n\n".join(b.body for b in chain), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-c", OFFLINE, str(script)], cwd=folder, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="session")
def python_runs(
    inputs: Path, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[dict[str, Future[subprocess.CompletedProcess[str]]]]:
    """The selected Python blocks, each started in its own folder as soon as the inputs are made, a process per
    CPU at a time (the tests wait for theirs)."""
    chosen = {block.name for item in request.session.items if (block := _block_of(item))}
    runs = [b for b in ALL if b.name in chosen and b.lang == "python" and "not-run" not in b.marks]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        yield {
            b.name: pool.submit(run_python, b, copy_inputs(inputs, tmp_path_factory.mktemp(f"{b.page.stem}_{b.line}")))
            for b in runs
        }


def _block_of(item: pytest.Item) -> Block | None:
    """The block a collected test checks (None for the other tests)."""
    block = getattr(getattr(item, "callspec", None), "params", {}).get("block")
    return block if isinstance(block, Block) else None


def check_text(block: Block, folder: Path) -> None:
    shown = {e.name: e for e in EXAMPLES}
    if "example" in block.marks:  # written and compared by tests/docs_examples.py: the command must still parse
        example = shown.get(block.marks["example"])
        assert example is not None, f"{block.name}: no example {block.marks['example']!r} in tests/docs_examples.py"
        assert block.body.startswith(f"$ {example.shown}\n")
        check_commands(block, None)
    else:
        check_commands(block, folder)


def run_sql(block: Block, folder: Path) -> None:
    with sqlite3.connect(folder / "cookbook" / "out" / "multi_run_session.db") as con:
        con.executescript(block.body)


def parse_toml(block: Block, folder: Path) -> None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    tomllib.loads(block.body)


def parse_yaml(block: Block, folder: Path) -> None:
    yaml = pytest.importorskip("yaml")
    yaml.safe_load(block.body)


CHECKS: dict[str, Callable[[Block, Path], object]] = {
    "bash": check_commands,
    "sh": check_commands,
    "shell": check_commands,
    "console": check_text,
    "text": check_text,
    "": check_text,
    "sql": run_sql,
    "json": lambda block, folder: json.loads(block.body),
    "toml": parse_toml,
    "yaml": parse_yaml,
    "yml": parse_yaml,
}


def test_the_pages_have_their_blocks() -> None:
    assert len(ALL) >= 20
    assert {b.lang for b in ALL} - {"python", *CHECKS} == set(), "a block in a language this test cannot check"


def test_fragments_are_marked_with_a_reason_and_stay_rare() -> None:
    not_run = [b for b in ALL if "not-run" in b.marks]
    assert all(b.marks["not-run"] for b in not_run), "<!-- not-run: REASON --> needs its reason"
    assert len(not_run) <= MAX_NOT_RUN, f"complete these blocks instead: {[b.name for b in not_run]}"


@pytest.mark.parametrize("block", ALL, ids=lambda b: b.name)
def test_the_block_runs(
    block: Block, folder: Path, python_runs: dict[str, Future[subprocess.CompletedProcess[str]]]
) -> None:
    if "not-run" in block.marks:
        pytest.skip(f"not run ({block.marks['not-run']})")
    if block.lang != "python":
        CHECKS[block.lang](block, folder)
        return
    done = python_runs[block.name].result()
    if done.returncode:
        pytest.fail(f"{block.name} failed (run in {Path(done.args[-1]).parent}):\n{done.stderr[-3000:]}", pytrace=False)


# --- the checks catch what they are for


def _page(tmp_path: Path, text: str) -> list[Block]:
    page = tmp_path / "page.md"
    page.write_text(text, encoding="utf-8")
    return blocks(page)


def test_the_parser_reads_languages_lines_and_marks(tmp_path: Path) -> None:
    found = _page(
        tmp_path,
        "# t\n\n```python\nx = 1\n```\n\n<!-- continues -->\n```python\nprint(x)\n```\n\n"
        "<!-- not-run: a fragment -->\n````bash\n```\n````\n\n```\nplain\n```\n",
    )
    assert [(b.line, b.lang, b.marks) for b in found] == [
        (3, "python", {}),
        (8, "python", {"continues": ""}),
        (13, "bash", {"not-run": "a fragment"}),
        (17, "", {}),
    ]
    assert found[2].body == "```\n"


@pytest.mark.parametrize(
    "line",
    [
        "agno-compression inspect --db x.db --sesion s",  # an option that does not exist
        "agno-compression inspekt --db x.db",
        "pip install -e '.[test,mutations]'",
        "pip install .  # extras: postgres, nosuch",
        "python bench/mutation.py --lst",
        "python bench/no_such_script.py",
        "python -m no_such_module",
        "make docs",
    ],
)
def test_a_wrong_command_fails(line: str, tmp_path: Path) -> None:
    with pytest.raises(AssertionError):
        check_commands(Block(tmp_path / "page.md", 1, "bash", line + "\n", {}), tmp_path)


def test_a_command_on_the_demo_database_is_run(folder: Path) -> None:
    block = Block(
        folder / "page.md",
        1,
        "console",
        "$ agno-compression inspect --db cookbook/out/multi_run_session.db | head\n",
        {},
    )
    assert check_commands(block, folder) == ["run on the demo", "filter"]
    block = Block(folder / "page.md", 1, "bash", "agno-compression inspect --db cookbook/out/none.db --session x\n", {})
    assert check_commands(block, folder) == ["parsed"]
