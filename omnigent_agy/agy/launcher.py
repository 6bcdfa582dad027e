"""Start agy for a conversation, wait until it is really ready, or re-attach to it.

One conversation, one agy (DESIGN-NOTES §4). :func:`launch_agy` starts it in the
runner-owned tmux server with a fresh CSRF token, ``--log-file`` and a private
``--gemini_dir`` (its feedback survey off: the survey swallows input, WIRE.md §1), records it
in the conversation's state directory, and returns once agy is ready. :func:`reattach` lets a
respawned harness process find that agy again instead of starting a second one;
:func:`ensure_agy` does whichever is needed.

Coming back: an agy that was stopped (the sweep, ``omnigent-agy stop``, a crash) leaves its
record with the conversation it was on, and :func:`ensure_agy` starts the next agy on that
conversation (``--conversation <id>``): agy keeps the history itself, in its brain directory
under the private ``--gemini_dir`` (WIRE.md §7), and the reader's durable cursor, kept in the
same state directory, says what was published already.

Readiness: agy spends 7-9 s on an account check after start and loses earlier input
(WIRE.md §1). Turns go over RPC, so "ready" is: agy's own port (discovery) answers
Heartbeat 200 with our token — agy-sim answers 503 until its check is done, and a
half-started agy that answers nothing never passes. A caller that needs more (e.g. a
non-empty model list before the first turn) passes ``ready_check``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import psutil

from omnigent_agy.agy.statedir import AgyRecord, SessionStateDir, state_key, write_private_file
from omnigent_agy.agy.terminal import AgyTerminal, TerminalHost
from omnigent_agy.rpc.client import RetryPolicy, RpcClient
from omnigent_agy.rpc.discovery import (
    AgyExitedError,
    DiscoveryError,
    PortNeverOpenedError,
    Probe,
    discover_pin,
    pin_if_ours,
    probe_port,
)
from omnigent_agy.rpc.errors import AgyError, RpcError
from omnigent_agy.rpc.listeners import is_port_owned_by
from omnigent_agy.rpc.pinning import Pin

__all__ = [
    "AgyLaunchSpec",
    "AgyProcess",
    "LaunchError",
    "ReadyCheck",
    "build_argv",
    "ensure_agy",
    "launch_agy",
    "reattach",
    "session_name",
    "wait_ready",
    "write_agy_settings",
]

logger = logging.getLogger(__name__)

type ReadyCheck = Callable[[RpcClient], Awaitable[bool]]

# The flag that starts agy on a stored conversation. WIRE.md records the id being the brain
# directory's (§7) but not the flag itself: agy-sim implements this name (docs/simulator.md).
CONVERSATION_FLAG = "--conversation"
# Variables that describe the harness's own terminal, not agy's (tmux sets its own).
_TERMINAL_ENV = frozenset({"TMUX", "TMUX_PANE", "TERM", "TERM_PROGRAM", "COLUMNS", "LINES"})
_PID_CLOCK_SLACK = 0.05  # seconds: create_time is reported with clock-tick precision
_TAIL_LINES = 12


class LaunchError(AgyError):
    """agy could not be started for a conversation."""

    @property
    def remediation(self) -> str:
        """What a person can do about it."""
        return "Run `omnigent-agy doctor`."


@dataclass(frozen=True, slots=True)
class AgyLaunchSpec:
    """How to start agy for one conversation.

    ``command`` is the argv prefix (``("agy",)``, ``("agy-sim", "--sim-startup-delay", "1")``);
    ``env`` is laid over the harness's environment (which agy inherits unless
    ``inherit_env`` is False).
    """

    command: tuple[str, ...]
    workspace: Path
    state_dir: SessionStateDir
    model: str | None = None
    extra_flags: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    inherit_env: bool = True
    ready_timeout: float = 60.0


@dataclass(slots=True)
class AgyProcess:
    """A running agy: where it listens and how to talk to it. ``repr`` hides the token."""

    pid: int
    port: int
    csrf_token: str = field(repr=False)
    log_file: Path
    terminal: AgyTerminal
    state_dir: SessionStateDir
    cascade_id: str | None = None
    follows_tui: bool = False
    resumed_after: str | None = None
    """Set when this agy was started again on a conversation an earlier agy had: why that
    one ended (the stop reason in its record, or that it was gone)."""

    def client(self, *, timeout: float = 10.0) -> RpcClient:
        """A new RpcClient for this agy (one per event loop, DESIGN-NOTES §10)."""
        return RpcClient(port=self.port, csrf_token=self.csrf_token, timeout=timeout)

    def bind_cascade(self, cascade_id: str, *, follows_tui: bool = False) -> None:
        """Persist the conversation's cascade id with the record (DESIGN-NOTES §4);
        `follows_tui`: it is the cascade agy's TUI shows (a `/clear` there moves it)."""
        record = self.state_dir.read_record()
        if record is None or record.pid != self.pid:
            raise LaunchError(f"the agy record in {self.state_dir.path} is not this agy's")
        self.state_dir.write_record(record.with_cascade(cascade_id, follows_tui=follows_tui))
        self.cascade_id = cascade_id
        self.follows_tui = follows_tui

    async def stop(self, *, timeout: float = 5.0) -> None:
        """Stop agy and its tmux session, and forget the record."""
        await asyncio.to_thread(self.terminal.stop, timeout=timeout)
        record = self.state_dir.read_record()
        if record is not None and record.pid == self.pid:
            self.state_dir.clear_record()


