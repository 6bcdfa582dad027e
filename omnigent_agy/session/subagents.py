"""The turn's sub-agents, each followed on its own child cascade while it runs.

agy runs a sub-agent as a child cascade of its own (docs/wire.md §7), and since agy 1.5.15
a sub-agent's own tool calls wait on approvals and questions **in that cascade**: the
reader follows only the conversation's cascade, so a session that did not look there would
never see such a gate, and the parent's turn would wait until agy gave up. So each child an
INVOKE_SUBAGENT step reports is read here while it runs (GetCascadeTrajectorySteps from its
first unsettled step, at a short interval: the same poll the reader falls back on), mapped
with the child's own `MapperState`, and what it does comes out as `SubAgentEvent`s: its tool
calls (the row's calls), its gates (asked on the sub-agent's behalf, answered in its own
cascade), and its own sub-agents, followed the same way.

What a person reads on the row comes from what agy surely sends: the task is the child's own
first user input, the summary its last answer; the guessed `spec.prompt` and
`results[].summary` (docs/wire.md §5) stand in only where those are missing.

Events wait in a per-child list until the session takes them; the follower only publishes a
`ChildProgress` marker, so the child's events keep their order with the parent's (a child's
last events are read once more when the parent reports it finished, ahead of that).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, Protocol

from omnigent_agy.errors import AgyError
from omnigent_agy.reading.events import (
    AssistantMessage,
    Event,
    InteractionRequested,
    SubAgentEvent,
    SubAgentFinished,
    SubAgentStarted,
    ToolCallStarted,
    TurnBoundary,
)
from omnigent_agy.reading.mapper import MapperState, map_step
from omnigent_agy.reading.steps import is_settled
from omnigent_agy.rpc.endpoint import FollowingClient
from omnigent_agy.session.workspace_gate import WorkspaceGate, person_view

__all__ = [
    "POLL_INTERVAL",
    "READ_TIMEOUT",
    "ChildProgress",
    "SubAgents",
    "open_subagents",
    "subagent_title",
]

_logger = logging.getLogger(__name__)

READ_TIMEOUT: Final = 5.0
"""Seconds a child's steps are waited for at most, at its start and its end."""
POLL_INTERVAL: Final = 0.25
"""Seconds between two reads of a running child: a gate waits for a person, never for this."""
_FALLBACK_TITLE: Final = "sub-agent"


def subagent_title(started: SubAgentStarted) -> str:
    """What a person calls the sub-agent: its role, else its type."""
    return started.role or started.agent_type or _FALLBACK_TITLE


@dataclass(frozen=True, slots=True)
class ChildProgress:
    """A followed child has new events waiting (`SubAgents.take`)."""

    child_cascade_id: str


class _Binding(Protocol):
    """What is read of the session's binding: its client and the workspace as agy sees it."""

    async def rpc(self) -> FollowingClient: ...

    @property
    def gate(self) -> WorkspaceGate: ...


@dataclass(eq=False, slots=True)
class _Child:
    started: SubAgentStarted
    title: str
    state: MapperState
    offset: int = 0  # the first step not settled yet: where the next read starts
    task: str | None = None  # its first user input
    answer: str | None = None  # its last answer so far
    pending: list[SubAgentEvent] = field(default_factory=list)
    watch: asyncio.Task[None] | None = None


