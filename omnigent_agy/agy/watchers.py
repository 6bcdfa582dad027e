"""Who is looking at an agy's own screen: the tmux clients attached to its session.

A person watches agy in two ways: ``tmux -L omnigent-agy attach -t agy-<conversation>`` in a
terminal of their own, or the ``agy`` terminal of omnigent's web Terminal view
(``omnigent-agy attach``, docs/in-omnigent.md), whose tmux client runs inside the pane omnigent
made for it and so carries the session id omnigent gives that pane's process
(``OMNIGENT_TERMINAL_LAUNCH_SESSION_ID``). An attached client is not proof that anyone is
there: a browser tab left open keeps its client attached for days. What tmux knows is when a
client last sent a key (``client_activity``), and that is what the sweep reads
(``sweep``, docs/configuration.md, "How long agy is kept").
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import Final

import psutil
from libtmux.exc import LibTmuxException

from omnigent_agy.agy.keep import format_duration
from omnigent_agy.agy.terminal import TerminalHost
from omnigent_agy.agy.tmux_text import exact_target

__all__ = ["TERMINAL_SESSION_ENV", "Watcher", "describe_watchers", "watchers"]

logger = logging.getLogger(__name__)

#: What omnigent sets in the process of a terminal it launches: the session (= conversation)
#: the terminal belongs to (omnigent/inner/terminal_lifecycle.py).
TERMINAL_SESSION_ENV: Final = "OMNIGENT_TERMINAL_LAUNCH_SESSION_ID"
_FORMAT: Final = "#{client_pid}\t#{client_activity}"


@dataclass(frozen=True, slots=True)
class Watcher:
    """One tmux client attached to agy's session."""

    pid: int
    last_key: float
    """When this client last sent a key (tmux's ``client_activity``; attaching counts)."""
    web: bool
    """The client runs in a terminal of omnigent's web Terminal view."""

    @property
    def kind(self) -> str:
        return "web terminal" if self.web else "tmux client"


def watchers(host: TerminalHost, session: str) -> list[Watcher]:
    """The clients attached to ``session`` on ``host``'s server now (none when tmux cannot
    say: a tmux that cannot answer proves nobody is there no less than anybody is)."""
    try:
        if not host.server.is_alive():
            return []
        listed = host.server.cmd("list-clients", "-t", exact_target(session), "-F", _FORMAT)
    except LibTmuxException:
        logger.debug("could not list the clients of %s", session, exc_info=True)
        return []
    found = []
    for line in listed.stdout:
        pid_text, _, activity_text = line.partition("\t")
        if not pid_text.isdigit() or not activity_text.isdigit():
            continue
        pid = int(pid_text)
        found.append(Watcher(pid, float(activity_text), _in_web_terminal(pid)))
    return found


def _in_web_terminal(pid: int) -> bool:
    with contextlib.suppress(psutil.Error):
        return TERMINAL_SESSION_ENV in psutil.Process(pid).environ()
    return False


def describe_watchers(found: list[Watcher], moment: float) -> str:
    """``1 web terminal (last key 14m ago)``: what `omnigent-agy ps` shows."""
    parts = []
    for kind in ("web terminal", "tmux client"):
        mine = [w for w in found if w.kind == kind]
        if mine:
            latest = max(w.last_key for w in mine)
            count = f"{len(mine)} {kind}{'s' if len(mine) > 1 else ''}"
            parts.append(f"{count} (last key {format_duration(moment - latest)} ago)")
    return ", ".join(parts)
