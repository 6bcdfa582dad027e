"""One conversation's agy: start or re-attach, bind the cascade, run turns, interrupt, close.

`AgySession` is the host-agnostic executor core (the omnigent adapter translates its events):

- **One conversation, one agy, one cascade** (DESIGN-NOTES §4): agy runs in a runner-owned
  tmux session and stays alive across turns and harness restarts; the session re-attaches
  through the record in its private state directory, or launches a fresh agy.
- **Turns go over RPC** (DESIGN-NOTES §2): only the newest user message is sent (omnigent
  resends the whole history, DESIGN-NOTES §3), with the plan model resolved for this turn.
- **Reading** is the `CascadeReader` thread; its events arrive through a `HandoffSink` that
  each turn binds to its own event loop. The session's own RPC calls use a second client owned
  by the turn's loop (one connection, one owner: DESIGN-NOTES §10).
- **Interactions** go to the `InteractionBridge` as tasks, so a person who never answers
  blocks nothing: interrupt denies what is pending and cancels the cascade.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import pluggy

from omnigent_agy.agy.launcher import AgyLaunchSpec, AgyProcess, ensure_agy, reattach
from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.agy.terminal import TerminalHost
from omnigent_agy.interactions.bridge import InteractionBridge
from omnigent_agy.interactions.hooks import model_aliases
from omnigent_agy.interactions.policy import PermissionPolicy
from omnigent_agy.interactions.prompts import HostPrompts
from omnigent_agy.onboarding.catalog import ModelCatalog, ResolvedModel
from omnigent_agy.onboarding.failures import Failure
from omnigent_agy.reading.cursor import CursorStore
from omnigent_agy.reading.events import (
    InteractionRequested,
    InteractionResolved,
)
from omnigent_agy.reading.reader import (
    CascadeReader,
    ConversationRotated,
    ReaderEvent,
    ReaderFailed,
    ReaderModeChanged,
    ReaderSettings,
    TurnEnded,
)
from omnigent_agy.reading.sink import HandoffSink
from omnigent_agy.reading.steps import obj
from omnigent_agy.rpc.client import RpcClient
from omnigent_agy.rpc.discovery import discover_port
from omnigent_agy.rpc.errors import AgyError, RpcError
from omnigent_agy.session.turns import TurnEvent, TurnTally, with_instructions

_logger = logging.getLogger(__name__)

STEERING: Final = "MESSAGE_DELIVERY_STRATEGY_NEXT_INVOCATION"
_LIVENESS_SECONDS: Final = 5.0


class SessionError(AgyError):
    """A turn cannot run: agy is gone, the conversation is lost, … (`failures` maps it by
    `code`)."""

    def __init__(self, message: str, *, code: str = "agy_internal") -> None:
        super().__init__(message)
        self.code = code


class PreflightError(SessionError):
    """agy cannot be started as it is (missing, too old, signed out): says what to do."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message, code=failure.code)
        self.failure = failure


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """Everything a session needs to know up front (the executor builds it from config)."""

    conversation_id: str
    workspace: Path
    command: tuple[str, ...]
    """argv prefix that starts agy: the resolved executable plus configured args."""
    state_base: Path | None = None
    tmux_socket: str = "omnigent-agy"
    keep_agy_running: bool = True
    ready_timeout: float = 60.0
    reader: ReaderSettings = field(default_factory=ReaderSettings)
    env: Mapping[str, str] = field(default_factory=dict)
    preflight: Callable[[], Failure | None] | None = None
    """Blocking checks before launching agy (run in a thread): the first failure, or None."""


@dataclass(frozen=True, slots=True)
class _BridgeFailed:
    """Answering an interaction failed; the turn ends with this error."""

    error: Exception


