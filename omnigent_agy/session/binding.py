"""One conversation's agy found or launched, its cascade bound, and the reader following it.

`AgyBinding` is the part of a session that knows *where* the conversation lives:

- **One conversation, one agy, one cascade** (docs/decisions.md §4): agy runs in a runner-owned
  tmux session and stays alive across turns and harness restarts; the binding re-attaches
  through the record in the session's private state directory, or launches a fresh agy (after
  the pre-flight checks) and binds the conversation its TUI shows, else one started over RPC.
- **Where the conversation is now** is one `Whereabouts` (rpc/whereabouts.py) per agy: its
  `AgyEndpoint` (the port now) and the bound cascade. The reader, the interaction bridge, the
  interrupt, steering, the turn's send and the catalog all ask it: they follow agy's language
  server to a new port (discovery runs again, docs/wire.md §1), and a `/clear` typed in agy's
  TUI, which the reader notices and rotates there (docs/wire.md §7). The record follows both
  (`AgyProcess.follow`), so `omnigent-agy ps` and a respawned harness see them.
- **Reading** is the `CascadeReader` thread, started here and publishing into the sink the
  session gives.
- **RPC** of the session itself goes through `rpc()`: a `FollowingClient` owned by the running
  loop (one connection, one owner: docs/decisions.md §10), re-made when the loop changed.
- **Models** come from agy's own catalog (GetAvailableModels, once; never hard-coded,
  docs/decisions.md §7).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pluggy
import psutil

from omnigent_agy.agy.gemini_home import GeminiSeed
from omnigent_agy.agy.keep import KeepPolicy
from omnigent_agy.agy.launcher import AgyLaunchSpec, reattach
from omnigent_agy.agy.process import AgyProcess
from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.agy.terminal import TerminalHost, process_running
from omnigent_agy.agy.trust_store import WorkspaceTrust
from omnigent_agy.agy.workspace import AgyWorkspace
from omnigent_agy.constants import TMUX_SOCKET
from omnigent_agy.errors import AGY_UNREACHABLE, Failure, PreflightError, RpcError, SessionError
from omnigent_agy.models.catalog import ModelCatalog
from omnigent_agy.plugins import model_aliases
from omnigent_agy.reading.cursor import CursorStore
from omnigent_agy.reading.reader import CascadeReader, ReaderEvent, ReaderSettings
from omnigent_agy.reading.rotation import tui_cascade, untouched
from omnigent_agy.reading.sink import EventSink
from omnigent_agy.reading.steps import obj
from omnigent_agy.rpc.discovery import discover_pin, pin_if_ours
from omnigent_agy.rpc.endpoint import AgyEndpoint, FollowingClient
from omnigent_agy.rpc.pinning import Pin
from omnigent_agy.rpc.whereabouts import Whereabouts
from omnigent_agy.session.cold_start import launch_checked
from omnigent_agy.session.home import AgyHome
from omnigent_agy.session.stopping import stop_every_agy, stop_for_sign_in
from omnigent_agy.session.workspace_check import check_workspace
from omnigent_agy.session.workspace_gate import WorkspaceGate

__all__ = ["AgyBinding", "PreflightError", "SessionError", "SessionSettings", "untouched"]

_logger = logging.getLogger(__name__)

# How long agy is looked for again after its port stopped answering, while its process lives:
# a language server that moved can take seconds to answer on its new port (more under load),
# and a turn failed for that is lost. Waiting costs nothing when agy answers sooner, and an
# agy that exited ends the look at once.
_FIND_AGAIN_S = 30.0


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """Everything a session needs to know up front (the executor builds it from config)."""

    conversation_id: str
    workspace: Path
    command: tuple[str, ...]
    """argv prefix that starts agy: the resolved executable plus configured args."""
    state_base: Path | None = None
    tmux_socket: str = TMUX_SOCKET
    keep_agy_running: bool = True
    keep: KeepPolicy = field(default_factory=KeepPolicy)
    """When the sweep stops kept agys (``harness.agy-cli.idle_stop_after``, ``max_kept``)."""
    ready_timeout: float = 60.0
    reader: ReaderSettings = field(default_factory=ReaderSettings)
    env: Mapping[str, str] = field(default_factory=dict)
    preflight: Callable[[], Failure | None] | None = None
    """Blocking checks before launching agy (run in a thread): the first failure, or None.
    When set, agy's gemini dir is checked too (signed in, trusted, settings valid)."""
    agy_version: Callable[[], str | None] | None = None
    """agy's version line (``agy --version``), read in a thread once per conversation: an
    untested version is said at that turn (`version_notice`); None: not checked."""
    gemini_seed: GeminiSeed | None = None
    """What agy's private gemini dir is seeded with (docs/wire.md §1b); None: left as it is."""
    omnigent_tools: bool = False
    """Relay omnigent's tools to agy over MCP (needs `gemini_seed`, which writes the entry)."""
    trust: WorkspaceTrust = field(default_factory=WorkspaceTrust)
    """Who may trust the workspace (docs/decisions.md §11); with a `gemini_seed`, agy starts
    only in a workspace they trust or the person trusted on a card (`WorkspaceGate`)."""


