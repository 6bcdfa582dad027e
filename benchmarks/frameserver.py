"""A language server that streams scripted frames as fast as asked, for the benchmarks.

    <python> benchmarks/frameserver.py --csrf_token=TOKEN     (started as .../bin/agy)

Serves, on agy-sim's own TLS HTTP/2 (+ HTTP/1.1) server and connect app, the methods a reader
uses. The conversation id names the script, so one server serves every measurement:
``bench-h<history>-n<frames>-c<chars per frame>-i<µs between frames>-b<burst size>``. A
stream sends the history (within ``initialStepsPageBounds``) in its first frame, then
``frames`` cumulative frames of one PLANNER_RESPONSE growing ``chars`` at a time (each update
carries ``benchSentNs``, ``time.monotonic_ns()`` when it was handed to the server: loopback
shares the clock), then the step's DONE frame, then ends. The benchmarks start it with
``argv[0]`` = ``<venv>/bin/agy`` so that omnigent's built-in reader, which looks agy up in the
process table for the CSRF token, finds it as it finds agy. Prints ``{"port": N}`` when ready.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import functools
import json
import re
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

from agy_sim import steps_factory as sf
from agy_sim.cascade import Cascade
from agy_sim.connect_app import ConnectApp, ConnectHandlerError
from agy_sim.history import seed_history
from agy_sim.server import TlsConnectServer

MODEL = "MODEL_PLACEHOLDER_M20"
ANSWER = "The quick brown fox jumps over the lazy dog; then it rests in the sun. " * 20_000
SPEC = re.compile(r"bench-h(\d+)-n(\d+)-c(\d+)-i(\d+)-b(\d+)")


class Script:
    """One conversation of the benchmark: its history and its growing answer."""

    def __init__(self, cascade_id: str) -> None:
        match = SPEC.fullmatch(cascade_id)
        if match is None:
            raise ConnectHandlerError("not_found", "trajectory not found", 500)
        self.history, self.frames, self.chars, self.interval_us, self.burst = map(
            int, match.groups()
        )
        self.cascade = Cascade(
            cascade_id, "7a7a7a7a-0000-4000-8000-00000000beef", _ts(), "file:///w"
        )
        counter = iter(range(10**9))
        seed_history(
            self.cascade,
            self.history,
            model=MODEL,
            now=_ts,
            new_id=lambda: f"00000000-0000-4000-8000-{next(counter):012d}",
            planner_config=lambda requested: {"plannerConfig": dict(requested)},
        )
        self.shaped = [sf.stream_shape(step) for step in self.cascade.steps]

    def growing(self, count: int) -> dict[str, Any]:
        ident = sf.StepIdentity(
            self.cascade.trajectory_id, self.cascade.cascade_id, self.history, "exec-bench", 1
        )
        step = sf.planner_step(ident, _ts(), model=MODEL, message_id="bench-message")
        sf.planner_progress(step, text=ANSWER[: count * self.chars])
        return sf.stream_shape(step)

    def done(self) -> dict[str, Any]:
        step = copy.deepcopy(self.growing(self.frames))
        usage = sf.Usage(model=MODEL, input_tokens=1200, thinking_tokens=0, response_tokens=90)
        sf.planner_done(step, _ts(), usage=usage)
        return step

    def update(
        self, indices: list[int], steps: list[dict[str, Any]], status: str
    ) -> dict[str, Any]:
        return {
            "update": {
                "conversationId": self.cascade.cascade_id,
                "status": status,
                "mainTrajectoryUpdate": {
                    "stepsUpdate": {
                        "indices": indices,
                        "steps": steps,
                        "totalLength": self.history + 1,
                    }
                },
                "benchSentNs": str(time.monotonic_ns()),
            }
        }


@functools.lru_cache(maxsize=16)
def script(cascade_id: str) -> Script:
    return Script(cascade_id)


def _ts() -> str:
    return "2026-12-01T20:00:00.000000Z"


async def stream(request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    plan = script(str(request.get("conversationId", "")))
    bounds = request.get("initialStepsPageBounds") or {}
    start = min(int(bounds.get("startIndex", 0)), plan.history)
    end = min(int(bounds.get("endIndexExclusive", plan.history)), plan.history)
    running = "CASCADE_RUN_STATUS_RUNNING"
    yield plan.update(list(range(start, end)), plan.shaped[start:end], running)
    loop = asyncio.get_running_loop()
    due = loop.time()
    for count in range(1, plan.frames + 1):
        step = plan.growing(count)  # built before the stamp: only the wire is measured
        if plan.interval_us and (count - 1) % plan.burst == 0:
            due += plan.interval_us / 1e6 * plan.burst
            await asyncio.sleep(max(0.0, due - loop.time()))
        yield plan.update([plan.history], [step], running)
    yield plan.update([plan.history], [plan.done()], "CASCADE_RUN_STATUS_IDLE")


async def steps(request: dict[str, Any]) -> dict[str, Any]:
    plan = script(str(request.get("cascadeId", "")))
    offset = int(request.get("stepOffset", 0))
    return {"steps": plan.cascade.steps[offset:]}


async def summaries(request: dict[str, Any]) -> dict[str, Any]:
    del request
    return {"trajectorySummaries": {}}


async def heartbeat(request: dict[str, Any]) -> dict[str, Any]:
    del request
    return {"lastExtensionHeartbeat": _ts()}


async def metadata(request: dict[str, Any]) -> dict[str, Any]:
    cascade = str(request.get("conversationId", ""))
    return {"metadata": {"rootConversationId": cascade, "createdAt": _ts()}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--csrf_token", required=True)
    args = parser.parse_args()
    app = ConnectApp(
        csrf_token=args.csrf_token,
        unary={
            "Heartbeat": heartbeat,
            "GetConversationMetadata": metadata,
            "GetCascadeTrajectorySteps": steps,
            "GetAllCascadeTrajectories": summaries,
        },
        streams={"StreamAgentStateUpdates": stream},
    )
    server = TlsConnectServer(app).start()
    print(json.dumps({"port": server.port}), flush=True)
    try:
        sys.stdin.read()  # until the benchmark closes our stdin
    finally:
        server.stop()


if __name__ == "__main__":
    main()
