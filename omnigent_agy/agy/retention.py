"""What a conversation leaves behind, and when it goes (docs/decisions.md §12).

Each conversation's private state directory (``statedir``) holds a copy of the person's
sign-in, agy's conversation store, agy's log, the reader's cursor and the ledger of text
shown. It goes — its agy stopped first, then the whole folder removed — when

- **omnigent deleted the conversation**: the host's harness gave the state directory a
  *deletion marker*, a file the host removes when, and only when, it deletes the session
  (which one is the adapter's business: ``omnigent_harness_agy/deletion.py``). The marker gone
  while the folder it lived in still exists means deleted;
- its **retention** ran out: nothing used it for ``harness.agy-cli.retention`` (default 30
  days; ``0`` keeps it for ever), counted from the newest of its files and its lease;
- a person **prunes** it (``omnigent-agy prune``, which shows what it would remove first).

Never while a harness process holds the conversation (its activity lease's holder is alive:
it may start a turn at any moment, and it would find its folder gone), and never one whose agy
belongs to another user. The folder is renamed out of the way under the lifecycle lock
(``keep.lifecycle_lock``) before it is removed, so a turn starting meanwhile sees either the
whole folder or none (and then starts a conversation afresh); what a crash leaves of a removal
(``.<key>.removing-*``) goes at the next sweep.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from omnigent_agy.agy.keep import KeepPolicy, format_duration, lifecycle_lock, read_activity
from omnigent_agy.agy.running_agys import now, owner_uid, recorded, stop_running
from omnigent_agy.agy.statedir import SessionStateDir, default_state_base, write_private_file
from omnigent_agy.agy.workspace import remove_link
from omnigent_agy.errors import StateDirError

__all__ = [
    "DELETION_MARKER_FILE",
    "KeptConversation",
    "Removal",
    "conversations",
    "deleted_marker",
    "disk_usage",
    "forget",
    "forget_due",
    "record_deletion_marker",
    "size",
]

logger = logging.getLogger(__name__)

#: In a state directory: the path of the marker the host removes when it deletes the session.
DELETION_MARKER_FILE: Final = "deletion-marker"
_REMOVING: Final = ".removing-"


def record_deletion_marker(state: SessionStateDir, marker: Path) -> None:
    """Remember ``marker`` (an absolute path that exists now) as this conversation's."""
    write_private_file(state.path / DELETION_MARKER_FILE, f"{marker}\n", durable=False)


