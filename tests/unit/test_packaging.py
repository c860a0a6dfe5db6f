"""The sdist and wheel hold every module and data file the package needs, and their metadata says what is tested.

The distributions are built from this checkout (``python -m build``: the sdist, then the wheel from the sdist, so a
file the sdist leaves out is missing from the wheel too), or taken from ``AGNO_COMPRESSION_DIST`` when .ci/run has
just built them there.
"""

from __future__ import annotations

import email
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from email.message import Message
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

import agno_compression

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, from PyPI (the test extra)
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "agno_compression"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
CLASSIFIED = re.compile(r"Programming Language :: Python :: (3\.\d+)$")


def package_files() -> set[str]:
    """Every file of agno_compression/ the package needs: modules, py.typed and any data, as git tracks them."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", PACKAGE], cwd=ROOT, capture_output=True, text=True, check=False, timeout=60
    )
    if listed.returncode == 0 and listed.stdout:
        names = listed.stdout.split("\0")
    else:  # not a git checkout (an unpacked sdist): what is on disk, caches aside
        names = [p.relative_to(ROOT).as_posix() for p in (ROOT / PACKAGE).rglob("*") if p.is_file()]
    return {n for n in names if n and "__pycache__" not in n and not n.endswith((".pyc", ".pyo"))}


def missing_from_wheel(wheel: Path, needed: set[str]) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return sorted(needed - set(archive.namelist()))


def wheel_metadata(wheel: Path) -> Message:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.message_from_bytes(archive.read(name))


def claimed_pythons() -> list[str]:
    return [m.group(1) for c in PYPROJECT["classifiers"] if (m := CLASSIFIED.match(c))]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("AGNO_COMPRESSION_DIST")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def wheel(dist: Path) -> Path:
    (found,) = dist.glob(f"{PACKAGE}-{agno_compression.__version__}-*.whl")
    return found


@pytest.fixture(scope="module")
def sdist(dist: Path) -> Path:
    (found,) = dist.glob(f"{PACKAGE}-{agno_compression.__version__}.tar.gz")
    return found


def test_the_package_files_are_found() -> None:
    needed = package_files()
    assert {f"{PACKAGE}/__init__.py", f"{PACKAGE}/py.typed", f"{PACKAGE}/tokens/__init__.py"} <= needed
    assert {f"{PACKAGE}/eval/__init__.py", f"{PACKAGE}/testing.py", f"{PACKAGE}/_cli.py"} <= needed


def test_the_wheel_holds_every_module_and_data_file(wheel: Path) -> None:
    assert missing_from_wheel(wheel, package_files()) == []


def test_the_wheel_holds_the_package_and_its_metadata_only(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
    assert tops == {PACKAGE, f"{PACKAGE}-{agno_compression.__version__}.dist-info"}


def test_the_check_names_a_file_left_out_of_a_wheel(wheel: Path, tmp_path: Path) -> None:
    left_out = {f"{PACKAGE}/tokens/_ranks.py", f"{PACKAGE}/py.typed"}
    damaged = tmp_path / wheel.name
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(damaged, "w") as target:
        for item in source.infolist():
            if item.filename not in left_out:
                target.writestr(item, source.read(item))
    assert missing_from_wheel(damaged, package_files()) == sorted(left_out)


def test_the_sdist_holds_the_package_the_license_and_the_changelog(sdist: Path) -> None:
    top = f"{PACKAGE}-{agno_compression.__version__}"
    with tarfile.open(sdist) as archive:
        names = {name.removeprefix(f"{top}/") for name in archive.getnames()}
    expected = {"LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml", "mkdocs.yml", "docs/index.md"}
    assert sorted((package_files() | expected) - names) == []


def test_the_wheel_metadata(wheel: Path) -> None:
    meta = wheel_metadata(wheel)
    assert meta["Name"] == "agno-compression"
    assert meta["Version"] == agno_compression.__version__
    assert meta["License-Expression"] == "MIT"
    assert meta.get_all("License-File") == ["LICENSE"]
    assert SpecifierSet(meta["Requires-Python"]) == SpecifierSet(PYPROJECT["requires-python"])
    assert sorted(meta.get_all("Classifier") or []) == sorted(PYPROJECT["classifiers"])
    with zipfile.ZipFile(wheel) as archive:
        info = f"{PACKAGE}-{agno_compression.__version__}.dist-info"
        assert "MIT License" in archive.read(f"{info}/licenses/LICENSE").decode()
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    assert "agno-compression = agno_compression._cli:main" in entry_points


def test_requires_python_admits_exactly_the_classified_versions() -> None:
    claimed = claimed_pythons()
    spec = SpecifierSet(PYPROJECT["requires-python"])
    minors = [int(v.split(".")[1]) for v in claimed]
    assert minors == list(range(minors[0], minors[-1] + 1)), "the classifiers leave a version out"
    assert all(f"3.{m}.0" in spec for m in minors)
    assert f"3.{minors[0] - 1}.99" not in spec and f"3.{minors[-1] + 1}.0" not in spec
    assert f"{sys.version_info.major}.{sys.version_info.minor}" in claimed  # this run is on a claimed version
