"""One conversation's turns on agy: send, follow the reader, answer gates, interrupt, steer.

`AgySession` is the host-agnostic executor core (the omnigent adapter translates its events);
where the conversation lives — agy found or launched, the cascade bound, the reader and the
session's client — is its `AgyBinding` (`binding`).

- **Turns go over RPC** (docs/decisions.md §2): only the newest user message is sent (omnigent
  resends the whole history, docs/decisions.md §3), on the model `model_choice` picks:
  omnigent's when it changed, else a switch typed in agy's own screen, else the same.
- **Reading**: the reader's events arrive through a `HandoffSink` that each turn binds to its
  own event loop.
- **Lifecycle**: each turn is a `Turn` (session/turn.py), which holds what it takes while
  it runs — the conversation's activity lease (`agy.keep.TurnLease`, so no sweep stops its
  agy meanwhile), the sink, the relay, the interaction bridge and its tasks, the sub-agents —
  and lets go of it in one place, `Turn.end`, however it ends. The session keeps its
  process's sweeper running (`agy.sweep`); a turn that finds its agy stopped starts it
  again on the same conversation and says so first (`AgyRestarted`).
- **Interactions** go to the `InteractionBridge` as the turn's tasks, so a person who never
  answers blocks nothing: interrupt denies what is pending and cancels the cascade.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Final, cast

import pluggy

from omnigent_agy.agy.keep import TurnLease
from omnigent_agy.agy.process import AgyProcess
from omnigent_agy.agy.sweep import acquire_sweeper
from omnigent_agy.errors import AGY_EXITED, AGY_UNREACHABLE, PreflightError, RpcError, SessionError
from omnigent_agy.interactions.bridge import InteractionBridge
from omnigent_agy.interactions.policy import PermissionPolicy
from omnigent_agy.models.catalog import ModelCatalog, ResolvedModel
from omnigent_agy.reading.events import (
    InteractionRequested,
)
from omnigent_agy.reading.reader import (
    ConversationRotated,
    ReaderEvent,
    ReaderFailed,
    ReaderModeChanged,
    TurnEnded,
)
from omnigent_agy.reading.sink import HandoffSink, release
from omnigent_agy.reading.steps import obj
from omnigent_agy.rpc.client import RpcClient
from omnigent_agy.session.binding import AgyBinding, SessionSettings
from omnigent_agy.session.context_meter import with_context_used
from omnigent_agy.session.held import BridgeFailed, leftovers, open_gates
from omnigent_agy.session.kept_grants import kept_grants
from omnigent_agy.session.model_choice import ModelChooser
from omnigent_agy.session.quota_turn import explain_quota
from omnigent_agy.session.send import cascade_summaries, send_once, step_count, still_on
from omnigent_agy.session.shown_ledger import ShownLedger
from omnigent_agy.session.subagents import (
    ChildProgress,
    SubAgents,
    open_subagents,
)
from omnigent_agy.session.turn import Turn, TurnSink
from omnigent_agy.session.turn_results import AgyRestarted, ConversationLost, TurnEvent
from omnigent_agy.session.version_notice import VersionNotice
from omnigent_agy.session.workspace_gate import admit, person_view

__all__ = ["AgySession", "PreflightError", "SessionError", "SessionSettings"]

_logger = logging.getLogger(__name__)

STEERING: Final = "MESSAGE_DELIVERY_STRATEGY_NEXT_INVOCATION"
_LIVENESS_SECONDS: Final = 5.0


class AgySession:
    """The agy of one conversation, across turns; not thread-safe (one event loop at a time)."""

    def __init__(
        self,
        settings: SessionSettings,
        *,
        policy: PermissionPolicy | None = None,
        plugin_manager: pluggy.PluginManager | None = None,
        binding: type[AgyBinding] = AgyBinding,
    ) -> None:
        """`binding`: where the conversation lives (a test's fake agy instead of processes)."""
        self.settings = settings
        self._policy = policy or PermissionPolicy()
        self._pm = plugin_manager
        self._sink: TurnSink = HandoffSink()
        self._binding = binding(settings, sink=self._sink, plugin_manager=plugin_manager)
        self._lease = TurnLease(self._binding.state)
        self.shown = ShownLedger(self._binding.state.path / "shown.bin")
        """How much of each step's text the host was handed (the adapter records it)."""
        # Every harness process sweeps the kept agys at start and while it runs (agy.sweep).
        self._sweeper = acquire_sweeper(settings.keep, settings.state_base)
        # What the person allowed "for this conversation", for its sub-agents too.
        self._grants = kept_grants(self._binding.state)
        self._turn: Turn | None = None
        """The running turn, or the latest one (its model names the turn's usage)."""
        # omnigent's choice when it changed, else a switch typed in agy, else the same model.
        self._models = ModelChooser(self._binding.state)
        # An agy of a version the plugin is not tested with is said once (version_notice).
        self._version = VersionNotice(self._binding.state, settings.agy_version)

    # --- lifecycle -------------------------------------------------------------------------

    @property
    def cascade_id(self) -> str | None:
        agy = self._binding.agy
        return None if agy is None else agy.cascade_id

    @property
    def agy(self) -> AgyProcess | None:
        return self._binding.agy

    @property
    def turn_model(self) -> str | None:
        """agy's enum of the model of the latest turn (`turn_model_name` is its name)."""
        return None if self._turn is None else self._turn.plan_model

    @property
    def model_catalog(self) -> ModelCatalog | None:
        """agy's model catalog, if it was read already (never reads it)."""
        return self._binding.known_catalog

    @property
    def turn_model_name(self) -> str | None:
        """The display name of the model of the latest turn (e.g. "Gemini 3 Pro (High)")."""
        catalog = self._binding.known_catalog
        turn = self._turn
        if turn is None or turn.plan_model is None or catalog is None:
            return None
        return catalog.display_name(turn.plan_model)

    @property
    def attachments_dir(self) -> Path:
        """Where inline attachments of user messages are saved for agy to read (private)."""
        return self._binding.state.path / "attachments"

    async def ensure_started(self) -> AgyProcess:
        """agy running and answering, the cascade bound and the reader following it."""
        return await self._binding.ensure_started()

    async def _stop_untrusted(self) -> None:
        """The person answered "No, exit": every agy of this conversation stops, an earlier
        harness process's too, with the workspace's servers it started."""
        await self._binding.stop_every_agy("the person answered No, exit on the trust card")

    async def close(self, *, stop_agy: bool | None = None) -> None:
        """Stop the reader and, unless configured to keep it, agy itself (a turn still
        running ends first)."""
        if self._turn is not None:
            await self._turn.end()
        self._sweeper.release()
        self.shown.close()
        await self._binding.close(stop_agy=stop_agy)

    # --- models ---------------------------------------------------------------------------

    async def catalog(self) -> ModelCatalog:
        """agy's models (GetAvailableModels, once per session; never hard-coded,
        docs/decisions.md §7)."""
        return await self._binding.catalog()

    async def resolve_model(self, model: str | None, effort: str | None) -> ResolvedModel:
        return (await self.catalog()).resolve_plan_model(model, effort)

    # --- turns ----------------------------------------------------------------------------

    async def run_turn(self, turn: Turn) -> AsyncIterator[TurnEvent]:
        """Send `turn.text`, exactly as typed, as the newest user message and yield what agy
        does until it is idle, ending with the turn's `TurnResult` (`Turn.outcome`). However
        the turn ends, it ends in `Turn.end`."""
        inherited = await turn.begin(self._lease)
        try:
            async for event in self._run_turn(turn, inherited=inherited):
                yield event
        finally:
            await turn.end()

    async def _notices(self, agy: AgyProcess, turn: Turn) -> AsyncIterator[TurnEvent]:
        """What the person is told ahead of agy's answer: agy restarted under the conversation,
        a conversation agy would not go on from, an agy outside the tested versions."""
        if agy.resumed_after is not None and agy.cascade_id is not None:
            yield AgyRestarted(agy.cascade_id, agy.resumed_after)
            agy.resumed_after = None
        lost, self._binding.lost = self._binding.lost, None
        if lost is not None and agy.cascade_id is not None:
            # The person was told this message goes on from that conversation: it cannot.
            carried = turn.begin_anew()
            yield ConversationLost(lost[0], agy.cascade_id, lost[1], carried)
        if agy.cascade_id is not None and (notice := await self._version.text(agy.cascade_id)):
            yield notice

    async def _run_turn(self, turn: Turn, *, inherited: bool) -> AsyncIterator[TurnEvent]:
        """`inherited`: the harness process of the turn before died during it (see run_turn)."""
        agy = await self._started_for(turn)
        async for notice in self._notices(agy, turn):
            yield notice
        catalog = await self.catalog()
        resolved = self._models.choose(catalog, turn.model, turn.effort, agy_pid=agy.pid)
        client = await self._binding.rpc()
        # Whether a person typed /clear in agy's TUI, and where this turn's steps will start:
        # asked together, the message waits for one round trip to agy, not two.
        summaries, _ = await asyncio.gather(cascade_summaries(client), self._binding.follow_clear())
        cascade = agy.cascade_id
        assert cascade is not None
        self._turn = turn
        turn.start(
            resolved.enum,
            home=self._binding.home,
            sink=self._sink,
            bridge=await self._new_bridge(cascade, turn),
            # The running sub-agents of the turn, each followed on its own cascade.
            subagents=SubAgents(self._binding, self._sink.publish),
            stop=self.interrupt,
        )
        async for event in self._catch_up(turn, inherited=inherited):
            yield event
        turn.open_relay()
        summary = obj(summaries.get(cascade))
        if inherited and await still_on(client, cascade, turn.text, summary):
            # The turn its host lost, run again by omnigent: agy is still on that message
            # (its card asked again above), so it is followed, not sent twice.
            _logger.info("agy is still on this message from the turn left to it: following it")
            turn.tally.boundary_seen = True
        else:
            await send_once(client, cascade, turn.text, resolved.enum, since=step_count(summary))
        async for event in self._follow_turn(turn):
            yield event

    async def _started_for(self, turn: Turn) -> AgyProcess:
        """agy started for `turn`: its instructions and tools in agy's home, the workspace
        admitted (the person's trust in it asked before any agy starts)."""
        self._binding.home.next_turn(turn.instructions, turn.tools)
        await admit(
            self._binding.gate,
            turn.prompts,
            conversation_id=self.settings.conversation_id,
            stop_agy=self._stop_untrusted,
        )
        self._version.begin()  # while agy starts
        return await self.ensure_started()

    async def _catch_up(self, turn: Turn, *, inherited: bool) -> AsyncIterator[TurnEvent]:
        """What the reader published while no turn consumed it: dropped as not ours, but for
        an inherited turn's steps, a gate still open and a sub-agent still running."""
        stale = [e for e in self._sink.take_held() if not isinstance(e, ChildProgress)]
        # A harness process killed mid-turn left its turn to agy: what agy did for it
        # since (the rest of an answer, a command's output) reaches omnigent now, first.
        # Its host failed that turn; these steps were never published.
        inheritance = leftovers(stale) if inherited else []
        if len(stale) > len(inheritance):
            # Steps between omnigent turns (someone typing in agy's TUI) are not part of
            # this turn; the reader has recorded them, omnigent never asked for them.
            skipped = len(stale) - len(inheritance)
            kinds = ", ".join(sorted({type(event).__name__ for event in stale}))
            _logger.info("skipping %d events that arrived between turns (%s)", skipped, kinds)
        if inheritance:
            _logger.info(
                "publishing %d events of the turn an earlier harness process left",
                len(inheritance),
            )
        for inherited_event in inheritance:
            inherited_event = person_view(inherited_event, self._binding.gate.workspace)  # noqa: PLW2901
            turn.tally.note(inherited_event)
            # A sub-agent still running (its card may wait): followed again, shown again.
            for passed in await turn.passed_on(inherited_event):
                yield cast("TurnEvent", passed)
        for gate in open_gates(stale):
            # ...and a gate still open: agy waits on it (e.g. a harness restarted while
            # its card was shown), so it is asked again; a stale one resolves as gone.
            turn.ask(gate)
        for running in [] if inherited else open_subagents(stale):  # ...or a sub-agent's
            for passed in await turn.passed_on(running):
                yield cast("TurnEvent", passed)
        # Not kept for the rest of the turn: a replay held between turns can be tens of
        # thousands of events.
        del inheritance
        release(stale)

    async def _follow_turn(self, turn: Turn) -> AsyncIterator[TurnEvent]:
        while True:
            event = await self._next_event()
            if event is None or isinstance(event, ReaderModeChanged):
                continue
            if isinstance(event, ReaderFailed | BridgeFailed):
                raise event.error
            if isinstance(event, TurnEnded):
                result = turn.outcome(event)
                if result is None:
                    continue  # the end of an earlier turn, published before ours began
                model = self.turn_model_name
                result = await explain_quota(result, self._binding.rpc, model=model)
                yield await with_context_used(result, self._binding.rpc, self.cascade_id)
                return
            if isinstance(event, ConversationRotated):
                # The reader rotated the whereabouts already: the bridge, the interrupt and
                # the record follow it.
                _logger.debug("agy's conversation is now %s (/clear)", event.new_cascade_id)
            elif isinstance(event, InteractionRequested):
                turn.tally.note(event)
                turn.ask(event)
            elif not isinstance(event, ChildProgress):
                event = person_view(event, self._binding.gate.workspace)
                turn.tally.note(event)
            # A sub-agent's start, end and what it did meanwhile; its gates go to the bridge.
            for passed in await turn.passed_on(event):
                yield cast("TurnEvent", passed)

    async def _next_event(self) -> ReaderEvent | BridgeFailed | ChildProgress | None:
        """The next reader event, or None after a quiet spell in which agy was checked."""
        try:
            return await self._sink.get(timeout=_LIVENESS_SECONDS)
        except TimeoutError:
            agy = self._binding.agy
            if agy is None or not agy.terminal.is_alive():
                raise SessionError("agy exited during the turn", kind=AGY_EXITED) from None
            if not self._binding.reader_ok():
                raise SessionError(
                    "the agy reader stopped during the turn", kind=AGY_UNREACHABLE
                ) from None
            return None

    def leave_running_turn(self) -> None:
        """The host is going away under the running turn (omnigent's runner stopped or gone)
        and nobody asked to stop it: leave the turn to agy, for the next harness process to
        inherit (`Turn.leave`); a later interrupt refuses and cancels nothing."""
        turn = self._turn
        if turn is not None and turn.leave():
            _logger.info("the host went away during the turn: it is left to agy for the next one")

    async def interrupt(self) -> bool:
        """Stop the running turn: deny what is pending (a WAITING step ignores cancels, §3/§6),
        then cancel the cascade. A turn left to agy (`leave_running_turn`) is not stopped."""
        turn = self._turn
        if turn is not None and turn.left:
            return True
        agy = self._binding.agy
        if agy is None or agy.cascade_id is None:
            return False
        if turn is not None:
            await turn.interrupt()
        client = await self._binding.rpc()
        # The whole tree: the conversation first (so it starts no further sub-agent), then
        # each running sub-agent, whose gates were refused above.
        children = [] if turn is None else turn.subagent_cascades()
        for cascade in [agy.cascade_id, *children]:
            try:
                await client.run(_cancel(cascade))
            except RpcError as exc:
                _logger.warning("cancelling agy's turn in %s failed: %s", cascade, exc)
                return False
        return True

    async def steer(self, text: str) -> bool:
        """Deliver `text` into the running turn (agy picks it up at its next model call)."""
        agy = self._binding.agy
        turn = self._turn
        if agy is None or agy.cascade_id is None or turn is None or not turn.running:
            return False
        model = turn.plan_model or (await self.resolve_model(None, None)).enum
        try:
            cascade = agy.cascade_id
            await (await self._binding.rpc()).run(
                lambda c: c.send_user_cascade_message(
                    cascade, text, plan_model=model, delivery_strategy=STEERING
                ),
                resend_safe=False,
            )
        except RpcError as exc:
            _logger.warning("steering message not delivered: %s", exc)
            return False
        return True

    # --- helpers --------------------------------------------------------------------------

    async def _new_bridge(self, cascade_id: str, turn: Turn) -> InteractionBridge:
        """The turn's bridge, on the conversation as the whereabouts say it is now (after a
        `/clear` too); on `cascade_id` where nothing owns them (a test's fake agy)."""
        return InteractionBridge(
            client=await self._binding.rpc(),
            cascade_id=self._binding.whereabouts or cascade_id,
            prompts=turn.prompts,
            policy=self._policy,
            plugin_manager=self._pm,
            person_paths=self._binding.gate.workspace.for_person,
            grants=self._grants,
        )


def _cancel(cascade: str) -> Callable[[RpcClient], Awaitable[Any]]:
    return lambda client: client.cancel_cascade_steps(cascade)
