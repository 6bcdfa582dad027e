"""agy in a runner-owned tmux session (libtmux).

agy is a TUI and needs a terminal (docs/wire.md §1); it must also outlive one harness process so
that a respawned one can re-attach (docs/decisions.md §4). So each agy runs in its own session on
a dedicated tmux server (socket name ``omnigent-agy`` unless overridden), where a person can
``tmux -L omnigent-agy attach -t <name>`` to watch it. Turns never go through the TUI
(docs/decisions.md §2): :meth:`AgyTerminal.send_text` exists for people and TUI tests.

The command line of agy holds its CSRF token (``--csrf_token=…``, docs/wire.md §1), so the pane
does not get the command directly: it runs `trampoline`, which ``exec``s agy from a 0600 launch
file — so the pane's pid *is* agy's pid.

Nothing a person or a repository names reaches tmux as anything but data. tmux expands formats
(``#(command)`` runs a command) in a start directory, so panes start in the launch file's
private folder (the plugin's own; its ``#`` doubled, tmux's escape) and the trampoline changes
into the workspace; the pane's command is an argument vector tmux runs without a shell; an
argument's last ``;`` is escaped (`tmux_argument`: tmux would end the command there); typed
text follows ``--``; and every ``-t`` names a session exactly (``=name``), never by prefix or
pattern.

Panes keep ``remain-on-exit`` on, so when agy dies its last screen can still be captured
to explain why (e.g. "not signed in").
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import stat
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, NamedTuple

import libtmux
import psutil
from libtmux.exc import LibTmuxException

from omnigent_agy.agy.tmux_text import exact_target, format_literal, tmux_argument, typeable
from omnigent_agy.agy.trampoline import LaunchFile, trampoline_argv, write_launch_file
from omnigent_agy.constants import TMUX_SOCKET, TMUX_TMPDIR_ENV
from omnigent_agy.errors import TerminalError

__all__ = [
    "AgyTerminal",
    "TerminalHost",
    "process_running",
]

logger = logging.getLogger(__name__)

_NAME = re.compile(r"[A-Za-z0-9_-]{1,100}")
# A socket's name is a file name in tmux's folder: no '/', and not '.' or '..'.
_SOCKET = re.compile(r"(?!\.{1,2}\Z)[A-Za-z0-9_.-]{1,64}")
# Big enough that agy's TUI lays out normally in a detached session.
_COLUMNS, _ROWS = 200, 50


class TerminalHost:
    """A tmux server that this runner owns, one session per agy."""

    def __init__(
        self,
        *,
        socket_name: str = TMUX_SOCKET,
        config_file: str | None = os.devnull,
        tmux_bin: str | None = None,
    ) -> None:
        # ``-f /dev/null``: a user's tmux.conf (default-command, hooks, base-index) must not
        # change how agy is started; set config_file=None to load it.
        if not _SOCKET.fullmatch(socket_name):
            raise TerminalError(
                f"{socket_name!r} is no tmux socket name: use letters, digits, '.', '_' or '-' "
                "(harness.agy-cli.tmux_socket, OMNIGENT_AGY_TMUX_SOCKET)"
            )
        self.socket_name = socket_name
        self.server = libtmux.Server(
            socket_name=socket_name, config_file=config_file, tmux_bin=tmux_bin
        )

    def __repr__(self) -> str:
        return f"TerminalHost(socket_name={self.socket_name!r})"

    def start(
        self,
        name: str,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        unset_env: Sequence[str] = (),
        replace_env: bool = False,
        private_dir: Path | None = None,
        start_timeout: float = 10.0,
    ) -> AgyTerminal:
        """Run ``argv`` in a new session ``name``, in the folder ``cwd`` (the trampoline
        changes into it: tmux never sees it); returns once the process is running.

        ``env`` is laid over the tmux server's environment, without the variables named in
        ``unset_env`` (the server keeps the environment it was started with); with
        ``replace_env`` it replaces the server's, but for what tmux gives the pane. ``private_dir``
        (0700) holds the short-lived launch file; a fresh temporary directory is used when it
        is None.
        """
        if not _NAME.fullmatch(name):
            raise ValueError(f"tmux session name must match {_NAME.pattern}: {name!r}")
        if not argv:
            raise ValueError("argv must not be empty")
        if self.find(name) is not None:
            raise TerminalError(f"tmux session {name!r} already exists on {self.socket_name!r}")
        launch = write_launch_file(
            argv,
            cwd=cwd,
            env=env or {},
            unset_env=unset_env,
            replace_env=replace_env,
            private_dir=private_dir,
        )
        try:
            terminal = self._spawn(name, launch)
            self._make_socket_private()
            _wait_consumed(terminal, launch.path, start_timeout)
        except BaseException:
            launch.path.unlink(missing_ok=True)
            if launch.remove_dir:
                with contextlib.suppress(OSError):
                    launch.path.parent.rmdir()
            with contextlib.suppress(LibTmuxException):
                if self.server.has_session(name):
                    self.server.kill_session(exact_target(name))
            raise
        logger.info("started %s in tmux session %s (pid %s)", argv[0], name, terminal.pid)
        return terminal

    def _make_socket_private(self) -> None:
        """The server's socket without group or other bits: tmux creates it 0660 (its folder
        is 0700, but the socket itself should not rely on that). tmux later only adds the
        execute bits matching the read bits present, so 0600 stays private."""
        with contextlib.suppress(FileNotFoundError):
            mode = stat.S_IMODE(self.socket_path.stat().st_mode)
            if mode & 0o077:
                self.socket_path.chmod(mode & 0o700)

    def _spawn(self, name: str, launch: LaunchFile) -> AgyTerminal:
        # The pane starts in the launch file's folder, the plugin's own: a start directory is
        # a tmux format, and the workspace's name is not ours (the trampoline enters it).
        start = tmux_argument(format_literal(str(launch.path.parent)))
        try:
            # The placeholder keeps the pane alive until remain-on-exit is set; respawning it
            # afterwards means even an instantly failing command leaves a capturable pane.
            made = self.server.cmd(
                *("new-session", "-d", "-P", "-F", "#{pane_id}", "-s", name, "-n", "agy"),
                *("-c", start, "-x", str(_COLUMNS), "-y", str(_ROWS), "cat"),
            )
            pane_id = made.stdout[0] if made.stdout and not made.stderr else None
            if pane_id is None:
                raise TerminalError(f"tmux could not start session {name!r}: {made.stderr}")
            self.server.cmd("set-option", "-w", "-t", pane_id, "remain-on-exit", "on")
            # An argument vector: tmux runs it without a shell (and expands no format in it).
            argv = [tmux_argument(word) for word in trampoline_argv(launch.path)]
            respawned = self.server.cmd("respawn-pane", "-k", "-t", pane_id, "-c", start, *argv)
        except LibTmuxException as exc:
            raise TerminalError(f"tmux could not start session {name!r}: {exc}") from exc
        if respawned.stderr:
            message = " ".join(respawned.stderr)
            raise TerminalError(f"tmux could not start session {name!r}: {message}")
        return AgyTerminal(self, name)

    def find(self, name: str) -> AgyTerminal | None:
        """The session ``name`` if it exists (alive or with a dead pane), else None."""
        try:
            if not self.server.is_alive() or not self.server.has_session(name):
                return None
        except LibTmuxException:
            return None
        return AgyTerminal(self, name)

    def names(self) -> list[str]:
        """The names of every session on this server."""
        if not self.server.is_alive():
            return []
        # Only the names: libtmux's objects read every path tmux knows, and a pane whose
        # folder has a newline in its name would break the listing.
        with contextlib.suppress(LibTmuxException):
            return [
                n for n in self.server.cmd("list-sessions", "-F", "#{session_name}").stdout if n
            ]
        return []

    @property
    def socket_path(self) -> Path:
        """Where tmux puts this server's socket (``$TMUX_TMPDIR``, else /tmp)."""
        tmpdir = os.environ.get(TMUX_TMPDIR_ENV) or "/tmp"  # noqa: S108 - tmux's own default
        return Path(tmpdir) / f"tmux-{os.getuid()}" / self.socket_name

    def kill_server(self) -> None:
        """Stop the whole tmux server and remove its socket (tests; clean-up)."""
        if self.server.is_alive():
            with contextlib.suppress(LibTmuxException):
                self.server.kill()
        # tmux leaves the socket file behind; the name is dedicated to us, and a socket with
        # no live server behind it is only litter.
        if not self.server.is_alive():
            self.socket_path.unlink(missing_ok=True)


