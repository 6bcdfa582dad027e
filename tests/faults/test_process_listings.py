"""What other users can read of the plugin's processes: no CSRF token, no credential.

A conversation through the real harness on agy-sim, after a turn: agy (agy-sim), the relay
MCP server agy started from its ``mcp_config.json`` (``python -I -m omnigent_agy.relay``),
the tmux server agy runs in and the harness process (here: this process, which serves the
harness app). Any local user can read ``/proc/<pid>/cmdline``; ``/proc/<pid>/environ`` only
the same user (and root). So: no command line and no environment carries the token, and the
environments are unreadable to another user (``nobody`` tries, where the test can switch
uid) — except agy's own command line, which holds ``--csrf_token=<token>`` because that flag
is agy's only way to take it (WIRE.md §1): docs/reliability.md says what follows.

The relay has no credential of its own: its channel is a 0600 unix socket in a 0700
directory (relay/channel.py); its command line names the socket and the tools file only.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from faultmix import Conversation, conversation_after_a_turn
from foreign import foreign_uid
from simproc import wait_for

pytestmark = pytest.mark.tmux


@pytest.fixture
def talk(tmp_path: Path) -> Iterator[Conversation]:
    with conversation_after_a_turn(tmp_path) as conversation:
        yield conversation


def _relay(agy: psutil.Process) -> psutil.Process | None:
    for child in agy.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "omnigent_agy.relay" in child.cmdline():
                return child
    return None


def _tmux_server(socket_name: str) -> psutil.Process:
    def find() -> psutil.Process | None:
        for process in psutil.process_iter(["name", "cmdline"]):
            with contextlib.suppress(psutil.Error):
                line = " ".join(process.info["cmdline"] or [])
                if (process.info["name"] or "").startswith("tmux") and socket_name in line:
                    return process
        return None

    return wait_for(find, "agy's tmux server")


def _processes(talk: Conversation) -> dict[str, psutil.Process]:
    agy = psutil.Process(talk.record().pid)
    return {
        "agy": agy,
        "relay": wait_for(lambda: _relay(agy), "the relay MCP server agy started"),
        "tmux": _tmux_server(talk.env["OMNIGENT_AGY_TMUX_SOCKET"]),
        "harness": psutil.Process(),
    }


def test_no_process_of_ours_shows_the_token_but_agys_own_flag(talk: Conversation) -> None:
    token = talk.record().csrf_token
    for name, process in _processes(talk).items():
        argv = process.cmdline()
        environ = process.environ()
        assert all(token not in f"{key}={value}" for key, value in environ.items()), name
        shown = [part for part in argv if token in part]
        if name == "agy":
            # agy's only way to take its token (WIRE.md §1), and nowhere else on the line.
            assert shown == [f"--csrf_token={token}"], argv
        else:
            assert shown == [], (name, argv)


def test_another_user_cannot_read_their_environments(talk: Conversation) -> None:
    uid, gid = foreign_uid()
    for name, process in _processes(talk).items():
        for what in ("environ", "cmdline"):
            read = subprocess.run(  # as another user: cat, from a path they may run
                ["/bin/cat", f"/proc/{process.pid}/{what}"],
                capture_output=True,
                user=uid,
                group=gid,
                extra_groups=[],
                cwd="/",
                env={"PATH": "/usr/bin:/bin"},
                timeout=30,
                check=False,
            )
            if what == "environ":
                assert read.returncode != 0, f"another user read the environment of {name}"
                assert b"Permission denied" in read.stderr, read.stderr
            else:
                # Everyone reads command lines: the test above keeps the token out of them.
                assert read.returncode == 0, (name, read.stderr)
    assert os.getuid() != uid
