"""`omnigent-agy attach`, the `agy` terminal of omnigent's Terminal view, in real tmux.

The command runs in a pane of a tmux server of the test's (as omnigent runs a declared
terminal in a pane of its own, `TMUX` set, the session id in the pane's environment) and
attaches to agy-sim launched as a harness launches it. What the pane shows is read with
capture-pane, and keys are typed into it as a person types into the web's terminal.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import libtmux
import pytest
from kept import Agys
from waiting import wait_until

from omnigent_agy import TMUX_SOCKET_ENV
from omnigent_agy.agy.running_agys import recorded, stop_running
from omnigent_agy.agy.statedir import STATE_DIR_ENV
from omnigent_agy.agy.tmux_attach import DETACHED, NOT_STARTED
from omnigent_agy.agy.watchers import TERMINAL_SESSION_ENV, watchers
from omnigent_agy.cli import main

pytestmark = pytest.mark.tmux

CLI = Path(sys.executable).with_name("omnigent-agy")


class Pane:
    """`omnigent-agy attach` in a pane of a tmux server standing in for omnigent's."""

    def __init__(self, agys: Agys, conversation: str) -> None:
        self.server = libtmux.Server(
            socket_name=f"agy-viewer-{uuid.uuid4().hex[:10]}", config_file=os.devnull
        )
        env = {
            STATE_DIR_ENV: str(agys.base),
            TMUX_SOCKET_ENV: agys.terminals.socket_name,
            TERMINAL_SESSION_ENV: conversation,
            "OMNIGENT_CONFIG_HOME": str(agys.tmp / "omnigent"),
        }
        exports = " ".join(f"{name}={shlex.quote(value)}" for name, value in env.items())
        session = self.server.new_session(
            session_name="web",
            window_command=f"env {exports} {shlex.quote(str(CLI))} attach",
            x=120,
            y=40,
        )
        self.pane = session.windows[0].panes[0]

    def screen(self) -> str:
        return "\n".join(self.pane.capture_pane())

    def shows(self, pattern: str, what: str, timeout: float = 30.0) -> str:
        """The pane's screen once it shows ``pattern`` (the last screen seen, if it never does)."""
        return wait_until(
            self.screen,
            timeout=timeout,
            what=f"{what} on the pane",
            until=lambda screen: re.search(pattern, screen, re.MULTILINE),
        )

    def type(self, text: str) -> None:
        self.pane.send_keys(text, enter=True, literal=True)

    def close(self) -> None:
        if self.server.is_alive():
            self.server.kill()


@pytest.fixture
def agys(tmp_path: Path) -> Iterator[Agys]:
    launched = Agys(tmp_path)
    try:
        yield launched
    finally:
        launched.terminals.kill_server()


@pytest.fixture
def pane(agys: Agys) -> Iterator[Pane]:
    opened = Pane(agys, "conv-1")
    try:
        yield opened
    finally:
        opened.close()


def test_the_pane_waits_for_agy_shows_its_screen_takes_keys_and_says_why_it_stopped(
    agys: Agys, pane: Pane
) -> None:
    # Before the conversation's first message there is no agy: one line, and waiting.
    pane.shows(re.escape(NOT_STARTED), "the waiting line")
    assert pane.screen().count("agy starts") == 1

    # A turn starts agy: the pane attaches at once (inside tmux, TMUX unset) and shows
    # agy's own screen.
    agy = agys.launch("conv-1")
    pane.shows(r"\[ready\] conversation \S+", "agy's ready line")
    clients = watchers(agy.terminal.host, agy.terminal.name)
    assert [w.web for w in clients] == [True], "a web terminal's client is told apart"

    # Typed keys reach agy: a turn typed there runs on the conversation's cascade.
    pane.type("hello from the pane")
    pane.shows(r"^> hello from the pane", "the typed turn")
    pane.shows(r"Hello from the agy simulator", "agy's answer")

    # The sweep (or `omnigent-agy stop`) stops agy: the pane says why, and waits.
    found = recorded(agy.state_dir.path)
    assert found is not None
    assert stop_running(found, "idle 4h00m (limit 4h)")
    pane.shows(
        r"agy stopped \d+s ago \(idle 4h00m \(limit 4h\)\); it starts again with your next "
        r"message",
        "why agy stopped",
    )
    # The next message starts agy again on the same conversation: the pane attaches again.
    again = agys.launch("conv-1")
    assert again.pid != agy.pid
    assert again.cascade_id == agy.cascade_id
    # agy-sim resumes the bound conversation as its TUI's (`--conversation`).
    pane.shows(rf"\[ready\] conversation {agy.cascade_id}", "the new agy's ready line")
    assert again.terminal.is_alive()


def test_keys_typed_while_waiting_never_reach_agy(agys: Agys, pane: Pane) -> None:
    """What reaches the pane before agy runs (keys typed at the waiting line, a terminal's
    late answer to a query, seen in the browser as `^[[>0;276;0c`) is not agy's input."""
    pane.shows(re.escape(NOT_STARTED), "the waiting line")
    pane.pane.send_keys("stray keys", enter=False, literal=True)
    agys.launch("conv-1")
    pane.shows(r"\[ready\] conversation \S+", "agy's ready line")
    pane.type("typed after attaching")
    pane.shows(r"^> typed after attaching", "the typed turn")
    assert "stray" not in pane.screen()


#: xterm.js's answer to the device-attributes query a tmux client sends as it starts (`ESC [ > c`).
BROWSER_DA_REPLY = b"\x1b[>0;276;0c"


def test_the_browsers_late_answer_to_tmuxs_query_never_reaches_agy(agys: Agys, pane: Pane) -> None:
    """The tmux client asks its terminal who it is as it starts. omnigent's terminal answers at
    once and so does the browser, whose pane output omnigent forwards raw: its answer comes
    later, as input, through `send-keys -H` (omnigent/terminals/control_bridge.py). The
    client takes a second answer for keys and types it into agy, where it showed as
    `^[[>0;276;0c` on agy's screen in the Terminal view."""
    agys.launch("conv-1")
    pane.shows(r"\[ready\] conversation \S+", "agy's ready line")
    pane.server.cmd(
        "send-keys", "-t", pane.pane.pane_id, "-H", *(f"{b:02x}" for b in BROWSER_DA_REPLY)
    )
    pane.type("typed after the answer")
    screen = pane.shows(r"^> typed after the answer", "the typed turn")
    assert "0;276;0c" not in screen


def test_detaching_leaves_agy_running_and_enter_attaches_again(agys: Agys, pane: Pane) -> None:
    agy = agys.launch("conv-1")
    pane.shows(r"\[ready\] conversation", "agy's screen")
    pane.pane.send_keys("C-b", enter=False)
    pane.pane.send_keys("d", enter=False)
    pane.shows(re.escape(DETACHED), "the detach line")
    assert agy.terminal.is_alive()
    assert watchers(agy.terminal.host, agy.terminal.name) == []
    pane.pane.send_keys("", enter=True)
    wait_until(
        lambda: watchers(agy.terminal.host, agy.terminal.name),
        timeout=20,
        what="the client to attach again",
    )
    pane.shows(r"\[ready\] conversation", "agy's screen again")


def test_attach_without_a_session_says_how_to_name_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(TERMINAL_SESSION_ENV, raising=False)
    assert main(["attach"]) == 2
    err = capsys.readouterr().err
    assert "--session" in err
    assert TERMINAL_SESSION_ENV in err
