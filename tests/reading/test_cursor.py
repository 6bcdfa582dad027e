"""The durable cursor and the index set behind it (pure, on disk only)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from readerframes import CASCADE, TRAJECTORY, planner

from omnigent_agy.reading.cursor import CursorStore
from omnigent_agy.reading.events import AssistantMessage, TextDelta, ToolCallStarted
from omnigent_agy.reading.indexset import IndexSet
from omnigent_agy.reading.mapper import MapperState, map_step


def running_command(index: int) -> dict[str, object]:
    return {
        "type": "CORTEX_STEP_TYPE_RUN_COMMAND",
        "status": "CORTEX_STEP_STATUS_RUNNING",
        "metadata": {
            "sourceTrajectoryStepInfo": {
                "trajectoryId": TRAJECTORY,
                "stepIndex": index,
                "cascadeId": CASCADE,
            }
        },
        "runCommand": {"commandLine": "sleep 5", "cwd": "/home/user/project"},
    }


@pytest.mark.parametrize(
    ("added", "watermark", "inside", "outside"),
    [
        ([], 0, [], [0, 1]),
        ([0, 1, 2], 3, [0, 1, 2], [3, -1]),
        ([1, 2], 0, [1, 2], [0, 3]),
        ([1, 2, 0], 3, [0, 1, 2], [3]),
        ([5, 0, 3, 1, 2, 4], 6, [0, 5], [6]),
        ([0, 0, 1, 1], 2, [0, 1], [2]),
    ],
)
def test_index_set(added: list[int], watermark: int, inside: list[int], outside: list[int]) -> None:
    indices = IndexSet()
    for index in added:
        indices.add(index)
    assert indices.watermark == watermark
    assert all(i in indices for i in inside)
    assert not any(i in indices for i in outside)
    assert len(indices) == len(set(added))
    assert IndexSet.from_json(json.loads(json.dumps(indices.to_json()))).to_json() == (
        indices.to_json()
    )


@pytest.mark.parametrize(
    ("above", "end", "watermark", "stragglers"),
    [
        ([], 20_000, 20_000, []),
        ([7, 9], 5, 5, [7, 9]),  # below the stragglers: they stay
        ([3, 5, 6, 9], 5, 7, [9]),  # the ones at and after `end` join the run
        ([2], 0, 0, [2]),
    ],
)
def test_index_set_add_below(
    above: list[int], end: int, watermark: int, stragglers: list[int]
) -> None:
    indices = IndexSet(0, above)
    indices.add_below(end)
    assert indices.to_json() == {"watermark": watermark, "above": stragglers}
    indices.add_below(end - 1)  # never moves back
    assert indices.to_json() == {"watermark": watermark, "above": stragglers}


@pytest.mark.parametrize(
    "bad",
    [
        {},
        {"watermark": -1, "above": []},
        {"watermark": 1, "above": "2"},
        {"watermark": 1, "above": [-3]},
    ],
)
def test_index_set_rejects_malformed_json(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="index set"):
        IndexSet.from_json(bad)


def test_the_size_of_a_cursor_does_not_grow_with_the_conversation(tmp_path: Path) -> None:
    store = CursorStore(tmp_path)
    sizes = []
    for steps in (10, 10_000):
        state = MapperState(cascade_id=CASCADE)
        for index in range(steps):
            map_step(
                state,
                planner(index, status="CORTEX_STEP_STATUS_DONE", text="hi"),
                absolute_index=index,
            )
        store.save(state)
        sizes.append(store.path_for(CASCADE).stat().st_size)
    assert sizes[1] - sizes[0] < 10, sizes  # only the watermark's digits differ


def test_a_restored_state_publishes_only_what_is_new(tmp_path: Path) -> None:
    store = CursorStore(tmp_path / "state")
    first = MapperState(cascade_id=CASCADE)
    map_step(
        first, planner(0, status="CORTEX_STEP_STATUS_DONE", text="first answer"), absolute_index=0
    )
    map_step(first, running_command(1), absolute_index=1)
    map_step(
        first,
        planner(2, status="CORTEX_STEP_STATUS_GENERATING", text="hello wor"),
        absolute_index=2,
    )
    store.save(first, {"turn": {"note": 1}})
    mode = stat.S_IMODE(store.path_for(CASCADE).stat().st_mode)
    assert mode == 0o600
    assert stat.S_IMODE(store.directory.stat().st_mode) == 0o700

    second = MapperState(cascade_id=CASCADE)
    assert store.load_into(second) == {"turn": {"note": 1}}
    assert (
        map_step(
            second,
            planner(0, status="CORTEX_STEP_STATUS_DONE", text="first answer"),
            absolute_index=0,
        )
        == []
    )
    # The running command was already announced: no second ToolCallStarted.
    events = map_step(second, running_command(1), absolute_index=1)
    assert not [e for e in events if isinstance(e, ToolCallStarted)]
    events = map_step(
        second, planner(2, status="CORTEX_STEP_STATUS_DONE", text="hello world"), absolute_index=2
    )
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert [(d.offset, d.text) for d in deltas] == [(9, "ld")]
    assert [e.text for e in events if isinstance(e, AssistantMessage)] == ["hello world"]
    assert second.first_uncommitted(TRAJECTORY) == 1


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        json.dumps({"version": 99}),
        json.dumps({"version": 1, "cascade_id": "someone-else", "progress": {}}),
        json.dumps({"version": 1, "cascade_id": CASCADE, "progress": {"committed": 3}}),
        json.dumps({"version": 1, "cascade_id": CASCADE}),
    ],
    ids=["garbage", "version", "other-cascade", "malformed-progress", "no-progress"],
)
def test_an_unusable_cursor_is_ignored_not_trusted(tmp_path: Path, content: str) -> None:
    store = CursorStore(tmp_path)
    store.path_for(CASCADE).write_text(content)
    state = MapperState(cascade_id=CASCADE)
    assert store.load_into(state) is None
    assert state.committed_count == 0


def test_no_cursor_file_means_a_fresh_start(tmp_path: Path) -> None:
    assert CursorStore(tmp_path).load_into(MapperState(cascade_id=CASCADE)) is None
