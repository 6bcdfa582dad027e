"""Instructions per growth frame, decode + map + publish: floor, built-in, plugin (valgrind).

Run: `.venv/bin/python benchmarks/frame_instructions.py [--quick]` (bench_frames.py runs it
after its CPU table when valgrind is installed, not with `--quick`). The same frames as
bench_frames.py (a 500-frame answer after a history of H = 100 steps) go through the three
paths in one process under valgrind's callgrind, each path driven by an itertools function of
its own (the floor by `filterfalse`, the built-in by `dropwhile`, the plugin by `takewhile`),
and callgrind counts only what runs inside those three (`--toggle-collect`): the setup, the
imports and the interpreter's start are not counted. The count is the work itself, which the
machine's load cannot move (the CPU tables of bench_frames.py can only be read as ratios
measured in turn). Asserts nothing.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The itertools function that drives each path, as callgrind names its C function.
DRIVERS = {
    "json.loads floor": "filterfalse_next",
    "built-in": "dropwhile_next",
    "plugin": "takewhile_next",
}
HISTORY, FRAMES = 100, 500


def child() -> None:
    """Under callgrind: feed the three paths, each inside its own driver."""
    from growth_frames import frames_for, settle  # noqa: PLC0415
    from readers import BuiltinReader, PluginReader, builtin_stub_sink  # noqa: PLC0415

    cascade, first, growth = frames_for(HISTORY, FRAMES)
    drain: Callable[[object], object] = lambda it: collections.deque(it, maxlen=0)  # noqa: E731

    settle()
    drain(itertools.filterfalse(lambda e: json.loads(e[5:]) is None, growth))

    async def run_builtin() -> None:
        reader = BuiltinReader(cascade)
        with builtin_stub_sink():
            await reader.feed(first)
            settle()

            def feed(envelope: bytes) -> bool:
                step = reader.feed(envelope)
                try:  # the stubbed post awaits nothing: each frame runs to its end at once
                    step.send(None)
                except StopIteration:
                    return True
                raise AssertionError("the built-in's frame awaited something")

            drain(itertools.dropwhile(feed, growth))
        await reader.aclose()

    asyncio.run(run_builtin())

    with tempfile.TemporaryDirectory() as directory:
        reader = PluginReader(cascade, Path(directory))
        reader.feed(first)
        settle()
        drain(itertools.takewhile(lambda e: reader.feed(e) is None, growth))
        assert reader.published >= FRAMES


def measure() -> dict[str, float] | None:
    """Instructions per growth frame of each path, or None without valgrind."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory) / "callgrind.out"
        toggles = [f"--toggle-collect={name}" for name in DRIVERS.values()]
        subprocess.run(
            [
                valgrind,
                "--tool=callgrind",
                "--collect-atstart=no",
                *toggles,
                f"--callgrind-out-file={out}",
                sys.executable,
                __file__,
                "--child",
            ],
            check=True,
            cwd=HERE,
            env={**os.environ, "PYTHONPATH": str(HERE)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        annotated = subprocess.run(
            ["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    counts = {}
    for name, function in DRIVERS.items():
        match = re.search(rf"^\s*([\d,]+) .*[:\s]{function}\b", annotated, re.MULTILINE)
        assert match, f"{function} not in callgrind's output"
        counts[name] = int(match.group(1).replace(",", "")) / FRAMES
    return counts


def main() -> None:
    if "--child" in sys.argv:
        child()
        return
    counts = measure()
    if counts is None:
        print("valgrind is not installed: no instruction counts")
        return
    from common import table  # noqa: PLC0415

    floor = counts["json.loads floor"]
    table(
        f"Instructions per growth frame, decode + map + publish (callgrind, {FRAMES} frames, "
        f"H={HISTORY})",
        ["path", "K instructions", "/ floor"],
        [[name, count / 1e3, f"{count / floor:.2f}x"] for name, count in counts.items()],
    )


if __name__ == "__main__":
    main()
