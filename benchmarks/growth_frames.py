"""The frames bench_frames.py and frame_instructions.py both feed the readers: a history of H
steps, then a growing answer, one cumulative frame per step of growth; and a settled heap to
start each measurement from."""

from __future__ import annotations

import gc

from common import spec
from frameserver import Script

from omnigent_agy.rpc.heap import return_freed_memory
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


def settle() -> None:
    """A collected heap handed back to the OS: what the setup freed is nobody's cost."""
    gc.collect()
    return_freed_memory()
