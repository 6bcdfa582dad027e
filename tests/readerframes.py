"""Stream frames for measuring the reader's per-frame work (a test and benchmarks/ use them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omnigent_agy.reading.cursor import CursorStore
from omnigent_agy.reading.reader import CascadeReader
from omnigent_agy.reading.sink import QueueSink

CASCADE = "c0ffee00-0000-4000-8000-00000000beef"
TRAJECTORY = "7a7a7a7a-0000-4000-8000-00000000beef"
ANSWER = "The quick brown fox jumps over the lazy dog. " * 400


def planner(index: int, *, status: str, text: str) -> dict[str, Any]:
    payload: dict[str, Any] = {"modifiedResponse": text}
    if status == "CORTEX_STEP_STATUS_DONE":
        payload["response"] = text
    return {
        "type": "CORTEX_STEP_TYPE_PLANNER_RESPONSE",
        "status": status,
        "metadata": {
            "sourceTrajectoryStepInfo": {
                "trajectoryId": TRAJECTORY,
                "stepIndex": index,
                "cascadeId": CASCADE,
            },
            **(
                {"modelUsage": {"model": "M", "inputTokens": "10", "outputTokens": "5"}}
                if status == "CORTEX_STEP_STATUS_DONE"
                else {}
            ),
        },
        "plannerResponse": payload,
    }


def frame(index: int, step: dict[str, Any], total: int) -> dict[str, Any]:
    """One sparse stream update re-sending `step` (docs/wire.md §4)."""
    return {
        "update": {
            "conversationId": CASCADE,
            "status": "CASCADE_RUN_STATUS_RUNNING",
            "mainTrajectoryUpdate": {
                "stepsUpdate": {"indices": [index], "steps": [step], "totalLength": total}
            },
        }
    }


def reader_with_history(prior_steps: int, directory: Path) -> CascadeReader:
    """A reader (thread not started) that has already committed `prior_steps` steps."""
    reader = CascadeReader(
        port=1,
        csrf_token="",
        cascade_id=CASCADE,
        sink=QueueSink(),
        cursor=CursorStore(directory),
    )
    history = {
        "update": {
            "conversationId": CASCADE,
            "status": "CASCADE_RUN_STATUS_RUNNING",
            "mainTrajectoryUpdate": {
                "stepsUpdate": {
                    "indices": list(range(prior_steps)),
                    "steps": [
                        planner(i, status="CORTEX_STEP_STATUS_DONE", text=f"answer {i}")
                        for i in range(prior_steps)
                    ],
                    "totalLength": prior_steps,
                }
            },
        }
    }
    reader._follower.apply_frame(history)
    return reader


def generating_frames(prior_steps: int, count: int) -> list[dict[str, Any]]:
    """`count` cumulative frames of the step after the history, each a little longer."""
    return [
        frame(
            prior_steps,
            planner(prior_steps, status="CORTEX_STEP_STATUS_GENERATING", text=ANSWER[: 8 * n]),
            prior_steps + 1,
        )
        for n in range(1, count + 1)
    ]
