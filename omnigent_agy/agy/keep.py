"""What keeps an agy running: the limits a sweep applies and the activity a harness declares.

``KeepPolicy`` holds ``harness.agy-cli.idle_stop_after``, ``max_kept`` and ``retention``
(docs/configuration.md).

A sweep may run in any harness process (or ``omnigent-agy stop --idle``), but only the
harness process driving a conversation knows that a turn is under way — agy's own status
shows it only once the message has reached agy. So that harness declares it in an
*activity lease*, ``activity.json`` in the conversation's private state directory: who holds
it (pid and start time), whether a turn runs, and when the conversation was last active.
A lease whose holder is gone (a crashed harness) no longer counts as a running turn; its
time of last activity still does. A turn its harness left to agy (omnigent's runner went away
while it ran: `TurnLease.end_turn(left=True)`) is marked so, and the next turn, in whichever
process, inherits it as it inherits a crashed harness's. Deciding to stop an agy and
starting a turn take the state directory's lock (``lifecycle.lock``, flock), so a sweep never
stops an agy between a turn's start and agy seeing it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import psutil

from omnigent_agy.agy.statedir import SessionStateDir, write_private_file

__all__ = [
    "DEFAULT_IDLE_STOP_AFTER",
    "DEFAULT_MAX_KEPT",
    "DEFAULT_RETENTION",
    "Activity",
    "KeepPolicy",
    "TurnLease",
    "format_duration",
    "lifecycle_lock",
    "read_activity",
]

DEFAULT_IDLE_STOP_AFTER: Final = 4 * 3600.0
DEFAULT_MAX_KEPT: Final = 5
# A month: long enough to come back to a conversation after a holiday, short enough that the
# copies of a sign-in and the conversation stores of forgotten conversations do not pile up.
DEFAULT_RETENTION: Final = 30 * 86400.0
_LEASE_FILE: Final = "activity.json"
_LOCK_FILE: Final = "lifecycle.lock"
_PID_CLOCK_SLACK: Final = 1.0  # seconds; create_time has clock-tick precision


@dataclass(frozen=True, slots=True)
class KeepPolicy:
    """How long an idle agy is kept (None: forever), how many idle ones (None: no cap), and
    how long a conversation's private state is kept after its last use (None: forever)."""

    idle_stop_after: float | None = DEFAULT_IDLE_STOP_AFTER
    max_kept: int | None = DEFAULT_MAX_KEPT
    retention: float | None = DEFAULT_RETENTION

    def describe(self) -> str:
        idle = format_duration(self.idle_stop_after) if self.idle_stop_after else "never"
        cap = str(self.max_kept) if self.max_kept else "no cap"
        kept = format_duration(self.retention) if self.retention else "for ever"
        return f"idle stop after {idle}, max kept {cap}, state kept {kept} after last use"


def format_duration(seconds: float) -> str:
    """``30d``, ``2d04h``, ``4h05m``, ``12m``, ``40s``: what `ps` prints."""
    whole = max(0, int(seconds))
    days, whole = divmod(whole, 86400)
    if days:
        hours = whole // 3600
        return f"{days}d{hours:02d}h" if hours else f"{days}d"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m" if minutes else f"{secs}s"


@dataclass(frozen=True, slots=True)
class Activity:
    """What the lease says, with a dead holder's turn no longer counted."""

    turn_running: bool
    last_active: float | None
    holder_pid: int | None
    holder_alive: bool = False
    """The harness process holding the lease still runs (it may start a turn any moment)."""


def read_activity(state: SessionStateDir) -> Activity:
    """The conversation's lease (a missing or damaged one says nothing)."""
    try:
        data = json.loads((state.path / _LEASE_FILE).read_text(encoding="utf-8"))
        pid, created = int(data["pid"]), float(data["pid_create_time"])
        running, last = bool(data["turn_running"]), float(data["last_active"])
    except (OSError, ValueError, KeyError, TypeError):
        return Activity(turn_running=False, last_active=None, holder_pid=None)
    alive = _same_process(pid, created)
    return Activity(
        turn_running=running and alive, last_active=last, holder_pid=pid, holder_alive=alive
    )


@contextlib.contextmanager
def lifecycle_lock(state: SessionStateDir) -> Iterator[None]:
    """Exclusive, between processes: a sweep's stop against a turn's start."""
    fd = os.open(state.path / _LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


# Turns running in this process, per lease file. One process may hold several leases on one
# conversation (omnigent replaces an executor after an error, and the new one starts the next
# turn), and a turn's end is declared when its generator is finalised, which may be after the
# next turn has begun: a plain "running: false" then hid that turn from a sweep (the fault
# suite's lease check found it). The lease says a turn runs while any of this process does.
_RUNNING: dict[Path, int] = {}
_RUNNING_LOCK = threading.Lock()


class TurnLease:
    """This harness process's lease on one conversation (see the module doc)."""

    def __init__(self, state: SessionStateDir) -> None:
        self._state = state
        self._file = state.path / _LEASE_FILE
        self._pid = os.getpid()
        self._created = psutil.Process(self._pid).create_time()
        self._begun = 0

    def begin_turn(self) -> bool:
        """Declare a turn (under the lock: a sweep deciding now sees it or stopped first).

        True when the turn before was left to agy: its harness process died mid-turn (the
        lease says a turn runs and its holder is gone), or left it on purpose (`end_turn`).
        This turn inherits what agy did for it since."""
        with lifecycle_lock(self._state), _RUNNING_LOCK:
            orphaned = self._inherits()
            _RUNNING[self._file] = _RUNNING.get(self._file, 0) + 1
            self._begun += 1
            self._write(turn_running=True)
        return orphaned

    def _inherits(self) -> bool:
        try:
            data = json.loads((self._state.path / _LEASE_FILE).read_text(encoding="utf-8"))
            pid, created = int(data["pid"]), float(data["pid_create_time"])
            running, left = bool(data["turn_running"]), bool(data.get("turn_left", False))
        except (OSError, ValueError, KeyError, TypeError):
            return False
        ours = pid == self._pid and abs(created - self._created) < _PID_CLOCK_SLACK
        return left or (running and not ours and not _same_process(pid, created))

    def end_turn(self, *, left: bool = False) -> None:
        """This lease's turn ended; the lease says so once no other turn of this process runs.
        Written under the lock too, so the file always says the latest count. `left`: the
        turn was left to agy unfinished, for the next turn to inherit."""
        with lifecycle_lock(self._state), _RUNNING_LOCK:
            if self._begun == 0:
                return
            self._begun -= 1
            running = _RUNNING.get(self._file, 1) - 1
            if running > 0:
                _RUNNING[self._file] = running
            else:
                _RUNNING.pop(self._file, None)
            self._write(turn_running=running > 0, turn_left=left)

    def _write(self, *, turn_running: bool, turn_left: bool = False) -> None:
        data: dict[str, object] = {
            "pid": self._pid,
            "pid_create_time": self._created,
            "turn_running": turn_running,
            "last_active": time.time(),
        }
        if turn_left:
            data["turn_left"] = True
        # Not durable: after a power cut no agy runs, and a lost lease only says "idle".
        write_private_file(self._file, json.dumps(data) + "\n", durable=False)


def _same_process(pid: int, create_time: float) -> bool:
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        return abs(process.create_time() - create_time) < _PID_CLOCK_SLACK
    except psutil.Error:
        return False
