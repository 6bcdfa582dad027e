"""agy-sim as a process: the start-up sequence, the server's life and its end (WIRE.md §1).

Start-up, in agy's order:

1. the log's first line, at once: ``Starting language server process with pid <pid>``;
2. both loopback ports bound at once (TLS HTTP/2 on N with a certificate made now, plain
   HTTP on N+1 refusing RPC). Until ready every call on N answers
   ``503 {"code":"unavailable","message":"language server is starting"}``, so a client that
   found the port early (by the pid's listeners) learns to wait for Heartbeat's 200;
3. after the start-up delay (agy's account eligibility check, 7-9 s): ready. The log gets
   ``Language server listening on random port at <N> for HTTPS (gRPC)``, the TUI says
   ``[ready]``; lines typed before that were lost.

A restart (fault control file ``"restart"`` raised, or SIGUSR1) binds a NEW port pair,
closes the old one and logs a fresh listening line; the conversations survive, as they
do on disk for agy. SIGTERM, SIGINT and SIGHUP stop it promptly, closing both ports.
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import json
import logging
import os
import re
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from omnigent_agy.simulator.catalog import CatalogModel, ModelCatalog
from omnigent_agy.simulator.connect_app import (
    ASGIApp,
    ConnectApp,
    ConnectHandlerError,
    Message,
    Receive,
    Scope,
    Send,
)
from omnigent_agy.simulator.engine import EngineSettings, SimEngine
from omnigent_agy.simulator.faults import FaultInjector, FaultSource
from omnigent_agy.simulator.gemini import GeminiDir, trust_workspace
from omnigent_agy.simulator.mcp_host import McpHost
from omnigent_agy.simulator.server import TlsConnectServer
from omnigent_agy.simulator.tui import (
    SIGN_IN_HINT,
    Tui,
    TuiActions,
    survey_enabled,
    typed_interaction,
)

if TYPE_CHECKING:
    from omnigent_agy.simulator.__main__ import SimOptions

_log = logging.getLogger("agy-sim")

STARTING_LINE: Final = "Starting language server process with pid {pid}"
LISTENING_LINE: Final = "Language server listening on random port at {port} for HTTPS (gRPC)"
RESTART_POLL_SECONDS: Final = 0.2
_TURN_METHODS: Final = ("SendUserCascadeMessage", "StartCascade")


def run(options: SimOptions) -> int:
    """Run agy-sim until a signal or ``/quit``; the exit status."""
    try:
        resolve_tui_model(options.model, options.effort)
    except ValueError as exc:  # a bad --model/--effort is a usage error, as for agy
        sys.stderr.write(f"agy-sim: {exc}\n")
        return 2
    _configure_logging(options.log_file)
    return asyncio.run(SimProcess(options).main())


def _configure_logging(log_file: Path | None) -> None:
    # Go's log format ("2026/01/02 15:04:05 message"), as agy is a Go binary.
    if log_file is None:
        handler: logging.Handler = logging.NullHandler()
    else:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        file_handler = logging.FileHandler(log_file, mode="w", encoding="utf-8")
        # `kill -USR2 <pid>` writes every thread's stack to the log: a hung sim explains itself.
        if file_handler.stream is not None:
            faulthandler.register(signal.SIGUSR2, file=file_handler.stream, all_threads=True)
        handler = file_handler
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%Y/%m/%d %H:%M:%S"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    # hypercorn's own chatter ("Running on fd://7") is not agy's: keep only its problems.
    logging.getLogger("omnigent_agy.simulator.server").setLevel(logging.WARNING)


class ReadinessGate:
    """Answers 503 to every call until the start-up delay is over (see the module doc)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.ready = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.ready or scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        while True:  # read the request first: hypercorn drops the connection otherwise
            message: Message = await receive()
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        body = json.dumps({"code": "unavailable", "message": "language server is starting"})
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body.encode(), "more_body": False})


