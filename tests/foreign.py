"""agy-sim run by another user of the machine, posing as agy, for the security tests.

``foreign_agy(token)`` starts a real agy-sim as the system user ``nobody`` (``_as_user.py``):
its process, its listening sockets and its files are that user's, its command line shows
``.../bin/agy`` and its log names its port, exactly as an agy of that user would look. It
serves agy's RPC with the token it is given (the tests give it *ours*: the worst case, a
stranger who learnt it), and agy-sim's zero-second ``delay`` fault on every method logs each
request that reaches it, so a test can prove nothing of ours ever talked to it.

Switching uid needs root: without it (or without a ``nobody`` account) the fixture skips,
saying so. The process is stopped and its folder removed afterwards, whatever happens.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from simproc import LISTENING, end_process
from waiting import wait_until

AS_USER = Path(__file__).resolve().parent / "_as_user.py"
AGY_ALIAS = Path(sys.executable).with_name("agy")
REQUEST_LINE = re.compile(r"fault delay \S+ s on (\w+)")
FOREIGN_USER = "nobody"


@dataclass
class ForeignAgy:
    """A running agy-sim of another user."""

    proc: subprocess.Popen[bytes]
    home: Path
    uid: int

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def log(self) -> Path:
        return self.home / "agy.log"

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8") if self.log.exists() else ""

    @property
    def port(self) -> int:
        return int(
            wait_until(lambda: LISTENING.findall(self.log_text()), timeout=20, what="its port")[-1]
        )

    def requests(self) -> list[str]:
        """The methods of every request that reached it (its fault log)."""
        return REQUEST_LINE.findall(self.log_text())

    def untouched(self, port: int) -> None:
        """Still running, as its user, on ``port``, never asked anything, never shut down."""
        process = psutil.Process(self.pid)
        assert process.status() != psutil.STATUS_ZOMBIE, self.log_text()
        assert process.uids().real == self.uid
        assert self.proc.poll() is None
        assert self.port == port, "it moved its port (SIGUSR1 or a restart request)"
        assert self.requests() == [], f"requests reached another user's agy: {self.requests()}"
        assert "shutting down" not in self.log_text()


def other_user() -> tuple[tuple[int, int] | None, str]:
    """The uid and gid of the stand-in other user, or None and why there is none."""
    if os.geteuid() != 0:
        return None, "running a process as another user needs root (this test runs as a user)"
    try:
        entry = pwd.getpwnam(FOREIGN_USER)
    except KeyError:
        return None, f"no {FOREIGN_USER!r} account on this machine to act as another user"
    if entry.pw_uid == os.getuid():
        return None, f"{FOREIGN_USER!r} is this very user"
    return (entry.pw_uid, entry.pw_gid), ""


def foreign_uid() -> tuple[int, int]:
    """The uid and gid of the stand-in other user, or a skip saying why there is none."""
    ids, why = other_user()
    if ids is None:
        pytest.skip(why)
    return ids


@contextlib.contextmanager
def foreign_agy(token: str, *args: str) -> Iterator[ForeignAgy]:
    """agy-sim as another user, serving agy's RPC with ``token`` (see the module doc)."""
    uid, gid = foreign_uid()
    # Under /tmp, not $TMPDIR: the other user must be able to reach its folder (a TMPDIR
    # under root's home is closed to them).
    shared = "/tmp" if Path("/tmp").is_dir() else None
    home = Path(tempfile.mkdtemp(prefix="omnigent-agy-foreign-", dir=shared))
    os.chown(home, uid, gid)
    argv = [
        str(AGY_ALIAS),  # argv[0]: the process table shows .../bin/agy, as agy-sim's own re-exec
        str(AS_USER),
        str(uid),
        str(gid),
        str(home),
        "sim",
        f"--csrf_token={token}",
        "--log-file",
        str(home / "agy.log"),
        "--gemini_dir",
        str(home / "gemini"),
        "--sim-startup-delay",
        "0.3",
        "--sim-fault",
        "delay:seconds=0",
        *args,
    ]
    proc = subprocess.Popen(
        argv,
        executable=sys.executable,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "AGY_SIM_KEEP_ARGV0": "1"},
    )
    agy = ForeignAgy(proc, home, uid)
    try:
        wait_until(
            lambda: proc.poll() is not None or LISTENING.search(agy.log_text()),
            timeout=20,
            what="listening",
        )
        assert proc.poll() is None, f"the other user's agy-sim exited: {agy.log_text()}"
        yield agy
    finally:
        end_process(proc, grace=15)
        shutil.rmtree(home, ignore_errors=True)
