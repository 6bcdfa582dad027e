"""One simulated cascade: its steps, run status, open gates and a change log for streams.

A cascade (== conversation, docs/wire.md §7) owns its trajectory's steps as poll-shape dicts.
Every mutation goes through ``append``/``touch``/``set_run_status`` so that stream
subscribers learn exactly which indices changed since they last looked: the log is
append-only and a subscriber keeps its position in it, so building a frame costs what
changed, never a re-walk of the trajectory (docs/decisions.md §6).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from agy_sim.steps_factory import S_WAITING, Step

RUNNING: Final = "CASCADE_RUN_STATUS_RUNNING"
IDLE: Final = "CASCADE_RUN_STATUS_IDLE"
STATUS_CHANGE: Final = -1  # a change-log entry that is not a step: the run status flipped

GateKind = Literal["permission", "askQuestion"]


@dataclass(frozen=True, slots=True)
class TranscriptEvent:
    """What the TUI shows: one line of the conversation, for any cascade."""

    cascade_id: str
    kind: str  # user | thinking | answer_delta | answer | tool | waiting | answered | error
    #            | system | status | cleared
    text: str
    step_index: int | None = None


class GateRejectedError(Exception):
    """An answer that does not fit the open gate (the caller maps it to a connect error)."""

    def __init__(self, message: str, *, not_registered: bool) -> None:
        super().__init__(message)
        self.not_registered = not_registered


@dataclass(slots=True)
class Gate:
    """A WAITING step's open interaction; ``accept`` runs in the handler, synchronously."""

    step_index: int
    kind: GateKind
    accept: Callable[[dict[str, Any]], None]


@dataclass(slots=True)
class QueuedMessage:
    items: list[dict[str, Any]]
    planner_config: dict[str, Any]
    strategy: str


@dataclass(slots=True)
class Cascade:
    """State of one cascade; mutated only from the engine's event loop."""

    cascade_id: str
    trajectory_id: str
    created_at: str
    workspace_uri: str
    parent_id: str = ""
    root_id: str = ""
    steps: list[Step] = field(default_factory=list)
    status: str = IDLE
    last_modified: str = ""
    last_user_input_time: str = ""
    last_user_input_index: int = 0
    planner_invocations: int = 0
    turns_started: int = 0
    gates: dict[int, Gate] = field(default_factory=dict)
    queue: list[QueuedMessage] = field(default_factory=list)
    steering: list[QueuedMessage] = field(default_factory=list)
    plan_models: list[str] = field(default_factory=list)
    cancel_requests: list[dict[str, Any]] = field(default_factory=list)
    interactions: list[dict[str, Any]] = field(default_factory=list)
    # Commands allowed with a scope beyond this one step (docs/simulator.md: a guess).
    allowed_commands: set[str] = field(default_factory=set)
    task: asyncio.Task[None] | None = None
    _log: list[int] = field(default_factory=list)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    # -- mutation -----------------------------------------------------------------------
    def append(self, step: Step, ts: str) -> int:
        self.steps.append(step)
        index = len(self.steps) - 1
        self._note(index, ts)
        return index

    def touch(self, index: int, ts: str) -> None:
        """Record that step ``index`` changed in place (streams re-send it whole, §4)."""
        self._note(index, ts)

    def set_run_status(self, status: str, ts: str) -> None:
        if status != self.status:
            self.status = status
            self._note(STATUS_CHANGE, ts)

    def wake(self) -> None:
        """Wake stream subscribers without a change (the engine is closing)."""
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def _note(self, index: int, ts: str) -> None:
        self._log.append(index)
        self.last_modified = ts
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    # -- reading ------------------------------------------------------------------------
    @property
    def log_position(self) -> int:
        return len(self._log)

    @property
    def change_event(self) -> asyncio.Event:
        """Set at the next change; take it *before* reading state, then await it."""
        return self._changed

    def changed_since(self, position: int) -> tuple[list[int], bool]:
        """Sorted step indices changed since ``position``, and whether the status flipped."""
        entries = self._log[position:]
        indices = sorted({i for i in entries if i != STATUS_CHANGE})
        return indices, STATUS_CHANGE in entries

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    def waiting_indices(self) -> list[int]:
        return [i for i in sorted(self.gates) if self.steps[i]["status"] == S_WAITING]

    def metadata(self) -> dict[str, Any]:
        """``trajectoryMetadata`` / GetConversationMetadata's ``metadata`` (docs/wire.md §3)."""
        meta: dict[str, Any] = {"rootConversationId": self.root_id or self.cascade_id}
        if self.parent_id:
            meta["parentConversationId"] = self.parent_id
        meta["createdAt"] = self.created_at
        meta["workspaceUris"] = [self.workspace_uri]
        return meta

    def summary(self) -> dict[str, Any]:
        """One entry of GetAllCascadeTrajectories' ``trajectorySummaries`` (docs/wire.md §3)."""
        summary: dict[str, Any] = {"trajectoryId": self.trajectory_id, "status": self.status}
        # Seen on agy 1.1.9 by omnigent's built-in harness, for roots and sub-agents alike.
        summary["trajectoryType"] = "CORTEX_TRAJECTORY_TYPE_CASCADE"
        if self.steps:
            summary["stepCount"] = len(self.steps)
        summary["createdTime"] = self.created_at
        summary["lastModifiedTime"] = self.last_modified or self.created_at
        if self.last_user_input_time:
            summary["lastUserInputTime"] = self.last_user_input_time
        if self.last_user_input_index:
            summary["lastUserInputStepIndex"] = self.last_user_input_index
        waiting = [
            {"step": copy.deepcopy(self.steps[i]), **({"stepIndex": i} if i else {})}
            for i in self.waiting_indices()
        ]
        if waiting:
            summary["waitingSteps"] = waiting
        summary["trajectoryMetadata"] = self.metadata()
        return summary

    def snapshot(self) -> dict[str, Any]:
        """The cascade's state as the engine's snapshot shows it (SimulatorSnapshot)."""
        return {
            "trajectoryId": self.trajectory_id,
            "status": self.status,
            "running": self.running,
            "parentId": self.parent_id,
            "planModels": list(self.plan_models),
            "cancelRequests": copy.deepcopy(self.cancel_requests),
            "interactions": copy.deepcopy(self.interactions),
            "queued": [m.items for m in self.queue],
            "steering": [m.items for m in self.steering],
            "waitingStepIndices": self.waiting_indices(),
            "steps": copy.deepcopy(self.steps),
        }
