"""agy's log lines: glog's format, as public reports of real agys show it (docs/wire.md §9).

``I1202 05:12:00.123456  4242 server.go:123] Language server listening on random port at
40123 for HTTPS (gRPC)``: the level's letter, month and day, local time to the microsecond,
the pid right-aligned, the Go source file and line, ``]`` and the message. omnigent's built-in
agy client (live-verified against real agys) reads the port only from lines with exactly this
prefix and the source file ``server.go``, so agy-sim writes every line so. Which file and line
real agy names for each message is not known beyond that one example: ``server.go`` and the
Python line of the call stand in (a **guess**, docs/simulator.md).

The messages a real agy is reported to write, and agy-sim writes in the same words
(docs/simulator.md, "The log"): the two lines of docs/wire.md §1, the version, and the
sign-in.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Final

__all__ = [
    "LISTENING_LINE",
    "NOT_SIGNED_IN_LINE",
    "RELATIVE_GEMINI_DIR_LINE",
    "SIGNED_IN_LINE",
    "STARTING_LINE",
    "VERSION_LINE",
    "GlogFormatter",
]

STARTING_LINE: Final = "Starting language server process with pid {pid}"
LISTENING_LINE: Final = "Language server listening on random port at {port} for HTTPS (gRPC)"
VERSION_LINE: Final = "Language server version: {version}"
SIGNED_IN_LINE: Final = "OAuth: authenticated successfully"
NOT_SIGNED_IN_LINE: Final = "You are not logged into Antigravity"
# agy's --gemini_dir must be absolute (docs/wire.md §9): its words for a relative one.
RELATIVE_GEMINI_DIR_LINE: Final = (
    "Failed to resolve GeminiDir {path!r}: must be an absolute path, falling back to default "
    "{default}"
)

_LEVELS: Final = {
    logging.DEBUG: "I",
    logging.INFO: "I",
    logging.WARNING: "W",
    logging.ERROR: "E",
    logging.CRITICAL: "F",
}


class GlogFormatter(logging.Formatter):
    """``Lmmdd hh:mm:ss.uuuuuu  pid file:line] message`` (glog's header; local time)."""

    def __init__(self, source: str = "server.go") -> None:
        super().__init__()
        self.source = source
        self.pid = os.getpid()

    def format(self, record: logging.LogRecord) -> str:
        level = _LEVELS.get(record.levelno, "I")
        moment = time.localtime(record.created)
        micros = int((record.created % 1) * 1_000_000)
        stamp = time.strftime("%m%d %H:%M:%S", moment)
        header = f"{level}{stamp}.{micros:06d} {self.pid:>5} {self.source}:{record.lineno}] "
        text = header + record.getMessage()
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text