class AgyBinding:
    """The agy, cascade, reader and client of one conversation; one event loop at a time."""

    def __init__(
        self,
        settings: SessionSettings,
        *,
        sink: EventSink[ReaderEvent],
        plugin_manager: pluggy.PluginManager | None = None,
    ) -> None:
        self.settings = settings
        self._sink = sink
        self._pm = plugin_manager
        self.state = SessionStateDir.open(settings.conversation_id, base=settings.state_base)
        self._terminals = TerminalHost(socket_name=settings.tmux_socket)
        self.home = AgyHome(
            self.state,
            settings.workspace,
            settings.gemini_seed,
            relay=settings.omnigent_tools,
            env=settings.env,
        )
        self.gate = WorkspaceGate(
            settings.workspace,
            settings.trust,
            state=self.state,
            home=self.home,
            env=settings.env,
            seeded=settings.gemini_seed is not None,
        )
        """The path agy is given for the workspace, and whether agy may start there."""
        self._agy: AgyProcess | None = None
        self._agy_process: psutil.Process | None = None  # the bound agy's, once looked at
        self._reader: CascadeReader | None = None
        self._whereabouts: Whereabouts | None = None
        self._client: FollowingClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._catalog: ModelCatalog | None = None
        self.lost: tuple[str, str] | None = None
        """The conversation agy would not go on with and why, until the session says so."""

    @property
    def agy(self) -> AgyProcess | None:
        return self._agy

    @property
    def reader(self) -> CascadeReader | None:
        return self._reader

    @property
    def whereabouts(self) -> Whereabouts | None:
        """Where the conversation is now (agy's port, the bound cascade), once bound."""
        return self._whereabouts

    @property
    def known_catalog(self) -> ModelCatalog | None:
        """The catalog if it was read already (never reads it)."""
        return self._catalog

    async def ensure_started(self) -> AgyProcess:
        """agy running and answering, the cascade bound and the reader following it."""
        await self.home.start()
        where = await asyncio.to_thread(self.gate.prepare)
        # A running agy keeps the sign-in it started with: when the person's changed since
        # (renewed, revoked, another account), agy starts again on the same conversation
        # with it as it is now (signed out, the pre-flight then says so), at this turn.
        sign_in_changed = await asyncio.to_thread(self.home.sync_sign_in)
        running = self._agy is not None and self.reader_ok() and self._still_running(self._agy)
        if running and not sign_in_changed and self._agy is not None:
            if self.home.stale:
                self.home.seed(fresh=False)  # this turn's instructions or tools
            return self._agy
        await self._stop_reader()
        if sign_in_changed and await asyncio.to_thread(stop_for_sign_in, self.state.path):
            _logger.info("the person's sign-in changed: agy starts again with it")
        record = await asyncio.to_thread(self.state.read_record)
        wanted = None if record is None else record.cascade_id  # what agy is to go on with
        agy, launched = await self._reattach_or_launch(where)
        await self._bind_endpoint(agy)
        client = await self.rpc()
        fresh_cascade = await self._bind_cascade(client, agy, wanted, launched=launched)
        assert agy.cascade_id is not None
        ignored = await check_workspace(client, agy.cascade_id, agy.log_file, where)
        if ignored is not None:
            await self.stop_every_agy("agy ignored its workspace")
            raise ignored
        await self._start_reader(fresh_cascade=fresh_cascade)
        return agy

    async def _reattach_or_launch(self, where: AgyWorkspace) -> tuple[AgyProcess, bool]:
        """The recorded agy re-attached, else one launched (after the trust and the
        pre-flight); True when launched."""
        agy = await reattach(self._terminals, self.state)
        if agy is not None:
            self.home.seed(fresh=False)  # e.g. a token the person's agy renewed meanwhile
            return agy, False
        spec = AgyLaunchSpec(
            command=self.settings.command,
            workspace=self.settings.workspace,
            cwd=where.agy,
            state_dir=self.state,
            env=dict(self.settings.env),
            ready_timeout=self.settings.ready_timeout,
        )
        await asyncio.to_thread(self.gate.require_trust)  # before any agy starts
        self.home.seed(fresh=True)
        agy = await launch_checked(
            self._terminals,
            spec,
            conversation_id=self.settings.conversation_id,
            preflight=self._preflight,
        )
        return agy, True

    async def _bind_cascade(
        self, client: FollowingClient, agy: AgyProcess, wanted: str | None, *, launched: bool
    ) -> bool:
        """The conversation bound: agy's own when it knows it, else (noting a conversation
        it would not go on with) the one its TUI opened, else one started over RPC. True
        when a fresh cascade was bound."""
        if agy.cascade_id is not None and await self._cascade_known(client, agy.cascade_id):
            return False
        if agy.resumed_after is not None and agy.cascade_id is not None:
            _logger.warning("agy could not resume conversation %s", agy.cascade_id)
            agy.resumed_after += f"; conversation {agy.cascade_id} could not be resumed"
        if wanted is not None:
            # No cascade at all: the launcher's agy would not even start on it.
            why = "agy did not know it" if agy.cascade_id else "agy would not start on it"
            self.lost = (wanted, why)
        tui = await self._tui_cascade(client) if launched else None
        if tui is not None:
            # The conversation agy's TUI shows: a person attached to the tmux session
            # watches this very conversation (docs/decisions.md §2).
            agy.bind_cascade(tui, follows_tui=True)
        else:
            # A cascade started over RPC is not the one the TUI shows (docs/wire.md §3).
            agy.bind_cascade(await client.run(lambda c: c.start_cascade(), resend_safe=False))
        return True

    async def _start_reader(self, *, fresh_cascade: bool) -> None:
        """The reader following the bound conversation, caught up."""
        assert self._whereabouts is not None
        self._reader = CascadeReader(
            whereabouts=self._whereabouts,
            sink=self._sink,
            cursor=CursorStore(self.state.path),
            settings=self.settings.reader,
            model_names={e.enum: e.display_name for e in (await self.catalog()).entries},
            # A cascade we bound before but whose cursor is gone: its history is on screen.
            skip_existing=not fresh_cascade,
        )
        self._reader.start()
        ready = await asyncio.to_thread(self._reader.wait_ready, self.settings.ready_timeout)
        if not ready:
            raise SessionError("agy's conversation stream never answered", kind=AGY_UNREACHABLE)

    def _still_running(self, agy: AgyProcess) -> bool:
        """Whether the bound agy still runs: every turn asks, so after the first look (tmux's
        pane) only its process is checked. A libtmux query runs a tmux subprocess, which
        costs 0.1 s on a busy machine (docs/performance.md, turn overhead); the pane's process
        is agy itself (the trampoline execs it), so a pane that goes away takes it along."""
        process = self._agy_process
        if process is None or process.pid != agy.pid:
            if not agy.terminal.is_alive():
                return False
            try:
                self._agy_process = psutil.Process(agy.pid)
            except psutil.NoSuchProcess:
                return False
            return True
        return process_running(process)  # a reused pid is not ours

    async def _preflight(self) -> None:
        check = self.settings.preflight
        if check is None:
            return
        failure = await asyncio.to_thread(check)
        if failure is None:
            # The agy we start reads only its own folder: check it as agy will see it.
            failure = self.home.check()
        if failure is not None:
            raise PreflightError(failure)

    async def close(self, *, stop_agy: bool | None = None) -> None:
        """Stop the reader and, unless configured to keep it, agy itself."""
        await self._stop_reader()
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.aclose()
            self._client = None
        keep = self.settings.keep_agy_running if stop_agy is None else not stop_agy
        if self._agy is not None and not keep:
            await self._agy.stop()
        self._agy = None
        await self.home.aclose()

    async def stop_every_agy(self, reason: str) -> None:
        """Stop every agy of this conversation, an earlier harness process's too, with what it
        started (`stopping.stop_every_agy`); the record is kept, marked stopped."""
        bound = self._agy
        await self.close(stop_agy=False)
        conversation = self.settings.conversation_id
        await stop_every_agy(self._terminals, self.state.path, conversation, bound, reason)

    async def catalog(self) -> ModelCatalog:
        """agy's models (GetAvailableModels, once per session; never hard-coded,
        docs/decisions.md §7)."""
        if self._catalog is None:
            payload = await (await self.rpc()).run(lambda c: c.get_available_models())
            aliases = model_aliases(self._pm) if self._pm is not None else {}
            self._catalog = ModelCatalog.from_response(payload, aliases=aliases)
        return self._catalog

    async def _bind_endpoint(self, agy: AgyProcess) -> None:
        """Make `agy` (launched or re-attached just now) the one whose port every part
        follows; the old client is closed when it belongs to this loop (else it went with
        its loop)."""
        self._agy = agy
        pin = await self._pin(agy)
        endpoint = AgyEndpoint(
            port=pin.port,
            csrf_token=agy.csrf_token,
            locate=self._rediscover,
            certificate=pin.certificate,
        )
        where = Whereabouts(endpoint, cascade_id=agy.cascade_id, follows_tui=agy.follows_tui)
        agy.follow(where)
        if pin.port != agy.found_port:
            agy.record_port(pin.port)
        self._whereabouts = where
        old, self._client = self._client, None
        if old is not None and self._client_loop is asyncio.get_running_loop():
            await old.aclose()

    async def rpc(self) -> FollowingClient:
        """The session's client, owned by the running loop and following agy's port; re-made
        when the loop changed (a client of a loop that is gone went with it)."""
        loop = asyncio.get_running_loop()
        assert self._whereabouts is not None
        if self._client is not None and self._client_loop is loop:
            return self._client
        self._client = FollowingClient(self._whereabouts.endpoint)
        self._client_loop = loop
        return self._client

    async def follow_clear(self) -> None:
        """If a person typed `/clear` in agy's TUI since the last turn, talk to the new
        conversation: the reader looks now and rotates the whereabouts (the record follows)."""
        reader, where = self._reader, self._whereabouts
        if reader is None or where is None or not where.follows_tui:
            return
        try:
            await asyncio.wait_for(asyncio.wrap_future(reader.check_clear_now()), 10.0)
        except (TimeoutError, RpcError) as exc:
            _logger.info("could not check agy's conversations for a /clear: %s", exc)

    async def _tui_cascade(self, client: FollowingClient) -> str | None:
        """The empty conversation a freshly started agy's TUI opened, when there is exactly
        one root cascade and nobody has typed into it yet; else None."""
        listed = await client.run(lambda c: c.get_all_cascade_trajectories())
        return tui_cascade(obj(listed.get("trajectorySummaries")))

    async def _cascade_known(self, client: FollowingClient, cascade_id: str) -> bool:
        try:
            await client.run(lambda c: c.get_conversation_metadata(cascade_id))
        except RpcError:
            return False
        return True

    async def _pin(self, agy: AgyProcess) -> Pin:
        """agy's port (found by the launch or re-attach just now) with the certificate agy
        serves there, which the session's clients trust alone; found again if agy left it.

        The launch's own pin when it has one: it was taken moments ago, after agy was seen to
        hold the port, so fetching and checking it again would only put a TLS handshake and
        two scans of the system's listeners on the way to the first answer. Should another
        process hold the port by now, the pinned certificate fails its handshake before a
        byte is sent, and the endpoint looks for agy again (rpc/pinning)."""
        pin = agy.take_pin() or await pin_if_ours(agy.port, pid=agy.pid, log_file=agy.log_file)
        if pin is not None:
            return pin
        _logger.info("agy's port %s is no longer agy's alone; looking again", agy.port)
        return await self._rediscover()

    async def _rediscover(self) -> Pin:
        """Where agy listens now with its certificate there (the endpoint asks, on whichever
        loop failed first)."""
        agy = self._agy
        assert agy is not None
        return await discover_pin(
            pid=agy.pid, log_file=agy.log_file, csrf_token=agy.csrf_token, deadline=_FIND_AGAIN_S
        )

    def reader_ok(self) -> bool:
        return self._reader is not None and self._reader.is_alive()

    async def _stop_reader(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            await asyncio.to_thread(reader.stop)
