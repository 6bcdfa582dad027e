"""Shared by the benchmark scripts: the frame server's process, timing, tables.

Every script prints a table and asserts nothing about time. ``--quick`` runs it once with
small sizes (the test suite does that, so the scripts keep working); without it the figures
are medians of 3 runs at the sizes docs/performance.md reports.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))  # readerframes, simproc


def options(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="small sizes, one run")
    return parser.parse_args()


def median_of(runs: int, measure: Callable[[], float]) -> float:
    return statistics.median(measure() for _ in range(runs))


def percentile(values: Sequence[float], q: float) -> float:
    """The value below which a share ``q`` of `values` lies (nearest rank: p99 = ``0.99``)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def agy_argv0() -> str:
    """``<the interpreter's bin>/agy``: what a process started as agy shows as argv[0]."""
    return str(Path(sys.executable).with_name("agy"))


@dataclass
class FrameServer:
    port: int
    token: str
    process: subprocess.Popen[str] | None  # None in a child handed the server's address


@contextlib.contextmanager
def frame_server(script: str = "frameserver.py") -> Iterator[FrameServer]:
    """benchmarks/frameserver.py (or another server ``script`` of benchmarks/) in a process of
    its own, named like agy (see its docstring)."""
    token = secrets.token_hex(16)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
    with subprocess.Popen(
        [agy_argv0(), str(HERE / script), f"--csrf_token={token}"],
        executable=sys.executable,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    ) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            if not line:
                raise RuntimeError("the frame server did not start")
            yield FrameServer(json.loads(line)["port"], token, process)
        finally:
            assert process.stdin is not None
            process.stdin.close()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()


def cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) process ``pid`` has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load_average() -> str:
    """The machine's load average (1, 5, 15 min): the figures depend on it on a shared machine."""
    return "load average " + " / ".join(f"{value:.2f}" for value in os.getloadavg())


def spec(history: int, frames: int, chars: int = 24, interval_us: int = 0, burst: int = 1) -> str:
    return f"bench-h{history}-n{frames}-c{chars}-i{interval_us}-b{burst}"


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    cells = [[str(c) for c in header], *[[_cell(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    print(f"\n{title}")
    for n, row in enumerate(cells):
        print(
            "| "
            + " | ".join(
                c.rjust(w) if n and _numeric(c) else c.ljust(w)
                for c, w in zip(row, widths, strict=True)
            )
            + " |"
        )
        if n == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")


def _numeric(cell: str) -> bool:
    return bool(cell) and (cell[0].isdigit() or cell[0] in "-+")


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.1f}" if value >= 10 else f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)
