"""Run a simulator scenario end to end and collect every step it emits, in both shapes.

Used by the conformance tests and by ``scripts/capture_sim_fixtures.py``. A ``Plan``
names the turn's text and how to answer each WAITING step; ``capture`` drives it through
the engine's own handlers (no network) and records:

- every *poll-shape* state of every step (GetCascadeTrajectorySteps after each change,
  a new entry whenever a step's status changed, and each step's final state), and
- every *stream frame* (StreamAgentStateUpdates from before the turn to its end).

With ``deterministic=True`` ids come from a seeded source and timestamps from a fake clock
that ticks one millisecond per reading, so captured fixtures are reproducible.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agy_sim.engine import SimEngine
from agy_sim.engine_config import EngineSettings, IdSource
from agy_sim.handlers import RpcHandlers

Answerer = Callable[[dict[str, Any]], dict[str, Any]]
PLAN_MODEL = "MODEL_PLACEHOLDER_M20"


def allow(step: dict[str, Any]) -> dict[str, Any]:
    return {"permission": {"allow": True}}


def deny(step: dict[str, Any]) -> dict[str, Any]:
    return {"permission": {"allow": False}}


def pick(*ids: str) -> Answerer:
    def answer(step: dict[str, Any]) -> dict[str, Any]:
        questions = step["requestedInteraction"]["askQuestion"]["questions"]
        return {
            "askQuestion": {
                "responses": [
                    {"question": q["question"], "selectedOptionIds": list(ids)} for q in questions
                ]
            }
        }

    return answer


def write_in(text: str) -> Answerer:
    def answer(step: dict[str, Any]) -> dict[str, Any]:
        questions = step["requestedInteraction"]["askQuestion"]["questions"]
        return {
            "askQuestion": {
                "responses": [
                    {"question": q["question"], "writeInResponse": text} for q in questions
                ]
            }
        }

    return answer


@dataclass(frozen=True, slots=True)
class Plan:
    """One scenario run: what the user types and how every gate is answered."""

    name: str
    text: str
    answers: tuple[Answerer, ...] = ()
    plan_model: str | None = PLAN_MODEL
    settings: dict[str, Any] = field(default_factory=dict)
    ignore_first_waits: int = 0  # let this many WAITING steps time out before answering
    cancel_when: Callable[[list[dict[str, Any]]], bool] | None = None
    agent_message: str = ""  # SendAgentMessage instead of a user turn


PLANS: tuple[Plan, ...] = (
    Plan("plain_answer", "Say hello in one short sentence."),
    Plan("long_answer", "Give me a long answer", settings={"long_answer_chunks": 6}),
    Plan("approval_allow", "Please run: echo hello", (allow,)),
    Plan("approval_deny", "Please run: pwd", (deny,)),
    Plan("chained_command", "chain git status and git log", (allow, allow)),
    Plan("single_question", "Ask me a question", (pick("2"),)),
    Plan("multi_question", "multi-select please", (pick("1", "3"),)),
    Plan("several_questions", "a few questions", (pick("1"),)),
    Plan("write_in_question", "write-in please", (write_in("toolbox"),)),
    Plan(
        "waiting_timeout_retry",
        "Ask me a question",
        (pick("1"),),
        ignore_first_waits=1,
        settings={"waiting_timeout": 0.05},
    ),
    Plan("model_error", "simulate a model error"),
    Plan("no_plan_model", "hello", plan_model=None),
    Plan("list_directory", "ls the workspace"),
    Plan("view_file", "read README.md"),
    Plan("subagent", "use a sub-agent"),
    Plan(
        "cancel_generation",
        "a long answer",
        cancel_when=lambda s: len(s) > 2 and "modifiedResponse" in s[2].get("plannerResponse", {}),
        settings={"long_answer_chunks": 500, "long_token_interval": 0.002},
    ),
    Plan(
        "cancel_command",
        "slow command",
        (allow,),
        settings={"slow_command_seconds": 60.0},
        cancel_when=lambda s: any("combinedOutput" in x.get("runCommand", {}) for x in s),
    ),
    Plan("system_message", "", agent_message="A note from the agent host."),
)


@dataclass(slots=True)
class Capture:
    """What one scenario emitted, per cascade: poll states and stream frames."""

    poll: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # {"idx", "step"}
    frames: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def poll_steps(self) -> list[dict[str, Any]]:
        return [entry["step"] for entries in self.poll.values() for entry in entries]

    def stream_steps(self) -> list[dict[str, Any]]:
        out = []
        for frames in self.frames.values():
            for frame in frames:
                main = frame["update"]["mainTrajectoryUpdate"]
                out.extend(main.get("stepsUpdate", {}).get("steps", []))
                out.extend(w["step"] for w in main.get("waitingSteps", []))
        return out


def _fake_wall_clock() -> Callable[[], datetime]:
    ticks = itertools.count()
    start = datetime(2026, 9, 1, 10, 0, 0, tzinfo=UTC)
    return lambda: start + timedelta(milliseconds=next(ticks))


class _Recorder:
    def __init__(self, engine: SimEngine, capture: Capture) -> None:
        self._engine = engine
        self._capture = capture
        self._seen: dict[tuple[str, int], str] = {}
        self.tasks: list[asyncio.Task[None]] = []

    def following(self, cid: str) -> bool:
        return cid in self._capture.poll

    def follow(self, cid: str) -> None:
        self._capture.poll[cid] = []
        self._capture.frames[cid] = []
        self.tasks.append(asyncio.create_task(self._stream(cid)))

    async def _stream(self, cid: str) -> None:
        stream = RpcHandlers(self._engine).streams()["StreamAgentStateUpdates"]
        async for frame in stream({"conversationId": cid}):
            self._capture.frames[cid].append(frame)

    async def settle(self) -> None:
        """Wait until every followed stream has sent a frame with the cascade's final state."""
        for cid, frames in self._capture.frames.items():
            cascade = self._engine.cascades[cid]

            def caught_up(cascade: Any = cascade, frames: list[dict[str, Any]] = frames) -> bool:
                if not frames:
                    return False
                update = frames[-1]["update"]
                total = update["mainTrajectoryUpdate"]["stepsUpdate"].get("totalLength", 0)
                return bool(total == len(cascade.steps) and update["status"] == cascade.status)

            while not caught_up():
                await asyncio.sleep(0)

    async def poll(self) -> None:
        """Record each step whose status changed since the last poll of its cascade."""
        handler = RpcHandlers(self._engine).unary()["GetCascadeTrajectorySteps"]
        for cid in list(self._capture.poll):
            steps = (await handler({"cascadeId": cid})).get("steps", [])
            for index, step in enumerate(steps):
                if self._seen.get((cid, index)) != step["status"]:
                    self._seen[cid, index] = step["status"]
                    self._capture.poll[cid].append({"idx": index, "step": step})

    async def finish(self) -> None:
        """Also keep each step's final state (e.g. a DONE step that changed after DONE)."""
        handler = RpcHandlers(self._engine).unary()["GetCascadeTrajectorySteps"]
        for cid, entries in self._capture.poll.items():
            steps = (await handler({"cascadeId": cid})).get("steps", [])
            for index, step in enumerate(steps):
                last = [e for e in entries if e["idx"] == index]
                if not last or last[-1]["step"] != step:
                    entries.append({"idx": index, "step": step})


