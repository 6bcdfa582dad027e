"""The reader's work per stream frame does not grow with the conversation (DESIGN-NOTES §6)."""

from __future__ import annotations

from pathlib import Path

from opcount import count_package_lines
from readerframes import ANSWER, TRAJECTORY, frame, generating_frames, planner, reader_with_history

from omnigent_agy.reading.events import TextDelta
from omnigent_agy.reading.sink import QueueSink


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
