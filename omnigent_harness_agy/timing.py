"""When the harness hands each piece of answer text to omnigent: an opt-in log for measuring.

``OMNIGENT_AGY_TIMING_LOG=/abs/file`` in the host's environment (the runner passes its
environment to every harness process it starts): each harness appends one JSON line per
answer chunk it hands omnigent's adapter: ``ns`` (the machine's monotonic clock, the clock
agy-sim's frame log uses), ``session`` (omnigent's session id) and ``chars`` (the chunk's
length). ``benchmarks/bench_scale.py`` reads it beside agy-sim's frame log and the client's
arrivals, which splits a delta's latency into the plugin's part (agy's frame → handed) and
omnigent's delivery (handed → the event at the client).

Unset, nothing is opened and a chunk costs one attribute test. A value that is not an absolute
path, or a file that cannot be written, is logged once and then ignored: a measuring aid never
fails a turn. Lines are written with one ``write`` on an ``O_APPEND`` descriptor, so many harness
processes can share the file without tearing a line.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

from omnigent.inner.executor import TextChunk

__all__ = ["TIMING_LOG_ENV", "TimingLog"]

TIMING_LOG_ENV: Final = "OMNIGENT_AGY_TIMING_LOG"

_logger = logging.getLogger(__name__)


class TimingLog:
    """The log named by `TIMING_LOG_ENV`, or nothing; opened at the first chunk it notes."""

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._fd: int | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> TimingLog:
        value = env.get(TIMING_LOG_ENV, "").strip()
        if value and not Path(value).is_absolute():
            _logger.warning("ignoring %s=%r: not an absolute path", TIMING_LOG_ENV, value)
            value = ""
        return cls(Path(value) if value else None)

    def handed(self, session: Callable[[], str], event: object) -> None:
        """Note `event` if it is answer text, as it is handed to omnigent.

        ``session`` gives omnigent's session id; it is asked only for a chunk that is noted,
        so a turn with the log unset pays one attribute test per event and nothing more.
        """
        if self._path is None or not isinstance(event, TextChunk):
            return
        now = time.monotonic_ns()
        line = json.dumps({"ns": now, "session": session(), "chars": len(event.text)})
        try:
            if self._fd is None:
                flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
                self._fd = os.open(self._path, flags, 0o600)
            os.write(self._fd, f"{line}\n".encode())
        except OSError as exc:  # a missing folder, a full disk: stop noting, keep the turn
            _logger.warning("ignoring %s=%r from now on: %s", TIMING_LOG_ENV, str(self._path), exc)
            self.close()
            self._path = None

    def close(self) -> None:
        """Close the file (noted again at the next chunk)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
