"""CPU per growth frame, decode + map + publish, on identical frames: floor, built-in, plugin.

Run: `.venv/bin/python benchmarks/bench_frames.py [--quick]`. A long streamed answer (500
cumulative frames of one PLANNER_RESPONSE, 24 characters more each) after a history of H
steps, in one process, no network: the `json.loads` floor (decoding the payload and nothing
else), omnigent's built-in reader and this plugin's (benchmarks/readers.py says how each is
driven; the plugin's includes its durable cursor). CPU time of the process (`process_time`,
steadier than the wall clock on a shared machine), medians of 3 runs; prints µs per frame
and the ratio to the floor. Asserts nothing about time.
"""

from __future__ import annotations

import asyncio
import gc
import json
import tempfile
import time
from pathlib import Path

from common import median_of, options, spec, table
from frameserver import Script
from readers import BuiltinReader, PluginReader, builtin_stub_sink

from omnigent_agy.rpc.wire import encode_envelope

RUNNING = "CASCADE_RUN_STATUS_RUNNING"


def frames_for(history: int, count: int) -> tuple[str, bytes, list[bytes]]:
    plan = Script(spec(history, count))
    first = encode_envelope(plan.update(list(range(history)), plan.shaped, RUNNING))
    growth = [
        encode_envelope(plan.update([history], [plan.growing(n)], RUNNING))
        for n in range(1, count + 1)
    ]
    return plan.cascade.cascade_id, first, growth


def timed(run: object) -> float:
    gc.collect()
    started = time.process_time()
    run()  # type: ignore[operator]
    return time.process_time() - started


def floor(growth: list[bytes]) -> float:
    return timed(lambda: [json.loads(envelope[5:]) for envelope in growth]) / len(growth)


def plugin(cascade: str, first: bytes, growth: list[bytes]) -> float:
    with tempfile.TemporaryDirectory() as directory:
        reader = PluginReader(cascade, Path(directory))
        reader.feed(first)

        def run() -> None:
            for envelope in growth:
                reader.feed(envelope)

        return timed(run) / len(growth)


def builtin(cascade: str, first: bytes, growth: list[bytes]) -> float:
    async def main() -> float:
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


def main() -> None:
    args = options(__doc__ or "")
    histories, count, runs = ((100,), 50, 1) if args.quick else ((100, 1_000, 10_000), 500, 3)
    rows = []
    for history in histories:
        cascade, first, growth = frames_for(history, count)
        base = median_of(runs, lambda g=growth: floor(g)) * 1e6
        ours = median_of(runs, lambda c=cascade, f=first, g=growth: plugin(c, f, g)) * 1e6
        theirs = median_of(runs, lambda c=cascade, f=first, g=growth: builtin(c, f, g)) * 1e6
        rows.append([history, base, theirs, f"{theirs / base:.2f}x", ours, f"{ours / base:.2f}x"])
    table(
        f"CPU per growth frame, decode + map + publish ({count} frames, medians of {runs})",
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
