"""What a shell command does to files: for the ledger (read, edited, created) and for the working set (prints a
file whole, writes it whole, or may change it)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agno_compression._keeping import _shell
from agno_compression._keeping._shell import shell_command, shell_read, shell_write, stale_after
from tests.strategies import examples


@pytest.mark.parametrize(
    ("command", "path"),
    [
        ("cat /src/c.py", "/src/c.py"),
        ("cat -n src/c.py", "src/c.py"),
        ("Get-Content C:\\Users\\me\\s.py", "C:\\Users\\me\\s.py"),
        ("Get-Content -Path 'a b.py'", None),
        ("cat a.py | grep x", None),
        ("cat a.py b.py", None),
        ("cat $FILE", None),
        ("cat *.py", None),
        ("cat a.py\nrm a.py", None),
    ],
)
def test_a_command_that_only_prints_one_whole_file_reads_it(command: str, path: str | None) -> None:
    assert shell_read({"command": command}) == path


def test_agnos_shell_tools_give_the_command_as_a_list() -> None:
    assert shell_read({"args": ["cat", "src/c.py"], "tail": 100}) == "src/c.py"
    assert shell_command({"args": ["sed", "-i", "s/a/b/", "c.py"]}) == "sed -i s/a/b/ c.py"
    assert shell_command({"args": ["ls", 3]}) is None and shell_command({"path": "x"}) is None


@pytest.mark.parametrize(
    ("command", "line"),
    [
        (["bash", "-lc", "sed -n '1,40p' src/c.py"], "sed -n '1,40p' src/c.py"),  # Codex CLI's shell tool
        (["/bin/zsh", "-c", "cat a.py"], "cat a.py"),
        (["pwsh.exe", "-Command", "Get-Content a.py"], "Get-Content a.py"),
        (["git", "status", "--short"], "git status --short"),
        (["bash", "script.sh"], "bash script.sh"),
        ([], None),
    ],
)
def test_a_command_given_as_an_argument_list_is_the_script_its_shell_runs(command: list, line: str | None) -> None:
    assert shell_command({"command": command, "workdir": "/repo"}) == line


@pytest.mark.parametrize(
    ("command", "written"),
    [
        ("cat > /a/b.py << 'EOF'\nx = 1\ny = 2\nEOF", ("/a/b.py", "x = 1\ny = 2")),
        ("cat <<EOF > b.py\nhello\nEOF", ("b.py", "hello")),
        ("$content = @'\nline1\nline2\n'@\n$content | Set-Content C:\\M\\s.py", ("C:\\M\\s.py", "line1\nline2")),
        ("$c = @\"\nA\n\"@\n$c | Set-Content -Path 'x.ps1' -Encoding UTF8", ("x.ps1", "A")),
        ("cat > b.py << 'EOF'\nx\nEOF\npython b.py", None),  # does more than write: not a plain write
        ("cat > b.py << 'EOF'\nx\nEND", None),  # the document does not end where it says
        ("echo hi > a.py", None),
    ],
)
def test_a_here_document_written_to_one_file_writes_it_whole(command: str, written: tuple[str, str] | None) -> None:
    assert shell_write({"command": command}) == written


@pytest.mark.parametrize(
    ("command", "stale"),
    [
        ("sed -i 's/a/b/' src/c.py", True),
        ("echo y >> /x/src/c.py", True),
        ("(Get-Content c.py) -replace 'a', 'b' | Set-Content c.py", True),
        ("mv c.py d.py", True),
        ("git checkout -- src/c.py", True),
        ("python c.py 2>&1 | tail", False),
        ("grep -n 'x >= 1' c.py", False),
        ("echo y > cc.py", False),
        ("sed -i 's/a/b/' other.py", False),
    ],
)
def test_a_command_that_may_change_a_file_it_names_makes_it_stale(command: str, stale: bool) -> None:
    assert stale_after(command, "/x/src/c.py") is stale


def test_what_a_command_does_to_the_files_it_names_for_the_ledger() -> None:
    assert _shell.shell_kind("cat src/app.py") == "read"
    assert _shell.shell_kind("sed -i 's/a/b/' src/app.py") == "edited"
    assert _shell.shell_kind("sed -n '1,20p' src/app.py") is None, "sed without -i prints"
    assert _shell.shell_kind("echo x >> notes.md") == "edited"
    assert _shell.shell_kind("python gen.py > out.json") == "created"
    assert _shell.shell_kind("pytest tests/") is None
    assert _shell.shell_kind("gh pr create --body 'a -> b, see <dir>/x.md'") is None, "quoted: text, not syntax"
    assert _shell.shell_kind('echo "a > b" > c.txt') == "created"
    assert _shell.shell_kind("make test > /dev/null 2>&1") is None, "output thrown away creates nothing"
    assert _shell.redirect_targets("rg x src/ 2>/dev/null >> hits.log") == ["hits.log"]
    assert _shell.shell_targets("rg x src/ > hits.log", ["src/", "hits.log"]) == ["hits.log"]
    assert _shell.shell_targets("touch a.py b.py > /dev/null", ["a.py", "b.py"]) == ["a.py", "b.py"]
    script = "cat <<'EOF' > repro.py\nopen('data/input.json')\nEOF\npython repro.py"
    assert _shell.without_heredoc_bodies(script) == "cat <<'EOF' > repro.py\npython repro.py"


_ARGUMENT = st.text(alphabet="ab./ ->&<|;$\"\\'\n", max_size=40)


@settings(max_examples=examples(300), deadline=None)
@given(_ARGUMENT, st.sampled_from(["'", '"']))
def test_nothing_inside_a_quoted_argument_is_a_redirection(text: str, quote: str) -> None:
    escaped = text.replace("'", "") if quote == "'" else text.replace("\\", "").replace('"', "")
    command = f"gh issue create --body {quote}{escaped}{quote}"
    assert _shell.redirect_targets(command) == []
    assert _shell.redirect_targets(f"{command} > out.md") == ["out.md"]
