"""agy-sim as a process: the start-up sequence, the server's life and its end (docs/wire.md §1).

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
do on disk for agy. SIGTERM, SIGINT and SIGHUP stop it promptly, closing both ports. The
readiness gate, the HTTP/1.1 refusal and the restartable server are ``serving``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import io
import logging
import os
import re
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from agy_sim.catalog import CatalogModel, ModelCatalog
from agy_sim.child_env import agent_env
from agy_sim.connect_app import ConnectApp, ConnectHandlerError
from agy_sim.dialogs import typed_interaction
from agy_sim.engine import SimEngine
from agy_sim.engine_config import EngineSettings
from agy_sim.fault_injector import FaultInjector
from agy_sim.faults import FaultSource
from agy_sim.gemini import GeminiDir, trust_workspace
from agy_sim.glog import (
    LISTENING_LINE,
    NOT_SIGNED_IN_LINE,
    RELATIVE_GEMINI_DIR_LINE,
    SIGNED_IN_LINE,
    STARTING_LINE,
    VERSION_LINE,
    GlogFormatter,
)
from agy_sim.handlers import RpcHandlers
from agy_sim.hooks import Hooks
from agy_sim.mcp_host import McpHost
from agy_sim.model_switch import model_command, remembered_model
from agy_sim.options import SimOptions
from agy_sim.quota import QuotaAccount
from agy_sim.serving import ReadinessGate, RefuseHttp1, RestartableServer
from agy_sim.tui import (
    SIGN_IN_HINT,
    TRUST_QUESTION,
    Tui,
    TuiActions,
    survey_enabled,
)
from agy_sim.tui_screen import reports_status, screen_hooks
from agy_sim.versions import HOOKS
from agy_sim.workspace import Workspace, find_workspace, workspace_mcp_servers

_log = logging.getLogger("agy-sim")

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
    # The screen shows a folder's name as its bytes are, UTF-8 or not, as agy does.
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="surrogateescape")
    return asyncio.run(SimProcess(options).main())


def _configure_logging(log_file: Path | None) -> None:
    # glog's lines, as agy writes them (glog.py, docs/wire.md §9).
    if log_file is None:
        handler: logging.Handler = logging.NullHandler()
    else:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        # agy's log lines carry a folder name's bytes as they are, UTF-8 or not.
        file_handler = logging.FileHandler(
            log_file, mode="w", encoding="utf-8", errors="surrogateescape"
        )
        # `kill -USR2 <pid>` writes every thread's stack to the log: a hung sim explains itself.
        if file_handler.stream is not None:
            faulthandler.register(signal.SIGUSR2, file=file_handler.stream, all_threads=True)
        handler = file_handler
    handler.setFormatter(GlogFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    # hypercorn's own chatter ("Running on fd://7") is not agy's: keep only its problems.
    logging.getLogger("agy_sim.server").setLevel(logging.WARNING)


class SimProcess:
    """One agy-sim process: engine, server, TUI, signals."""

    def __init__(self, options: SimOptions) -> None:
        self.options = options
        self._stop = asyncio.Event()
        self._restart_requested = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._where = Workspace(options.workspace, options.workspace)
        self._mcp: McpHost | None = None

    def _find_workspace(self) -> Workspace:
        """Where agy works: a workspace in a hidden folder is dropped for agy's scratch
        folder, with agy's line in the log (docs/wire.md §9)."""
        options = self.options
        self._where = find_workspace(
            options.workspace, options.gemini_dir, resolve_links=options.resolves_links
        )
        if self._where.dropped:
            _log.warning(self._where.dropped)
        return self._where

    async def _start_servers(self, tui: Tui, *, trusted: bool) -> None:
        """The person's MCP servers and, in a trusted workspace, its own, side by side."""
        assert self._mcp is not None
        starts = [_start_mcp(self._mcp, tui)]
        if trusted:
            starts.append(self._workspace_mcp(tui))
        await asyncio.gather(*starts)

    async def _workspace_mcp(self, tui: Tui) -> None:
        """A trusted workspace's own MCP servers, started beside the person's (§9)."""
        if self._mcp is None:
            return
        servers = workspace_mcp_servers(self._where.folder)
        for line in await self._mcp.add(servers, cwd=self._where.folder):
            tui.write(line)
            _log.info("workspace %s", line)

    def _hooks(self, *, trusted: bool) -> Hooks:
        """The person's hooks and a trusted workspace's, from agy 1.4 on (docs/wire.md §9)."""
        options = self.options
        enabled = options.at_least(HOOKS)
        hooks = Hooks(options.gemini_dir, self._where.folder, enabled=enabled)
        if trusted:
            hooks.trust()
        return hooks

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
            if engine.hooks is not None:
                engine.hooks.trust()  # its own hooks run from now on (docs/wire.md §9)
            # Trusted now: the workspace's own MCP servers start (docs/wire.md §9).
            task = asyncio.get_running_loop().create_task(self._workspace_mcp(tui))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        model = model_command(
            engine.catalog,
            lambda: engine.tui_model,
            engine.switch_tui_model,
            options.gemini_dir if options.keeps_conversations else None,
        )
        actions = TuiActions(
            submit=engine.submit_tui_text,
            answer=answer,
            quit=self._stop.set,
            model=model,
            interaction=engine.answer_tui,
            interrupt=lambda: engine.stop(engine.cascades[engine.tui_cascade_id]),
            hooks=screen_hooks(engine, osc=reports_status(options.version)),
        )
        if not gemini.trusted:
            actions.trust = trust
        tui = Tui(
            sys.stdout, actions, signed_out=signed_out, survey=survey_enabled(options.gemini_dir)
        )
        engine.add_listener(tui.on_transcript)
        unary: dict[str, Any] = dict(RpcHandlers(engine).unary())
        if engine.quota is not None:
            # What a signed-out agy answers here is not reported (a guess): as for a turn.
            quota = engine.quota.handlers()
            unary.update(dict.fromkeys(quota, _refuse_signed_out) if signed_out else quota)
        for name in _TURN_METHODS:
            if name in unary:
                unary[name] = _refuse_signed_out if signed_out else _until_trusted(tui, unary[name])
        return tui, unary

    def _log_start(self) -> None:
        """agy's first log lines: its pid, its version, a relative --gemini_dir ignored."""
        options = self.options
        _log.info(STARTING_LINE.format(pid=os.getpid()))
        _log.info(VERSION_LINE.format(version=options.version))
        if options.ignored_gemini_dir is not None:
            _log.warning(
                RELATIVE_GEMINI_DIR_LINE.format(
                    path=str(options.ignored_gemini_dir), default=options.gemini_dir
                )
            )

    async def main(self) -> int:
        options = self.options
        self._log_start()
        where = self._find_workspace()
        engine = SimEngine(self._engine_settings(), workspace=where.folder)
        if await self._refused_resume(engine):
            return 1
        gemini, mcp, hooks = self._equip(engine, where.folder)
        tui, unary = self._tui_and_handlers(engine, gemini)
        gate, source, server = self._server(engine, unary)
        self._install_signals()
        tui.starting(options.version, options.workspace)
        tui.attach_input()
        server.start()
        _log.info(
            "agy-sim %s: workspace %s, flags %s", options.version, where.folder, self._flags()
        )
        status = 0
        # agy starts its MCP servers beside its start-up (when exactly is not recorded); a
        # turn that calls one of their tools waits until they are listed.
        tui_cascade = engine.cascades[engine.tui_cascade_id]
        mcp.agent_env = agent_env(
            csrf_token=options.csrf_token,
            port=server.port,
            conversation_id=tui_cascade.cascade_id,
            trajectory_id=tui_cascade.trajectory_id,
        )
        mcp_started = asyncio.create_task(self._start_servers(tui, trusted=gemini.trusted))
        await hooks.start(mcp.agent_env, session_id=tui_cascade.cascade_id)
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
            for task in self._tasks:
                task.cancel()
            await mcp.aclose()
            await tui.aclose()
            await engine.aclose()
            _log.info("agy-sim stopped")
        return status

    def _equip(self, engine: SimEngine, folder: Path) -> tuple[GeminiDir, McpHost, Hooks]:
        """The gemini dir read (its sign-in logged) and what it gives the engine: the
        permission rules, the MCP servers, the hooks; and the account's quota."""
        options = self.options
        gemini = GeminiDir.read(options.gemini_dir, options.workspace, os.environ)
        if options.signed_out or not gemini.signed_in:
            _log.warning(NOT_SIGNED_IN_LINE)
        else:
            _log.info(SIGNED_IN_LINE)
        engine.rules = gemini.rules
        self._mcp = engine.mcp = mcp = McpHost(gemini.mcp_servers, cwd=folder)
        engine.hooks = hooks = self._hooks(trusted=gemini.trusted)
        engine.quota = QuotaAccount(options.quota)
        return gemini, mcp, hooks

    def _server(
        self, engine: SimEngine, unary: dict[str, Any]
    ) -> tuple[ReadinessGate, FaultSource, RestartableServer]:
        """The server agy's clients talk to: the connect app behind its readiness gate and
        the fault injector, on TLS (not started yet)."""
        options = self.options
        connect = ConnectApp(
            csrf_token=options.csrf_token if options.enforces_csrf else None,
            unary=unary,
            streams=RpcHandlers(engine).streams(),
        )
        gate = ReadinessGate(RefuseHttp1(connect) if options.http2_only else connect)
        source = FaultSource(static_rules=options.fault_rules, control_file=options.faults_file)
        injector = FaultInjector(gate, source)
        # --sim-http1-only: TLS offers only http/1.1, an agy the plugin's HTTP/2 cannot reach.
        server = RestartableServer(
            injector, alpn=("http/1.1",) if options.http1_only else ("h2", "http/1.1")
        )
        return gate, source, server

    async def _refused_resume(self, engine: SimEngine) -> bool:
        """--sim-refuse-unknown-conversation: an id it does not keep ends it (closed)."""
        options = self.options
        if not options.conversation or engine.resumed or not options.refuses_unknown_conversation:
            return False
        _log.error("conversation %s not found", options.conversation)  # the words: a guess
        await engine.aclose()
        return True

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
                port = await server.restart(pause=source.current().restart_pause)
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
        return engine_settings(self.options)

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


def engine_settings(options: SimOptions) -> EngineSettings:
    """The engine's settings from the command line (the TUI's process and ``agy-sim acp``)."""
    values: dict[str, Any] = {
        "gemini_dir": str(options.gemini_dir),
        "debug_rpc": options.debug_rpc,
        "history_steps": options.history_steps,
        "store_dir": str(options.gemini_dir) if options.keeps_conversations else "",
        "resume_conversation": options.conversation or "",
        "frame_log": str(options.frame_log or ""),
        "sim_version": options.sim_version,
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
    elif remembered := remembered_model(options.gemini_dir, ModelCatalog()):
        values["default_model"] = remembered.model  # what /model chose last (a guess)
    return EngineSettings(**values)


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
                f'agy is waiting for an answer to "{TRUST_QUESTION}" in its terminal',
                http_status=400,
            )
        result: dict[str, Any] = await handler(request)
        return result

    return guarded


async def _refuse_signed_out(_request: dict[str, Any]) -> dict[str, Any]:
    # Not 401/403: agy answers those only for the CSRF header (docs/wire.md §1).
    raise ConnectHandlerError("unauthenticated", SIGN_IN_HINT, http_status=400)