class SubAgents:
    """The running sub-agents of one turn (and theirs); lives on the turn's event loop."""

    def __init__(
        self,
        binding: _Binding,
        publish: Callable[[ChildProgress], None],
        *,
        interval: float = POLL_INTERVAL,
        timeout: float = READ_TIMEOUT,
    ) -> None:
        self._binding = binding
        self._publish = publish
        self._interval = interval
        self._timeout = timeout
        self._children: dict[str, _Child] = {}

    def running(self) -> list[str]:
        """The child cascades followed now, the deepest last."""
        return list(self._children)

    def title_of(self, child: str) -> str:
        known = self._children.get(child)
        return known.title if known is not None else ""

    async def started(self, event: SubAgentStarted) -> SubAgentStarted:
        """Follow the child `event` reports; the event with the child's own task."""
        child_id = event.child_cascade_id
        known = self._children.get(child_id)
        if known is not None:  # reported again (a replay): already followed
            return replace(event, task=known.task or "")
        state = MapperState(cascade_id=child_id, parent_call_id=event.call_id)
        child = _Child(event, subagent_title(event), state)
        self._children[child_id] = child
        # The task is the child's first user input: read until it is there (agy writes it as
        # the child starts), or give up and let the guessed spec stand in.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout
        while child.task is None and loop.time() < deadline:
            if not await self._read(child) and child.task is None:
                await asyncio.sleep(self._interval)
        if child.pending:  # what it did already (a gate waiting since before a restart)
            self._publish(ChildProgress(child_id))
        child.watch = asyncio.create_task(self._follow(child), name=f"sub-agent {child_id}")
        return replace(event, task=child.task or "")

    def take(self, child_id: str) -> list[SubAgentEvent]:
        """The child's events read since the last take, oldest first."""
        child = self._children.get(child_id)
        if child is None:
            return []
        taken, child.pending = child.pending, []
        return taken

    async def finished(self, event: SubAgentFinished) -> list[SubAgentEvent | SubAgentFinished]:
        """What the child did that was not taken yet, then `event` with its last answer."""
        child = self._children.pop(event.child_cascade_id, None)
        if child is None:
            return [event]
        await _cancelled(child.watch)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._timeout):
                await self._read(child)
        taken, child.pending = child.pending, []
        return [*taken, replace(event, summary=child.answer or "", title=child.title)]

    async def close(self) -> None:
        """Stop following every child (the turn ended)."""
        children, self._children = list(self._children.values()), {}
        for child in children:
            await _cancelled(child.watch)

    async def expand(
        self, event: object, ask: Callable[[InteractionRequested], None]
    ) -> list[object]:
        """What the session passes on for `event`: a sub-agent's start with its task, its
        last events ahead of its end, a followed child's new events (`ChildProgress`); a
        child's gate goes to `ask`, saying which sub-agent asks. Any other event as it is."""
        if isinstance(event, ChildProgress):
            return await self._passed_on(self.take(event.child_cascade_id), ask)
        if isinstance(event, SubAgentStarted):
            return [await self.started(event)]
        if isinstance(event, SubAgentFinished):
            return await self._passed_on(await self.finished(event), ask)
        return [event]

    async def _passed_on(
        self,
        events: list[SubAgentEvent] | list[SubAgentEvent | SubAgentFinished],
        ask: Callable[[InteractionRequested], None],
    ) -> list[object]:
        out: list[object] = []
        for event in events:
            inner = event.event if isinstance(event, SubAgentEvent) else None
            if isinstance(inner, InteractionRequested):
                ask(replace(inner, asked_by=event.title or _FALLBACK_TITLE))
            elif isinstance(inner, SubAgentStarted | SubAgentFinished):
                out.extend(await self.expand(inner, ask))  # the sub-agent's own sub-agent
            elif inner is None or isinstance(inner, ToolCallStarted):
                out.append(event)  # its row's calls, and its end (the rest is agy's own)
        return out

    # -- reading -----------------------------------------------------------------------------

    async def _follow(self, child: _Child) -> None:
        while True:
            if await self._read(child):
                self._publish(ChildProgress(child.started.child_cascade_id))
            await asyncio.sleep(self._interval)

    async def _read(self, child: _Child) -> bool:
        """Read the child from its first unsettled step; True if it gave new events."""
        child_id, offset = child.started.child_cascade_id, child.offset
        try:
            client = await self._binding.rpc()
            steps = await client.run(
                lambda c: c.get_cascade_trajectory_steps(child_id, step_offset=offset)
            )
        except AgyError as exc:
            _logger.info("could not read the sub-agent %s's steps: %s", child_id, exc)
            return False
        before = len(child.pending)
        workspace = self._binding.gate.workspace
        settled_run = True
        for position, step in enumerate(steps):
            index = offset + position
            for mapped in map_step(child.state, step, absolute_index=index):
                if isinstance(mapped, SubAgentEvent):
                    self._note(child, mapped.event)
                    event = replace(mapped, event=person_view(mapped.event, workspace))
                    child.pending.append(replace(event, title=child.title))
            if settled_run and is_settled(step.get("status")):
                child.offset = index + 1
            else:
                settled_run = False
        return len(child.pending) > before

    @staticmethod
    def _note(child: _Child, event: Event) -> None:
        if isinstance(event, TurnBoundary) and child.task is None:
            child.task = event.text
        elif isinstance(event, AssistantMessage) and event.text:
            child.answer = event.text


def open_subagents(events: Sequence[object]) -> list[SubAgentStarted]:
    """The sub-agents started in `events` and not finished later in them."""
    running: dict[str, SubAgentStarted] = {}
    for event in events:
        if isinstance(event, SubAgentStarted):
            running[event.child_cascade_id] = event
        elif isinstance(event, SubAgentFinished):
            running.pop(event.child_cascade_id, None)
    return list(running.values())


async def _cancelled(task: asyncio.Task[None] | None) -> None:
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
