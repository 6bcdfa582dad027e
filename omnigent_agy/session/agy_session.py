"""One conversation's turns on agy: send, follow the reader, answer gates, interrupt, steer.

`AgySession` is the host-agnostic executor core (the omnigent adapter translates its events);
where the conversation lives — agy found or launched, the cascade bound, the reader and the
session's client — is its `AgyBinding` (`binding`).

- **Turns go over RPC** (DESIGN-NOTES §2): only the newest user message is sent (omnigent
  resends the whole history, DESIGN-NOTES §3), with the plan model resolved for this turn.
- **Reading**: the reader's events arrive through a `HandoffSink` that each turn binds to its
  own event loop.
- **Lifecycle**: a turn holds the conversation's activity lease (`agy.keep.TurnLease`), so
  no sweep stops its agy meanwhile; the session keeps its process's sweeper running
  (`agy.sweep`); a turn that finds its agy stopped starts it again on the same conversation
  and says so first (`AgyRestarted`).
- **Interactions** go to the `InteractionBridge` as tasks, so a person who never answers
  blocks nothing: interrupt denies what is pending and cancels the cascade.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pluggy

from omnigent_agy.agy.keep import TurnLease
from omnigent_agy.agy.launcher import AgyProcess
from omnigent_agy.agy.sweep import acquire_sweeper
from omnigent_agy.interactions.bridge import InteractionBridge
from omnigent_agy.interactions.policy import PermissionPolicy
from omnigent_agy.interactions.prompts import HostPrompts
from omnigent_agy.onboarding.catalog import ModelCatalog, ResolvedModel
from omnigent_agy.reading.events import (
    Event,
    InteractionRequested,
    InteractionResolved,
    TurnBoundary,
)
from omnigent_agy.reading.reader import (
    ConversationRotated,
    ReaderEvent,
    ReaderFailed,
    ReaderModeChanged,
    TurnEnded,
)
from omnigent_agy.reading.sink import HandoffSink, release
from omnigent_agy.reading.steps import JsonObject, StepType, obj
from omnigent_agy.relay.channel import ToolRunner
from omnigent_agy.rpc.client import TRANSIENT_CODES
from omnigent_agy.rpc.endpoint import FollowingClient
from omnigent_agy.rpc.errors import ProtocolError, RpcError
from omnigent_agy.session.binding import (
    AgyBinding,
    PreflightError,
    SessionError,
    SessionSettings,
)
from omnigent_agy.session.shown import ShownLedger
from omnigent_agy.session.turns import AgyRestarted, TurnEvent, TurnTally

__all__ = ["AgySession", "PreflightError", "SessionError", "SessionSettings", "open_gates"]

_logger = logging.getLogger(__name__)

STEERING: Final = "MESSAGE_DELIVERY_STRATEGY_NEXT_INVOCATION"
_LIVENESS_SECONDS: Final = 5.0


@dataclass(frozen=True, slots=True)
class _BridgeFailed:
    """Answering an interaction failed; the turn ends with this error."""

    error: Exception


# What the reader and the bridge say about themselves, not about agy's steps.
_NOT_STEPS: Final = (
    TurnEnded,
    ConversationRotated,
    ReaderModeChanged,
    ReaderFailed,
    _BridgeFailed,
)


def _step_count(summary: JsonObject) -> int:
    try:
        return int(str(summary.get("stepCount") or 0))
    except ValueError:
        return 0


def leftovers(events: list[ReaderEvent | _BridgeFailed]) -> list[Event]:
    """What agy did for a turn whose harness process died, among the events held since: the
    steps up to the next turn's user input (someone typing in agy's TUI starts one)."""
    left: list[Event] = []
    for event in events:
        if isinstance(event, TurnBoundary):
            break
        if not isinstance(event, _NOT_STEPS):
            left.append(event)
    return left


def open_gates(events: list[ReaderEvent | _BridgeFailed]) -> list[InteractionRequested]:
    """The interactions announced in `events` and not resolved later in them."""
    gates: dict[object, InteractionRequested] = {}
    for event in events:
        if isinstance(event, InteractionRequested):
            gates[event.key] = event
        elif isinstance(event, InteractionResolved):
            gates.pop(event.key, None)
    return list(gates.values())


class AgySession:
    """The agy of one conversation, across turns; not thread-safe (one event loop at a time)."""

    def __init__(
        self,
        settings: SessionSettings,
        *,
        policy: PermissionPolicy | None = None,
        plugin_manager: pluggy.PluginManager | None = None,
    ) -> None:
        self.settings = settings
        self._policy = policy or PermissionPolicy()
        self._pm = plugin_manager
        self._sink: HandoffSink[ReaderEvent | _BridgeFailed] = HandoffSink()
        self._binding = AgyBinding(settings, sink=self._sink, plugin_manager=plugin_manager)
        self._lease = TurnLease(self._binding.state)
        self.shown = ShownLedger(self._binding.state.path / "shown.bin")
        """How much of each step's text the host was handed (the adapter records it)."""
        # Every harness process sweeps the kept agys at start and while it runs (agy.sweep).
        self._sweeper = acquire_sweeper(settings.keep, settings.state_base)
        self._bridge: InteractionBridge | None = None
        self._bridge_tasks: set[asyncio.Task[object]] = set()
        self._interrupted = False
        self._turn_running = False
        self._prompts: HostPrompts | None = None
        self._turn_model: str | None = None

    # --- lifecycle -------------------------------------------------------------------------

    @property
    def cascade_id(self) -> str | None:
        agy = self._binding.agy
        return None if agy is None else agy.cascade_id

    @property
    def agy(self) -> AgyProcess | None:
        return self._binding.agy

    @property
    def turn_model_name(self) -> str | None:
        """The display name of the model of the latest turn (e.g. "Gemini 3 Pro (High)")."""
        catalog = self._binding.known_catalog
        if self._turn_model is None or catalog is None:
            return None
        return catalog.display_name(self._turn_model)

    @property
    def attachments_dir(self) -> Path:
        """Where inline attachments of user messages are saved for agy to read (private)."""
        return self._binding.state.path / "attachments"

    async def ensure_started(self) -> AgyProcess:
        """agy running and answering, the cascade bound and the reader following it."""
        return await self._binding.ensure_started()

    async def close(self, *, stop_agy: bool | None = None) -> None:
        """Stop the reader and, unless configured to keep it, agy itself."""
        for task in list(self._bridge_tasks):
            task.cancel()
        self._sweeper.release()
        self.shown.close()
        await self._binding.close(stop_agy=stop_agy)

    # --- models ---------------------------------------------------------------------------

    async def catalog(self) -> ModelCatalog:
        """agy's models (GetAvailableModels, once per session; never hard-coded, §7)."""
        return await self._binding.catalog()

    async def resolve_model(self, model: str | None, effort: str | None) -> ResolvedModel:
        return (await self.catalog()).resolve_plan_model(model, effort)

    # --- turns ----------------------------------------------------------------------------

    async def run_turn(
        self,
        text: str,
        *,
        model: str | None,
        effort: str | None,
        prompts: HostPrompts,
        instructions: str | None = None,
        tools: Sequence[Mapping[str, Any]] = (),
        tool_runner: ToolRunner | None = None,
    ) -> AsyncIterator[TurnEvent]:
        """Send `text`, exactly as typed, as the newest user message and yield what agy does
        until it is idle.

        `instructions` (the agent's prompt) become agy's own instructions, the GEMINI.md of
        its private gemini dir, never part of the person's message. `tools` are omnigent's
        tools for this turn; with the relay on, agy calls them over MCP and `tool_runner`
        runs them (session/home.py).
        """
        # Declared before agy is even looked at: a sweep deciding now either sees the turn
        # or has stopped agy already, and then ensure_started starts it again.
        inherited = await asyncio.to_thread(self._lease.begin_turn)
        try:
            async for event in self._run_turn(
                text,
                inherited=inherited,
                model=model,
                effort=effort,
                prompts=prompts,
                instructions=instructions,
                tools=tools,
                tool_runner=tool_runner,
            ):
                yield event
        finally:
            await asyncio.to_thread(self._lease.end_turn)

    async def _run_turn(
        self,
        text: str,
        *,
        inherited: bool,
        model: str | None,
        effort: str | None,
        prompts: HostPrompts,
        instructions: str | None,
        tools: Sequence[Mapping[str, Any]],
        tool_runner: ToolRunner | None,
    ) -> AsyncIterator[TurnEvent]:
        """`inherited`: the harness process of the turn before died during it (see run_turn)."""
        home = self._binding.home
        home.next_turn(instructions, tools)
        agy = await self.ensure_started()
        if agy.resumed_after is not None and agy.cascade_id is not None:
            yield AgyRestarted(agy.cascade_id, agy.resumed_after)
            agy.resumed_after = None
        resolved = await self.resolve_model(model, effort)
        await self._binding.follow_clear()
        cascade = agy.cascade_id
        assert cascade is not None
        client = await self._binding.rpc()
        self._prompts, self._turn_model = prompts, resolved.enum
        self._bridge = await self._new_bridge(cascade)
        self._interrupted = False
        self._turn_running = True
        self._sink.bind()
        tally = TurnTally()
        try:
            stale = self._sink.take_held()
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
                tally.note(inherited_event)
                yield inherited_event
            for gate in open_gates(stale):
                # ...and a gate still open: agy waits on it (e.g. a harness restarted while
                # its card was shown), so it is asked again; a stale one resolves as gone.
                self._start_interaction(gate)
            # Not kept for the rest of the turn: a replay held between turns can be tens of
            # thousands of events.
            del inheritance
            release(stale)
            home.open_turn(tool_runner)
            summary = await self._summary(client, cascade)
            await self._send(client, cascade, text, resolved.enum, since=_step_count(summary))
            async for event in self._follow_turn(tally):
                yield event
        finally:
            self._turn_running = False
            home.close_turn()
            for task in list(self._bridge_tasks):
                task.cancel()
            self._sink.unbind()

    async def _follow_turn(self, tally: TurnTally) -> AsyncIterator[TurnEvent]:
        while True:
            event = await self._next_event()
            if event is None or isinstance(event, ReaderModeChanged):
                continue
            if isinstance(event, ReaderFailed | _BridgeFailed):
                raise event.error
            if isinstance(event, TurnEnded):
                if tally.boundary_seen:
                    yield tally.result(event, interrupted=self._interrupted)
                    return
                continue  # the end of an earlier turn, published before ours began
            if isinstance(event, ConversationRotated):
                await self._on_rotation(event)
            elif isinstance(event, InteractionRequested):
                tally.note(event)
                self._start_interaction(event)
            else:
                tally.note(event)
            yield event

    async def _next_event(self) -> ReaderEvent | _BridgeFailed | None:
        """The next reader event, or None after a quiet spell in which agy was checked."""
        try:
            return await self._sink.get(timeout=_LIVENESS_SECONDS)
        except TimeoutError:
            agy = self._binding.agy
            if agy is None or not agy.terminal.is_alive():
                raise SessionError("agy exited during the turn", code="agy_exited") from None
            if not self._binding.reader_ok():
                raise SessionError(
                    "the agy reader stopped during the turn", code="agy_unreachable"
                ) from None
            return None

    def _start_interaction(self, request: InteractionRequested) -> None:
        bridge = self._bridge
        if bridge is None:
            return
        task: asyncio.Task[object] = asyncio.create_task(self._interact(bridge, request))
        self._bridge_tasks.add(task)
        task.add_done_callback(self._bridge_tasks.discard)

    async def _interact(self, bridge: InteractionBridge, request: InteractionRequested) -> object:
        try:
            outcome = await bridge.handle(request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # agy would wait forever for an answer nobody can give: refuse it on the wire,
            # stop the turn, and tell the person what went wrong.
            _logger.exception("answering agy's %s failed", request.kind)
            await self.interrupt()
            self._sink.publish(_BridgeFailed(exc))
            return None
        if getattr(outcome, "dismissed", False):
            # The person closed the card instead of answering: that ends the turn.
            await self.interrupt()
        return outcome

    async def interrupt(self) -> bool:
        """Stop the running turn: deny what is pending (a WAITING step ignores cancels, §3/§6),
        then cancel the cascade."""
        agy = self._binding.agy
        if agy is None or agy.cascade_id is None:
            return False
        self._interrupted = True
        if self._bridge is not None:
            await self._bridge.deny_pending()
        try:
            cascade = agy.cascade_id
            await (await self._binding.rpc()).run(lambda c: c.cancel_cascade_steps(cascade))
        except RpcError as exc:
            _logger.warning("cancelling agy's turn failed: %s", exc)
            return False
        return True

    async def steer(self, text: str) -> bool:
        """Deliver `text` into the running turn (agy picks it up at its next model call)."""
        agy = self._binding.agy
        if agy is None or agy.cascade_id is None or not self._turn_running:
            return False
        model = self._turn_model or (await self.resolve_model(None, None)).enum
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

    async def _summary(self, client: FollowingClient, cascade_id: str) -> JsonObject:
        """The cascade's summary now (its step count, where this turn's steps will start)."""
        listed = await client.run(lambda c: c.get_all_cascade_trajectories())
        return obj(obj(listed.get("trajectorySummaries")).get(cascade_id))

    async def _send(
        self, client: FollowingClient, cascade: str, text: str, model: str, *, since: int
    ) -> None:
        """Send the turn's message once: exactly once, also when the call fails on the way.

        A failure agy may have acted on (the connection dropped after the request went out,
        the answer came back garbled, agy moved to a new port meanwhile) is not answered by
        sending again blindly, which could start the turn twice: the steps from `since` on
        show whether the message arrived, and it is sent again only if it did not.
        """
        for attempt in range(2):
            try:
                await client.run(
                    lambda c: c.send_user_cascade_message(cascade, text, plan_model=model),
                    resend_safe=False,
                )
            except RpcError as exc:
                lost = exc.code in TRANSIENT_CODES or isinstance(exc, ProtocolError)
                if attempt or not lost:
                    raise  # agy refused the message itself: say so
                if await self._arrived(client, cascade, text, since):
                    _logger.info("the message reached agy although the call failed (%s)", exc)
                    return
                _logger.info("the message did not reach agy (%s); sending it again", exc)
            else:
                return

    async def _arrived(self, client: FollowingClient, cascade: str, text: str, since: int) -> bool:
        steps = await client.run(
            lambda c: c.get_cascade_trajectory_steps(cascade, step_offset=since)
        )
        return any(
            step.get("type") == StepType.USER_INPUT
            and obj(step.get("userInput")).get("userResponse") == text
            for step in steps
        )

    async def _on_rotation(self, event: ConversationRotated) -> None:
        agy = self._binding.agy
        if agy is not None:
            agy.bind_cascade(event.new_cascade_id, follows_tui=True)
        if self._bridge is not None:
            self._bridge = await self._new_bridge(event.new_cascade_id)

    async def _new_bridge(self, cascade_id: str) -> InteractionBridge:
        assert self._prompts is not None
        return InteractionBridge(
            client=await self._binding.rpc(),
            cascade_id=cascade_id,
            prompts=self._prompts,
            policy=self._policy,
            plugin_manager=self._pm,
        )