def session_name(conversation_id: str) -> str:
    """The tmux session name of a conversation's agy."""
    return f"agy-{state_key(conversation_id)}"


def build_argv(
    spec: AgyLaunchSpec, *, csrf_token: str, conversation: str | None = None
) -> list[str]:
    """agy's command line (WIRE.md §1 flags). Holds the token: never log it."""
    argv = [
        *spec.command,
        f"--csrf_token={csrf_token}",
        "--log-file",
        str(spec.state_dir.log_file),
        "--gemini_dir",
        str(spec.state_dir.gemini_dir),
    ]
    if conversation:
        argv += [CONVERSATION_FLAG, conversation]
    if spec.model:
        argv += ["--model", spec.model]
    return [*argv, *spec.extra_flags]


def write_agy_settings(gemini_dir: Path) -> Path:
    """Turn agy's feedback survey off, keeping every other setting already there."""
    settings_dir = gemini_dir / "antigravity-cli"
    settings_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    settings_file = settings_dir / "settings.json"
    settings: dict[str, object] = {}
    with contextlib.suppress(FileNotFoundError):
        loaded = json.loads(settings_file.read_text(encoding="utf-8"))
        if not isinstance(loaded, dict):
            raise LaunchError(f"{settings_file} is not a JSON object; fix or remove it")
        settings = loaded
    settings["showFeedbackSurvey"] = False
    write_private_file(settings_file, json.dumps(settings, indent=2) + "\n")
    return settings_file


def _agy_env(spec: AgyLaunchSpec) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in _TERMINAL_ENV}
    return {**(base if spec.inherit_env else {}), **spec.env}


def _rotate_log(log_file: Path) -> None:
    # A fresh log per agy: discovery then never even considers an earlier agy's port.
    with contextlib.suppress(FileNotFoundError):
        log_file.replace(log_file.with_name(log_file.name + ".1"))


async def wait_ready(
    terminal: AgyTerminal,
    *,
    pid: int,
    log_file: Path,
    csrf_token: str,
    conversation_id: str | None = None,
    deadline: float,
    ready_check: ReadyCheck | None = None,
    poll_interval: float = 0.2,
) -> int:
    """Wait until agy's port answers Heartbeat (and ``ready_check``); returns the port.

    A DiscoveryError from agy dying carries the last lines of its screen, which say why.
    """
    started = time.monotonic()
    try:
        pin = await discover_pin(
            pid=pid,
            log_file=log_file,
            csrf_token=csrf_token,
            conversation_id=conversation_id,
            deadline=deadline,
            poll_interval=poll_interval,
        )
        port = pin.port
        if ready_check is not None:
            stop_at = started + deadline
            await _wait_check(
                pin,
                csrf_token,
                check=ready_check,
                stop_at=stop_at,
                poll_interval=poll_interval,
                pid=pid,
                log_file=log_file,
            )
    except AgyExitedError as exc:
        tail = [line for line in terminal.capture(history=True) if line.strip()][-_TAIL_LINES:]
        screen = "\n  ".join(tail) if tail else "(nothing)"
        message = f"{exc.args[0]}; its terminal showed:\n  {screen}"
        raise AgyExitedError(message, pid=pid, log_file=log_file) from exc
    if ready_check is None:
        logger.info("agy pid %s ready on port %s", pid, port)
    return port