async def capture(
    plan: Plan, workspace: Path, *, deterministic: bool = False, timeout: float = 20.0
) -> Capture:
    """Run ``plan`` on a fresh engine and return everything it emitted."""
    settings = EngineSettings(**{"token_interval": 0.0, **plan.settings})
    clock: dict[str, Any] = (
        {"wall_clock": _fake_wall_clock(), "ids": IdSource(seed=7)} if deterministic else {}
    )
    engine = SimEngine(settings, workspace=workspace, **clock)
    unary = RpcHandlers(engine).unary()
    result = Capture()
    recorder = _Recorder(engine, result)
    try:
        cid = (await unary["StartCascade"]({"source": "CORTEX_TRAJECTORY_SOURCE_CLI"}))["cascadeId"]
        recorder.follow(cid)
        await asyncio.sleep(0)  # let the stream take its first (empty) snapshot
        async with asyncio.timeout(timeout):
            await _drive(engine, plan, cid, recorder)
            await recorder.settle()
        await recorder.finish()
    finally:
        await engine.aclose()
        for task in recorder.tasks:
            task.cancel()
        await asyncio.gather(*recorder.tasks, return_exceptions=True)
    return result


async def _drive(engine: SimEngine, plan: Plan, cid: str, recorder: _Recorder) -> None:
    unary = RpcHandlers(engine).unary()
    if plan.agent_message:
        await unary["SendAgentMessage"]({"cascadeId": cid, "message": plan.agent_message})
        await recorder.poll()
        return
    config = {"plannerConfig": {"planModel": plan.plan_model}} if plan.plan_model else {}
    await unary["SendUserCascadeMessage"](
        {"cascadeId": cid, "items": [{"text": plan.text}], "cascadeConfig": config}
    )
    answers, ignored, answered = list(plan.answers), plan.ignore_first_waits, set()
    while True:
        changed = [c.change_event for c in engine.cascades.values()]
        for child in engine.cascades.values():
            if child.parent_id == cid and not recorder.following(child.cascade_id):
                recorder.follow(child.cascade_id)
        await recorder.poll()
        cascade = engine.cascades[cid]
        if plan.cancel_when and plan.cancel_when(cascade.steps):
            await unary["CancelCascadeSteps"]({"cascadeId": cid})
            await recorder.poll()
            return
        waiting = [
            i
            for i in cascade.waiting_indices()
            if (i, len(cascade.steps[i].get("completedInteractions", []))) not in answered
        ]
        if waiting and answers and not ignored:
            index = waiting[-1]
            answered.add((index, len(cascade.steps[index].get("completedInteractions", []))))
            interaction = {
                "trajectoryId": cascade.trajectory_id,
                "stepIndex": index,
                **answers.pop(0)(cascade.steps[index]),
            }
            await unary["HandleCascadeUserInteraction"](
                {"cascadeId": cid, "interaction": interaction}
            )
            continue
        if waiting and ignored:
            answered.add((waiting[-1], 0))
            ignored -= 1
        if not any(c.running for c in engine.cascades.values()):
            return
        waiters = [asyncio.create_task(e.wait()) for e in changed]
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
