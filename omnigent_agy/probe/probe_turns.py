"""The probe's turns: one message to agy, followed on the stream the way the plugin follows it.

A `ProbeCascade` is one cascade the probe talks to with the plugin's own client (recording
every call). Each of its turns is a `ProbeExchange`: it opens StreamAgentStateUpdates first,
sends the message as the session does (docs/wire.md §3), and keeps every frame twice: raw, for
the checks and the recording, and through the plugin's own `reading.reader.Follower`, whose
events say what omnigent would be shown. `turn_wait` waits on what the frames show (a gate
open, text growing, the turn's end) with a deadline; polls fill in what the stream leaves out
(docs/wire.md §4).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from omnigent_agy.errors import RpcError
from omnigent_agy.probe.recording import Recorder
from omnigent_agy.reading.events import Event
from omnigent_agy.reading.reader import IDLE, Follower, ReaderEvent, TurnEnded
from omnigent_agy.reading.sink import QueueSink
from omnigent_agy.reading.steps import (
    StepStatus,
    StepType,
    is_settled,
    obj,
    requested_interaction,
    seq,
    step_status,
    step_type,
    text,
)
from omnigent_agy.rpc.client import RpcClient

__all__ = ["ProbeCascade", "ProbeExchange", "RecordingClient"]

_logger = logging.getLogger(__name__)
_FIRST_FRAME_WAIT: Final = 3.0
_STREAM_IDLE: Final = 600.0  # the probe's own deadlines decide; never the stream's


class RecordingClient(RpcClient):
    """The plugin's client, every unary call and its answer (or error) recorded."""

    def __init__(self, *, recorder: Recorder, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._recorder = recorder

    async def call(
        self, method: str, body: Mapping[str, Any], *, idempotent: bool = False
    ) -> dict[str, Any]:
        try:
            answer = await super().call(method, body, idempotent=idempotent)
        except RpcError as exc:
            self._recorder.call(method, body, error=exc)
            raise
        self._recorder.call(method, body, answer=answer)
        return answer


@dataclass(slots=True)
class ProbeExchange:
    """One turn as the probe saw it."""

    name: str
    text: str
    cascade_id: str
    frames: list[dict[str, Any]] = field(default_factory=list)
    states: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    """Every state of each step the frames showed, by absolute index, in order."""
    statuses: list[str] = field(default_factory=list)
    """The cascade's status in each frame that named one."""
    events: list[Event] = field(default_factory=list)
    """What the plugin's reader published (its `TurnEnded` is kept in `ended_by_plugin`)."""
    ended_by_plugin: bool = False
    stream_error: str | None = None
    user_input: int | None = None
    """The index of this turn's USER_INPUT, once seen."""
    asked_from: int | None = None
    """Where its stream asked to start (initialStepsPageBounds), None: from the start."""
    stream_started: bool = False
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    def latest(self, index: int) -> dict[str, Any]:
        return self.states[index][-1] if self.states.get(index) else {}

    def indices(self) -> list[int]:
        return sorted(self.states)

    def own_steps(self) -> list[tuple[int, dict[str, Any]]]:
        """This turn's steps (from its USER_INPUT on), latest state each."""
        start = self.user_input if self.user_input is not None else len(self.states)
        return [(i, self.latest(i)) for i in self.indices() if i >= start]

    def of_type(self, kind: str) -> list[tuple[int, dict[str, Any]]]:
        return [(i, step) for i, step in self.own_steps() if step_type(step) == kind]

    def open_gate(self) -> tuple[int, dict[str, Any]] | None:
        """The newest step of this turn WAITING on an interaction."""
        waiting = [
            (i, step)
            for i, step in self.own_steps()
            if step_status(step) == StepStatus.WAITING and requested_interaction(step)
        ]
        return waiting[-1] if waiting else None

    def generated(self) -> str:
        """The newest planner text of this turn (`modifiedResponse`, else `response`)."""
        for _, step in reversed(self.of_type(StepType.PLANNER_RESPONSE)):
            response = obj(step.get("plannerResponse"))
            said = text(response.get("modifiedResponse")) or text(response.get("response"))
            if said:
                return said
        return ""

    def ended(self) -> bool:
        """The cascade is IDLE and every step of this turn settled (docs/wire.md §4)."""
        own = self.own_steps()
        return (
            self.user_input is not None
            and bool(self.statuses)
            and self.statuses[-1] == IDLE
            and all(is_settled(step_status(step)) for _, step in own)
        )


class ProbeCascade:
    """One cascade, the plan model of its turns, and the plugin's reading of it."""

    def __init__(
        self,
        client: RpcClient,
        cascade_id: str,
        *,
        plan_model: str,
        recorder: Recorder,
        model_names: Mapping[str, str],
    ) -> None:
        self.client = client
        self.cascade_id = cascade_id
        self.plan_model = plan_model
        self._recorder = recorder
        self._sink: QueueSink[ReaderEvent] = QueueSink()
        self._follower = Follower(
            cascade_id=cascade_id, sink=self._sink, cursor=None, model_names=model_names
        )
        self.length = 0
        """Steps known so far: the next stream asks to start there (initialStepsPageBounds)."""
        self.stream_starts: list[tuple[int | None, int]] = []
        """Each turn's stream: the index it asked to start at, and the lowest index in its
        first frame with steps (the first frame replays the steps so far, docs/wire.md §4)."""

    @contextlib.asynccontextmanager
    async def turn(self, name: str, message: str) -> AsyncGenerator[ProbeExchange]:
        """Open the stream, send `message`, follow; the stream closes when the block ends."""
        turn = ProbeExchange(name, message, self.cascade_id)
        start = self.length or None
        turn.asked_from = start
        stream = asyncio.create_task(self._follow(turn, start))
        try:
            with contextlib.suppress(TimeoutError):
                await turn_wait(turn, lambda t: bool(t.frames), _FIRST_FRAME_WAIT)
            await self.client.send_user_cascade_message(
                self.cascade_id, message, plan_model=self.plan_model
            )
            yield turn
        finally:
            stream.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await stream
            self._take_events(turn)
            self.length = max([self.length, *(i + 1 for i in turn.states)])

    async def _follow(self, turn: ProbeExchange, start: int | None) -> None:
        stream = self.client.stream_agent_state_updates(
            self.cascade_id, start_index=start, idle_timeout=_STREAM_IDLE
        )
        try:
            async with contextlib.aclosing(stream) as frames:
                async for frame in frames:
                    self._frame(turn, frame)
        except RpcError as exc:
            turn.stream_error = str(exc)
            turn._changed.set()

    def _frame(self, turn: ProbeExchange, frame: dict[str, Any]) -> None:
        turn.frames.append(frame)
        self._recorder.frame(turn.name, frame)
        update = obj(frame.get("update"))
        status = update.get("status")
        if isinstance(status, str):
            turn.statuses.append(status)
        steps_update = obj(obj(update.get("mainTrajectoryUpdate")).get("stepsUpdate"))
        indices = [i for i in seq(steps_update.get("indices")) if isinstance(i, int)]
        if indices and not turn.stream_started:
            turn.stream_started = True
            self.stream_starts.append((turn.asked_from, min(indices)))
        for index, step in zip(
            seq(steps_update.get("indices")), seq(steps_update.get("steps")), strict=False
        ):
            if isinstance(index, int) and isinstance(step, dict):
                turn.states.setdefault(index, []).append(step)
                if step_type(step) == StepType.USER_INPUT and _said(step) == turn.text:
                    turn.user_input = index
        self._follower.apply_frame(frame)
        self._take_events(turn)
        turn._changed.set()

    def _take_events(self, turn: ProbeExchange) -> None:
        for event in self._sink.drain():
            if isinstance(event, TurnEnded):
                turn.ended_by_plugin = True
            elif isinstance(event, Event):
                turn.events.append(event)

    async def poll(self, turn: ProbeExchange, *, offset: int = 0) -> list[dict[str, Any]]:
        """GetCascadeTrajectorySteps from `offset`, recorded as the turn's poll."""
        steps = await self.client.get_cascade_trajectory_steps(self.cascade_id, step_offset=offset)
        self._recorder.poll(turn.name, offset, steps)
        return steps


def _said(step: Mapping[str, Any]) -> str | None:
    return text(obj(step.get("userInput")).get("userResponse"))


async def turn_wait(
    turn: ProbeExchange, until: Callable[[ProbeExchange], bool], timeout: float
) -> None:
    """Until `until(turn)` holds, or TimeoutError after `timeout` seconds; a broken stream
    ends the wait too (the caller sees `turn.stream_error`)."""
    async with asyncio.timeout(timeout):
        while not until(turn):
            if turn.stream_error is not None:
                return
            turn._changed.clear()
            await turn._changed.wait()


def steps_settled(steps: Sequence[object]) -> bool:
    return all(is_settled(step_status(obj(step))) for step in steps)