class _Pane(NamedTuple):
    """What `AgyTerminal` reads of its pane (:data:`_PANE_FORMAT`, in this order)."""

    id: str
    pid: str
    dead: str
    dead_status: str
    attached: str


_PANE_FORMAT: Final = "\t".join(
    f"#{{{field}}}"
    for field in ("pane_id", "pane_pid", "pane_dead", "pane_dead_status", "session_attached")
)


class AgyTerminal:
    """The tmux session running one agy."""

    def __init__(self, host: TerminalHost, name: str) -> None:
        self.host = host
        self.name = name

    def __repr__(self) -> str:
        return f"AgyTerminal(name={self.name!r}, socket={self.host.socket_name!r})"

    def _pane(self) -> _Pane | None:
        """The session's pane as tmux describes it now, read with a format of its own: no
        path (a folder's name may hold a newline, and libtmux's listings would break)."""
        try:
            listed = self.host.server.cmd(
                "list-panes", "-s", "-t", exact_target(self.name), "-F", _PANE_FORMAT
            )
        except LibTmuxException:
            return None
        fields = listed.stdout[0].split("\t") if listed.stdout and not listed.stderr else []
        if len(fields) != len(_Pane._fields):
            return None
        return _Pane(*fields)

    @property
    def pane_pid(self) -> int | None:
        """The pid of the pane's process, or None when the session is gone."""
        pane = self._pane()
        return int(pane.pid) if pane is not None and pane.pid.isdigit() else None

    @property
    def pid(self) -> int | None:
        """agy's pid: the trampoline ``exec``s agy, so it is the pane's pid."""
        return self.pane_pid

    def is_alive(self) -> bool:
        """Whether the session exists and its process is running."""
        pane = self._pane()
        if pane is None or pane.dead == "1" or not pane.pid.isdigit():
            return False
        try:
            return process_running(psutil.Process(int(pane.pid)))
        except psutil.NoSuchProcess:
            return False

    def attached_clients(self) -> int:
        """How many tmux clients (people) are attached to this session now."""
        pane = self._pane()
        return int(pane.attached) if pane is not None and pane.attached.isdigit() else 0

    def exit_status(self) -> int | None:
        """The exit status once the pane's process has exited and tmux knows it, else None.

        tmux 3.3 sometimes marks a pane dead without reaping its process (seen here: the
        pane stays dead with an empty ``pane_dead_status``), so a dead pane can have no
        status; use :meth:`is_alive` to tell whether agy still runs.
        """
        pane = self._pane()
        if pane is None or pane.dead != "1" or not pane.dead_status.lstrip("-").isdigit():
            return None
        return int(pane.dead_status)

    def capture(self, *, history: bool = False) -> list[str]:
        """The pane's visible screen (plus scroll-back with ``history``), trailing blanks cut."""
        pane = self._pane()
        if pane is None:
            return []
        scroll = ("-S", "-") if history else ()
        try:
            lines = self.host.server.cmd("capture-pane", "-p", "-t", pane.id, *scroll).stdout
        except LibTmuxException:
            return []
        while lines and not lines[-1].strip():
            lines.pop()
        return lines

    def send_text(self, text: str, *, enter: bool = True) -> None:
        """Type ``text`` into the TUI (people and TUI tests only, docs/decisions.md §2).

        Only printable text is typed: every control character becomes a space (see
        `typeable`), so the text cannot press keys or send escape sequences; and ``--`` ends
        tmux's options first, so a text starting with ``-`` (``-H 03``: a Ctrl-C) is typed too.
        """
        pane = self._pane()
        if pane is None:
            raise TerminalError(f"tmux session {self.name!r} is gone")
        server = self.host.server
        server.cmd("send-keys", "-t", pane.id, "-l", "--", tmux_argument(typeable(text)))
        if enter:
            server.cmd("send-keys", "-t", pane.id, "Enter")

    def stop(self, *, timeout: float = 5.0) -> None:
        """Terminate agy's process group and descendants, escalate to SIGKILL after
        ``timeout`` seconds, then remove the session."""
        pid = self.pane_pid
        if pid is not None and self.is_alive():
            _terminate_tree(pid, timeout)
        with contextlib.suppress(LibTmuxException):
            if self.host.server.is_alive() and self.host.server.has_session(self.name):
                self.host.server.kill_session(exact_target(self.name))


