"""Start agy for a conversation, wait until it is really ready, or re-attach to it.

One conversation, one agy (docs/decisions.md §4). :func:`launch_agy` starts it in the
runner-owned tmux server with a fresh CSRF token, ``--log-file`` and a private
``--gemini_dir`` (its feedback survey off: the survey swallows input, docs/wire.md §1), records it
in the conversation's state directory, and returns once agy is ready. :func:`reattach` lets a
respawned harness process find that agy again instead of starting a second one;
:func:`ensure_agy` does whichever is needed.

Coming back: an agy that was stopped (the sweep, ``omnigent-agy stop``, a crash) leaves its
record with the conversation it was on, and :func:`ensure_agy` starts the next agy on that
conversation (``--conversation <id>``): agy keeps the history itself, in its brain directory
under the private ``--gemini_dir`` (docs/wire.md §7), and the reader's durable cursor, kept in the
same state directory, says what was published already.

Readiness (``ready``): agy's own port answers Heartbeat with our token, and the caller's
``ready_check`` when given (e.g. a non-empty model list before the first turn).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import psutil

from omnigent_agy.agy.gemini_home import AGY_DIR
from omnigent_agy.agy.process import AgyProcess, session_name
from omnigent_agy.agy.ready import ReadyCheck, wait_ready
from omnigent_agy.agy.statedir import AgyRecord, SessionStateDir, write_private_file
from omnigent_agy.agy.terminal import AgyTerminal, TerminalHost
from omnigent_agy.agy.trampoline import TMUX_CLIENT_ENV, could_not_enter
from omnigent_agy.agy.workspace import ready_folder
from omnigent_agy.errors import (
    AgyExitedError,
    DiscoveryError,
    LaunchError,
    WorkspaceUnreachableError,
)
from omnigent_agy.rpc.discovery import Probe, discover_pin, pin_if_ours, probe_port
from omnigent_agy.rpc.listeners import is_port_owned_by
from omnigent_agy.rpc.pinning import Pin

__all__ = [
    "AGY_CHILD_ENV",
    "AgyLaunchSpec",
    "build_argv",
    "ensure_agy",
    "launch_agy",
    "reattach",
    "write_agy_settings",
]

logger = logging.getLogger(__name__)

# The flag that starts agy on a stored conversation, known from one user report
# (docs/wire.md §9); the id is the brain directory's (§7). agy-sim implements it too
# (docs/simulator.md).
CONVERSATION_FLAG = "--conversation"
# Variables that describe the harness's own terminal, not agy's (tmux sets its own).
_TERMINAL_ENV = TMUX_CLIENT_ENV | {"TERM", "TERM_PROGRAM", "COLUMNS", "LINES"}
# What agy gives every command it runs (docs/wire.md §9): an omnigent started from an agy's
# terminal has them, and they name that agy (its token, its port, its conversation), not
# ours. A tool that starts an agy from inside one removes them first; so does the launcher,
# from the harness's environment and from the tmux server's (which may have been started
# with them).
AGY_CHILD_ENV = (
    "ANTIGRAVITY_CSRF_TOKEN",
    "ANTIGRAVITY_LS_ADDRESS",
    "ANTIGRAVITY_AGENT",
    "ANTIGRAVITY_CONVERSATION_ID",
    "ANTIGRAVITY_TRAJECTORY_ID",
    "ANTIGRAVITY_SOURCE_METADATA",
)
_PID_CLOCK_SLACK = 0.05  # seconds: create_time is reported with clock-tick precision


@dataclass(frozen=True, slots=True)
class AgyLaunchSpec:
    """How to start agy for one conversation.

    ``command`` is the argv prefix (``("agy",)``, ``("agy-sim", "--sim-startup-delay", "1")``);
    ``env`` is laid over the harness's environment, which agy gets whole (not the tmux
    server's, which keeps the environment of whoever started it) unless ``inherit_env`` is
    False.
    """

    command: tuple[str, ...]
    workspace: Path
    state_dir: SessionStateDir
    cwd: Path | None = None
    """Where agy starts when it is not ``workspace`` itself: the dot-free link to a hidden one
    (agy/workspace.py); the record keeps ``workspace``, the person's path."""
    model: str | None = None
    extra_flags: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    inherit_env: bool = True
    ready_timeout: float = 60.0


def build_argv(
    spec: AgyLaunchSpec, *, csrf_token: str, conversation: str | None = None
) -> list[str]:
    """agy's command line (docs/wire.md §1 flags). Holds the token: never log it."""
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
    settings_dir = gemini_dir / AGY_DIR
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
    dropped = _TERMINAL_ENV.union(AGY_CHILD_ENV)
    base = {k: v for k, v in os.environ.items() if k not in dropped}
    # PWD names the folder as spelled, as a shell's `cd` into it would: agy tests the spelling
    # of its workspace (docs/wire.md §9), and getcwd() alone would give the link's target.
    where = {"PWD": str(spec.cwd or spec.workspace)}
    return {**(base if spec.inherit_env else {}), **spec.env, **where}


