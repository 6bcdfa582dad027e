"""The repository carries its own references: docs/wire.md, docs/host.md, docs/decisions.md.

The documents the project grew from (WIRE.md, HOST.md, DESIGN-NOTES in a `shared` folder beside
the checkout) are not in the repository, and a person who clones it has none of them. So:

- nothing in the repository cites them, and the package (what people install) does not even
  name the folder they live in; only tests that read the recorded steps there at run time
  (and skip without them) and docs/wire.md §8, which says where the recordings come from,
  name that folder;
- every section a citation names (``docs/wire.md §4``, ``docs/decisions.md §10``) exists.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO_ROOT

# What people install: the core, the omnigent adapter, and the simulator's distribution.
PACKAGE_DIRS = ("omnigent_agy", "omnigent_harness_agy", "agy-sim")
THIS_FILE = Path(__file__).resolve()

_OLD_DOCUMENTS = re.compile(r"\bWIRE\.md\b|\bHOST\.md\b|\bDESIGN[-_ ]NOTES\b")
_SHARED_FOLDER = re.compile(r"\.\./shared\b|/work/shared\b")
# A citation and the sections it names: "docs/wire.md §3/§6", "§1-§2", "§4 to §6", split
# over a line break inside a comment ("docs/wire.md\n    # §4").
_CITATION = re.compile(
    r"docs/(wire|decisions|host)\.md[\s#*]*(§\w+(?:\s*(?:/|-|\u2013|,|to|and|or)\s*§\w+)*)"
)
_SECTION = re.compile(r"§(\w+)")
_HEADING = re.compile(r"^## (\w+)\. ", re.MULTILINE)

_SKIPPED_DIRS = frozenset(
    {".git", ".tox", ".artifacts", "__pycache__", "node_modules", "build", "dist"}
)


def _text_files(root: Path) -> Iterator[Path]:
    """Every text file under `root`, outside VCS data, caches, venvs and build output."""
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = sorted(
            name
            for name in dirs
            if name not in _SKIPPED_DIRS
            and not name.endswith((".egg-info", "_cache"))
            and not name.startswith(".venv")
            and not (here / name / "pyvenv.cfg").exists()
        )
        for name in sorted(files):
            path = here / name
            if path.is_file() and b"\0" not in path.read_bytes():  # images are binary
                yield path


def _hits(path: Path, pattern: re.Pattern[str]) -> list[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    return [
        f"{path}:{number}: {line.strip()}"
        for number, line in enumerate(text.splitlines(), 1)
        if pattern.search(line)
    ]


def old_references(root: Path) -> list[str]:
    """Lines citing WIRE.md, HOST.md or DESIGN-NOTES anywhere under `root`, and lines of the
    package naming the shared folder."""
    found: list[str] = []
    for path in _text_files(root):
        if path.resolve() == THIS_FILE:
            continue
        found += _hits(path, _OLD_DOCUMENTS)
        top = path.relative_to(root).parts[0]
        if top in PACKAGE_DIRS:
            found += _hits(path, _SHARED_FOLDER)
    return found


def sections(document: Path) -> frozenset[str]:
    """The numbers of a document's `## N. Title` sections (`1`, `1b`, …)."""
    return frozenset(_HEADING.findall(document.read_text(encoding="utf-8")))


def dangling_citations(root: Path) -> list[str]:
    """Citations of a section its document does not have (host.md has no numbered sections)."""
    known = {
        "wire": sections(root / "docs" / "wire.md"),
        "decisions": sections(root / "docs" / "decisions.md"),
        "host": frozenset(),
    }
    found: list[str] = []
    for path in _text_files(root):
        if path.resolve() == THIS_FILE:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in _CITATION.finditer(text):
            document, cited = match.group(1), match.group(2)
            for section in _SECTION.findall(cited):
                if section not in known[document]:
                    line = text.count("\n", 0, match.start()) + 1
                    found.append(f"{path}:{line}: docs/{document}.md §{section}")
    # docs/wire.md refers to its own sections bare ("§7"), besides citing the others.
    wire = root / "docs" / "wire.md"
    own = _CITATION.sub("", wire.read_text(encoding="utf-8"))
    found.extend(
        f"{wire}: §{section}" for section in _SECTION.findall(own) if section not in known["wire"]
    )
    return found