class RefuseHttp1:
    """Answers 501 to every HTTP/1.1 request, as some newer agy builds do (WIRE.md §1).

    Only with ``--sim-http2-only``: the TLS port otherwise offers both (ALPN h2, http/1.1).
    The body is a guess (plain text); the status is the fact a client can rely on.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("http_version") == "2":
            await self.app(scope, receive, send)
            return
        while True:  # read the request first, as above
            message: Message = await receive()
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        headers = [(b"content-type", b"text/plain; charset=utf-8")]
        await send({"type": "http.response.start", "status": 501, "headers": headers})
        body = b"HTTP/1.1 is not supported: use HTTP/2\n"
        await send({"type": "http.response.body", "body": body, "more_body": False})


class RestartableServer:
    """The TLS server on the running loop; ``restart`` moves it to a fresh port pair."""

    def __init__(self, injector: FaultInjector) -> None:
        self._app: ASGIApp = injector
        self._injector = injector
        self._server: TlsConnectServer | None = None
        self._shutdown = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.port

    @property
    def plain_port(self) -> int:
        assert self._server is not None
        return self._server.plain_port

    def start(self) -> int:
        self._launch(TlsConnectServer(self._app).bind())
        return self.port

    async def restart(self) -> int:
        # Bind the new pair while the old one is still held, so the port really changes.
        fresh = TlsConnectServer(self._app).bind()
        await self.stop()
        self._launch(fresh)
        return self.port

    def _launch(self, server: TlsConnectServer) -> None:
        self._server = server
        self._shutdown = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(server.serve(self._shutdown))

    async def stop(self) -> None:
        self._injector.release_stalls()  # a stalled stream would hold hypercorn's shutdown
        self._shutdown.set()
        task, self._task = self._task, None
        if task is None:
            return
        # Waited for, not awaited: the old server failing as it stops (a client's TLS close
        # racing ours ends hypercorn with an SSLError, APPLICATION_DATA_AFTER_CLOSE_NOTIFY)
        # is that server's end, not agy-sim's. Raised here, it ended agy-sim in the middle
        # of a restart, as no agy does (WIRE.md §1: its conversations are kept).
        await asyncio.wait([task])
        if not task.cancelled() and task.exception() is not None:
            _log.warning("the language server on the old port ended with %r", task.exception())

    @property
    def failed(self) -> BaseException | None:
        task = self._task
        if task is None or not task.done() or task.cancelled():
            return None
        return task.exception()


class SimProcess:
    """One agy-sim process: engine, server, TUI, signals."""

    def __init__(self, options: SimOptions) -> None:
        self.options = options
        self._stop = asyncio.Event()
        self._restart_requested = asyncio.Event()

    def _tui_and_handlers(self, engine: SimEngine, gemini: GeminiDir) -> tuple[Tui, dict[str, Any]]:
        """The TUI and the unary handlers, as the gemini dir makes them (signed out, trust)."""
        options = self.options
        signed_out = options.signed_out or not gemini.signed_in
        if signed_out:
            _log.info("signed out: %s", gemini.why_signed_out or "--sim-signed-out")

        async def answer(text: str) -> str:
            return await engine.answer_tui(typed_interaction(text))

        def trust() -> None:
            trust_workspace(options.gemini_dir, options.workspace)

        actions = TuiActions(submit=engine.submit_tui_text, answer=answer, quit=self._stop.set)
        if not gemini.trusted:
            actions.trust = trust
        tui = Tui(
            sys.stdout, actions, signed_out=signed_out, survey=survey_enabled(options.gemini_dir)
        )
        engine.add_listener(tui.on_transcript)
        unary: dict[str, Any] = dict(engine.unary_handlers())
        for name in _TURN_METHODS:
            if name in unary:
                unary[name] = _refuse_signed_out if signed_out else _until_trusted(tui, unary[name])
        return tui, unary

    async def main(self) -> int:
        options = self.options
        _log.info(STARTING_LINE.format(pid=os.getpid()))
        engine = SimEngine(self._engine_settings(), workspace=options.workspace)
        gemini = GeminiDir.read(options.gemini_dir, options.workspace, os.environ)
        engine.rules = gemini.rules
        mcp = McpHost(gemini.mcp_servers, cwd=options.workspace)
        engine.mcp = mcp
        tui, unary = self._tui_and_handlers(engine, gemini)
        connect = ConnectApp(
            csrf_token=options.csrf_token if options.enforces_csrf else None,
            unary=unary,
            streams=engine.stream_handlers(),
        )
        gate = ReadinessGate(RefuseHttp1(connect) if options.http2_only else connect)
        source = FaultSource(static_rules=options.fault_rules, control_file=options.faults_file)
        injector = FaultInjector(gate, source)
        server = RestartableServer(injector)
        self._install_signals()
        tui.starting(options.version, options.workspace)
        tui.attach_input()
        server.start()
        _log.info(
            "agy-sim %s: workspace %s, flags %s", options.version, options.workspace, self._flags()
        )
        status = 0
        # agy starts its MCP servers beside its start-up (when exactly is not recorded); a
        # turn that calls one of their tools waits until they are listed.
        mcp_started = asyncio.create_task(_start_mcp(mcp, tui))
        try:
            if not await self._wait_stop(options.startup_delay):
                tui.write(f"[skills] {', '.join(gemini.skills) or 'none'}")
                gate.ready = True
                _log.info(LISTENING_LINE.format(port=server.port))
                tui.set_ready(engine.tui_cascade_id)
                status = await self._serve(server, source, tui)
        finally:
            tui.write("[shutting down]")
            await server.stop()
            mcp_started.cancel()
            await mcp.aclose()
            await tui.aclose()
            await engine.aclose()
            _log.info("agy-sim stopped")
        return status

    async def _serve(self, server: RestartableServer, source: FaultSource, tui: Tui) -> int:
        """Serve, restarting when asked, until told to stop (0) or the server fails (1)."""
        generation = source.current().restart
        while not await self._wait_stop(RESTART_POLL_SECONDS):
            if server.failed is not None:
                _log.error("the language server failed: %r", server.failed)
                tui.write("[error] the language server failed; see the log")
                return 1
            wanted = source.current().restart
            if wanted > generation or self._restart_requested.is_set():
                generation = max(generation, wanted)
                self._restart_requested.clear()
                port = await server.restart()
                _log.info(LISTENING_LINE.format(port=port))
                tui.write(f"[language server restarted on port {port}]")
        return 0

    async def _wait_stop(self, seconds: float) -> bool:
        """Wait up to ``seconds``; True when asked to stop meanwhile."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), timeout=seconds)
        return self._stop.is_set()

    def _install_signals(self) -> None:
        loop = asyncio.get_running_loop()
        actions: dict[signal.Signals, Callable[[], None]] = {
            signal.SIGTERM: self._stop.set,
            signal.SIGINT: self._stop.set,
            signal.SIGHUP: self._stop.set,
            signal.SIGUSR1: self._restart_requested.set,
        }
        for signum, action in actions.items():
            loop.add_signal_handler(signum, _logged(signum, action))

    def _engine_settings(self) -> EngineSettings:
        options = self.options
        values: dict[str, Any] = {
            "gemini_dir": str(options.gemini_dir),
            "debug_rpc": options.debug_rpc,
            "history_steps": options.history_steps,
            "store_dir": str(options.gemini_dir) if options.keeps_conversations else "",
            "resume_conversation": options.conversation or "",
        }
        if options.waiting_timeout is not None:
            values["waiting_timeout"] = options.waiting_timeout
        if options.token_delay is not None:
            values["token_interval"] = options.token_delay
        if options.long_token_delay is not None:
            values["long_token_interval"] = options.long_token_delay
        if options.slow_command_seconds is not None:
            values["slow_command_seconds"] = options.slow_command_seconds
        if options.model is not None or options.effort is not None:
            values["default_model"] = resolve_tui_model(options.model, options.effort)
        return EngineSettings(**values)

    def _flags(self) -> str:
        options = self.options
        recorded = {
            "model": options.model,
            "effort": options.effort,
            "mode": options.mode,
            "dangerously-skip-permissions": options.skip_permissions or None,
            "gemini_dir": str(options.gemini_dir),
            "conversation": options.conversation,
            "csrf_token": "set" if options.csrf_token else None,  # never the token itself
        }
        return ", ".join(f"{key}={value}" for key, value in recorded.items() if value is not None)


