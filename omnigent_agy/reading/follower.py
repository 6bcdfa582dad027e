"""Applying what agy says about the followed cascade: steps → events, the turn's end, the cursor.

`Follower` owns the `Following` of one cascade at a time and everything that happens to it
once agy's answer is in hand, whether a stream frame or a poll brought it: the mapper turns
the new part of each step into events (dropping anything already committed), the turn's usage
is summed, `TurnEnded` is published once the cascade is IDLE with every step settled after a
USER_INPUT (IDLE really means the turn is over: agy stays RUNNING while a gate is open,
docs/wire.md §4), and the durable cursor is saved once per batch, only when something durable
changed (a step committed, a gate opened or closed, a tool started, the turn ended). It does no
I/O with agy: `reader` fetches, this applies.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from omnigent_agy.reading.cursor import CursorStore
from omnigent_agy.reading.events import (
    Event,
    ReasoningDelta,
    SubAgentEvent,
    TextDelta,
    TurnBoundary,
    UsageReported,
)
from omnigent_agy.reading.mapper import map_step
from omnigent_agy.reading.mapper_state import MapperState
from omnigent_agy.reading.reader_state import Following, ReaderEvent, TurnEnded, TurnProgress
from omnigent_agy.reading.sink import EventSink
from omnigent_agy.reading.steps import is_settled, obj, step_key, step_status
from omnigent_agy.rpc.lazyjson import LazyArray

__all__ = ["IDLE", "Follower"]

_logger = logging.getLogger("omnigent_agy.reading.reader")

IDLE: Final = "CASCADE_RUN_STATUS_IDLE"


class Follower:
    """The cascade followed now, and what agy's frames and polls do to it."""

    def __init__(
        self,
        *,
        cascade_id: str,
        sink: EventSink[ReaderEvent],
        cursor: CursorStore | None,
        model_names: Mapping[str, str],
    ) -> None:
        self._sink = sink
        self._cursor = cursor
        self._model_names = dict(model_names)
        self.restored = False
        """Whether the cascade followed now was restored from a durable cursor."""
        self.follow = self._new_follow(cascade_id)

    def switch_to(self, cascade_id: str) -> None:
        """Save the cascade left behind and follow `cascade_id` (from its cursor, if any)."""
        self.save_cursor()
        self.follow = self._new_follow(cascade_id)

    # --- what agy says ------------------------------------------------------------------------

    def apply_frame(self, message: Mapping[str, Any]) -> bool:
        """Apply one stream frame; True when it names another conversation than ours."""
        # Every frame of a streamed answer comes here: the JSON shapes are tested with
        # `type(x) is dict` / `list` first, which costs no call (docs/performance.md).
        update = message.get("update")
        if type(update) is not dict:
            update = obj(update) or message
        follow = self.follow
        conversation = update.get("conversationId")
        if (
            conversation != follow.state.cascade_id
            and conversation
            and isinstance(conversation, str)
        ):
            return True
        steps_update = update.get("mainTrajectoryUpdate")
        if type(steps_update) is not dict:
            steps_update = obj(steps_update)
        steps_update = steps_update.get("stepsUpdate")
        if type(steps_update) is not dict:
            steps_update = obj(steps_update)
        indices = steps_update.get("indices")
        if type(indices) is not list:
            indices = []
        raw = steps_update.get("steps")
        # A large frame's steps are a LazyArray (rpc.lazyjson): each is decoded as it is
        # read, so they are walked once, never gathered, and the snapshot is never one tree.
        steps = raw if type(raw) is list or isinstance(raw, LazyArray) else []
        positioned: Iterable[tuple[object, object]]
        if len(indices) == len(steps):
            positioned = zip(indices, steps, strict=True)  # an index no int: taken as absent
        else:
            _logger.warning("a frame with %d indices for %d steps", len(indices), len(steps))
            positioned = ((None, step) for step in steps)
        total = steps_update.get("totalLength")
        if isinstance(total, int) and total > follow.total_length:
            follow.total_length = total
        status = update.get("status")
        if isinstance(status, str):
            follow.status = status
        self.apply_steps(positioned)
        return False

    def apply_poll(self, offset: int, steps: Sequence[object], status: object) -> None:
        """Apply the steps a poll from `offset` returned and the cascade's listed status."""
        follow = self.follow
        if isinstance(status, str):
            follow.status = status
        follow.total_length = max(follow.total_length, offset + len(steps))
        self.apply_steps([(offset + i, step) for i, step in enumerate(steps)])

    def skip_history(
        self, offset: int, steps: Sequence[Mapping[str, Any]], trajectory_id: str | None
    ) -> None:
        """Count the conversation as it is now as published (omnigent shows that history):
        every step below `offset` unseen, and the settled ones of `steps` (from `offset` on).

        Steps still open (a gate waiting, an answer generating) are left to be published.
        """
        follow = self.follow
        if follow.trajectory_id is None:
            follow.trajectory_id = trajectory_id or (
                step_key(steps[0]).trajectory_id if steps else None
            )
        if offset and follow.trajectory_id is not None:
            follow.state.commit_below(follow.trajectory_id, offset)
        for index, step in enumerate(steps, offset):
            if is_settled(step_status(step)):
                map_step(follow.state, step, absolute_index=index)  # its events are history
        follow.total_length = max(follow.total_length, offset + len(steps))
        self.save_cursor()

    def apply_steps(self, positioned: Iterable[tuple[object, object]]) -> None:
        """Map and publish a batch (one frame or one poll); save the cursor once, and only
        when something durable changed in it.

        A growth frame (more text of a step still generating) changes nothing durable: a
        crash loses at most the text streamed since the step opened, and a restarted reader
        re-streams that one step from its start (its deltas carry offsets, so a consumer
        splices them over what it showed). Writing on every growth frame would cost more than
        the frame itself, and the cursor would grow with the answer.
        """
        follow = self.follow
        state = follow.state
        durable = False
        for index, step in positioned:
            if follow.trajectory_id is None and isinstance(step, Mapping):
                follow.trajectory_id = step_key(step).trajectory_id or None
            absolute = index if type(index) is int else None  # bool is no index either
            for event in map_step(state, step, absolute_index=absolute):
                # A delta is not durable and never ends a turn (the type test first: a frame
                # of a growing answer is nothing but one delta).
                if type(event) not in _DELTAS and not _is_growth(event):
                    durable = True
                    self._track_turn(event)
                self._sink.publish(event)
        # A step that commits without an event (a quiet step without usage) is not worth a
        # write: a restart maps it again to nothing.
        if (follow.status == IDLE and self._maybe_end_turn()) or durable:
            self.save_cursor()

    # --- the turn -----------------------------------------------------------------------------

    def _track_turn(self, event: Event) -> None:
        turn = self.follow.turn
        if isinstance(event, TurnBoundary):
            self.follow.turn = TurnProgress(boundary=event.key, usage=None, ended=False)
        elif isinstance(event, UsageReported) and not turn.ended:
            turn.usage = event.usage if turn.usage is None else turn.usage + event.usage

    def _maybe_end_turn(self) -> bool:
        """Publish the turn's end if it has come; whether it did."""
        follow = self.follow
        turn = follow.turn
        if turn.ended or turn.boundary is None or follow.status != IDLE:
            return False
        if follow.state.open_count or follow.first_uncommitted() < follow.total_length:
            return False  # IDLE but a step is not settled yet: the next frame or poll settles it
        turn.ended = True
        self._sink.publish(TurnEnded(follow.cascade_id, turn.boundary, turn.usage))
        return True

    # --- the durable cursor -------------------------------------------------------------------

    def _new_follow(self, cascade_id: str) -> Following:
        state = MapperState(cascade_id=cascade_id, model_names=self._model_names)
        extra = self._cursor.load_into(state) if self._cursor is not None else None
        self.restored = extra is not None
        follow = Following(
            state=state,
            turn=TurnProgress.from_json(extra.get("turn") if extra else None, cascade_id),
        )
        trajectories = list(state.export_progress()["committed"]) if self.restored else []
        if len(trajectories) == 1:
            follow.trajectory_id = trajectories[0]  # so the first stream starts at the cursor
        return follow

    def save_cursor(self) -> None:
        if self._cursor is None:
            return
        try:
            self._cursor.save(self.follow.state, {"turn": self.follow.turn.to_json()})
        except OSError as exc:
            _logger.warning("could not save the reader's cursor: %s", exc)


_DELTAS: Final = frozenset({TextDelta, ReasoningDelta})


def _is_growth(event: Event) -> bool:
    """A delta of a step still open: nothing a restarted reader could not stream again."""
    if isinstance(event, SubAgentEvent):
        event = event.event
    return isinstance(event, TextDelta | ReasoningDelta)