def test_the_references_have_the_numbered_sections_code_cites() -> None:
    assert sections(REPO_ROOT / "docs" / "wire.md") == {
        "1", "1b", "2", "3", "4", "5", "6", "7", "8", "9", "10"
    }  # fmt: skip
    assert sections(REPO_ROOT / "docs" / "decisions.md") == {str(n) for n in range(1, 16)}
    assert (REPO_ROOT / "docs" / "host.md").is_file()


def test_nothing_cites_documents_outside_the_repository() -> None:
    scanned = {path.relative_to(REPO_ROOT).as_posix() for path in _text_files(REPO_ROOT)}
    # The walk must reach the package, the adapter, the tests and the docs, or it proves nothing.
    assert {
        "omnigent_agy/__init__.py",
        "omnigent_harness_agy/plugin.py",
        "tests/conftest.py",
        "docs/wire.md",
        "pyproject.toml",
    } <= scanned
    found = old_references(REPO_ROOT)
    assert not found, "cite docs/wire.md, docs/host.md or docs/decisions.md instead:\n" + "\n".join(
        found
    )


def test_every_cited_section_exists() -> None:
    found = dangling_citations(REPO_ROOT)
    assert not found, "no such section:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("where", "line", "caught"),
    [
        ("omnigent_agy/rpc/x.py", "# agy drops it (WIRE.md §3)", True),
        ("omnigent_agy/rpc/x.py", '"""One owner (DESIGN-NOTES §10)."""', True),
        ("omnigent_harness_agy/x.py", "# must start with it (HOST.md).", True),
        ("agy-sim/agy_sim/x.py", "# recorded in ../shared/agy-wire/recorded", True),
        ("omnigent_agy/x.py", "# the folder /work/shared/agy-wire", True),
        ("tests/test_x.py", "# a no-op (WIRE.md §3)", True),
        ("docs/x.md", "as DESIGN-NOTES §1 says", True),
        ("omnigent_agy/rpc/x.py", "# agy drops it (docs/wire.md §3)", False),
        ("omnigent_agy/rpc/x.py", "# see docs/host.md", False),
        ("tests/test_x.py", "SHARED = '../shared/agy-wire/recorded'  # read at run time", False),
    ],
)
def test_old_references_are_found_where_they_are_forbidden(
    tmp_path: Path, where: str, line: str, caught: bool
) -> None:
    planted = tmp_path / where
    planted.parent.mkdir(parents=True)
    planted.write_text(f"first line\n{line}\n", encoding="utf-8")
    assert bool(old_references(tmp_path)) is caught


@pytest.mark.parametrize(
    ("citation", "dangling"),
    [
        ("docs/wire.md §4", []),
        ("docs/wire.md §1b", []),
        ("docs/wire.md §3/§6", []),
        ("docs/wire.md §1-§2", []),
        ("docs/wire.md §4 to §6", []),
        ("docs/wire.md\n    # §9", []),
        ("docs/decisions.md §13", []),
        ("docs/wire.md §10", ["§10"]),
        ("docs/wire.md §1c", ["§1c"]),
        ("docs/wire.md §3/§12", ["§12"]),
        ("docs/decisions.md §14", ["§14"]),
        ("docs/host.md §2", ["§2"]),
    ],
)
def test_a_citation_of_a_missing_section_is_found(
    tmp_path: Path, citation: str, dangling: list[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    wire = "".join(f"## {n}. Part\n" for n in ("1", "1b", "2", "3", "4", "5", "6", "7", "8", "9"))
    docs.joinpath("wire.md").write_text(wire, encoding="utf-8")
    docs.joinpath("decisions.md").write_text(
        "".join(f"## {n}. Decision\n" for n in range(1, 14)), encoding="utf-8"
    )
    docs.joinpath("host.md").write_text("# Host\n", encoding="utf-8")
    (tmp_path / "module.py").write_text(f"# {citation}\n", encoding="utf-8")
    found = dangling_citations(tmp_path)
    assert [entry.rsplit(" ", 1)[1] for entry in found] == dangling
