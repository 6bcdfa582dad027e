"""No module of the plugin or its tooling is over 400 lines (issue 19.7): a module that grows
past it is split, by concern, before it crosses."""

from __future__ import annotations

from conftest import REPO_ROOT

MAX_LINES = 400
PACKAGES = (
    REPO_ROOT / "omnigent_agy",
    REPO_ROOT / "omnigent_harness_agy",
    REPO_ROOT / "agy-sim" / "agy_sim",
)


def test_no_module_is_over_400_lines() -> None:
    over = {
        str(path.relative_to(REPO_ROOT)): lines
        for package in PACKAGES
        for path in sorted(package.rglob("*.py"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert over == {}, f"split these modules (lines over {MAX_LINES}): {over}"
