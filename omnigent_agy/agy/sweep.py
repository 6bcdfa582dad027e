"""The sweep: stop the agys nobody uses any more, keep the rest (docs/configuration.md).

No daemon does this: every harness process sweeps the records under its state base when it
starts and then periodically (``Sweeper``), and ``omnigent-agy stop --idle`` sweeps by hand.
A sweep looks at every running agy of the base and decides, from what each one is doing:

- **kept whatever the limits**: it belongs to another user; a turn runs (the harness's
  activity lease, ``keep``, or agy's own cascade status RUNNING); a card waits (agy's
  ``waitingSteps``, docs/wire.md §3/§6); a person typed into its screen lately (an attached
  tmux client, a web terminal of omnigent's Terminal view among them, whose last key is
  within ``idle_stop_after``: ``watchers``). A client merely attached does not keep it: a
  browser tab left open would keep agy for ever;
- **stopped at once**: its workspace is gone, or agy no longer knows the conversation the
  record is bound to (GetConversationMetadata → 500 "trajectory not found", docs/wire.md §3);
- **stopped when idle too long**: no activity for ``idle_stop_after`` (the latest of agy's
  start, the lease's last activity, agy's ``lastModifiedTime`` of the conversation and the
  last key an attached client sent);
- **stopped over the cap**: beyond the ``max_kept`` most recently used running agys, the
  idle ones.

Stopping re-checks the lease under the state directory's lock, goes by tmux session and
pid (``running.stop_running``) and keeps the record and private state: the next turn
starts agy again on the same conversation. Each round of a ``Sweeper`` then removes the
private state of the conversations omnigent deleted or whose retention ran out
(``retention.forget_due``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Final

import psutil

from omnigent_agy.agy.keep import KeepPolicy, format_duration, lifecycle_lock, read_activity
from omnigent_agy.agy.retention import forget_due
from omnigent_agy.agy.running_agys import RunningAgy, list_running, now, stop_running
from omnigent_agy.agy.statedir import default_state_base
from omnigent_agy.agy.terminal import TerminalHost
from omnigent_agy.agy.watchers import Watcher, describe_watchers, watchers
from omnigent_agy.errors import AgyError, RpcError
from omnigent_agy.rpc.client import RetryPolicy, RpcClient
from omnigent_agy.rpc.discovery import pin_if_ours
from omnigent_agy.rpc.listeners import is_port_owned_by

__all__ = ["AgyStatus", "Sweeper", "acquire_sweeper", "survey", "sweep"]

logger = logging.getLogger(__name__)

_PROBE_TIMEOUT: Final = 3.0
_RUNNING: Final = "CASCADE_RUN_STATUS_RUNNING"
_MIN_INTERVAL: Final = 1.0
_MAX_INTERVAL: Final = 600.0
# With no idle limit, how recent a key in an attached client must be to keep agy from the cap.
_TYPING_WITHOUT_LIMIT: Final = 3600.0


@dataclass(frozen=True, slots=True)
class AgyStatus:
    """One running agy as a sweep sees it."""

    running: RunningAgy
    rss: int | None
    last_active: float | None
    idle: float | None
    kept_because: str | None
    """Why no limit applies now (mid-turn, a waiting card, another user's, attached)."""
    stop_reason: str | None
    """Why the next sweep stops it; None when it is kept."""
    idle_left: float | None
    """Seconds of idleness left before the idle limit stops it (None: no limit applies)."""
    watchers: tuple[Watcher, ...] = ()
    """The tmux clients attached to its screen (web terminals among them)."""

    def describe(self, disk: str | None = None) -> str:
        """One line of `omnigent-agy ps` (``disk``: its private state's, as ps measured it)."""
        agy = self.running
        parts = [agy.key, f"pid {agy.pid}", f"port {agy.port}"]
        if agy.started:
            parts.append(f"up {format_duration(now() - agy.started)}")
        parts.append(f"idle {format_duration(self.idle)}" if self.idle is not None else "idle ?")
        parts.append(f"rss {self.rss / 2**20:.0f} MB" if self.rss is not None else "rss ?")
        if disk is not None:
            parts.append(disk)
        if self.stop_reason is not None:
            parts.append(f"stops at the next sweep: {self.stop_reason}")
        elif self.kept_because is not None:
            parts.append(f"kept: {self.kept_because}")
        elif self.idle_left is not None:
            parts.append(f"stops after {format_duration(self.idle_left)} more idle")
        else:
            parts.append("kept: no idle limit")
        if self.watchers:
            parts.append(f"attached: {describe_watchers(list(self.watchers), now())}")
        parts.append(f"watch: tmux -L {agy.tmux_socket} attach -t {agy.tmux_session}")
        return "  ".join(parts)


@dataclass(frozen=True, slots=True)
class _AgyView:
    """What agy itself says about the record's conversation."""

    busy: str | None = None
    last_modified: float | None = None
    conversation_gone: bool = False


def survey(policy: KeepPolicy, base: Path | None = None) -> list[AgyStatus]:
    """Every running agy under ``base`` with what the next sweep does to it."""
    agys = [agy for agy in list_running(base) if agy.alive]
    views = asyncio.run(_views(agys)) if agys else []
    moment = now()
    judged = [_judge(agy, view, policy, moment) for agy, view in zip(agys, views, strict=True)]
    return _apply_cap(judged, policy)


def sweep(policy: KeepPolicy, base: Path | None = None) -> list[AgyStatus]:
    """Stop what ``survey`` says is to be stopped; returns the ones stopped."""
    stopped: list[AgyStatus] = []
    for status in survey(policy, base):
        reason = status.stop_reason
        if reason is None:
            continue
        agy = status.running
        with lifecycle_lock(agy.state):
            if read_activity(agy.state).turn_running:
                continue  # a turn began since the survey
            logger.info("stopping the agy of %s (pid %s): %s", agy.key, agy.pid, reason)
            stop_running(agy, reason)
        stopped.append(status)
    return stopped


def _judge(agy: RunningAgy, view: _AgyView, policy: KeepPolicy, moment: float) -> AgyStatus:
    activity = read_activity(agy.state)
    watching = _watchers(agy)
    last_key = max((w.last_key for w in watching), default=None)
    times = [
        t
        for t in (agy.started, activity.last_active, view.last_modified, last_key)
        if t is not None
    ]
    last = max(times) if times else None
    idle = max(0.0, moment - last) if last is not None else None
    owner_ok, rss = _owner_and_rss(agy.pid)
    busy = (
        "another user's agy"
        if not owner_ok
        else "a turn is running"
        if activity.turn_running
        else view.busy
    )
    stop: str | None = None
    if busy is None:
        workspace = agy.record.workspace or _cwd(agy.pid)
        if workspace is not None and not Path(workspace).is_dir():
            stop = f"its workspace {workspace} is gone"
        elif view.conversation_gone:
            stop = f"agy no longer knows conversation {agy.cascade_id}"
    if busy is None and stop is None:
        busy = _typing(watching, policy, moment)
    limit = policy.idle_stop_after
    left = None
    if busy is None and stop is None and limit is not None and idle is not None:
        left = limit - idle
        if left <= 0:
            stop = f"idle {format_duration(idle)} (limit {format_duration(limit)})"
    return AgyStatus(agy, rss, last, idle, busy, stop, left, tuple(watching))


def _typing(watching: list[Watcher], policy: KeepPolicy, moment: float) -> str | None:
    """Why a person at agy's screen keeps it: a key sent lately, not merely a client attached."""
    window = policy.idle_stop_after or _TYPING_WITHOUT_LIMIT
    latest = max(watching, key=lambda w: w.last_key, default=None)
    if latest is None or moment - latest.last_key >= window:
        return None
    ago = format_duration(moment - latest.last_key)
    return f"a person typed in its {latest.kind} {ago} ago"


def _apply_cap(judged: list[AgyStatus], policy: KeepPolicy) -> list[AgyStatus]:
    cap = policy.max_kept
    if cap is None:
        return judged
    # Most recently used first; those already leaving do not take a place.
    staying = [s for s in judged if s.stop_reason is None]
    staying.sort(key=lambda s: s.last_active or 0.0, reverse=True)
    over = {id(s) for s in staying[cap:] if s.kept_because is None}
    reason = f"over max_kept {cap}: the least recently used idle agy"
    return [replace(s, stop_reason=reason) if id(s) in over else s for s in judged]


async def _views(agys: Sequence[RunningAgy]) -> list[_AgyView]:
    return list(await asyncio.gather(*(_view(agy) for agy in agys)))


async def _view(agy: RunningAgy) -> _AgyView:
    record = agy.record
    if record.port is None:
        return _AgyView()
    if not await asyncio.to_thread(is_port_owned_by, record.port, agy.pid):
        # Another user's agy, or its port taken over since: our token goes to no one else.
        logger.debug("not asking port %s: not held by the agy of %s alone", record.port, agy.key)
        return _AgyView()
    # Pinned: a stranger taking the port after the check above gets no token (rpc/pinning).
    pin = await pin_if_ours(record.port, pid=agy.pid, log_file=None)
    if pin is None:
        return _AgyView()
    retry = RetryPolicy(attempts=1, deadline=_PROBE_TIMEOUT)
    try:
        async with RpcClient(
            port=record.port,
            csrf_token=record.csrf_token,
            timeout=_PROBE_TIMEOUT,
            retry=retry,
            certificate=pin.certificate,
        ) as client:
            try:
                if record.cascade_id:
                    await client.get_conversation_metadata(record.cascade_id)
            except RpcError as exc:
                if exc.http_status == 500 and "not found" in exc.message:
                    return _AgyView(conversation_gone=True)
                raise
            summaries = (await client.get_all_cascade_trajectories()).get("trajectorySummaries")
    except (RpcError, AgyError) as exc:
        # Unreachable is not idle proof either way: the lease and the start time decide.
        logger.debug("could not ask the agy of %s: %s", agy.key, exc)
        return _AgyView()
    return _summarise(record.cascade_id, summaries if isinstance(summaries, dict) else {})


def _summarise(cascade_id: str | None, summaries: dict[str, object]) -> _AgyView:
    """Busy or not, and the latest change, over the conversation and its sub-agents (over
    every conversation while none is bound yet)."""
    busy: str | None = None
    latest: float | None = None
    for key, value in summaries.items():
        summary = value if isinstance(value, dict) else {}
        meta = summary.get("trajectoryMetadata")
        root = meta.get("rootConversationId") if isinstance(meta, dict) else None
        if cascade_id is not None and cascade_id not in (key, root):
            continue
        if summary.get("waitingSteps"):
            busy = "a card is waiting for an answer"
        elif summary.get("status") == _RUNNING and busy is None:
            busy = "agy is running a turn"
        changed = _timestamp(summary.get("lastModifiedTime"))
        if changed is not None and (latest is None or changed > latest):
            latest = changed
    return _AgyView(busy=busy, last_modified=latest)


def _timestamp(value: object) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    with contextlib.suppress(ValueError):
        # agy's RFC 3339 carries nanoseconds; fromisoformat takes at most microseconds.
        head, dot, tail = value.partition(".")
        if dot:
            digits = "".join(c for c in tail if c.isdigit())
            zone = tail[len(digits) :]
            value = f"{head}.{digits[:6]}{zone}"
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    return None


def _owner_and_rss(pid: int) -> tuple[bool, int | None]:
    """Whether the agy is this user's, and the memory its process tree holds."""
    try:
        process = psutil.Process(pid)
        if process.uids().real != os.getuid():
            return False, None
        tree = [process, *process.children(recursive=True)]
    except psutil.Error:
        return True, None
    total = 0
    for member in tree:
        with contextlib.suppress(psutil.Error):
            total += member.memory_info().rss
    return True, total


def _cwd(pid: int) -> str | None:
    try:
        return psutil.Process(pid).cwd()
    except psutil.Error:
        return None


def _watchers(agy: RunningAgy) -> list[Watcher]:
    try:
        return watchers(TerminalHost(socket_name=agy.tmux_socket), agy.tmux_session)
    except Exception:  # a tmux that cannot answer proves nothing; the other checks decide
        logger.debug("could not ask tmux about %s", agy.tmux_session, exc_info=True)
        return []


class Sweeper:
    """Sweeps one state base at start and then every ``interval`` seconds, in a thread."""

    def __init__(self, policy: KeepPolicy, base: Path | None) -> None:
        self.policy = policy
        self.base = base
        idle = policy.idle_stop_after
        # Often enough to stop an agy soon after its limit, never more than every 10 min.
        self.interval = min(max((idle or _MAX_INTERVAL) / 4, _MIN_INTERVAL), _MAX_INTERVAL)
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="omnigent-agy sweep", daemon=True)
        self.users = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._wake.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while True:
            try:
                sweep(self.policy, self.base)
                forget_due(self.policy, self.base)
            except Exception:  # the next round tries again; a sweep must not end the harness
                logger.exception("sweeping the kept agys failed")
            if self._wake.wait(self.interval):
                return


_sweepers: dict[tuple[Path, KeepPolicy], Sweeper] = {}
_sweepers_lock = threading.Lock()


@dataclass(slots=True)
class SweeperLease:
    """A session's use of its process's sweeper; ``release`` stops it with the last user."""

    key: tuple[Path, KeepPolicy]
    released: bool = False

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        with _sweepers_lock:
            sweeper = _sweepers[self.key]
            sweeper.users -= 1
            if sweeper.users:
                return
            del _sweepers[self.key]
        sweeper.stop()


def acquire_sweeper(policy: KeepPolicy, base: Path | None) -> SweeperLease:
    """The process's sweeper for ``base`` (started on first use: the sweep at start)."""
    # Resolved now: the environment naming the default base may change later (tests do).
    base = (base or default_state_base()).expanduser()
    key = (base, policy)
    with _sweepers_lock:
        sweeper = _sweepers.get(key)
        if sweeper is None:
            sweeper = _sweepers[key] = Sweeper(policy, base)
            sweeper.start()
        sweeper.users += 1
    return SweeperLease(key)
