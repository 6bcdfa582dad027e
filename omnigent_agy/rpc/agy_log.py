"""agy's log file: the port its language server announced (docs/wire.md §1, "Port discovery").

agy started with ``--log-file`` writes ``Starting language server process with pid <pid>``
then ``Language server listening on random port at <N> for HTTPS (gRPC)``; the last
announcement wins (agy may restart its server, and a reused log keeps old lines). What the
log says is only a lead: `discovery` uses a port only once agy's process tree holds it.

The lines are glog's (``I1202 05:12:00.123456  4242 server.go:123] <message>``, docs/wire.md
§9); the messages are matched anywhere on a line, so a plain line or any other prefix reads
the same. agy also logs its version (``Language server version: 1.x.y``) and its sign-in
(``OAuth: authenticated successfully``, or ``You are not logged into Antigravity``), which
explain an agy that never serves.
"""

from __future__ import annotations

import codecs
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Announcement", "LogScanner", "LogWatcher"]

_STARTING = re.compile(r"Starting language server process with pid (\d+)\b")
# Self-delimiting: " for HTTPS" follows the number, so a half-written line cannot match
# with a truncated port.
_LISTENING = re.compile(r"Language server listening on random port at (\d+) for HTTPS")
_VERSION = re.compile(r"Language server version: (\S+)")
_SIGNED_IN = re.compile(r"OAuth: authenticated successfully")
_SIGNED_OUT = re.compile(r"You are not logged into Antigravity")


@dataclass(frozen=True, slots=True)
class Announcement:
    """A port agy's log announced, with the server pid announced before it (if any)."""

    port: int
    server_pid: int | None


@dataclass(slots=True)
class LogScanner:
    """Incremental, pure parser of agy's log: ``feed`` text in any chunks, read ``latest``."""

    announcements: list[Announcement] = field(default_factory=list)
    server_pid: int | None = None
    version: str | None = None
    signed_in: bool | None = None
    """The last sign-in line: True, False (not logged in), None (none seen)."""
    _pending: str = ""

    def feed(self, text: str) -> None:
        """Add the next chunk of the log."""
        *complete, self._pending = (self._pending + text).split("\n")
        for line in complete:
            self._line(line)
        # A partial last line counts only when it cannot be a truncated announcement.
        if _LISTENING.search(self._pending):
            self._line(self._pending)
            self._pending = ""

    def _line(self, line: str) -> None:
        if started := _STARTING.search(line):
            self.server_pid = int(started.group(1))
        elif listening := _LISTENING.search(line):
            port = int(listening.group(1))
            if 0 < port < 65536:
                self.announcements.append(Announcement(port, self.server_pid))
        elif version := _VERSION.search(line):
            self.version = version.group(1)
        elif _SIGNED_IN.search(line):
            self.signed_in = True
        elif _SIGNED_OUT.search(line):
            self.signed_in = False

    @property
    def latest(self) -> Announcement | None:
        """The last announcement so far."""
        return self.announcements[-1] if self.announcements else None


class LogWatcher:
    """Reads a growing log file from where it stopped; starts over if it was replaced."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._identity: tuple[int, int] | None = None
        self._offset = 0
        self._reset()

    def _reset(self) -> None:
        self._offset = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.scanner = LogScanner()

    def poll(self) -> Announcement | None:
        """Read what was appended since the last poll; the latest announcement."""
        try:
            with self.path.open("rb") as handle:
                info = os.fstat(handle.fileno())
                identity = (info.st_dev, info.st_ino)
                if identity != self._identity or info.st_size < self._offset:
                    self._identity = identity
                    self._reset()
                handle.seek(self._offset)
                data = handle.read()
        except FileNotFoundError:
            return self.scanner.latest
        self._offset += len(data)
        self.scanner.feed(self._decoder.decode(data))
        return self.scanner.latest