def _untouched(value: object) -> bool:
    """A cascade summary with no user input and no steps yet (WIRE.md §3)."""
    summary = obj(value)
    if not summary or summary.get("lastUserInputTime"):
        return False
    try:
        return int(str(summary.get("stepCount") or 0)) == 0
    except ValueError:
        return False


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
        self._state = SessionStateDir.open(settings.conversation_id, base=settings.state_base)
        self._terminals = TerminalHost(socket_name=settings.tmux_socket)
        self._sink: HandoffSink[ReaderEvent | _BridgeFailed] = HandoffSink()
        self._agy: AgyProcess | None = None
        self._reader: CascadeReader | None = None
        self._client: RpcClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._catalog: ModelCatalog | None = None
        self._bridge: InteractionBridge | None = None
        self._bridge_tasks: set[asyncio.Task[object]] = set()
        self._interrupted = False
        self._turn_running = False
        self._prompts: HostPrompts | None = None
        self._turn_model: str | None = None

    # --- lifecycle -------------------------------------------------------------------------

    @property
    def cascade_id(self) -> str | None:
        return None if self._agy is None else self._agy.cascade_id

    @property
    def agy(self) -> AgyProcess | None:
        return self._agy

    @property
    def turn_model_name(self) -> str | None:
        """The display name of the model of the latest turn (e.g. "Gemini 3 Pro (High)")."""
        if self._turn_model is None or self._catalog is None:
            return None
        return self._catalog.display_name(self._turn_model)

    @property
    def attachments_dir(self) -> Path:
        """Where inline attachments of user messages are saved for agy to read (private)."""
        return self._state.path / "attachments"

    async def ensure_started(self) -> AgyProcess:
        """agy running and answering, the cascade bound and the reader following it."""
        if self._agy is not None and self._agy.terminal.is_alive() and self._reader_ok():
            return self._agy
        await self._stop_reader()
        spec = AgyLaunchSpec(
            command=self.settings.command,
            workspace=self.settings.workspace,
            state_dir=self._state,
            env=dict(self.settings.env),
            ready_timeout=self.settings.ready_timeout,
        )
        agy = await reattach(self._terminals, self._state)
        launched = agy is None
        if agy is None:
            # Only a launch needs the checks: a running agy already passed them.
            await self._preflight()
            agy = await ensure_agy(
                self._terminals, spec, conversation_id=self.settings.conversation_id
            )
        self._agy = agy
        client = await self._rpc()
        fresh_cascade = False
        if agy.cascade_id is None or not await self._cascade_known(client, agy.cascade_id):
            tui = await self._tui_cascade(client) if launched else None
            if tui is not None:
                # The conversation agy's TUI shows: a person attached to the tmux session
                # watches this very conversation (DESIGN-NOTES §2).
                agy.bind_cascade(tui, follows_tui=True)
            else:
                # A cascade started over RPC is not the one the TUI shows (WIRE.md §3).
                agy.bind_cascade(await client.start_cascade())
            fresh_cascade = True
        assert agy.cascade_id is not None
        self._reader = CascadeReader(
            port=agy.port,
            csrf_token=agy.csrf_token,
            cascade_id=agy.cascade_id,
            sink=self._sink,
            cursor=CursorStore(self._state.path),
            settings=self.settings.reader,
            model_names={e.enum: e.display_name for e in (await self.catalog()).entries},
            # A cascade we bound before but whose cursor is gone: its history is on screen.
            skip_existing=not fresh_cascade,
            follow_clear=agy.follows_tui,
            resolve_port=self._rediscover,
        )
        self._reader.start()
        ready = await asyncio.to_thread(self._reader.wait_ready, self.settings.ready_timeout)
        if not ready:
            raise SessionError("agy's conversation stream never answered", code="agy_unreachable")
        return agy

    async def _preflight(self) -> None:
        check = self.settings.preflight
        if check is None:
            return
        failure = await asyncio.to_thread(check)
        if failure is not None:
            raise PreflightError(failure)

    async def close(self, *, stop_agy: bool | None = None) -> None:
        """Stop the reader and, unless configured to keep it, agy itself."""
        for task in list(self._bridge_tasks):
            task.cancel()
        await self._stop_reader()
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.aclose()
            self._client = None
        keep = self.settings.keep_agy_running if stop_agy is None else not stop_agy
        if self._agy is not None and not keep:
            await self._agy.stop()
        self._agy = None

    # --- models ---------------------------------------------------------------------------

    async def catalog(self) -> ModelCatalog:
        """agy's models (GetAvailableModels, once per session; never hard-coded, §7)."""
        if self._catalog is None:
            payload = await (await self._rpc()).get_available_models()
            aliases = model_aliases(self._pm) if self._pm is not None else {}
            self._catalog = ModelCatalog.from_response(payload, aliases=aliases)
        return self._catalog

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
    ) -> AsyncIterator[TurnEvent]:
        """Send `text` as the newest user message and yield what agy does until it is idle.

        `instructions` (the agent's prompt) go in front of the first message of a conversation
        only: agy keeps its own history, so they stay with it for the turns after.
        """
        agy = await self.ensure_started()
        resolved = await self.resolve_model(model, effort)
        await self._follow_clear()
        cascade = agy.cascade_id
        assert cascade is not None
        client = await self._rpc()
        self._prompts, self._turn_model = prompts, resolved.enum
        self._bridge = await self._new_bridge(cascade)
        self._interrupted = False
        self._turn_running = True
        self._sink.bind()
        try:
            stale = self._sink.take_held()
            if stale:
                # Steps between omnigent turns (someone typing in agy's TUI) are not part of
                # this turn; the reader has recorded them, omnigent never asked for them.
                _logger.info("skipping %d events that arrived between turns", len(stale))
            for gate in open_gates(stale):
                # ...except a gate still open: agy waits on it (e.g. a harness restarted while
                # its card was shown), so it is asked again; a stale one resolves as gone.
                self._start_interaction(gate)
            if instructions and await self._first_turn(client, cascade):
                text = with_instructions(instructions, text)
            await client.send_user_cascade_message(cascade, text, plan_model=resolved.enum)
            async for event in self._follow_turn():
                yield event
        finally:
            self._turn_running = False
            for task in list(self._bridge_tasks):
                task.cancel()
            self._sink.unbind()

    async def _follow_turn(self) -> AsyncIterator[TurnEvent]:
        tally = TurnTally()
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
                self._start_interaction(event)
            else:
                tally.note(event)
            yield event

    async def _next_event(self) -> ReaderEvent | _BridgeFailed | None:
        """The next reader event, or None after a quiet spell in which agy was checked."""
        try:
            return await self._sink.get(timeout=_LIVENESS_SECONDS)
        except TimeoutError:
            agy = self._agy
            if agy is None or not agy.terminal.is_alive():
                raise SessionError("agy exited during the turn", code="agy_exited") from None
            if self._reader is None or not self._reader.is_alive():
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
        agy = self._agy
        if agy is None or agy.cascade_id is None:
            return False
        self._interrupted = True
        if self._bridge is not None:
            await self._bridge.deny_pending()
        try:
            await (await self._rpc()).cancel_cascade_steps(agy.cascade_id)
        except RpcError as exc:
            _logger.warning("cancelling agy's turn failed: %s", exc)
            return False
        return True

    async def steer(self, text: str) -> bool:
        """Deliver `text` into the running turn (agy picks it up at its next model call)."""
        agy = self._agy
        if agy is None or agy.cascade_id is None or not self._turn_running:
            return False
        model = self._turn_model or (await self.resolve_model(None, None)).enum
        try:
            await (await self._rpc()).send_user_cascade_message(
                agy.cascade_id, text, plan_model=model, delivery_strategy=STEERING
            )
        except RpcError as exc:
            _logger.warning("steering message not delivered: %s", exc)
            return False
        return True

    # --- helpers --------------------------------------------------------------------------

    async def _rpc(self) -> RpcClient:
        """The session's client, owned by the running loop; re-made when the loop or agy's
        port changed (the old one is closed when it belongs to this loop; a client of a loop
        that is gone went with it)."""
        loop = asyncio.get_running_loop()
        agy = self._agy
        assert agy is not None
        client = self._client
        if client is not None and self._client_loop is loop and client.port == agy.port:
            return client
        if client is not None and self._client_loop is loop:
            await client.aclose()
        self._client = agy.client()
        self._client_loop = loop
        return self._client

    async def _first_turn(self, client: RpcClient, cascade_id: str) -> bool:
        """Whether the cascade has no user input yet (so the instructions are still owed)."""
        summaries = obj((await client.get_all_cascade_trajectories()).get("trajectorySummaries"))
        return _untouched(summaries.get(cascade_id))

    async def _follow_clear(self) -> None:
        """If a person typed `/clear` in agy's TUI since the last turn, talk to the new
        conversation (the reader re-binds; the record follows)."""
        reader, agy = self._reader, self._agy
        if reader is None or agy is None or not agy.follows_tui:
            return
        try:
            await asyncio.wait_for(asyncio.wrap_future(reader.check_clear_now()), 10.0)
        except (TimeoutError, RpcError) as exc:
            _logger.info("could not check agy's conversations for a /clear: %s", exc)
            return
        if reader.cascade_id != agy.cascade_id:
            _logger.info("following agy's TUI to its new conversation after /clear")
            agy.bind_cascade(reader.cascade_id, follows_tui=True)

    async def _tui_cascade(self, client: RpcClient) -> str | None:
        """The empty conversation a freshly started agy's TUI opened, when there is exactly
        one root cascade and nobody has typed into it yet; else None."""
        summaries = obj((await client.get_all_cascade_trajectories()).get("trajectorySummaries"))
        roots = [
            (str(cascade_id), summary)
            for cascade_id, summary in summaries.items()
            if not obj(obj(summary).get("trajectoryMetadata")).get("parentConversationId")
        ]
        if len(roots) != 1 or not _untouched(roots[0][1]):
            return None
        return roots[0][0]

    async def _cascade_known(self, client: RpcClient, cascade_id: str) -> bool:
        try:
            await client.get_conversation_metadata(cascade_id)
        except RpcError:
            return False
        return True

    async def _rediscover(self) -> int:
        agy = self._agy
        assert agy is not None
        port = await discover_port(
            pid=agy.pid, log_file=agy.log_file, csrf_token=agy.csrf_token, deadline=5.0
        )
        agy.port = port
        return port

    async def _on_rotation(self, event: ConversationRotated) -> None:
        agy = self._agy
        if agy is not None:
            agy.bind_cascade(event.new_cascade_id, follows_tui=True)
        if self._bridge is not None:
            self._bridge = await self._new_bridge(event.new_cascade_id)

    async def _new_bridge(self, cascade_id: str) -> InteractionBridge:
        assert self._prompts is not None
        return InteractionBridge(
            client=await self._rpc(),
            cascade_id=cascade_id,
            prompts=self._prompts,
            policy=self._policy,
            plugin_manager=self._pm,
        )

    def _reader_ok(self) -> bool:
        return self._reader is not None and self._reader.is_alive()

    async def _stop_reader(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            await asyncio.to_thread(reader.stop)
