"""The processes of omnigent's stack on loopback: started in a group of their own, stopped,
and whatever a crashed host left behind found and ended.

``spawn`` starts one of the venv's console scripts with its output in a log; ``stop_process``
stops it and its children (SIGTERM, SIGKILL after a grace); ``kill_tmux`` stops a tmux server
wherever tmux put its socket; ``sweep`` ends every process of this user whose command line
names the stack's folder or one of its tmux sockets.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import libtmux
import psutil
from libtmux.exc import LibTmuxException

__all__ = ["BIN", "kill_tmux", "socket_candidates", "spawn", "stop_process", "sweep"]

#: The console scripts sit beside the interpreter: the venv omnigent and the plugin are in.
BIN = Path(sys.executable).parent


def spawn(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    command = [str(BIN / argv[0]), *argv[1:]]
    with log.open("ab") as out:
        # A process group of its own, so stopping it stops the children it forked too.
        return subprocess.Popen(  # noqa: S603 - our own console scripts, no shell
            command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def stop_process(process: subprocess.Popen[bytes] | None) -> None:
    if process is None or process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


def socket_candidates(socket_name: str, env: Mapping[str, str]) -> list[Path]:
    """Where tmux puts the socket `socket_name`: under ``TMUX_TMPDIR`` when the harness was
    given it, else under /tmp (either may happen; the runner builds the harness's env)."""
    tmpdirs = dict.fromkeys([env.get("TMUX_TMPDIR") or "/tmp", "/tmp"])  # noqa: S108
    return [Path(tmpdir) / f"tmux-{os.getuid()}" / socket_name for tmpdir in tmpdirs]


def kill_tmux(socket_name: str, env: Mapping[str, str]) -> None:
    """Stop the tmux server named `socket_name` wherever its socket is."""
    for path in socket_candidates(socket_name, env):
        if path.exists():
            server = libtmux.Server(socket_path=path)
            with contextlib.suppress(LibTmuxException):
                if server.is_alive():
                    server.kill()
            path.unlink(missing_ok=True)


def sweep(markers: list[str]) -> None:
    """Kill every process whose command line contains one of `markers` (the stack's folder,
    its tmux sockets): agy, tmux servers and anything else a crashed host left behind."""
    me, uid = os.getpid(), os.getuid()
    found: list[psutil.Process] = []
    for proc in psutil.process_iter(["pid", "cmdline", "uids"]):
        cmdline = " ".join(proc.info.get("cmdline") or [])
        uids = proc.info.get("uids")
        # Only this user's: anyone may put the folder's name on a command line.
        ours = uids is not None and uids.real == uid
        if proc.pid != me and ours and any(marker in cmdline for marker in markers):
            found.append(proc)
    for proc in found:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _, alive = psutil.wait_procs(found, timeout=5)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()
