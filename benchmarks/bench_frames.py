"""CPU per growth frame, decode + map + publish, on identical frames: floor, built-in, plugin.

Run: `.venv/bin/python benchmarks/bench_frames.py [--quick]`. A long streamed answer (500
cumulative frames of one PLANNER_RESPONSE, 24 characters more each) after a history of H
steps, in one process, no network: the `json.loads` floor (decoding the payload and nothing
else), omnigent's built-in reader and this plugin's (benchmarks/readers.py says how each is
driven; the plugin's includes its durable cursor). CPU time of the process (`process_time`,
steadier than the wall clock on a shared machine). The three are measured in turn within each
of 5 runs, so that a change in the machine's load falls on all three alike; the table gives
the median µs per frame and the median of each run's ratio to that run's floor. Each
measurement starts from a collected heap handed back to the OS, so that what the setup freed
is not charged to the plugin's first `malloc_trim` (the memory its own first frame freed
still is, as in a real stream). Then (not with `--quick`) the instructions per frame of each
path, which the load cannot move (benchmarks/frame_instructions.py, valgrind). Asserts
nothing about time.
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import frame_instructions
from common import options, table
from growth_frames import frames_for, settle
from readers import BuiltinReader, PluginReader, builtin_stub_sink


def timed(run: object) -> float:
    gc.collect()
    started = time.process_time()
    run()  # type: ignore[operator]
    return time.process_time() - started


def floor(growth: list[bytes]) -> float:
    settle()
    return timed(lambda: [json.loads(envelope[5:]) for envelope in growth]) / len(growth)


def plugin(cascade: str, first: bytes, growth: list[bytes]) -> float:
    settle()
    with tempfile.TemporaryDirectory() as directory:
        reader = PluginReader(cascade, Path(directory))
        reader.feed(first)

        def run() -> None:
            for envelope in growth:
                reader.feed(envelope)

        return timed(run) / len(growth)


def builtin(cascade: str, first: bytes, growth: list[bytes]) -> float:
    async def main() -> float:
        settle()
        reader = BuiltinReader(cascade)
        with builtin_stub_sink():
            await reader.feed(first)
            gc.collect()
            started = time.process_time()
            for envelope in growth:
                await reader.feed(envelope)
            elapsed = time.process_time() - started
        await reader.aclose()
        return elapsed / len(growth)

    return asyncio.run(main())


def paired(measured: Sequence[float], floors: Sequence[float]) -> str:
    """The median of each run's ratio to the floor of the same run."""
    return f"{statistics.median(m / f for m, f in zip(measured, floors, strict=True)):.2f}x"


def main() -> None:
    args = options(__doc__ or "")
    histories, count, runs = ((100,), 50, 1) if args.quick else ((100, 1_000, 10_000), 500, 5)
    rows = []
    for history in histories:
        cascade, first, growth = frames_for(history, count)
        base: list[float] = []
        ours: list[float] = []
        theirs: list[float] = []
        for _ in range(runs):
            base.append(floor(growth) * 1e6)
            ours.append(plugin(cascade, first, growth) * 1e6)
            theirs.append(builtin(cascade, first, growth) * 1e6)
        rows.append(
            [
                history,
                statistics.median(base),
                statistics.median(theirs),
                paired(theirs, base),
                statistics.median(ours),
                paired(ours, base),
            ]
        )
    table(
        f"CPU per growth frame, decode + map + publish ({count} frames, medians of {runs} runs)",
        [
            "history H",
            "json.loads µs",
            "built-in µs",
            "built-in / floor",
            "plugin µs",
            "plugin / floor",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
    if not options(__doc__ or "").quick:  # valgrind takes minutes: not in the test suite
        frame_instructions.main()
