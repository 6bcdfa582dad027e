"""The reader's work per stream frame does not grow with the conversation (docs/decisions.md §6)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

from opcount import count_package_lines
from readerframes import (
    ANSWER,
    CASCADE,
    TRAJECTORY,
    frame,
    generating_frames,
    planner,
    reader_with_history,
)

from omnigent_agy.reading.events import TextDelta
from omnigent_agy.reading.reader import Follower, ReaderEvent
from omnigent_agy.reading.sink import QueueSink
from omnigent_agy.rpc.client import STEPS_PATH
from omnigent_agy.rpc.lazyjson import LazyArray
from omnigent_agy.rpc.wire import DataFrame, EnvelopeDecoder, encode_envelope


def cost_of_one_frame(prior_steps: int, directory: Path) -> tuple[int, int]:
    reader = reader_with_history(prior_steps, directory)
    first, second = generating_frames(prior_steps, 2)
    reader._follower.apply_frame(first)
    lines = count_package_lines(lambda: reader._follower.apply_frame(second))
    sink = reader._sink
    assert isinstance(sink, QueueSink)
    deltas = [e for e in sink.drain() if isinstance(e, TextDelta)]
    assert deltas[-1].offset == 8  # the second frame published only its new suffix
    cursor_bytes = sum(p.stat().st_size for p in directory.glob("cursor-*.json"))
    return lines, cursor_bytes


def test_work_per_frame_is_the_same_after_100_and_10000_steps(tmp_path: Path) -> None:
    small_lines, small_bytes = cost_of_one_frame(100, tmp_path / "small")
    large_lines, large_bytes = cost_of_one_frame(10_000, tmp_path / "large")
    assert small_lines > 20  # the counter really saw the reader and mapper work
    assert small_lines == large_lines
    # The durable cursor written on that frame is as small for the long conversation.
    assert abs(large_bytes - small_bytes) < 16


def test_growth_frames_write_no_cursor_and_a_commit_writes_it_once(tmp_path: Path) -> None:
    reader = reader_with_history(100, tmp_path)
    (path,) = tmp_path.glob("cursor-*.json")
    written = path.stat().st_ino  # each save replaces the file: a new inode

    for growth in generating_frames(100, 50):
        reader._follower.apply_frame(growth)
    assert path.stat().st_ino == written, "a growth frame wrote the cursor"

    text = ANSWER[:400]
    reader._follower.apply_frame(
        frame(100, planner(100, status="CORTEX_STEP_STATUS_DONE", text=text), 101)
    )
    assert path.stat().st_ino != written, "the commit was not saved"
    assert reader._follower.follow.state.first_uncommitted(TRAJECTORY) == 101


def snapshot(count: int) -> dict[str, object]:
    """A first frame replaying `count` settled steps (docs/wire.md §4), about 2.2 KB each."""
    steps = [
        planner(n, status="CORTEX_STEP_STATUS_DONE", text=f"{n} {ANSWER[:2000]}")
        for n in range(count)
    ]
    update = frame(0, steps[0], count)
    update["update"]["mainTrajectoryUpdate"]["stepsUpdate"].update(
        indices=list(range(count)), steps=steps
    )
    return update


class _Dropping:
    def __init__(self) -> None:
        self.published = 0

    def publish(self, event: object) -> None:
        self.published += 1  # taken and dropped: the events are not the reader's memory


def test_a_lazily_decoded_snapshot_is_mapped_one_step_at_a_time() -> None:
    # A large frame's steps come as a LazyArray (rpc.lazyjson): the follower walks it, so at
    # most one decoded step is alive at a time instead of the snapshot's whole tree.
    payload = json.dumps(snapshot(2_000)).encode()
    (whole,) = EnvelopeDecoder().feed(encode_envelope(payload))
    (lazy,) = EnvelopeDecoder(lazy_array=STEPS_PATH).feed(encode_envelope(payload))
    assert isinstance(whole, DataFrame)
    assert isinstance(lazy, DataFrame)
    assert isinstance(
        lazy.message["update"]["mainTrajectoryUpdate"]["stepsUpdate"]["steps"], LazyArray
    )

    def events(message: dict[str, Any]) -> list[ReaderEvent]:
        sink: QueueSink[ReaderEvent] = QueueSink()
        Follower(cascade_id=CASCADE, sink=sink, cursor=None, model_names={}).apply_frame(message)
        return sink.drain()

    assert events(lazy.message) == events(whole.message)
    follower = Follower(cascade_id=CASCADE, sink=_Dropping(), cursor=None, model_names={})
    tracemalloc.start()
    try:
        follower.apply_frame(lazy.message)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert follower.follow.first_uncommitted() == 2_000
    # Decoded whole, the steps would take more than their JSON text (about 4.5 MB here).
    assert peak < len(payload) / 4, f"{peak} bytes alive while mapping {len(payload)} bytes"
