"""`omnigent-agy attach`: one conversation's agy, its own screen, in a terminal of omnigent's.

The shipped agent declares this command as its ``agy`` terminal, so omnigent's web Terminal
view offers agy's TUI beside omnigent's own REPL (docs/in-omnigent.md). omnigent runs it in a
tmux pane of its own, with the session id in ``OMNIGENT_TERMINAL_LAUNCH_SESSION_ID``; the
session id is the conversation's, so the pane finds that conversation's agy through its state
directory and attaches a tmux client to agy's session on the plugin's server (``TMUX`` unset:
tmux refuses to nest a client inside one of its panes otherwise).

The pane never starts agy. Before a conversation's first message there is none, and the pane
says so in one line and waits; it attaches the moment a turn starts agy, so agy's start-up,
trust and sign-in screens show there too. Starting agy belongs to the harness alone: it asks
the person's consent for the workspace first (docs/decisions.md §11), seeds agy's private
folder and picks the model, under the conversation's lifecycle lock; a second starter would
race it, and an agy nobody sent a message to would only wait for the sweep.

When agy stops (the sweep, ``omnigent-agy stop``) its tmux session ends, the client with it,
and the pane says why and waits for the next start. Leaving (closing the pane, or tmux's
detach) ends only the client: agy goes on, busy or not. omnigent does not make a declared
terminal again once its command exits, so this command never ends by itself.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import termios
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TextIO

from libtmux.exc import LibTmuxException

from omnigent_agy.agy.keep import format_duration
from omnigent_agy.agy.own_pty import run_on_own_pty
from omnigent_agy.agy.process import session_name
from omnigent_agy.agy.running_agys import RunningAgy, now, recorded
from omnigent_agy.agy.statedir import default_state_base, state_key
from omnigent_agy.agy.terminal import TerminalHost
from omnigent_agy.agy.tmux_text import exact_target
from omnigent_agy.agy.trampoline import TMUX_CLIENT_ENV
from omnigent_agy.errors import TerminalError

__all__ = ["Screen", "attach", "find_screen", "waiting_line"]

_POLL: Final = 0.5  # seconds between looks for agy while it is not running
NOT_STARTED: Final = (
    "agy starts with this conversation's first message; its screen appears here then"
)
DETACHED: Final = "detached from agy's screen (agy goes on); press Enter to attach again"


@dataclass(frozen=True, slots=True)
class Screen:
    """Where a conversation's agy shows its screen: a session on the plugin's tmux server."""

    socket: str
    session: str


def find_screen(
    conversation_id: str, *, base: Path | None = None, socket: str
) -> tuple[Screen | None, RunningAgy | None]:
    """agy's tmux session for the conversation if it is there (agy running or starting, or
    the dead pane of an agy that failed to start, whose last screen says why), and the
    record of its agy (None: no agy was ever recorded)."""
    state_dir = (base or default_state_base()).expanduser().absolute() / state_key(conversation_id)
    found = recorded(state_dir)  # a record that is not safe to read: StateDirError
    if found is not None and found.record.stopped_at is None:
        socket = found.tmux_socket
    name = found.tmux_session if found is not None else session_name(conversation_id)
    try:
        there = TerminalHost(socket_name=socket).find(name) is not None
    except LibTmuxException:
        there = False
    return (Screen(socket, name) if there else None), found


def waiting_line(found: RunningAgy | None) -> str:
    """The one line a pane shows while there is no agy to attach to."""
    if found is None:
        return NOT_STARTED
    record = found.record
    if record.stopped_at is not None:
        ago = format_duration(now() - record.stopped_at)
        why = record.stopped_reason or "stopped"
        return (
            f"agy stopped {ago} ago ({why}); it starts again with your next message and its "
            "screen appears here then"
        )
    return (
        "agy is not running (it exited); it starts again with your next message and its "
        "screen appears here then"
    )


def attach(
    conversation_id: str,
    *,
    socket: str,
    base: Path | None = None,
    out: TextIO,
    ask: Callable[[], str] = input,
    poll: float = _POLL,
) -> int:
    """Show the conversation's agy in this terminal until the process is ended (see the
    module doc); returns only when the person ends the input (EOF after a detach)."""
    tmux = shutil.which("tmux")
    if tmux is None:
        raise TerminalError("tmux is not installed here: agy runs in tmux (omnigent-agy doctor)")
    said: str | None = None
    while True:
        screen, found = find_screen(conversation_id, base=base, socket=socket)
        if screen is None:
            line = waiting_line(found)
            if line != said:
                _say(out, line)
                said = line
            _pause(poll, out)
            continue
        said = None
        _watch(tmux, screen)
        still, _ = find_screen(conversation_id, base=base, socket=socket)
        if still == screen:
            # agy's session is still there: the person detached (tmux's prefix, d), or
            # another client made this one leave. Attaching again at once would make
            # detaching impossible.
            _say(out, DETACHED)
            try:
                ask()
            except EOFError:
                return 0


def _watch(tmux: str, screen: Screen) -> None:
    """A tmux client on agy's session, in this terminal, until it ends."""
    with contextlib.suppress(LibTmuxException):
        # A pane of agy alone, without tmux's status line (the Terminal view shows its own).
        TerminalHost(socket_name=screen.socket).server.cmd(
            "set-option", "-t", f"{exact_target(screen.session)}:", "status", "off"
        )
    _drop_pending_input()
    env = {k: v for k, v in os.environ.items() if k not in TMUX_CLIENT_ENV}
    # On a pseudo-terminal of its own: a terminal's second answer to the client's questions
    # (the browser's, in omnigent's Terminal view) would be typed into agy (own_pty).
    target = exact_target(screen.session)
    run_on_own_pty([tmux, "-L", screen.socket, "attach-session", "-t", target], env)


def _drop_pending_input() -> None:
    """Forget what reached this terminal while nothing read it: keys typed at the waiting
    line, or a terminal's late answer to a query (the browser's shows as ``^[[>0;276;0c``).
    The tmux client would type it all into agy."""
    with contextlib.suppress(OSError, termios.error):
        if os.isatty(0):
            termios.tcflush(0, termios.TCIFLUSH)


def _say(out: TextIO, line: str) -> None:
    out.write(f"{line}\n")
    out.flush()


def _pause(seconds: float, out: TextIO) -> None:
    try:
        time.sleep(seconds)
    except KeyboardInterrupt:
        # Ctrl-C here would end the pane for good (omnigent does not start a declared
        # terminal again): say how to leave instead.
        _say(out, "(this pane shows agy's screen; close it to leave)")
