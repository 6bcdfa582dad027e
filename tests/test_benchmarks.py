"""Every benchmark runs once with small sizes (--quick), so the scripts keep working.

Nothing about time is asserted: only that each script ends well and prints its tables.
`tox -e bench` runs them in full (docs/performance.md).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT

BENCHMARKS = REPO_ROOT / "benchmarks"
SCRIPTS = sorted(path.name for path in BENCHMARKS.glob("bench_*.py"))


def test_the_runner_knows_every_script() -> None:
    runner = (BENCHMARKS / "run.py").read_text(encoding="utf-8")
    assert [name for name in SCRIPTS if f'"{name}"' not in runner] == []


# These start omnigent's real server and host on loopback (agy_sim.stack.LocalStack): e2e.
ON_THE_STACK = {"bench_scale.py", "bench_floor.py", "bench_faults.py"}


@pytest.mark.tmux
@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    "script",
    [
        pytest.param(
            name, marks=[pytest.mark.e2e, pytest.mark.long(1)] if name in ON_THE_STACK else []
        )
        for name in SCRIPTS
    ],
)
def test_a_benchmark_runs_quick(script: str) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--quick"],
        capture_output=True,
        text=True,
        timeout=880 if script in ON_THE_STACK else 280,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), "the benchmark printed no table"


@pytest.mark.e2e
@pytest.mark.tmux
@pytest.mark.long(6)
@pytest.mark.timeout(1500)
def test_the_comparison_runs_quick(tmp_path: Path) -> None:
    """benchmarks/compare.py --quick: one conversation per harness (the plugin, omnigent's
    built-in, omnigent's ACP harness with agy-sim's `agy acp`) and 2 at once. A peer's
    misbehaviour is a cell of the report, not a failure; the drive itself must end well."""
    report = tmp_path / "comparison.md"
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "compare.py"), "--quick", "--write", str(report)],
        capture_output=True,
        text=True,
        timeout=1450,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    written = report.read_text(encoding="utf-8")
    assert "| streamed answer and thinking |" in written
    assert "| send → first delta, ms |" in written
    # agy's screen read off the page (compare_browser.py): the plugin's own row must work.
    screen = "| agy's own screen in the Terminal view | "
    assert screen in written
    if os.environ.get("OMNIGENT_AGY_CHROMIUM") or shutil.which("chromium"):
        assert f"{screen}**works**" in written, written
