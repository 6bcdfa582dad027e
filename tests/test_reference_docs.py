"""The documents are reference, their history is in git, and shipped code says reasons.

- docs/performance.md and docs/reliability.md say what holds now, how to reproduce it and what
  is not met; a dated run, a superseded figure or a session's narrative goes to the commit
  that made it. They stay short enough to read: over 350 lines, one has become a notebook again.
- A section another document or a module names (``docs/performance.md, "Cold start"``) exists,
  and so does every file of the repository and every test a document names as its evidence.
- Shipped code (the core, the adapter, the simulator) cites no issue number: a reader of an
  installed package cannot follow one, so a comment says the reason itself.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO_ROOT

THIS_FILE = Path(__file__).resolve()

MAX_REFERENCE_LINES = 350
REFERENCE_DOCS = ("docs/performance.md", "docs/reliability.md")
SHIPPED_DIRS = ("omnigent_agy", "omnigent_harness_agy", "agy-sim/agy_sim")

# "issue 18", "Issue #18", "issue 21.1", "issue-7"; "issues 18 and 19", "issues #3"; a bare
# "#12" as GitHub writes a reference (not an HTML entity "&#64;", a colour "#123456" or
# "#12ab", a fragment "/#1", another repository's "cpython#123"); "GH-12". "issues" as a verb
# ("it issues 3 calls") is not a citation, so the plural needs a "#" or a list.
ISSUE_CITATION = re.compile(
    r"""
    \bissue[\s#-]*\d+
    | \bissues\s+\#\d+
    | \bissues\s+\d+(?:\.\d+)?\s*(?:,|and|or|&)\s*\#?\d+
    | (?<![\w&/\#])\#\d{1,4}(?![\w])
    | \bgh-\d+
    """,
    re.IGNORECASE | re.VERBOSE,
)

# A section cited by name: docs/performance.md, "Cold start" — split over lines in a comment
# or a docstring, or over two string literals (`"… docs/performance.md,"` `' "Beside …".'`).
_NAMED_SECTION = re.compile(r"docs/(performance|reliability)\.md,[\s\"']*\"([^\"]+)\"")
_DOCUMENTS = ("performance", "reliability")
_HEADING = re.compile(r"^#{2,4} (.+)$", re.MULTILINE)
_COMMENT_BREAK = re.compile(r"\s*\n\s*(?:#\s*)?")


_SKIPPED_DIRS = frozenset({".git", ".tox", ".artifacts", "__pycache__", "node_modules"})


def _files(root: Path, suffixes: frozenset[str] | None = None) -> Iterator[Path]:
    """Files under `root` (with one of `suffixes`, if given), outside VCS data, caches, venvs
    and build output; binary files skipped by the callers' decoding."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(
            name
            for name in dirs
            if name not in _SKIPPED_DIRS
            and not name.endswith((".egg-info", "_cache"))
            and not name.startswith((".venv", "build", "dist"))
        )
        for name in sorted(files):
            path = Path(folder) / name
            if (suffixes is None or path.suffix in suffixes) and path.resolve() != THIS_FILE:
                yield path


def _text(path: Path) -> str | None:
    data = path.read_bytes()
    return None if b"\0" in data else data.decode("utf-8", errors="replace")


# A path into the repository ("tests/faults/test_port_move.py", "benchmarks/run.py") and a test
# named in a file ("tests/agy/test_launcher.py::test_agy_gets…", the "…" ending a prefix).
_REPO_PATH = re.compile(
    r"(?<![\w./-])(?:tests|benchmarks|omnigent_agy|omnigent_harness_agy|agy-sim|scripts|docs)"
    r"/[\w./-]*\w"
)
_TEST_ANCHOR = re.compile(r"([\w/.-]+\.py)::(\w+)(…)?")


def _documents(root: Path) -> list[Path]:
    return [*sorted((root / "docs").glob("*.md")), root / "README.md"]


def missing_evidence(root: Path) -> list[str]:
    """Repository paths and ``file.py::test`` names in the documents that do not exist (a file
    named without its folder is looked for anywhere under tests/)."""
    found: list[str] = []
    for document in _documents(root):
        text = document.read_text(encoding="utf-8")
        where = document.relative_to(root)
        found += [
            f"{where}: {path}" for path in _REPO_PATH.findall(text) if not (root / path).exists()
        ]
        for file, name, prefix in _TEST_ANCHOR.findall(text):
            candidates = [root / file] if "/" in file else list((root / "tests").rglob(file))
            tests = {
                match
                for candidate in candidates
                if candidate.is_file()
                for match in re.findall(r"def (test_\w+)", candidate.read_text(encoding="utf-8"))
            }
            if not any(test == name or (prefix and test.startswith(name)) for test in tests):
                found.append(f"{where}: {file}::{name}{prefix}")
    return found


def issue_citations(root: Path) -> list[str]:
    """Lines of the shipped code under `root` that cite an issue number."""
    found: list[str] = []
    for folder in SHIPPED_DIRS:
        for path in _files(root / folder):
            if (text := _text(path)) is None:
                continue
            found += [
                f"{path.relative_to(root)}:{number}: {line.strip()}"
                for number, line in enumerate(text.splitlines(), 1)
                if ISSUE_CITATION.search(line)
            ]
    return found


def headings(document: Path) -> list[str]:
    return _HEADING.findall(document.read_text(encoding="utf-8"))


def dangling_section_names(root: Path) -> list[str]:
    """Citations of a section of performance.md or reliability.md by a name no heading starts
    with (a heading may go on: "Cold start" names "Cold start (bench_cold.py)")."""
    known = {name: headings(root / "docs" / f"{name}.md") for name in _DOCUMENTS}
    found: list[str] = []
    for path in _files(root, frozenset({".py", ".md"})):
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in _NAMED_SECTION.finditer(_COMMENT_BREAK.sub(" ", text)):
            document, name = match.group(1), match.group(2).strip()
            if not any(heading.startswith(name) for heading in known[document]):
                found.append(f"{path.relative_to(root)}: docs/{document}.md, {name!r}")
    return found


@pytest.mark.parametrize("document", REFERENCE_DOCS)
def test_a_reference_document_stays_short(document: str) -> None:
    lines = len((REPO_ROOT / document).read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_REFERENCE_LINES, (
        f"{document} has {lines} lines (at most {MAX_REFERENCE_LINES}): state what holds now and "
        "how to reproduce it; a run's story belongs in its commit message"
    )


def test_shipped_code_cites_no_issue_number() -> None:
    scanned = {
        path.relative_to(REPO_ROOT).as_posix()
        for folder in SHIPPED_DIRS
        for path in _files(REPO_ROOT / folder)
    }
    # The walk must reach all three, or it proves nothing.
    assert {
        "omnigent_agy/__init__.py",
        "omnigent_harness_agy/plugin.py",
        "agy-sim/agy_sim/__init__.py",
    } <= scanned
    found = issue_citations(REPO_ROOT)
    assert not found, "say the reason instead of the issue number:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("line", "caught"),
    [
        ("# the link is never missing (issue 18).", True),
        ('"""agy\'s screen showed it (issue 21.1)."""', True),
        ("# see Issue #7", True),
        ("# fixed in issue-12", True),
        ("# both (issues 18 and 19)", True),
        ("# closes #31", True),
        ("# (#4) the port moved", True),
        ("# gh-120: a race", True),
        ("# a network issue, retried", False),
        ("# it issues 3 calls per turn", False),
        ('_AT = r"(?:@|&#0*64;|&#x0*40;)"', False),
        ('colour = "#123456"', False),
        ('colour = "#12ab"', False),
        ("# upstream python/cpython#12345", False),
        ("# https://example.com/page/#12", False),
        ("# HTTP 404, then 503", False),
        ("# issued at 12:00", False),
        ("x = 0x1f  # 31 bytes", False),
    ],
)
def test_the_issue_pattern(line: str, caught: bool) -> None:
    assert bool(ISSUE_CITATION.search(line)) is caught


def test_every_section_named_in_a_citation_exists() -> None:
    found = dangling_section_names(REPO_ROOT)
    assert not found, "no heading starts with that name:\n" + "\n".join(found)


def test_a_section_split_over_comment_lines_is_read_whole(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "performance.md").write_text("# P\n\n## Cold start (bench)\n")
    (tmp_path / "docs" / "reliability.md").write_text("# R\n\n## The harness process killed\n")
    (tmp_path / "a.py").write_text(
        '# (docs/reliability.md, "The harness process\n# killed")\n'
        '# docs/performance.md, "Cold start"\n'
        '# docs/performance.md, "Warm start"\n'
        'x = "see docs/performance.md,"\n    \' "Cold start".\'\n'
    )
    assert dangling_section_names(tmp_path) == ["a.py: docs/performance.md, 'Warm start'"]


def test_every_file_and_test_a_document_names_exists() -> None:
    found = missing_evidence(REPO_ROOT)
    assert not found, "named in a document, not in the repository:\n" + "\n".join(found)


def test_a_renamed_test_or_file_is_caught(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "tests" / "e2e").mkdir(parents=True)
    (tmp_path / "tests" / "e2e" / "test_x.py").write_text("def test_the_host_reads_it(): ...\n")
    (tmp_path / "README.md").write_text(
        "Shown by tests/e2e/test_x.py::test_the_host_reads_it, `test_x.py::test_the_host…`,\n"
        "tests/e2e/test_x.py::test_gone, test_x.py::test_other…, tests/e2e/test_y.py.\n"
    )
    assert missing_evidence(tmp_path) == [
        "README.md: tests/e2e/test_y.py",
        "README.md: tests/e2e/test_x.py::test_gone",
        "README.md: test_x.py::test_other…",
    ]
