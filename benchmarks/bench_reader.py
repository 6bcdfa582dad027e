"""How long the reader takes per stream frame carrying one new delta, as the conversation grows.

Run: `.venv/bin/python benchmarks/bench_reader.py [--quick]`. Prints figures; asserts nothing
about time.
This is the reader's whole per-frame path — decode the update, map the changed step, publish,
save the durable cursor — without the network, so the rows compare history sizes only
(docs/decisions.md §6: the work per frame must not grow with the conversation's length).
"""

from __future__ import annotations

import gc
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from readerframes import generating_frames, reader_with_history

FRAMES = 300
ROUNDS = 5


def seconds_per_frame(prior_steps: int, frames: list[dict[str, Any]], directory: Path) -> float:
    best = float("inf")
    for _ in range(ROUNDS):
        reader = reader_with_history(prior_steps, directory)
        gc.collect()
        gc.disable()
        try:
            started = time.perf_counter()
            for frame in frames:
                reader._follower.apply_frame(frame)
            elapsed = time.perf_counter() - started
        finally:
            gc.enable()
        best = min(best, elapsed / len(frames))
    return best


def main() -> None:
    sizes = (100,) if "--quick" in sys.argv else (100, 1_000, 10_000)
    print(f"reader: microseconds per frame with one new delta ({FRAMES} frames, best of {ROUNDS})")
    print(f"{'prior steps':>12} {'µs/frame':>10} {'cursor bytes':>13}")
    with tempfile.TemporaryDirectory() as tmp:
        for prior in sizes:
            directory = Path(tmp) / str(prior)
            frames = generating_frames(prior, FRAMES)
            micro = seconds_per_frame(prior, frames, directory) * 1e6
            size = sum(p.stat().st_size for p in directory.glob("cursor-*.json"))
            print(f"{prior:>12} {micro:>10.1f} {size:>13}")


if __name__ == "__main__":
    main()
