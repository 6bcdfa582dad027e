"""A line per stream frame sent, for the benchmarks (``--sim-frame-log PATH``; not agy's).

Each ``StreamAgentStateUpdates`` frame, as it is handed to the server, appends one JSON line::

    {"ns": <time.monotonic_ns()>, "pid": <agy-sim's pid>, "cascade": <id>,
     "answers": [[<step index>, <characters of its answer so far>], ...]}

``answers`` names the frame's PLANNER_RESPONSE steps and the length of their answer text
(``modifiedResponse``, else ``response``). The monotonic clock is the machine's, so a
benchmark in another process takes the time a frame was sent from here and the time its text
reached it from its own clock (benchmarks/bench_scale.py: agy's frame to omnigent's event).
Several agy-sims may share one file: each line is one ``write`` in append mode.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

__all__ = ["FrameLog"]


class FrameLog:
    def __init__(self, path: str) -> None:
        self._path = Path(path) if path else None

    def sent(self, frame: dict[str, Any]) -> None:
        if self._path is None:
            return
        update = frame.get("update") or {}
        steps_update = (update.get("mainTrajectoryUpdate") or {}).get("stepsUpdate") or {}
        answers = []
        for index, step in zip(
            steps_update.get("indices") or (), steps_update.get("steps") or (), strict=False
        ):
            response = step.get("plannerResponse")
            if isinstance(response, dict):
                text = response.get("modifiedResponse") or response.get("response") or ""
                answers.append([index, len(text)])
        line = {
            "ns": time.monotonic_ns(),
            "pid": os.getpid(),
            "cascade": update.get("conversationId"),
            "answers": answers,
        }
        descriptor = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, json.dumps(line).encode() + b"\n")
        finally:
            os.close(descriptor)