def _rotate_log(log_file: Path) -> None:
    # A fresh log per agy: discovery then never even considers an earlier agy's port.
    with contextlib.suppress(FileNotFoundError):
        log_file.replace(log_file.with_name(log_file.name + ".1"))


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
    await _clear_the_way(terminal_host, name)
    state = spec.state_dir
    await asyncio.to_thread(ready_folder, spec.cwd, spec.workspace, state.path)
    earlier = state.read_record()
    token = secrets.token_urlsafe(32)
    terminal, record = await _start_in_tmux(terminal_host, spec, name, token, resume)
    pid = record.pid
    try:
        pin = await wait_ready(
            terminal,
            pid=pid,
            log_file=state.log_file,
            csrf_token=token,
            deadline=spec.ready_timeout,
            ready_check=ready_check,
        )
    except DiscoveryError as exc:
        await _never_ready(terminal, spec, earlier, exc)
        raise
    port = pin.port
    state.update_record(lambda stored: replace(stored, port=port) if stored.pid == pid else stored)
    agy = AgyProcess(
        pid,
        port,
        token,
        state.log_file,
        terminal,
        state,
        record.cascade_id,
        record.follows_tui,
        pin=pin,
    )
    if resume is not None:
        agy.resumed_after = resume.stopped_reason or "it was no longer running"
    return agy


async def _clear_the_way(terminal_host: TerminalHost, name: str) -> None:
    """No tmux session ``name`` left: a live one is refused, a dead pane removed."""
    existing = terminal_host.find(name)
    if existing is None:
        return
    if existing.is_alive():
        raise LaunchError(
            f"an agy is already running for this conversation (tmux session {name!r}); "
            "re-attach to it (ensure_agy) instead of starting a second one"
        )
    await asyncio.to_thread(existing.stop)  # a dead pane left for diagnosis


async def _start_in_tmux(
    terminal_host: TerminalHost,
    spec: AgyLaunchSpec,
    name: str,
    token: str,
    resume: AgyRecord | None,
) -> tuple[AgyTerminal, AgyRecord]:
    """agy started in tmux session ``name`` with ``token``, and recorded before anyone waits
    on it, so a harness that dies now can still find and stop it."""
    state = spec.state_dir
    _rotate_log(state.log_file)
    write_agy_settings(state.gemini_dir)
    terminal = await asyncio.to_thread(
        terminal_host.start,
        name,
        build_argv(spec, csrf_token=token, conversation=resume.cascade_id if resume else None),
        cwd=spec.cwd or spec.workspace,
        env=_agy_env(spec),
        unset_env=tuple(name for name in AGY_CHILD_ENV if name not in spec.env),
        # The harness's environment of now, not the tmux server's: the server keeps the one
        # of the harness process that started it, so a key removed since would come back.
        replace_env=spec.inherit_env,
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
    state.write_record(record)
    return terminal, record


async def _never_ready(
    terminal: AgyTerminal, spec: AgyLaunchSpec, earlier: AgyRecord | None, exc: DiscoveryError
) -> None:
    """agy never became ready: stopped, its record put back, and a folder it could not enter
    said as such (raised); else the caller raises ``exc``."""
    # Leave a dead pane (its screen explains the failure) but never a live half-ready agy.
    if terminal.is_alive():
        await asyncio.to_thread(terminal.stop)
    state = spec.state_dir
    # The conversation an earlier agy was on stays the one to resume: a failed launch
    # never loses it.
    if earlier is not None and earlier.cascade_id:
        state.write_record(earlier)
    else:
        state.clear_record()
    why = could_not_enter(terminal.capture(history=True))
    if why is not None:
        where = spec.cwd or spec.workspace
        spelling = f" (through {str(where)!r})" if where != spec.workspace else ""
        raise WorkspaceUnreachableError(
            f"agy was not started: could not enter the folder {str(spec.workspace)!r}"
            f"{spelling}: {why}",
            folder=spec.workspace,
        ) from exc


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
    pin = await _answering_pin(record.port, pid, record) if record.port is not None else None
    if pin is None:
        try:
            pin = await discover_pin(
                pid=pid,
                log_file=Path(record.log_file),
                csrf_token=record.csrf_token,
                conversation_id=record.cascade_id,
                deadline=deadline,
            )
        except DiscoveryError as exc:
            logger.warning("cannot re-attach to agy pid %s: %s", pid, exc.args[0])
            return None
        port = pin.port
        state_dir.update_record(
            lambda stored: replace(stored, port=port) if stored.pid == pid else stored
        )
    logger.info("re-attached to agy pid %s on port %s", pid, pin.port)
    return AgyProcess(
        pid,
        pin.port,
        record.csrf_token,
        Path(record.log_file),
        terminal,
        state_dir,
        record.cascade_id,
        record.follows_tui,
        pin=pin,
    )


async def _answering_pin(port: int, pid: int, record: AgyRecord) -> Pin | None:
    """``port`` pinned, when agy ``pid`` still holds it and answers there; else None."""
    if not await asyncio.to_thread(is_port_owned_by, port, pid):
        return None
    # Pinned: a stranger taking the port after the check above gets no token (rpc/pinning).
    pin = await pin_if_ours(port, pid=pid, log_file=Path(record.log_file))
    if pin is None:
        return None
    probe = await probe_port(
        port,
        csrf_token=record.csrf_token,
        conversation_id=record.cascade_id,
        certificate=pin.certificate,
    )
    return pin if probe is Probe.OK else None


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
    # The record stays until a launch replaces it: if none can, it still names the
    # conversation to resume.
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
        # `--conversation` rests on one user report (docs/wire.md §9): an agy that refuses
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
