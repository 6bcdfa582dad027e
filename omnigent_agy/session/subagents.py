"""What a sub-agent did: the tool calls of its child cascade, read when it has finished.

agy runs a sub-agent as a child cascade of its own (docs/wire.md §7); the reader follows only
the conversation's cascade, so the child's steps never reach it. When the INVOKE_SUBAGENT step
reports a child done, its steps are read once (GetCascadeTrajectorySteps on the child) and
mapped with a child's own mapper state, so each tool call the sub-agent made comes out as a
`SubAgentEvent` wrapping its `ToolCallStarted`, ahead of the `SubAgentFinished` that closes
its row. A child that cannot be read costs only its tool calls: the row keeps its task and
summary.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Final, Protocol

from omnigent_agy.reading.events import SubAgentEvent, SubAgentFinished, ToolCallStarted
from omnigent_agy.reading.mapper import map_step
from omnigent_agy.reading.mapper_state import MapperState
from omnigent_agy.rpc.endpoint import FollowingClient
from omnigent_agy.rpc.errors import AgyError
from omnigent_agy.session.workspace_gate import WorkspaceGate, person_view

__all__ = ["READ_TIMEOUT", "child_tool_calls"]

_logger = logging.getLogger(__name__)

READ_TIMEOUT: Final = 5.0
"""Seconds a finished sub-agent's steps are waited for at most."""


class _Binding(Protocol):
    """What is read of the session's binding: its client and the workspace as agy sees it."""

    async def rpc(self) -> FollowingClient: ...

    @property
    def gate(self) -> WorkspaceGate: ...


async def child_tool_calls(
    binding: _Binding, event: object, *, timeout: float = READ_TIMEOUT
) -> list[SubAgentEvent]:
    """The tool calls of the sub-agent `event` reports finished, in the order it made them,
    with the person's paths (a hidden workspace's link, `workspace_gate.person_view`); nothing
    for any other event."""
    if not isinstance(event, SubAgentFinished):
        return []
    finished, child = event, event.child_cascade_id

    async def read() -> list[SubAgentEvent]:
        client = await binding.rpc()
        steps = await client.run(lambda c: c.get_cascade_trajectory_steps(child))
        state = MapperState(cascade_id=child, parent_call_id=finished.call_id)
        workspace = binding.gate.workspace
        return [
            replace(event, event=person_view(event.event, workspace))
            for index, step in enumerate(steps)
            for event in map_step(state, step, absolute_index=index)
            if isinstance(event, SubAgentEvent) and isinstance(event.event, ToolCallStarted)
        ]

    try:
        return await asyncio.wait_for(read(), timeout)
    except (AgyError, TimeoutError) as exc:
        _logger.info("could not read the sub-agent %s's steps: %s", child, exc or "timed out")
        return []
