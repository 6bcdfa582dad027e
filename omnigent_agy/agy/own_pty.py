"""The tmux client that shows agy, on a pseudo-terminal of its own: a terminal's second answer
to one question is not typed into agy.

A tmux client asks its terminal what it is as it starts (device attributes ``ESC [ > c``,
its version ``ESC [ > q``; newer tmux also asks its colours) and reads the answers from its
input. In omnigent's Terminal view two terminals answer. omnigent's tmux, in whose pane
`omnigent-agy attach` runs, answers at once. The browser's xterm.js answers as well, because
omnigent passes the pane's output to it raw (``%output``) and sends what xterm.js writes
back as the pane's input (``send-keys -H``, omnigent/terminals/control_bridge.py). That
answer comes second: tmux 3.3a, already answered, takes it for typed keys and passes it to
agy, whose screen showed ``^[[>0;276;0c``.

So the client runs on a pseudo-terminal of ours and :func:`run_on_own_pty` copies between the
two: the client's output unchanged, the person's keys unchanged, and each kind of terminal
answer once (the first, so the client still learns what draws it); a later answer of the same
kind is dropped. Keys never take these shapes: an Alt key's ``ESC P`` or ``ESC ]`` followed by
anything but an answer's shape passes as typed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import pty
import re
import select
import signal
import subprocess
import termios
import tty
from collections.abc import Mapping, Sequence
from typing import Final

__all__ = ["AnswerFilter", "run_on_own_pty"]

#: A terminal's answers to the questions a tmux client asks (never a key's sequence).
_ANSWER: Final = re.compile(
    rb"\x1b\[(?P<da>[?>=])[0-9;]*c"  # device attributes (primary, secondary, tertiary)
    rb"|\x1bP(?P<dcs>[>!])\|[^\x1b]*\x1b\\"  # its name and version; tertiary DA as DCS
    rb"|\x1b\](?P<osc>1[0-9]|4;[0-9]+);rgb:[0-9a-fA-F/]*(?:\x07|\x1b\\)"  # its colours
    rb"|\x1b\[\?(?P<mode>[0-9]+);[0-9]\$y"  # whether it has a mode
)
#: The start of an answer that a read cut short: kept back until the rest arrives.
_UNFINISHED: Final = re.compile(
    rb"\x1b(?:"
    rb"\[(?:[?>=][0-9;]*\$?)?"
    rb"|P(?:[>!](?:\|[^\x1b]*\x1b?)?)?"
    rb"|\](?:(?:1[0-9]?|4(?:;[0-9]*)?)(?:;(?:r(?:g(?:b(?::[0-9a-fA-F/]*\x1b?)?)?)?)?)?)?"
    rb")?"
)
_LONGEST_UNFINISHED: Final = 256
#: How long an unfinished answer is kept back before it passes as typed (an Escape key).
HOLD_SECONDS: Final = 0.05
_READ: Final = 65536


class AnswerFilter:
    """The pane's input as the client should see it: each kind of answer once."""

    def __init__(self) -> None:
        self._seen: set[bytes] = set()
        self._held = b""

    @property
    def holding(self) -> bool:
        return bool(self._held)

    def feed(self, data: bytes) -> bytes:
        """What of ``data`` (after what was held back) goes to the client now."""
        data = self._held + data
        self._held = b""
        cut = _unfinished_start(data)
        if cut is not None:
            data, self._held = data[:cut], data[cut:]
        return _ANSWER.sub(self._once, data)

    def flush(self) -> bytes:
        """What was held back, as typed: no answer came to finish it."""
        held, self._held = self._held, b""
        return held

    def _once(self, match: re.Match[bytes]) -> bytes:
        kind = b"".join(
            name.encode() + b"=" + value
            for name, value in match.groupdict().items()
            if value is not None
        )
        if kind in self._seen:
            return b""
        self._seen.add(kind)
        return match.group(0)


def _unfinished_start(data: bytes) -> int | None:
    """Where an answer cut short at the end of ``data`` begins (None: nothing is cut short)."""
    start = max(0, len(data) - _LONGEST_UNFINISHED)
    at = data.find(b"\x1b", start)
    while at >= 0:
        if _UNFINISHED.fullmatch(data, at):
            return at
        at = data.find(b"\x1b", at + 1)
    return None


def run_on_own_pty(argv: Sequence[str], env: Mapping[str, str]) -> int:
    """Run ``argv`` on a pseudo-terminal of its own, as big as this one, copying this
    terminal's input to it through :class:`AnswerFilter` and its output here, until it
    exits; its exit status. Without a terminal here it just runs."""
    if not (os.isatty(0) and os.isatty(1)):
        return subprocess.run(list(argv), env=dict(env), check=False).returncode  # noqa: S603
    pid, master = pty.fork()
    if pid == 0:  # the child: the pseudo-terminal is its controlling terminal
        try:
            os.execvpe(argv[0], list(argv), dict(env))  # noqa: S606 - tmux, our arguments
        finally:
            os._exit(127)
    saved = termios.tcgetattr(0)
    _copy_size(master)
    resized = signal.signal(signal.SIGWINCH, lambda *_: _copy_size(master))
    try:
        tty.setraw(0)
        _copy(master, AnswerFilter())
    finally:
        termios.tcsetattr(0, termios.TCSAFLUSH, saved)
        signal.signal(signal.SIGWINCH, resized)
        os.close(master)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _copy(master: int, answers: AnswerFilter) -> None:
    """Copy both ways until the client's side closes (it exited) or this terminal's does."""
    while True:
        timeout = HOLD_SECONDS if answers.holding else None
        ready, _, _ = select.select([0, master], [], [], timeout)
        if not ready:
            _write_all(master, answers.flush())
            continue
        if master in ready:
            try:
                output = os.read(master, _READ)
            except OSError as exc:  # EIO: the client exited and its side is closed
                if exc.errno != errno.EIO:
                    raise
                return
            if not output:
                return
            _write_all(1, output)
        if 0 in ready:
            typed = os.read(0, _READ)
            if not typed:  # this terminal is gone: the client goes with it (SIGHUP)
                return
            _write_all(master, answers.feed(typed))


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


def _copy_size(master: int) -> None:
    """Give the client's pseudo-terminal this terminal's size (the client redraws to it)."""
    with contextlib.suppress(OSError):
        size = fcntl.ioctl(0, termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(master, termios.TIOCSWINSZ, size)
