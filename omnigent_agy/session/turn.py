"""One turn, from its lease to its end: what it is asked, what it holds, how it ends.

The host makes a `Turn` from its call: what is asked (the text, the model and effort, the
person's prompts, the agent's instructions, omnigent's tools and their runner). The session
runs it (`AgySession.run_turn`), and while it runs the turn holds what it took:

- the conversation's activity lease (`agy.keep.TurnLease`), declared first (`begin`), so no
  sweep stops agy until the turn ends;
- the reader's sink, bound to the turn's event loop (`HandoffSink`): events published after
  the turn are held for the next one;
- the relay's turn: omnigent's tools answer agy only while it is open (`AgyHome`);
- the interaction bridge and the tasks answering agy's gates, so a person who never answers
  blocks nothing (`ask`);
- the sub-agents followed on their own cascades (`SubAgents`);
- the tally of its events, and whether Stop was asked (`interrupt`).

Every way a turn ends — agy's answer done, Stop, a failure, the harness shutting down — goes
through `Turn.end`, which lets go of all of it, once. How it ended (completed, cancelled,
failed) is decided by `Turn.outcome` from agy's end of the turn.

A turn whose host goes away while it runs (omnigent's runner stopping or gone: no person
asked to stop it) is *left* to agy (`leave`): nothing is refused or cancelled, agy's gate
keeps waiting, and the lease says so, so the next turn — in the next harness process —
inherits it and asks the gate again, as after a harness killed mid-turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from omnigent_agy.agy.keep import TurnLease
from omnigent_agy.interactions.bridge import InteractionBridge
from omnigent_agy.interactions.prompts import HostPrompts
from omnigent_agy.reading.events import InteractionRequested
from omnigent_agy.reading.reader import ReaderEvent, TurnEnded
from omnigent_agy.reading.sink import HandoffSink
from omnigent_agy.relay.channel import ToolRunner
from omnigent_agy.session.held import BridgeFailed
from omnigent_agy.session.history import Carried
from omnigent_agy.session.home import AgyHome
from omnigent_agy.session.subagents import ChildProgress, SubAgents
from omnigent_agy.session.turn_results import TurnResult, TurnTally

__all__ = ["Turn", "TurnSink"]

_logger = logging.getLogger(__name__)

type TurnSink = HandoffSink[ReaderEvent | BridgeFailed | ChildProgress]
"""The session's sink: the reader's events, a bridge's failure, a sub-agent's progress."""


@dataclass(slots=True, eq=False)
class Turn:
    """One turn of a session: what it is asked (set by the host), its state and what it holds
    while it runs (the session's).

    `text` is sent exactly as typed as the newest user message; `instructions` (the agent's
    prompt) become agy's own instructions, the GEMINI.md of its private gemini dir, never part
    of the person's message; `tools` are omnigent's tools for this turn, which agy calls over
    MCP and `tool_runner` runs (session/home.py).
    """

    text: str
    prompts: HostPrompts
    model: str | None = None
    effort: str | None = None
    instructions: str | None = None
    tools: Sequence[Mapping[str, Any]] = ()
    tool_runner: ToolRunner | None = None
    carry_anew: Callable[[], Carried] | None = None
    """What to send instead when agy's conversation begins anew for this turn
    (`ConversationLost`): `text` with the conversation's earlier messages carried
    (session/history.py); None: `text` as it is."""
    plan_model: str | None = field(default=None, init=False)
    """The model enum the turn runs on, once chosen (`model_choice`)."""
    running: bool = field(default=False, init=False)
    interrupted: bool = field(default=False, init=False)
    left: bool = field(default=False, init=False)
    """Left to agy unfinished for the next turn to inherit (`leave`)."""
    tally: TurnTally = field(default_factory=TurnTally, init=False)
    _lease: TurnLease | None = field(default=None, init=False, repr=False)
    _sink: TurnSink | None = field(default=None, init=False, repr=False)
    _home: AgyHome | None = field(default=None, init=False, repr=False)
    _bridge: InteractionBridge | None = field(default=None, init=False, repr=False)
    _subagents: SubAgents | None = field(default=None, init=False, repr=False)
    _stop: Callable[[], Awaitable[object]] | None = field(default=None, init=False, repr=False)
    _tasks: set[asyncio.Task[object]] = field(default_factory=set, init=False, repr=False)
    _ended: bool = field(default=False, init=False, repr=False)

    # --- beginning ------------------------------------------------------------------------

    async def begin(self, lease: TurnLease) -> bool:
        """Declare the turn in the conversation's activity lease, before agy is even looked
        at: a sweep deciding now either sees the turn or has stopped agy already (and the
        session starts it again). True when the turn before was left to agy (its harness
        process died during it, or its host went away): this turn inherits what agy did for
        it since."""
        self._ended = False
        inherited = await asyncio.to_thread(lease.begin_turn)
        self._lease = lease
        return inherited

    def begin_anew(self) -> int:
        """agy's conversation begins anew for this turn (`ConversationLost`): the text to send
        carries the conversation's earlier messages; how many it carries."""
        carried = self.carry_anew() if self.carry_anew is not None else Carried(self.text)
        self.text = carried.prompt
        return carried.messages

    def start(
        self,
        plan_model: str,
        *,
        home: AgyHome,
        sink: TurnSink,
        bridge: InteractionBridge,
        subagents: SubAgents,
        stop: Callable[[], Awaitable[object]],
    ) -> None:
        """The turn is sent on `plan_model` now: it takes the relay, the bridge, the sub-agents
        and the reader's events on this loop; `stop` is the session's Stop, which a gate
        nobody can answer asks for."""
        self.plan_model = plan_model
        self.interrupted = self.left = False
        self.running = True
        self._home, self._bridge, self._subagents, self._stop = home, bridge, subagents, stop
        sink.bind()
        self._sink = sink

    def open_relay(self) -> None:
        """omnigent's tools answer agy from now on (the message is about to be sent)."""
        if self._home is not None:
            self._home.open_turn(self.tool_runner)

    # --- while it runs ----------------------------------------------------------------------

    def ask(self, request: InteractionRequested) -> None:
        """Hand agy's gate to the bridge as a task of the turn: nothing waits on a person."""
        bridge = self._bridge
        if bridge is None:
            return
        task: asyncio.Task[object] = asyncio.create_task(self._answer(bridge, request))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(self, bridge: InteractionBridge, request: InteractionRequested) -> object:
        try:
            outcome = await bridge.handle(request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # agy would wait forever for an answer nobody can give: refuse it on the wire,
            # stop the turn, and tell the person what went wrong.
            _logger.exception("answering agy's %s failed", request.kind)
            await self._stopped()
            if self._sink is not None:
                self._sink.publish(BridgeFailed(exc))
            return None
        if getattr(outcome, "dismissed", False):
            # The person closed the card instead of answering: that ends the turn.
            await self._stopped()
        return outcome

    async def _stopped(self) -> None:
        if self._stop is not None:
            await self._stop()

    async def passed_on(self, event: object) -> list[object]:
        """What the turn passes on for `event`: a sub-agent's start, end and what it did
        meanwhile (its gates go to `ask`); any other event as it is."""
        if self._subagents is None:
            return [event]
        return await self._subagents.expand(event, self.ask)

    def subagent_cascades(self) -> list[str]:
        """The running sub-agents' cascades, the deepest last."""
        return [] if self._subagents is None else self._subagents.running()

    async def interrupt(self) -> None:
        """Stop was asked: the turn ends cancelled, and what waits on the person is denied,
        the sub-agents' gates too (a WAITING step ignores cancels, docs/wire.md §3/§6)."""
        self.interrupted = True
        self.left = False
        if self._bridge is not None:
            await self._bridge.deny_pending(self.subagent_cascades())

    def leave(self) -> bool:
        """The host is going away while the turn runs, and nobody asked to stop it: leave it to
        agy as it is (see the module doc). False when it is not running or Stop was asked."""
        if not self.running or self.interrupted:
            return False
        self.left = True
        return True

    # --- ending -------------------------------------------------------------------------------

    def outcome(self, ended: TurnEnded) -> TurnResult | None:
        """How the turn ended, now that agy is idle; None when `ended` is the end of an
        earlier turn (published before this one's user input)."""
        if not self.tally.boundary_seen:
            return None
        return self.tally.result(ended, interrupted=self.interrupted)

    async def end(self) -> None:
        """The one place a turn ends, however it ends (agy's answer done, Stop, a failure, the
        harness shutting down); lets go of what it holds, once: omnigent's tools no longer
        answer, the gates' tasks are cancelled, the sub-agents no longer followed, the
        reader's events held for the next turn, and the lease says the turn is over."""
        if self._ended:
            return
        self._ended = True
        self.running = False
        try:
            if self._home is not None:
                self._home.close_turn()
            for task in list(self._tasks):
                task.cancel()
            if self._subagents is not None:
                await self._subagents.close()
            if self._sink is not None:
                self._sink.unbind()
        finally:
            if self._lease is not None:
                await asyncio.to_thread(self._lease.end_turn, left=self.left)