def _terminate_tree(pid: int, timeout: float) -> None:
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    # tmux makes each pane's process a session (and group) leader; signalling the group
    # reaches helpers agy started in its own group, and the psutil walk reaches the rest.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGTERM)
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.terminate()
    alive = _wait_dead(procs, timeout)
    for proc in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    _wait_dead(alive, timeout)


def _wait_dead(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Wait until every process has exited; returns the ones still running at the deadline.

    A zombie counts as exited: tmux sometimes reaps a pane's process only when its session
    is killed, and psutil.wait_procs would wait the whole timeout on it.
    """
    deadline = time.monotonic() + timeout
    while True:
        alive = [p for p in procs if process_running(p)]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.02)


def process_running(process: psutil.Process) -> bool:
    """Whether ``process`` still runs: a zombie counts as ended, and so does a process whose
    pid now belongs to another (``is_running`` compares the start time psutil recorded)."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _wait_consumed(terminal: AgyTerminal, path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while path.exists():
        # Re-check the file after seeing the pane dead: the command may have been started
        # (file consumed) and failed at once, which the caller learns from the terminal.
        if not terminal.is_alive() and path.exists():
            last_lines = [line for line in terminal.capture() if line.strip()][-5:]
            raise TerminalError(
                f"the tmux pane of {terminal.name!r} exited before starting its command: "
                + " | ".join(last_lines)
            )
        if time.monotonic() > deadline:
            raise TerminalError(f"the tmux pane of {terminal.name!r} did not start in {timeout} s")
        time.sleep(0.02)