def deleted_marker(state_dir: Path) -> Path | None:
    """The marker whose disappearance says omnigent deleted the conversation, if it did."""
    try:
        text = (state_dir / DELETION_MARKER_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    marker = Path(text)
    if not text or not marker.is_absolute():
        return None
    # The marker's folder is what the host removes; the folder above it staying proves the
    # host's data is still there (a HOME unmounted or wiped proves nothing).
    if marker.exists() or not marker.parent.parent.is_dir():
        return None
    return marker


@dataclass(frozen=True, slots=True)
class KeptConversation:
    """One conversation's private state as `ps` and `prune` see it."""

    key: str
    path: Path
    disk: int
    """Bytes on disk (links into the person's folders not followed, nor counted)."""
    last_used: float | None
    agy_running: bool
    held: bool
    """A live harness process holds its lease."""
    deleted: bool
    """omnigent deleted the session (its deletion marker is gone)."""

    def due(self, policy: KeepPolicy, moment: float) -> str | None:
        """Why the next sweep removes it (None: it stays)."""
        if self.held:
            return None
        if self.deleted:
            return "omnigent deleted the conversation"
        limit = policy.retention
        if limit is None or self.agy_running or self.last_used is None:
            return None  # a running agy is the idle limit's, which stops it first
        idle = moment - self.last_used
        if idle < limit:
            return None
        return f"unused {format_duration(idle)} (retention {format_duration(limit)})"

    def describe_disk(self) -> str:
        return f"disk {size(self.disk)}"


def size(count: int) -> str:
    """``412 kB``, ``3.1 MB``, ``1.2 GB``."""
    if count >= 2**30:
        return f"{count / 2**30:.1f} GB"
    if count >= 2**20:
        return f"{count / 2**20:.1f} MB"
    return f"{count / 2**10:.0f} kB"


def disk_usage(path: Path) -> int:
    """Bytes the folder takes on disk: allocated blocks, links never followed."""
    total = 0
    stack = [path]
    while stack:
        folder = stack.pop()
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    total += info.st_blocks * 512
                    if stat.S_ISDIR(info.st_mode):
                        stack.append(Path(entry.path))
    return total


def _last_used(state_dir: Path) -> float | None:
    """The newest change to the folder's own files (agy's log, the cursor, the record, the
    lease), or the lease's last activity."""
    times: list[float] = []
    with contextlib.suppress(OSError), os.scandir(state_dir) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                times.append(entry.stat(follow_symlinks=False).st_mtime)
    last = read_activity(SessionStateDir(state_dir)).last_active
    if last is not None:
        times.append(last)
    return max(times) if times else None


def _state_dirs(root: Path) -> Iterator[Path]:
    if not root.is_dir():
        return
    for directory in sorted(root.iterdir()):
        if directory.name.startswith(".") or directory.is_symlink() or not directory.is_dir():
            continue
        if (directory / "gemini").is_dir() or (directory / "agy.json").exists():
            yield directory


def conversations(base: Path | None = None) -> list[KeptConversation]:
    """Every conversation's private state under ``base`` (default: the configured one)."""
    root = (base or default_state_base()).expanduser()
    found: list[KeptConversation] = []
    for directory in _state_dirs(root):
        try:
            agy = recorded(directory)
        except StateDirError:
            agy = None
        activity = read_activity(SessionStateDir(directory))
        found.append(
            KeptConversation(
                key=directory.name,
                path=directory,
                disk=disk_usage(directory),
                last_used=_last_used(directory),
                agy_running=agy is not None and agy.alive,
                held=activity.holder_alive,
                deleted=deleted_marker(directory) is not None,
            )
        )
    return found


@dataclass(frozen=True, slots=True)
class Removal:
    """What ``forget`` did (or, refused, why not)."""

    key: str
    reason: str
    disk: int
    refused: str | None = None


def forget(state_dir: Path, reason: str) -> Removal:
    """Stop the conversation's agy and remove its private state (see the module doc)."""
    state = SessionStateDir(state_dir)
    disk = disk_usage(state_dir)
    with lifecycle_lock(state):
        activity = read_activity(state)
        if activity.holder_alive:
            return Removal(state.key, reason, disk, refused="a harness process holds it")
        try:
            agy = recorded(state_dir)
        except StateDirError as exc:
            agy = None
            logger.warning("removing %s with an unreadable agy record: %s", state.key, exc)
        if agy is not None and agy.alive:
            owner = owner_uid(agy.pid)
            if owner is not None and owner != os.getuid():
                return Removal(state.key, reason, disk, refused=f"its agy is uid {owner}'s")
            stop_running(agy, reason)
        remove_link(state_dir)
        removing = state_dir.with_name(f".{state.key}{_REMOVING}{os.getpid()}")
        os.replace(state_dir, removing)
    logger.info("removed the private state of %s: %s", state.key, reason)
    shutil.rmtree(removing, ignore_errors=True)
    return Removal(state.key, reason, disk)


def forget_due(policy: KeepPolicy, base: Path | None = None) -> list[Removal]:
    """Remove what is due (deleted sessions, retention run out) and what crashed removals
    left; the sweep calls this."""
    root = (base or default_state_base()).expanduser()
    removed: list[Removal] = []
    moment = now()
    for conversation in conversations(root):
        reason = conversation.due(policy, moment)
        if reason is None:
            continue
        try:
            done = forget(conversation.path, reason)
        except OSError as exc:  # the next sweep tries again
            logger.warning("could not remove the private state of %s: %s", conversation.key, exc)
            continue
        if done.refused is None:
            removed.append(done)
    if root.is_dir():
        for leftover in root.glob(f".*{_REMOVING}*"):
            shutil.rmtree(leftover, ignore_errors=True)
    return removed
