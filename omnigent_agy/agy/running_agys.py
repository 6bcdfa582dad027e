"""The agys omnigent-agy keeps running: list them, stop one or all (`omnigent-agy ps|stop`).

agy outlives harness processes on purpose (a respawned harness re-attaches, docs/decisions.md §4),
so something must let a person see and end them. Every agy has a record in its conversation's
private state directory. Stopping one ends its tmux session and process (by pid, checked
against the recorded start time) and keeps the record, marked stopped, with the conversation
it was on: the next turn starts agy again on that conversation (``launcher.ensure_agy``).
What to stop and when is ``sweep``'s business.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

from omnigent_agy.agy.statedir import AgyRecord, SessionStateDir, default_state_base
from omnigent_agy.agy.terminal import TerminalHost
from omnigent_agy.agy.workspace import remove_link
from omnigent_agy.errors import StateDirError

__all__ = ["RunningAgy", "list_running", "now", "owner_uid", "recorded", "stop_running"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RunningAgy:
    """One conversation's agy as its record describes it (the record's token is not shown)."""

    key: str
    state_dir: Path
    record: AgyRecord
    alive: bool
    started: float | None

    @property
    def pid(self) -> int:
        return self.record.pid

    @property
    def port(self) -> int | None:
        return self.record.port

    @property
    def cascade_id(self) -> str | None:
        return self.record.cascade_id

    @property
    def tmux_socket(self) -> str:
        return self.record.tmux_socket

    @property
    def tmux_session(self) -> str:
        return self.record.tmux_session

    @property
    def stopped(self) -> bool:
        """Stopped by omnigent-agy (not merely gone: a crash leaves no mark)."""
        return self.record.stopped_at is not None and not self.alive

    @property
    def state(self) -> SessionStateDir:
        return SessionStateDir(self.state_dir)


def _alive(record: AgyRecord) -> tuple[bool, float | None]:
    if record.stopped_at is not None:
        return False, None
    try:
        process = psutil.Process(record.pid)
        created = process.create_time()
        status = process.status()
    except psutil.Error:
        return False, None
    # A reused pid is not our agy (the record keeps the start time for this).
    same = abs(created - record.pid_create_time) < 1.0
    return same and status != psutil.STATUS_ZOMBIE, created


def list_running(base: Path | None = None) -> list[RunningAgy]:
    """Every agy record under the state base (default: the configured one), sorted by key."""
    root = (base or default_state_base()).expanduser()
    return sorted(_records(root), key=lambda running: running.key)


def _records(root: Path) -> Iterator[RunningAgy]:
    if not root.is_dir():
        return
    for directory in root.iterdir():
        if not directory.is_dir() or directory.is_symlink():
            continue
        try:
            found = recorded(directory)
        except StateDirError:
            continue
        if found is not None:
            yield found


def recorded(state_dir: Path) -> RunningAgy | None:
    """The agy one conversation's state directory records (None: no record there).

    Raises ``StateDirError`` for a record that is not safe to read (owner, permissions)."""
    record = SessionStateDir(state_dir).read_record()
    if record is None:
        return None
    alive, started = _alive(record)
    return RunningAgy(
        key=state_dir.name, state_dir=state_dir, record=record, alive=alive, started=started
    )


def stop_running(running: RunningAgy, reason: str, *, timeout: float = 5.0) -> bool:
    """Stop that agy (its tmux session and process tree); keep its record, marked stopped.

    False, with nothing signalled and the record untouched, when its process belongs to
    another user: a record can name any pid, and root could stop anyone's.
    """
    if running.alive:
        owner = owner_uid(running.pid)
        if owner is not None and owner != os.getuid():
            logger.warning("not stopping pid %s: it belongs to uid %s", running.pid, owner)
            return False
        terminal = TerminalHost(socket_name=running.tmux_socket).find(running.tmux_session)
        if terminal is not None and terminal.pid == running.pid:
            terminal.stop(timeout=timeout)
        else:
            _terminate(running.pid, running.record.pid_create_time, timeout)
    state = running.state
    stopped_at = now()
    state.update_record(
        lambda record: (
            record.as_stopped(reason, stopped_at)
            if record.pid == running.pid and record.stopped_at is None
            else record
        )
    )
    remove_link(state.path)  # a hidden workspace's link; the next launch makes it again
    return True


def owner_uid(pid: int) -> int | None:
    """The real uid of process ``pid`` (None when it is gone)."""
    try:
        return int(psutil.Process(pid).uids().real)
    except psutil.Error:
        return None


def _terminate(pid: int, create_time: float, timeout: float) -> None:
    try:
        process = psutil.Process(pid)
        if abs(process.create_time() - create_time) >= 1.0:
            return  # the pid now belongs to another process
        if process.uids().real != os.getuid():
            return  # ...or to another user
        process.terminate()
        process.wait(timeout)
    except psutil.TimeoutExpired:
        process.kill()
    except psutil.Error:
        return


def now() -> float:
    return time.time()
