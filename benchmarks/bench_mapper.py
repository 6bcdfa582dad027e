"""How long the mapper takes per new text delta as the conversation grows.

Run: `.venv/bin/python benchmarks/bench_mapper.py [--quick]`. Prints figures; asserts nothing
about time (docs/decisions.md §6: the work per frame must not grow with the conversation's length,
so the microseconds per delta should be about the same for every row).
"""

from __future__ import annotations

import copy
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

from omnigent_agy.reading.mapper import MapperState, map_step

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "recorded_steps"
FRAMES = 400  # GENERATING frames per measured answer, each 24 characters longer
ROUNDS = 9


def _fixture(name: str) -> dict[str, Any]:
    step: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return step


def _frames() -> list[dict[str, Any]]:
    """Cumulative GENERATING snapshots of one planner step, as the stream re-sends it (§4)."""
    template = _fixture("planner_generating_partial.json")
    answer = ("The quick brown fox jumps. " * 400)[: FRAMES * 24]
    frames = []
    for count in range(1, FRAMES + 1):
        frame = copy.deepcopy(template)
        frame["plannerResponse"]["modifiedResponse"] = answer[: count * 24]
        frames.append(frame)
    return frames


def _state_with_history(prior_steps: int) -> MapperState:
    state = MapperState(cascade_id="bench")
    planner = _fixture("planner_done_text.json")
    command = _fixture("run_command_done.json")
    for index in range(prior_steps):
        map_step(state, planner if index % 2 else command, absolute_index=index)
    return state


def seconds_per_delta(prior_steps: int, frames: list[dict[str, Any]]) -> float:
    best = float("inf")
    for _ in range(ROUNDS):
        state = _state_with_history(prior_steps)
        gc.collect()
        gc.disable()  # as timeit does: a collection pass would bill the history's size to us
        try:
            started = time.perf_counter()
            for frame in frames:
                map_step(state, frame, absolute_index=prior_steps)
            elapsed = time.perf_counter() - started
        finally:
            gc.enable()
        best = min(best, elapsed / len(frames))
    return best


def main() -> None:
    frames = _frames()
    seconds_per_delta(100, frames)  # warm-up, so the first row is not billed for it
    print(f"{'prior steps':>12}  {'µs per new delta':>17}")
    for prior_steps in (100,) if "--quick" in sys.argv else (100, 1_000, 10_000):
        micros = seconds_per_delta(prior_steps, frames) * 1e6
        print(f"{prior_steps:>12,}  {micros:>17.2f}")


if __name__ == "__main__":
    main()
