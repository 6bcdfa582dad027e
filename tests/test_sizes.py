"""Modules are sized by their concern, not by a cap cut to pass: a module over 800 lines is a
sign that two concerns share it, named here until it is split."""

from __future__ import annotations

from conftest import REPO_ROOT

MAX_MODULE_LINES = 800
PACKAGES = (
    REPO_ROOT / "omnigent_agy",
    REPO_ROOT / "omnigent_harness_agy",
    REPO_ROOT / "agy-sim" / "agy_sim",
)


def _modules() -> list[tuple[str, str]]:
    return [
        (str(path.relative_to(REPO_ROOT)), path.read_text(encoding="utf-8"))
        for package in PACKAGES
        for path in sorted(package.rglob("*.py"))
    ]


def test_no_module_is_over_800_lines() -> None:
    over = {
        name: lines
        for name, text in _modules()
        if (lines := len(text.splitlines())) > MAX_MODULE_LINES
    }
    assert over == {}, f"modules over {MAX_MODULE_LINES} lines, split by concern: {over}"