def resolve_tui_model(model: str | None, effort: str | None) -> str:
    """The enum for ``--model`` and ``--effort``: effort picks the "(Low|Medium|High)" variant.

    Raises ValueError naming the served models when nothing matches.
    """
    catalog = ModelCatalog()
    if model is None:
        chosen: CatalogModel | None = catalog.default
    else:  # "Gemini 3 Pro" + effort "low" names "Gemini 3 Pro (Low)"
        chosen = catalog.resolve(model)
        if chosen is None and effort:
            chosen = catalog.resolve(f"{model} ({effort.strip().title()})")
    if chosen is None:
        names = ", ".join(m.display_name for m in catalog.models)
        raise ValueError(f"unknown model {model!r}; agy-sim serves: {names}")
    if effort:
        base = re.sub(r"\s*\([^)]*\)$", "", chosen.display_name)
        variant = catalog.resolve(f"{base} ({effort.strip().title()})")
        if variant is None:
            raise ValueError(f"{base} has no {effort!r} effort variant")
        chosen = variant
    return chosen.model


def _logged(signum: signal.Signals, action: Callable[[], None]) -> Callable[[], None]:
    """``action``, logging the signal first: an agy-sim that stopped says why."""

    def handle() -> None:
        _log.info("got %s", signum.name)
        action()

    return handle


async def _start_mcp(mcp: McpHost, tui: Tui) -> None:
    for line in await mcp.start():
        tui.write(line)
        _log.info(line)


def _until_trusted(tui: Tui, handler: Any) -> Any:
    async def guarded(request: dict[str, Any]) -> dict[str, Any]:
        if tui.trust_pending:
            # What real agy answers over RPC while its trust dialog is open is not recorded
            # (a guess): the turn is refused, naming the dialog.
            raise ConnectHandlerError(
                "failed_precondition",
                'agy is waiting for an answer to "Do you trust this project?" in its terminal',
                http_status=400,
            )
        result: dict[str, Any] = await handler(request)
        return result

    return guarded


async def _refuse_signed_out(_request: dict[str, Any]) -> dict[str, Any]:
    # Not 401/403: agy answers those only for the CSRF header (WIRE.md §1).
    raise ConnectHandlerError("unauthenticated", SIGN_IN_HINT, http_status=400)
