"""The agys omnigent-agy keeps running: list them, stop one or all (`omnigent-agy ps|stop`).

agy outlives harness processes on purpose (a respawned harness re-attaches, DESIGN-NOTES §4),
so something must let a person see and end them. Every agy has a record in its conversation's
private state directory; a record whose process is gone is reported as stale and cleaned up by
`stop`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

from omnigent_agy.agy.statedir import AgyRecord, SessionStateDir, StateDirError, default_state_base
from omnigent_agy.agy.terminal import TerminalHost


@dataclass(frozen=True, slots=True)
class RunningAgy:
    """One conversation's agy as its record describes it (the token is not kept here)."""

    key: str
    state_dir: Path
    pid: int
    port: int | None
    cascade_id: str | None
    tmux_socket: str
    tmux_session: str
    alive: bool
    started: float | None

    def describe(self, now: float) -> str:
        if not self.alive:
            return f"{self.key}  stale (pid {self.pid} is gone)"
        age = _age(now - self.started) if self.started else "?"
        return (
            f"{self.key}  pid {self.pid}  port {self.port}  up {age}  "
            f"watch: tmux -L {self.tmux_socket} attach -t {self.tmux_session}"
        )


def _age(seconds: float) -> str:
    minutes, _ = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m"


def _alive(record: AgyRecord) -> tuple[bool, float | None]:
    try:
        process = psutil.Process(record.pid)
        created = process.create_time()
    except psutil.Error:
        return False, None
    # A reused pid is not our agy (the record keeps the start time for this).
    same = abs(created - record.pid_create_time) < 1.0
    return same and process.status() != psutil.STATUS_ZOMBIE, created


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
            record = SessionStateDir(directory).read_record()
        except StateDirError:
            continue
        if record is None:
            continue
        alive, started = _alive(record)
        yield RunningAgy(
            key=directory.name,
            state_dir=directory,
            pid=record.pid,
            port=record.port,
            cascade_id=record.cascade_id,
            tmux_socket=record.tmux_socket,
            tmux_session=record.tmux_session,
            alive=alive,
            started=started,
        )


def stop_running(running: RunningAgy, *, timeout: float = 5.0) -> None:
    """Stop that agy (its tmux session and process tree) and forget its record."""
    if running.alive:
        terminal = TerminalHost(socket_name=running.tmux_socket).find(running.tmux_session)
        if terminal is not None:
            terminal.stop(timeout=timeout)
        else:
            _terminate(running.pid, timeout)
    SessionStateDir(running.state_dir).clear_record()


def _terminate(pid: int, timeout: float) -> None:
    try:
        process = psutil.Process(pid)
        process.terminate()
        process.wait(timeout)
    except psutil.TimeoutExpired:
        process.kill()
    except psutil.Error:
        return


def now() -> float:
    return time.time()
