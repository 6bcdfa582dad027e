"""Writing one execution's steps into a cascade: the primitives a turn and its tools share.

``StepWriter`` knows the turn's environment, cascade, model and ``executionId``; it gives
each new step its identity (index, metadata index, docs/wire.md §4), moves a step's status with
its timestamps, reports every change to the transcript, and remembers the step in flight
(the one a cancel stops). ``turn.ScriptedRun`` (model calls) and ``tool_runs.ToolRuns`` (tools and
their gates) both write through one writer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from agy_sim import steps_factory as sf
from agy_sim.cascade import Cascade, TranscriptEvent
from agy_sim.catalog import CatalogModel
from agy_sim.hooks import Hooks
from agy_sim.mcp_host import McpHost
from agy_sim.turn_api import ScenarioKnobs

# (parent, task, model, started(child id), delegate) -> the sub-agent's report
SpawnSubagent = Callable[[Cascade, str, CatalogModel, Callable[[str], None], bool], Awaitable[str]]


class TurnAbortedError(Exception):
    """The turn cannot go on (a gate timed out too often); an error step says why."""


@dataclass(frozen=True, slots=True)
class TurnEnv:
    """What a turn needs from the engine: time, ids, pacing and the outside world."""

    now: Callable[[], str]
    new_uuid: Callable[[], str]
    new_short_id: Callable[[], str]
    emit: Callable[[TranscriptEvent], None]
    spawn_subagent: SpawnSubagent
    workspace: Path
    knobs: ScenarioKnobs
    token_interval: float
    waiting_timeout: float
    waiting_retries: int
    session_id: str
    mcp: McpHost | None = None
    rules: Callable[[], str] = lambda: ""
    hooks: Hooks | None = None


class StepWriter:
    """Appends and updates the steps of one execution (``executionId``) of a cascade."""

    def __init__(
        self, env: TurnEnv, cascade: Cascade, model: CatalogModel, execution_id: str
    ) -> None:
        self.env = env
        self.cascade = cascade
        self.model = model
        self.execution_id = execution_id
        self.active: int | None = None  # the step a cancel would stop
        # The metadata index of the model call that asked for the current tool (docs/wire.md §4).
        self.tool_metadata_index = 0

    def ident(self, metadata_index: int = 0) -> sf.StepIdentity:
        """The identity of the next step appended."""
        return sf.StepIdentity(
            self.cascade.trajectory_id,
            self.cascade.cascade_id,
            len(self.cascade.steps),
            self.execution_id,
            metadata_index,
        )

    def emit(self, kind: str, text: str, index: int | None) -> None:
        self.env.emit(TranscriptEvent(self.cascade.cascade_id, kind, text, index))

    def touch(self, index: int) -> None:
        self.cascade.touch(index, self.env.now())

    def set_status(self, index: int, status: str) -> None:
        ts = self.env.now()
        sf.set_status(self.cascade.steps[index], status, ts)
        self.cascade.touch(index, ts)

    async def pause(self, interval: float | None = None) -> None:
        """The pacing between two visible changes (a token, a quick tool's run)."""
        await asyncio.sleep(self.env.token_interval if interval is None else interval)