async def _wait_check(
    pin: Pin,
    token: str,
    *,
    check: ReadyCheck,
    stop_at: float,
    poll_interval: float,
    pid: int,
    log_file: Path,
) -> None:
    port = pin.port
    async with RpcClient(
        port=port, csrf_token=token, retry=RetryPolicy(attempts=1), certificate=pin.certificate
    ) as client:
        while True:
            with contextlib.suppress(RpcError):
                if await check(client):
                    return
            remaining = stop_at - time.monotonic()
            if remaining <= 0:
                raise PortNeverOpenedError(
                    f"agy answers on port {port} but its readiness check never passed",
                    pid=pid,
                    log_file=log_file,
                )
            await asyncio.sleep(min(poll_interval, remaining))


def _same_process(pid: int, create_time: float) -> bool:
    # A pid alone may have been reused (reboot, long idle): the start time must match too.
    return abs(_create_time(pid) - create_time) <= _PID_CLOCK_SLACK


def _create_time(pid: int) -> float:
    try:
        return psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return 0.0


async def launch_agy(
    terminal_host: TerminalHost,
    spec: AgyLaunchSpec,
    *,
    conversation_id: str,
    ready_check: ReadyCheck | None = None,
    resume: AgyRecord | None = None,
) -> AgyProcess:
    """Start agy for ``conversation_id`` and wait until it is ready (see the module doc);
    with ``resume`` (an earlier agy's record), on the conversation that agy was bound to."""
    name = session_name(conversation_id)
    existing = terminal_host.find(name)
    if existing is not None:
        if existing.is_alive():
            raise LaunchError(
                f"an agy is already running for this conversation (tmux session {name!r}); "
                "re-attach to it (ensure_agy) instead of starting a second one"
            )
        await asyncio.to_thread(existing.stop)  # a dead pane left for diagnosis
    state = spec.state_dir
    token = secrets.token_urlsafe(32)
    _rotate_log(state.log_file)
    write_agy_settings(state.gemini_dir)
    terminal = await asyncio.to_thread(
        terminal_host.start,
        name,
        build_argv(spec, csrf_token=token, conversation=resume.cascade_id if resume else None),
        cwd=spec.workspace,
        env=_agy_env(spec),
        private_dir=state.path,
    )
    pid = terminal.pid
    if pid is None:
        raise LaunchError(f"tmux session {name!r} vanished right after it started agy")
    record = AgyRecord(
        pid=pid,
        pid_create_time=_create_time(pid),
        port=None,
        csrf_token=token,
        tmux_socket=terminal_host.socket_name,
        tmux_session=name,
        log_file=str(state.log_file),
        cascade_id=resume.cascade_id if resume else None,
        follows_tui=resume.follows_tui if resume else False,
        workspace=str(spec.workspace),
    )
    # Recorded before waiting, so a harness that dies now can still find and stop it.
    state.write_record(record)
    try:
        port = await wait_ready(
            terminal,
            pid=pid,
            log_file=state.log_file,
            csrf_token=token,
            deadline=spec.ready_timeout,
            ready_check=ready_check,
        )
    except DiscoveryError:
        # Leave a dead pane (its screen explains the failure) but never a live half-ready agy.
        if terminal.is_alive():
            await asyncio.to_thread(terminal.stop)
        state.clear_record()
        raise
    state.write_record(replace(record, port=port))
    agy = AgyProcess(pid, port, token, state.log_file, terminal, state)
    agy.cascade_id, agy.follows_tui = record.cascade_id, record.follows_tui
    if resume is not None:
        agy.resumed_after = resume.stopped_reason or "it was no longer running"
    return agy


async def reattach(
    terminal_host: TerminalHost, state_dir: SessionStateDir, *, deadline: float = 5.0
) -> AgyProcess | None:
    """The agy recorded in ``state_dir`` if it still runs and answers, else None.

    Checks, in order: the tmux session is alive; its pid is the recorded one (and not a
    reused pid); the recorded port is still owned by it and answers Heartbeat with the
    stored token (and knows the bound cascade) — else the port is rediscovered briefly.
    """
    record = state_dir.read_record()
    if record is None:
        return None
    if record.tmux_socket != terminal_host.socket_name:
        logger.warning("agy record names tmux socket %r, not ours", record.tmux_socket)
        return None
    terminal = terminal_host.find(record.tmux_session)
    if terminal is None or not terminal.is_alive():
        logger.info("recorded agy (session %s) is gone", record.tmux_session)
        return None
    pid = terminal.pid
    if pid is None or pid != record.pid or not _same_process(pid, record.pid_create_time):
        logger.warning("session %s runs pid %s, not the recorded agy", record.tmux_session, pid)
        return None
    port = record.port
    if port is None or not await _answers(port, pid, record):
        try:
            pin = await discover_pin(
                pid=pid,
                log_file=Path(record.log_file),
                csrf_token=record.csrf_token,
                conversation_id=record.cascade_id,
                deadline=deadline,
            )
            port = pin.port
        except DiscoveryError as exc:
            logger.warning("cannot re-attach to agy pid %s: %s", pid, exc.args[0])
            return None
        state_dir.write_record(replace(record, port=port))
    logger.info("re-attached to agy pid %s on port %s", pid, port)
    return AgyProcess(
        pid,
        port,
        record.csrf_token,
        Path(record.log_file),
        terminal,
        state_dir,
        record.cascade_id,
        record.follows_tui,
    )


async def _answers(port: int, pid: int, record: AgyRecord) -> bool:
    if not await asyncio.to_thread(is_port_owned_by, port, pid):
        return False
    # Pinned: a stranger taking the port after the check above gets no token (rpc/pinning).
    pin = await pin_if_ours(port, pid=pid, log_file=Path(record.log_file))
    if pin is None:
        return False
    probe = await probe_port(
        port,
        csrf_token=record.csrf_token,
        conversation_id=record.cascade_id,
        certificate=pin.certificate,
    )
    return probe is Probe.OK


async def ensure_agy(
    terminal_host: TerminalHost,
    spec: AgyLaunchSpec,
    *,
    conversation_id: str,
    ready_check: ReadyCheck | None = None,
) -> AgyProcess:
    """Re-attach to the conversation's agy, or start one (stopping any unusable leftover)
    on the conversation the earlier agy was bound to, if any (see the module doc)."""
    found = await reattach(terminal_host, spec.state_dir)
    if found is not None:
        return found
    earlier = spec.state_dir.read_record()
    resume = earlier if earlier is not None and earlier.cascade_id else None
    leftover = terminal_host.find(session_name(conversation_id))
    if leftover is not None:
        await asyncio.to_thread(leftover.stop)
    spec.state_dir.clear_record()
    if resume is not None:
        logger.info(
            "starting agy again on conversation %s (%s)",
            resume.cascade_id,
            resume.stopped_reason or "the earlier agy was gone",
        )
    try:
        return await launch_agy(
            terminal_host,
            spec,
            conversation_id=conversation_id,
            ready_check=ready_check,
            resume=resume,
        )
    except AgyExitedError as exc:
        if resume is None:
            raise
        # `--conversation` is not a recorded flag (WIRE.md has none): an agy that refuses
        # it, or the id, must not leave the conversation without any agy at all.
        logger.warning(
            "agy exited when started on conversation %s; starting it on a new one: %s",
            resume.cascade_id,
            exc.args[0],
        )
    agy = await launch_agy(
        terminal_host, spec, conversation_id=conversation_id, ready_check=ready_check
    )
    agy.resumed_after = (
        f"{resume.stopped_reason or 'the earlier agy was gone'}; agy would not start on "
        f"conversation {resume.cascade_id}, so a new conversation began"
    )
    return agy
